"""The published reference run's curve beside a run's own, in TensorBoard.

A run of a shipped config (configs/) on an environment that has a committed
reference run under the repository's results/ gets that run's training return curve
written once, at start, to root_dir/reference/ (TensorBoard event files, the same tags as
the run's own train/ summaries, step = agent steps): `tensorboard --logdir ROOT_DIR` shows
both curves, as the runs `train` and `reference`.

Which results folder is the reference (`choose`): among the folders directly under results/
whose run_info.json names the same config ("config", e.g. "atari.gin"; folders without it,
or with extra words such as "atari_fast.gin + learning_rate=0.002", are no reference) and
the same environment (Atari games compared by game, so "Pong" matches
"PongNoFrameskip-v4"), the one with the most agent steps ("agent_steps"); ties go to the
first name in sorted order. results/archive/ is not looked in.

Where results/ is: the repository checkout's (the package folder's parent's results/).
An installed wheel has none: then the run writes no reference and says so in one INFO line
(the published results are the repository's; they are not shipped as package data).
`reference_curve.results_dir` points the lookup elsewhere. The curve is thinned to at most
`max_points` points per tag (evenly spaced, first and last kept): a few KB of events.
Resuming the run writes nothing: root_dir/reference already holds its events.
"""
import csv
import json
import os
import shutil
import time

from absl import logging

from paac_tf import errors
from paac_tf.envs import names
from paac_tf.bookkeeping import checks
from paac_tf.bookkeeping import config
from paac_tf.bookkeeping import summary_tags

SUMMARIES_CSV = "summaries.csv"   # a results folder's training summaries (publish_run)
RUN_INFO = "run_info.json"        # a results folder's record: config, env_name, agent_steps...
REFERENCE_DIR = "reference"       # root_dir/reference: the reference's event files
RESULTS_DIR = os.path.join(os.path.dirname(config.PACKAGE_DIR), "results")
# The training-return curves against agent steps (Ape-X's near-greedy one where it has it).
TAGS = (summary_tags.RETURN_VS_AGENT_STEPS, summary_tags.LOW_EPSILON_RETURN_VS_AGENT_STEPS)


def read_series(folder, tags):
  """{tag: {agent step: (wall time, value)}} of `tags` from the folder's summaries.csv."""
  by_tag = {tag: {} for tag in tags}
  with open(os.path.join(folder, SUMMARIES_CSV), newline="", encoding="utf-8") as f:
    for row in csv.DictReader(f):
      if row["tag"] in by_tag:
        by_tag[row["tag"]][int(float(row["step"]))] = (float(row["wall_time"]),
                                                       float(row["value"]))
  return by_tag


def choose(runs, config_name, env_key):
  """The reference among `runs` ({folder name: run_info dict with "config", "env_key",
  "agent_steps"}): same config and environment key, most agent steps, ties by name. None
  if no run qualifies."""
  fitting = [(-int(info.get("agent_steps") or 0), name) for name, info in runs.items()
             if info.get("config") == config_name and info.get("env_key") == env_key]
  return min(fitting)[1] if fitting else None


def env_key(env):
  """What identifies an environment across its names: an Atari game's name ('Pong' for
  'PongNoFrameskip-v4'), else the gymnasium id. `env`: this run's `names.Environment`, or
  a name a results folder recorded (not resolved: only read as an Atari game's name, else
  taken as the gymnasium id)."""
  if isinstance(env, names.Environment):
    return env.game.name if env.is_atari else env.gymnasium_id
  game = names.resolve_atari(str(env))
  return game.name if game is not None else str(env)


def find_reference(results_dir, config_name, env):
  """The folder under `results_dir` of the reference run of `config_name` on `env` (see
  the module docstring), or None."""
  runs = {}
  for name in sorted(os.listdir(results_dir)):
    folder = os.path.join(results_dir, name)
    if not (os.path.isfile(os.path.join(folder, RUN_INFO)) and
            os.path.isfile(os.path.join(folder, SUMMARIES_CSV))):
      continue
    try:
      with open(os.path.join(folder, RUN_INFO), encoding="utf-8") as f:
        info = json.load(f)
      if info.get("config") != config_name:
        continue
      runs[name] = dict(info, env_key=env_key(str(info.get("env_name"))))
    except (OSError, ValueError, AttributeError, errors.UserError) as e:
      logging.debug("Not a reference candidate: %s (%s).", folder, e)
  chosen = choose(runs, config_name, env_key(env))
  return os.path.join(results_dir, chosen) if chosen else None


def thin(points, max_points):
  """At most `max_points` of `points` (a sorted list), evenly spaced by index, the first
  and the last kept."""
  if len(points) <= max_points:
    return list(points)
  if max_points < 2:
    return [points[-1]]
  last = len(points) - 1
  return [points[round(i * last / (max_points - 1))] for i in range(max_points)]


def shipped_config_name(config_files):
  """The name of the run's config ('atari.gin') when its last gin file is a shipped one,
  else None (a user's own file, or none)."""
  if not config_files:
    return None
  path = os.path.abspath(config_files[-1])
  return os.path.basename(path) if os.path.dirname(path) == os.path.abspath(
      config.CONFIGS_DIR) else None


def has_events(directory):
  return os.path.isdir(directory) and any(n.startswith("events.out.tfevents")
                                          for n in os.listdir(directory))


@checks.configurable("reference_curve", denylist=["root_dir", "config_files", "env"])
def write(root_dir, config_files, env, results_dir=None, max_points: checks.Count = 400):
  """Writes the reference run's curve to root_dir/reference (see the module docstring);
  returns that folder, or None when there is no reference. Never fails the run: a results
  folder that cannot be read is logged and skipped.

  Args:
    results_dir: where the results folders are (None: the repository checkout's results/).
    max_points: points kept per curve.
  """
  target = os.path.join(root_dir, REFERENCE_DIR)
  if has_events(target):
    return target   # written when the run started; a resumed run adds nothing
  config_name = shipped_config_name(config_files)
  if config_name is None:
    return None
  results_dir = results_dir or RESULTS_DIR
  if not os.path.isdir(results_dir):
    logging.info("No reference curve in TensorBoard: no results folder at %s (the "
                 "repository checkout has it; an installed package does not).", results_dir)
    return None
  try:
    folder = find_reference(results_dir, config_name, env)
    if folder is None:
      logging.info("No reference curve in TensorBoard: no run of %s on %s in %s.",
                   config_name, env, results_dir)
      return None
    series = read_series(folder, TAGS)
    curves = {tag: thin(sorted((step, value) for step, (_, value) in points.items()),
                        int(max_points)) for tag, points in series.items() if points}
    if not curves:
      logging.info("No reference curve in TensorBoard: %s has no %s.", folder, TAGS[0])
      return None
    _write_events(target, curves)
  except (OSError, ValueError, KeyError) as e:
    logging.warning("No reference curve in TensorBoard: writing it failed (%s).", e)
    return None
  logging.info("Reference curve of %s (%s on %s) in %s: `tensorboard --logdir %s` shows it "
               "beside this run's.", folder, config_name, env, target, root_dir)
  return target


def _write_events(target, curves):
  """Writes `curves` ({tag: [(step, value)]}) as event files into `target`, whole or not
  at all (written beside it, then renamed). With TensorBoard's own event writer and scalar
  protos, not TensorFlow's summary ops: those would start TensorFlow's runtime here, before
  the training processes set its thread pools (bookkeeping/threads.py: then they cannot)."""
  # Lazy: tensorboard, and this module stays importable by the tools that only read CSV files.
  # pylint: disable=import-outside-toplevel
  from tensorboard.compat.proto import event_pb2
  from tensorboard.compat.proto import summary_pb2
  from tensorboard.summary.writer import event_file_writer
  # pylint: enable=import-outside-toplevel
  partial = target + ".partial"
  shutil.rmtree(partial, ignore_errors=True)
  writer = event_file_writer.EventFileWriter(partial)
  now = time.time()
  for tag, points in curves.items():
    for step, value in points:
      writer.add_event(event_pb2.Event(wall_time=now, step=int(step), summary=summary_pb2.Summary(
          value=[summary_pb2.Summary.Value(tag=tag, simple_value=float(value))])))
  writer.close()
  shutil.rmtree(target, ignore_errors=True)   # a folder without events (a crash before)
  os.replace(partial, target)
