r"""Plots a run's learning curve: `python -m paac_tf.plot RUN_DIR [--output=curve.png]`.

Reads RUN_DIR/train/summaries.csv (every scalar the run wrote, `step,wall_time,tag,value`)
and draws the training average return (the last 100 episodes) and, where the run evaluated
while training, the evaluation's mean return (+- its std), both against agent steps. Needs
matplotlib (`pip install 'paac_tf[plot]'`); without it, one error line. For several runs in
one figure, frames and wall time, a checkout has `python -m tools.plot`.
"""
import collections
import csv
import os
import sys

from paac_tf import errors
from paac_tf.bookkeeping import summary_tags

EVAL_STD = summary_tags.EVAL_TAGS["std"]


def read_series(path, tags):
  """{tag: [(step, value)] sorted by step} of the rows of `path` (a summaries.csv) whose tag
  is in `tags`; a resumed run's repeated steps keep their last value."""
  found = collections.defaultdict(dict)
  with open(path, newline="", encoding="utf-8") as f:
    for row in csv.DictReader(f):
      if row.get("tag") in tags:
        found[row["tag"]][int(row["step"])] = float(row["value"])
  return {tag: sorted(points.items()) for tag, points in found.items()}


def summaries_csv(run_dir):
  """RUN_DIR/train/summaries.csv, or a UserError saying what is missing."""
  path = os.path.join(run_dir, "train", summary_tags.CSV_FILE)
  if not os.path.isfile(path):
    raise errors.UserError("%s not found: give a run directory (one with train/%s)."
                           % (path, summary_tags.CSV_FILE))
  return path


def plot(run_dir, output=None):
  """Draws the run's curves into `output` (default RUN_DIR/curve.png); returns its path."""
  path = summaries_csv(run_dir)
  try:
    # Lazy: matplotlib is an optional extra; without it, one error line (below).
    import matplotlib  # pylint: disable=import-outside-toplevel
    matplotlib.use("Agg")
    # Lazy as matplotlib, and after the backend is chosen (no display needed).
    from matplotlib import pyplot  # pylint: disable=import-outside-toplevel
  except ImportError:
    raise errors.UserError("plotting needs matplotlib: pip install 'paac_tf[plot]'.") from None
  series = read_series(path, {summary_tags.RETURN_VS_AGENT_STEPS, summary_tags.EVAL_RETURN,
                              EVAL_STD})
  train = series.get(summary_tags.RETURN_VS_AGENT_STEPS, [])
  evals = series.get(summary_tags.EVAL_RETURN, [])
  if not train and not evals:
    raise errors.UserError("%s has no return yet (no episode finished)." % path)
  figure, axes = pyplot.subplots(figsize=(7, 4))
  if train:
    axes.plot(*zip(*train), label="training (average of the last 100 episodes)")
  if evals:
    steps, means = zip(*evals)
    std = dict(series.get(EVAL_STD, []))
    axes.errorbar(steps, means, yerr=[std.get(s, 0.0) for s in steps], fmt="o-", capsize=3,
                  label="evaluation (mean +- std)")
  axes.set_xlabel("agent steps")
  axes.set_ylabel("return")
  axes.set_title(os.path.basename(os.path.normpath(run_dir)))
  axes.legend()
  output = output or os.path.join(run_dir, "curve.png")
  figure.tight_layout()
  figure.savefig(output)
  pyplot.close(figure)
  return output


def main(argv):
  args = [a for a in argv[1:] if not a.startswith("--output=")]
  outputs = [a.split("=", 1)[1] for a in argv[1:] if a.startswith("--output=")]
  if len(args) != 1 or any(a.startswith("-") for a in args):
    raise errors.UserError("usage: python -m paac_tf.plot RUN_DIR [--output=curve.png]")
  print(plot(args[0], outputs[-1] if outputs else None))


if __name__ == "__main__":
  try:
    main(sys.argv)
  except errors.UserError as e:
    sys.stderr.write("error: %s\n" % e)
    sys.exit(2)
