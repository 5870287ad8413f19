r"""Agent steps/s of `python -m paac_tf.train` from several source trees, in interleaved rounds.

    python -m tools.bench.interleaved --tree=old=/tmp/old_main --tree=new=. \
        --gin_file=atari.gin --steps=240000 --rounds=3 --output=/tmp/ab.json

A tree runs under this Python unless --python names another for it, e.g. the two stacks
(paac_tf/stacks.py) from one checkout:

    python -m tools.bench.interleaved --tree=reference=. --tree=current=. \
        --python=current=.venv-current/bin/python --gin_file=atari.gin --steps=60000

Each round runs every tree once, one after another (`python -m paac_tf.train` with the
tree as its working directory, so that its own paac_tf is imported), in the given order,
each into a fresh run directory. A run's rate is its steady state: the agent steps between
its first and its last progress line over the seconds between them (the start-up and the
first compilations left out). The output gives each run's rate and machine load, each
tree's median, and each tree's median of its per-round ratios to the first tree. Compare
only ratios taken in one invocation: this machine's speed drifts by 30% between days.
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from absl import app
from absl import flags

from paac_tf import errors

FLAGS = flags.FLAGS
flags.DEFINE_multi_string("tree", [], "name=path of a source tree (a checkout); the first is "
                          "the baseline of the ratios.")
flags.DEFINE_string("gin_file", "atari.gin", "The config every tree trains (its own copy).")
flags.DEFINE_multi_string("gin_bindings", [], "Extra bindings, the same for every tree.")
flags.DEFINE_integer("steps", 240000, "Agent steps per run.")
flags.DEFINE_integer("rounds", 3, "Rounds; each runs every tree once.")
flags.DEFINE_multi_string("python", [], "name=interpreter that runs the tree `name` (default: "
                          "this one).")
flags.DEFINE_string("output", None, "Where to write the JSON record (default: stdout only).")

PROGRESS = re.compile(r"steps (\d+)/\d+ .*\| elapsed (\d+):(\d\d):(\d\d)")


def steady_rate(log_text):
  """Agent steps/s between the first and the last progress line of a run's log, or None
  if it has fewer than two."""
  points = [(int(m.group(1)), int(m.group(2)) * 3600 + int(m.group(3)) * 60 + int(m.group(4)))
            for m in PROGRESS.finditer(log_text)]
  if len(points) < 2 or points[-1][1] <= points[0][1]:
    return None
  return (points[-1][0] - points[0][0]) / (points[-1][1] - points[0][1])


def run_once(path, root_dir, gin_file, bindings, steps, python=None):
  """One training run from the tree at `path` under `python` (default: this one); (rate,
  load average at its end, log)."""
  command = [python or sys.executable, "-m", "paac_tf.train", "--gin_file=" + gin_file,
             "--root_dir=" + root_dir,
             "--gin_bindings=train_eval.total_steps=%d" % steps] + [
                 "--gin_bindings=" + b for b in bindings]
  proc = subprocess.run(command, cwd=path, capture_output=True, text=True)
  if proc.returncode != 0:
    raise errors.UserError("%s failed (status %d): %s" % (
        " ".join(command), proc.returncode, proc.stderr.strip().splitlines()[-1:]))
  return steady_rate(proc.stderr), os.getloadavg()[0], proc.stderr


def main(argv):
  errors.refuse_arguments(argv)
  trees = []
  for given in FLAGS.tree:
    name, _, path = given.partition("=")
    if not name or not os.path.isdir(os.path.join(path, "paac_tf")):
      raise errors.UserError("--tree=%r: give name=path of a checkout with paac_tf/." % given)
    trees.append((name, os.path.abspath(path)))
  if len(trees) < 2:
    raise errors.UserError("Give at least two --tree=name=path.")
  pythons = dict(given.partition("=")[::2] for given in FLAGS.python)
  for name, python in pythons.items():
    if name not in dict(trees) or not os.access(python, os.X_OK):
      raise errors.UserError("--python=%s=%s: give name=interpreter of a --tree's name." % (
          name, python))
  scratch = tempfile.mkdtemp(prefix="interleaved-")
  runs = []
  try:
    for round_index in range(FLAGS.rounds):
      for name, path in trees:
        rate, load, _ = run_once(path, os.path.join(scratch, "%s-%d" % (name, round_index)),
                                 FLAGS.gin_file, FLAGS.gin_bindings, FLAGS.steps,
                                 python=pythons.get(name))
        if rate is None:
          raise errors.UserError("%s logged fewer than two progress lines in %d agent "
                                 "steps: give more --steps." % (name, FLAGS.steps))
        runs.append({"round": round_index, "tree": name, "agent_steps_per_s": rate,
                     "load_average_1m": load, "utc": time.strftime("%H:%M:%S", time.gmtime())})
        print(json.dumps(runs[-1]), flush=True)
  finally:
    shutil.rmtree(scratch, ignore_errors=True)
  baseline = trees[0][0]
  summary = {}
  for name, path in trees:
    rates = [r["agent_steps_per_s"] for r in runs if r["tree"] == name]
    ratios = [r["agent_steps_per_s"] / b["agent_steps_per_s"] for r, b in zip(
        [r for r in runs if r["tree"] == name], [r for r in runs if r["tree"] == baseline])]
    summary[name] = {"path": path, "python": pythons.get(name, sys.executable),
                     "median_agent_steps_per_s": statistics.median(rates),
                     "median_ratio_to_%s" % baseline: statistics.median(ratios),
                     "ratios": ratios}
  record = {"command": " ".join(["python -m tools.bench.interleaved"] + sys.argv[1:]),
            "gin_file": FLAGS.gin_file, "steps": FLAGS.steps, "rounds": FLAGS.rounds,
            "runs": runs, "summary": summary}
  print(json.dumps(summary, indent=1))
  if FLAGS.output:
    with open(FLAGS.output, "w") as f:
      json.dump(record, f, indent=1)


if __name__ == "__main__":
  app.run(main, flags_parser=errors.parse_flags)
