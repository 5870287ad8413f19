r"""Dopamine's baselines at our budget: each agent's mean training return at 10M frames.

  python -m tools.reports.dopamine_peers --dopamine=/path/to/google/dopamine \
      --output=results/peers/dopamine_10m.csv

google/dopamine's `baselines/atari/data/<game>.json` files (the data of its baseline plots)
hold, for each agent (DQN, C51, Rainbow, IQN, ...), iteration (0-based) and seed, one
"Value": the mean undiscounted return of the training episodes of that iteration (5 seeds,
one row each, not labelled). Their protocol is not ours: sticky actions (repeat action
probability 0.25; `atari_lib.create_atari_environment.sticky_actions = True` in the agents'
gin files), returns of training episodes (with the agent's training epsilon), not an
evaluation; an iteration is `Runner.training_steps` = 250,000 agent steps of 4 frames = 1M
frames, so 10M frames is the end of the 10th iteration, index 9.

`--dopamine`: a checkout of the repository or its git directory (then the files are read
at `--revision`, HEAD by default, with `git show`). The CSV starts with `#` lines naming the
source files, the commit and the protocol; `games.py` shows it beside our 10M-frame scores.
"""
import csv
import io
import json
import os
import statistics
import subprocess

from absl import app
from absl import flags

from paac_tf import errors
from paac_tf.envs import names
from tools import reference_scores as ref

AGENT_STEPS_PER_ITERATION = 250_000   # Runner.training_steps in Dopamine's agents' gin files
AGENTS = ("DQN", "C51", "Rainbow", "IQN")
DATA_DIR = "baselines/atari/data"
BUDGET_FRAMES = 10_000_000
PROTOCOL = ("Dopamine baselines: mean undiscounted return of the training episodes of the "
            "iteration (training epsilon), sticky actions (repeat action probability 0.25), "
            "not an evaluation; iteration = 250,000 agent steps = 1M frames; the value at "
            "10M frames is iteration index 9 (the 10th iteration's end), averaged over the "
            "seeds (5)")
COLUMNS = ("game", "agent", "iteration", "frames", "seeds", "mean_training_return",
           "std_over_seeds")


def frames_at_iteration_end(iteration):
  """Frames trained at the end of 0-based Dopamine iteration `iteration`."""
  return (int(iteration) + 1) * AGENT_STEPS_PER_ITERATION * ref.FRAMES_PER_AGENT_STEP


def iteration_at_frames(frames):
  """The 0-based iteration that ends at `frames` (a whole number of iterations)."""
  per = AGENT_STEPS_PER_ITERATION * ref.FRAMES_PER_AGENT_STEP
  if frames <= 0 or frames % per:
    raise ValueError("%d frames is not the end of a Dopamine iteration (%d frames each)."
                     % (frames, per))
  return frames // per - 1


def data_file(game):
  """The Dopamine data file of a game of ours ('MsPacman' -> 'mspacman.json')."""
  return "%s.json" % names.resolve_atari(game).rom_id.replace("_", "")


def at_iteration(records, iteration):
  """{agent: [values of its seeds]} of the records ({"Agent", "Iteration", "Value"}) at
  `iteration`."""
  out = {}
  for record in records:
    if int(record["Iteration"]) == int(iteration):
      out.setdefault(record["Agent"], []).append(float(record["Value"]))
  return out


def rows(read, games, frames=BUDGET_FRAMES, agents=AGENTS):
  """The CSV rows (COLUMNS) of `games` at `frames`; read(file name) -> its records."""
  iteration = iteration_at_frames(frames)
  out = []
  for game in games:
    seeds = at_iteration(read(data_file(game)), iteration)
    for agent in agents:
      values = seeds.get(agent)
      if not values:
        continue
      std = statistics.stdev(values) if len(values) > 1 else 0.0
      out.append((game, agent, iteration, frames, len(values),
                  round(statistics.fmean(values), 2), round(std, 2)))
  return out


def reader(dopamine, revision="HEAD"):
  """read(file name) -> records, and the commit read, from a checkout or a git directory."""
  checkout = os.path.join(dopamine, DATA_DIR)
  git = ["git", "-C", dopamine] if os.path.isdir(checkout) else ["git", "--git-dir", dopamine]
  try:
    commit = subprocess.run(git + ["rev-parse", revision], check=True, capture_output=True,
                            text=True).stdout.strip()
  except (OSError, subprocess.CalledProcessError):
    commit = "unknown (not a git repository)"

  def read(name):
    if os.path.isdir(checkout):
      with open(os.path.join(checkout, name), encoding="utf-8") as f:
        return json.load(f)
    result = subprocess.run(git + ["show", "%s:%s/%s" % (revision, DATA_DIR, name)],
                            capture_output=True, text=True)
    if result.returncode:
      raise errors.UserError("Cannot read %s/%s from %s: %s" % (
          DATA_DIR, name, dopamine, result.stderr.strip().splitlines()[-1:]))
    return json.loads(result.stdout)
  return read, commit


def write_csv(table, commit, games):
  """The CSV text: '#' lines (source, commit, protocol), then the header and rows."""
  text = io.StringIO()
  text.write("# Source: github.com/google/dopamine, commit %s, files %s\n" % (
      commit, ", ".join("%s/%s" % (DATA_DIR, data_file(g)) for g in games)))
  text.write("# Protocol: %s.\n" % PROTOCOL)
  text.write("# Generated by `python -m tools.reports.dopamine_peers`: do not edit by hand.\n")
  writer = csv.writer(text, lineterminator="\n")
  writer.writerow(COLUMNS)
  writer.writerows(table)
  return text.getvalue()


def read_csv(path):
  """{game: {agent: mean training return}} of a CSV written by this tool; {} if absent."""
  if not os.path.isfile(path):
    return {}
  with open(path, encoding="utf-8") as f:
    lines = [line for line in f if not line.startswith("#")]
  out = {}
  for row in csv.DictReader(lines):
    out.setdefault(row["game"], {})[row["agent"]] = float(row["mean_training_return"])
  return out


FLAGS = flags.FLAGS


def _define_flags():
  flags.DEFINE_string("dopamine", None, "google/dopamine checkout or git dir.")
  flags.DEFINE_string("revision", "HEAD", "The commit of it to read.")
  flags.DEFINE_string("output", "results/peers/dopamine_10m.csv", "The CSV to write.")
  flags.mark_flag_as_required("dopamine")


def main(argv):
  errors.refuse_arguments(argv)
  if not os.path.isdir(FLAGS.dopamine):
    raise errors.UserError("--dopamine %s is not a directory." % FLAGS.dopamine)
  read, commit = reader(FLAGS.dopamine, FLAGS.revision)
  games = sorted(ref.paac_paper_table1())
  text = write_csv(rows(read, games), commit, games)
  os.makedirs(os.path.dirname(os.path.abspath(FLAGS.output)), exist_ok=True)
  with open(FLAGS.output, "w", encoding="utf-8") as f:
    f.write(text)
  print("wrote %s (%d games, commit %s)" % (FLAGS.output, len(games), commit))


if __name__ == "__main__":
  _define_flags()
  app.run(main, flags_parser=errors.parse_flags)
