r"""Training averages of published runs at given agent steps, side by side, with their curves.

    python -m tools.reports.curve_points results/pong_paac results/pong_paac_s1 \
        results/pong_paac_s2 results/pong_paac_loop53 --steps=1e6,2e6,3e6,4e6,5e6 \
        --output=results/pong_paac_loop53/comparison.md

Each folder is a published run (its summaries.csv, tools/campaign/publish_run.py). Its value at a
step is the training average of the last 100 episodes (Metrics_vs_EnvironmentSteps/
AverageReturn) at the last summary at or before that step. The markdown table has one row
per run (its folder, its seed from operative_config.gin, its commit from run_info.json) and
one column per step ('' where the run stopped before the step); with
--output a PNG of the curves is written beside it (same name, .png).
"""
import json
import os

from absl import app
from absl import flags

from paac_tf import errors
from paac_tf.bookkeeping import reference_curve
from tools.reports import seed_runs

FLAGS = flags.FLAGS
flags.DEFINE_list("steps", ["1e6", "2e6", "3e6", "4e6", "5e6"], "Agent steps of the columns.")
flags.DEFINE_string("output", None, "The markdown file to write (default: print it).")
flags.DEFINE_string("title", "Training average of the last 100 episodes", "The table's title.")

TAG = "Metrics_vs_EnvironmentSteps/AverageReturn"


def curve(folder):
  """[(agent step, training average)] of a published run, in step order."""
  series = reference_curve.read_series(folder, [TAG])[TAG]
  return sorted((step, value) for step, (_, value) in series.items())


REACHED = 0.99   # a run reached step S if its last summary is at 0.99 S or later


def value_at(points, step):
  """The value of the last point at or before `step`, or None where the run stopped before
  it (its last point before REACHED * step) or has none there."""
  before = [value for at, value in points if at <= step]
  if not before or points[-1][0] < REACHED * step:
    return None
  return before[-1]


def run_info(folder):
  path = os.path.join(folder, "run_info.json")
  if not os.path.isfile(path):
    return {}
  with open(path, encoding="utf-8") as f:
    return json.load(f)


def table(folders, steps, title):
  """The markdown table of the runs' values at `steps`."""
  head = ["run", "seed", "commit"] + ["%gM" % (s / 1e6) for s in steps]
  lines = ["# %s" % title, "", "| " + " | ".join(head) + " |",
           "|" + "---|" * len(head)]
  for folder in folders:
    info = run_info(folder)
    points = curve(folder)
    values = [value_at(points, s) for s in steps]
    seed = seed_runs.seed_of(folder)
    lines.append("| %s | %s | %s | %s |" % (
        os.path.basename(os.path.normpath(folder)), seed, str(info.get("commit", ""))[:7],
        " | ".join("" if v is None else "%.2f" % v for v in values)))
  return "\n".join(lines) + "\n"


def draw(folders, path):
  # Lazy: matplotlib is the optional [plot] extra, loaded only to draw a figure.
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use("Agg")
  # Lazy: pyplot after matplotlib.use() (above) has chosen the backend.
  from matplotlib import pyplot  # pylint: disable=import-outside-toplevel
  figure, axes = pyplot.subplots(figsize=(7, 4))
  for folder in folders:
    points = curve(folder)
    axes.plot([s / 1e6 for s, _ in points], [v for _, v in points],
              label=os.path.basename(os.path.normpath(folder)))
  axes.set_xlabel("agent steps (millions)")
  axes.set_ylabel("training average (last 100 episodes)")
  axes.legend()
  figure.tight_layout()
  figure.savefig(path, dpi=100)


def main(argv):
  folders = argv[1:]
  if not folders:
    raise errors.UserError("Give the published runs' folders.")
  for folder in folders:
    if not os.path.isfile(os.path.join(folder, "summaries.csv")):
      raise errors.UserError("%s has no summaries.csv (a published run's folder)." % folder)
  steps = [float(s) for s in FLAGS.steps]
  text = table(folders, steps, FLAGS.title)
  if FLAGS.output:
    with open(FLAGS.output, "w", encoding="utf-8") as f:
      f.write(text)
    draw(folders, os.path.splitext(FLAGS.output)[0] + ".png")
  print(text)


if __name__ == "__main__":
  app.run(main, flags_parser=errors.parse_flags)
