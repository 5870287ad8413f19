r"""Reads what runs left into RunRecord records (no formatting here).

A path given to `collect` is a run directory (what `paac_tf.train` writes), a results
directory, or a folder of either. Read from each (recursively):
- `eval.json` files (written by `python -m paac_tf.evaluate`): one RunRecord per evaluation
  (a run evaluated at its budget and again after it was resumed has both); the score of a
  run in the medians is its evaluation with the highest train_step. An eval.json outside
  any run directory is matched to its run through its `policy_dir`;
- TensorBoard event files (`train/events.out.tfevents*`): the training budget (agent
  steps; frames = 4 x agent steps on Atari) and wall time, and, for runs never
  evaluated, the last training average;
- optionally `run_info.json`, the nearest one in the run's or the evaluation's folder or
  their parents up to the argument:
    {"command": str, "wall_time_s": float, "hardware": str, "agent_steps": int,
     "frames": int, "algorithm": "paac"|"apex", "env_name": str, "notes": str,
     "config": str, "machine_note": str, "archive_reason": str, "superseded_by": str}
  (every key optional; its values override what the events imply; "config" names the
  config that made the run, else it is derived from the command: run_labels.py), and
  `command.txt` / `wall_time.txt` (seconds, or H:MM:SS).
Each RunRecord is named by its results folder: the folder of its eval.json, or the run
directory when the evaluation lies inside it. Folders under an `archive/` folder below an
argument (superseded runs) are left out of `collect` and read by `collect_archived`.

Finding the runs and their evaluations is `run_groups`; the record is `run_record`.
"""
import os
import re

from absl import logging

from paac_tf import errors
from tools import reference_scores as ref
from tools import events
from tools.reports import run_groups
from tools.reports import run_labels
from tools.reports import run_record

RUN_INFO_KEYS = ("command", "wall_time_s", "hardware", "agent_steps", "frames", "algorithm",
                 "env_name", "notes", "commit", "commit_note", "evaluated_policy", "config",
                 "config_note", "machine_note", "stop_reason", "stop_reason_note",
                 "archive_reason", "superseded_by",
                 "wall_time_note") + events.LEARNER_RATE_KEYS  # Ape-X's
COMMAND_TXT = "command.txt"
WALL_TIME_TXT = "wall_time.txt"
_SUMMARIES_WALL_TIME = "%s (pauses over %d s left out)" % (events.SUMMARIES_CSV, events.PAUSE_S)


def _nearest(name, starts, stop):
  """The first `name` found in a start folder or its parents up to `stop`."""
  for start in starts:
    if not start:
      continue
    directory = os.path.abspath(start)
    while True:
      candidate = os.path.join(directory, name)
      if os.path.isfile(candidate):
        return candidate
      if (not run_groups.under(directory, stop) or
          os.path.realpath(directory) == os.path.realpath(stop)):
        break
      parent = os.path.dirname(directory)
      if parent == directory:
        break
      directory = parent
  return None


def _eval_order(item):
  path, data = item
  step = data.get("train_step")
  try:
    step = float(step)
  except (TypeError, ValueError):
    step = -1.0
  return (step, str(data.get("timestamp") or ""), os.path.getmtime(path))


def _parse_wall_time(text):
  text = text.strip()
  try:
    return float(text), None
  except ValueError:
    pass
  match = re.fullmatch(r"(?:(\d+)\s*d(?:ays?)?[ ,]*)?(\d+):(\d{1,2}):(\d{1,2}(?:\.\d*)?)", text)
  if match:
    days, h, m, s = match.groups()
    return (int(days or 0) * 86400 + int(h) * 3600 + int(m) * 60 + float(s)), None
  return None, text.splitlines()[0] if text else None


def _read_text(path):
  try:
    with open(path, encoding="utf-8") as f:
      return f.read().strip()
  except OSError as e:
    logging.warning("Cannot read %s (%s).", path, e)
    return None


def _hardware_text(value):
  if value is None or value == "":
    return None
  if isinstance(value, dict):
    return ", ".join("%s: %s" % (k, v) for k, v in value.items())
  if isinstance(value, (list, tuple)):
    return ", ".join(str(v) for v in value)
  return str(value)


def _number(value):
  try:
    return float(value) if value is not None and value != "" else None
  except (TypeError, ValueError):
    return None


def build_results(group):
  """One RunRecord per evaluation of the group (oldest first), or one without any: each
  earlier evaluation of a run (e.g. at the issue's budget, before the run was resumed) is
  a row of its own; the newest is the run's score for the medians."""
  variants = [e for e in group.evals if run_record.is_policy_only(e[1])]
  group.evals = [e for e in group.evals if not run_record.is_policy_only(e[1])]
  if len(group.evals) <= 1:
    results = [build_result(group)]
  else:
    ordered = sorted(group.evals, key=_eval_order)
    newest = build_result(group, ordered[-1])
    newest.other_evals = [p for p, _ in ordered[:-1]]
    results = []
    for chosen in ordered[:-1]:
      result = build_result(group, chosen, run_events=newest.run_events)
      result.newer_eval = newest.eval_path
      results.append(result)
    results.append(newest)
  for path, data in variants:   # beside the evaluation of the same policy
    same = [r for r in results if r.evaluation and
            r.evaluation.get("train_step") == data.get("train_step")]
    if same:
      same[-1].policy_only, same[-1].policy_only_path = data, path
  return results


def build_result(group, chosen=None, run_events=None):
  """A RunRecord from a group's run directory, one evaluation (`chosen`, a (path, dict);
  default: the newest) and the run_info.json nearest to it. `run_events`: the run's
  summaries if already read."""
  run = group.run
  root = run.root if run else group.root
  result = run_record.RunRecord(name=os.path.basename(os.path.normpath(root)), root=root,
                                folder=root)
  run_config = run.run_config if run else {}

  if chosen is None and group.evals:
    chosen = sorted(group.evals, key=_eval_order)[-1]
  if chosen is not None:
    result.eval_path, result.evaluation = chosen
    if not run_groups.under(result.eval_path, root):
      result.folder = os.path.dirname(result.eval_path)

  starts = ([os.path.dirname(result.eval_path)] if result.eval_path else []) + [root]
  info_path = _nearest(run_groups.RUN_INFO, starts, group.top)
  if info_path:
    info = events.read_json(info_path)
    if info is not None:
      unknown = sorted(set(info) - set(RUN_INFO_KEYS))
      if unknown:
        logging.info("%s: keys %s are not part of the run_info schema; ignored.", info_path,
                     unknown)
      result.run_info, result.run_info_path = info, info_path
  info = result.run_info
  evaluation = result.evaluation or {}

  result.env_name = evaluation.get("env_name") or run_config.get("env_name") or info.get(
      "env_name")
  result.algorithm = run_config.get("algorithm") or evaluation.get("algorithm") or info.get(
      "algorithm")
  # The run directory's run_config.json where this machine has it, else the network bound
  # in the results folder's operative_config.gin (committed with it).
  result.network = run_config.get("network") or run_groups.operative_binding(
      result.folder, "*.network")
  result.hardware = _hardware_text(info.get("hardware"))
  result.command = info.get("command")
  if not result.command:
    command_path = _nearest(COMMAND_TXT, starts, group.top)
    if command_path:
      result.command = _read_text(command_path)
  result.config, result.config_explicit = run_labels.config_of(info, result.command)
  if info.get("notes"):
    result.notes.append(str(info["notes"]))

  if run_events is not None:
    result.run_events = run_events
  elif run is not None and run.event_dir and events.event_files(run.event_dir):
    result.run_events = events.read_run_events(run.event_dir)
  if result.run_events is not None:
    if result.run_events.truncated:
      result.notes.append("the last event record was incomplete (run still writing?)")
  _fill_budget(result, run_config)
  _fill_wall_time(result, starts, group.top)
  return result


def _fill_budget(result, run_config):
  """Agent steps and frames of the evaluated policy and of the whole run."""
  info = result.run_info
  run_events = result.run_events
  per_step = ref.FRAMES_PER_AGENT_STEP if result.atari else 1
  # The whole run.
  if _number(info.get("agent_steps")) is not None:
    result.run_agent_steps = int(_number(info["agent_steps"]))
  elif _number(info.get("frames")) is not None:
    result.run_agent_steps = int(_number(info["frames"]) / per_step)
  elif run_events is not None and run_events.last_env_step() is not None:
    result.run_agent_steps = run_events.last_env_step()
    result.summaries_used = True
  if _number(info.get("frames")) is not None:
    result.run_frames = _number(info["frames"])
  elif result.run_agent_steps is not None:
    result.run_frames = float(result.run_agent_steps * per_step)
  # The evaluated policy.
  policy_steps = None
  evaluation = result.evaluation or {}
  train_step = _number(evaluation.get("train_step"))
  # paac_tf's exports record the agent steps a policy was trained for ("train_step_unit":
  # "agent_steps"; older exports did not say so but meant the same). An evaluation of a
  # policy saved by other code may count learner updates instead ("updates").
  unit = evaluation.get("train_step_unit") or "agent_steps"
  if train_step is not None and unit == "agent_steps":
    policy_steps = int(train_step)
    source = "the evaluated policy's train_step (agent steps)"
  elif train_step is not None and unit == "updates":
    if run_events is not None:
      policy_steps = run_events.agent_steps_at_update(int(train_step))
      source = "the evaluated policy's update %d, from the training summaries" % train_step
      result.summaries_used |= policy_steps is not None
    # n_e and t_max: the run config of a PAAC run, whose old exports counted updates.
    if policy_steps is None and run_config.get("num_envs") and run_config.get("t_max"):
      policy_steps = int(train_step) * int(run_config["num_envs"]) * int(run_config["t_max"])
      source = "the evaluated policy's update %d x n_e x t_max" % train_step
  if policy_steps is not None:
    result.agent_steps = policy_steps
    result.frames = float(policy_steps * per_step)
    result.steps_source = source
  else:
    result.agent_steps, result.frames = result.run_agent_steps, result.run_frames
    if _number(info.get("frames")) is not None or _number(info.get("agent_steps")) is not None:
      result.steps_source = "run_info.json"
    elif result.run_agent_steps is not None:
      result.steps_source = "the last training summary"


def _fill_wall_time(result, starts, top):
  info = result.run_info
  # A published run: from its summaries.csv, every summary in time order, pauses left out
  # (tools/events.py, PAUSE_S); to the policy's step for a policy saved before the run's end
  # (e.g. at 10M frames of a 40M-frame run). run_info.json's wall_time_s counted the paused
  # time of runs published before the pauses were left out of it.
  rows = events.summaries_rows(result.folder) if result.folder else None
  if rows is not None:
    earlier = (result.agent_steps is not None and result.run_agent_steps is not None and
               result.agent_steps < result.run_agent_steps)
    seconds = events.summaries_training_seconds(rows, result.agent_steps if earlier else None)
    if seconds is None and earlier:   # no return summary as early as the policy
      seconds, earlier = events.summaries_training_seconds(rows), False
    if seconds is not None:
      result.wall_time_s = seconds
      result.wall_time_source = _SUMMARIES_WALL_TIME + (
          ", to the evaluated policy's step" if earlier else "")
      return
  if _number(info.get("wall_time_s")) is not None:
    result.wall_time_s, result.wall_time_source = _number(info["wall_time_s"]), "run_info.json"
    return
  wall_path = _nearest(WALL_TIME_TXT, starts, top)
  if wall_path:
    seconds, text = _parse_wall_time(_read_text(wall_path) or "")
    if seconds is not None or text:
      result.wall_time_s, result.wall_time_text = seconds, text
      result.wall_time_source = WALL_TIME_TXT
      return
  if result.run_events is not None and result.run_events.spans:
    result.wall_time_s = result.run_events.wall_time_s()
    result.wall_time_source = "event timestamps"
    result.summaries_used = True


def _sort_key(result):
  return (result.game or result.env_name or "~", run_record.algorithm_name(result.algorithm),
          result.config or "~", result.frames if result.frames is not None else -1.0,
          result.folder_name)


def collect_archived(paths):
  """[(folder, run_info dict, [RunRecord])]: each folder in an archive/ folder below the
  given paths, with its run_info.json and what compare reads from it (maybe nothing)."""
  out = []
  for path in paths:
    for archive in run_labels.archive_dirs(os.path.abspath(os.path.expanduser(path))):
      for name in sorted(os.listdir(archive)):
        folder = os.path.join(archive, name)
        if not os.path.isdir(folder) or name.startswith("."):
          continue
        info_path = os.path.join(folder, run_groups.RUN_INFO)
        info = (events.read_json(info_path) if os.path.isfile(info_path) else None) or {}
        try:
          results = [r for g in run_groups.find_groups(folder).values() for r in build_results(g)]
        except errors.UserError:
          results = []
        out.append((folder, info, sorted(results, key=_sort_key)))
  return out


def collect(paths):
  """RunResults for the given run/results directories (a run given twice counts once),
  leaving out archive/ folders below them (see collect_archived)."""
  if not paths:
    raise errors.UserError("Give at least one run or results directory.")
  merged = {}
  for path in paths:
    for key, group in run_groups.find_groups(path).items():
      if key in merged:
        seen = {os.path.realpath(p) for p, _ in merged[key].evals}
        merged[key].evals.extend(e for e in group.evals if os.path.realpath(e[0]) not in seen)
        merged[key].run = merged[key].run or group.run
      else:
        merged[key] = group
  results = [r for g in merged.values() for r in build_results(g)]
  results.sort(key=_sort_key)
  return results
