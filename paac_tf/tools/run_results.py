r"""Finds runs and reads what they left into RunResult records (no formatting here).

A path given to `collect` is a run directory (what `paac_tf.train` writes), a results
directory, or a folder of either. Read from each (recursively):
- `eval.json` files (written by `python -m paac_tf.evaluate`): one RunResult per evaluation
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
Each RunResult is named by its results folder: the folder of its eval.json, or the run
directory when the evaluation lies inside it. Folders under an `archive/` folder below an
argument (superseded runs) are left out of `collect` and read by `collect_archived`.
"""
import dataclasses
import os
import re
import statistics
from typing import List, Optional

from absl import logging

from paac_tf import errors
from paac_tf.algorithms import registry
from paac_tf.envs import names
from paac_tf.tools import reference_scores as ref
from paac_tf.tools import events
from paac_tf.tools import run_labels

RUN_INFO = "run_info.json"
RUN_INFO_KEYS = ("command", "wall_time_s", "hardware", "agent_steps", "frames", "algorithm",
                 "env_name", "notes", "commit", "evaluated_policy", "config", "machine_note",
                 "archive_reason", "superseded_by")
COMMAND_TXT = "command.txt"
WALL_TIME_TXT = "wall_time.txt"
_EVAL_NAME = re.compile(r"^(?:.*[._-])?eval(?:[._-].*)?\.json$")


@dataclasses.dataclass
class RunResult:
  """What compare knows about one run."""
  name: str
  root: str                                # run directory, or the folder of its eval.json
  folder: str = ""                         # the results folder that names the row
  config: Optional[str] = None             # config label (run_labels.config_of)
  config_explicit: bool = False            # from run_info's "config" (not the command)
  env_name: Optional[str] = None
  algorithm: Optional[str] = None
  network: Optional[str] = None
  evaluation: Optional[dict] = None        # the chosen eval.json's contents
  eval_path: Optional[str] = None
  other_evals: List[str] = dataclasses.field(default_factory=list)   # the run's earlier ones
  policy_only: Optional[dict] = None       # the same policy without the FIRE assist
  policy_only_path: Optional[str] = None
  newer_eval: Optional[str] = None         # set on an earlier evaluation: the run's newest
  run_events: Optional[events.RunEvents] = None
  run_info: dict = dataclasses.field(default_factory=dict)
  run_info_path: Optional[str] = None
  command: Optional[str] = None
  agent_steps: Optional[int] = None        # of the evaluated policy if known, else the run's
  run_agent_steps: Optional[int] = None    # the whole run's
  frames: Optional[float] = None
  run_frames: Optional[float] = None
  steps_source: str = ""
  wall_time_s: Optional[float] = None
  wall_time_text: Optional[str] = None     # wall_time.txt that is not a number
  wall_time_source: str = ""
  hardware: Optional[str] = None
  notes: List[str] = dataclasses.field(default_factory=list)

  @property
  def game(self):
    return ref.game_key(self.env_name)

  @property
  def atari(self):
    return is_atari(self.env_name)

  @property
  def evaluated(self):
    return self.evaluation is not None

  @property
  def score(self):
    """(mean, std, episodes) of the evaluation, or None."""
    if self.evaluation is None:
      return None
    return eval_stats(self.evaluation)

  @property
  def training_return(self):
    """The last training average (ScalarPoint), or None."""
    if self.run_events is None:
      return None
    return (self.run_events.last(self.run_events.training_return_tag()) or
            self.run_events.last(events.RETURN_VS_UPDATES))

  @property
  def shown_score(self):
    if self.evaluated:
      return self.score[0]
    point = self.training_return
    return point.value if point else None

  @property
  def hns(self):
    """Human-normalized score (fraction) of the shown score, or None."""
    return ref.human_normalized(self.env_name, self.shown_score)

  @property
  def folder_name(self):
    return os.path.basename(os.path.normpath(self.folder or self.root))

  @property
  def label(self):
    parts = [self.game or self.env_name or "?", algorithm_name(self.algorithm)]
    return " ".join(p for p in parts if p)


def algorithm_name(algorithm):
  if not algorithm:
    return ""
  name = str(algorithm)
  shown = registry.display_name(name.lower())
  return name if shown == name.lower() else shown


def is_atari(env_name):
  if not env_name:
    return False
  try:
    return names.resolve_atari(str(env_name)) is not None
  except Exception:  # pylint: disable=broad-except  (ale-py missing: use the tables)
    return ref.game_key(env_name) is not None


def eval_stats(evaluation):
  """(mean, sample std, episodes) from an eval.json, tolerating a missing mean/std/episodes.

  The std is the sample std (ddof 1), computed from the returns when the file has them
  (evaluations before the seeds-and-assists protocol recorded the population std)."""
  returns = [float(r) for r in evaluation.get("returns") or []]
  mean = evaluation.get("mean")
  if mean is None and returns:
    mean = sum(returns) / len(returns)
  std = statistics.stdev(returns) if len(returns) > 1 else evaluation.get("std")
  episodes = evaluation.get("episodes")
  if episodes is None:
    episodes = len(returns) or None
  return (float(mean) if mean is not None else None,
          float(std) if std is not None else None, episodes)


def standard_error(evaluation):
  """The standard error of the evaluation's mean (sample std / sqrt(N)), or None."""
  _, std, episodes = eval_stats(evaluation)
  return std / episodes ** 0.5 if std is not None and episodes else None


def is_policy_only(evaluation):
  """Whether an eval.json evaluates a FIRE-reset policy with its own actions only (shown
  beside the policy's evaluation with the assist, not as an evaluation of its own)."""
  applied = evaluation.get("assists") or {}
  return bool(applied.get("trained_with_fire_reset")) and not applied.get("fire_at_game_start")


def seeds_apart(evaluation):
  """Whether the evaluation's env seeds are recorded and apart from training's (>= 10**9)."""
  seeds = evaluation.get("env_seeds")
  return bool(seeds) and int(seeds[0]) >= EVAL_SEED_FLOOR


EVAL_SEED_FLOOR = 10**9     # policies.evaluation.EVAL_SEED: training seeds lie below


# --- finding and reading ------------------------------------------------------------------

def _is_eval_file(name):
  return bool(_EVAL_NAME.match(name)) and name != events.RUN_CONFIG and name != RUN_INFO


def _read_eval(path):
  data = events.read_json(path)
  if data is None:
    return None
  if data.get("mean") is None and not data.get("returns"):
    logging.warning("Skipping %s: no 'mean' nor 'returns' (not an evaluation).", path)
    return None
  return data


def _under(path, directory):
  path, directory = os.path.realpath(path), os.path.realpath(directory)
  return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _policy_run_root(policy_dir):
  """RUN for RUN/policies/<model>/<version>, else None."""
  if not policy_dir:
    return None
  parts = os.path.normpath(str(policy_dir)).split(os.sep)
  if "policies" in parts:
    i = len(parts) - 1 - parts[::-1].index("policies")
    if i > 0:
      return os.sep.join(parts[:i]) or os.sep
  return None


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
      if not _under(directory, stop) or os.path.realpath(directory) == os.path.realpath(stop):
        break
      parent = os.path.dirname(directory)
      if parent == directory:
        break
      directory = parent
  return None


@dataclasses.dataclass
class _Group:
  root: str
  top: str                          # the argument it was found under
  run: Optional[events.RunDir] = None
  evals: list = dataclasses.field(default_factory=list)   # [(path, dict)]


def find_groups(path):
  """The runs under one argument, leaving out archive/ folders below it:
  {realpath(root): _Group}. UserError if nothing to read."""
  top = os.path.abspath(os.path.expanduser(path))
  runs = [r for r in events.find_run_dirs(top)       # raises for a missing path / a file
          if not run_labels.archived_below(r.root, top)]
  eval_files = []
  for dirpath, _, filenames in events.walk(top):
    if not run_labels.archived_below(dirpath, top):
      eval_files.extend(os.path.join(dirpath, n) for n in filenames if _is_eval_file(n))
  evals = [(p, d) for p, d in ((p, _read_eval(p)) for p in eval_files) if d is not None]
  if not runs and not evals:
    raise errors.UserError(
        "%s: nothing to read (no eval.json and no TensorBoard event files %s under it)."
        % (path, events.EVENT_FILE_PATTERN))
  groups = {os.path.realpath(r.root): _Group(root=r.root, top=top, run=r) for r in runs}
  for eval_path, data in evals:
    owners = [r for r in runs if _under(eval_path, r.root)]
    if not owners:
      owners = [r for r in runs if data.get("policy_dir") and _under(data["policy_dir"], r.root)]
    if not owners and len(runs) == 1:
      owners = runs
    if owners:
      owner = max(owners, key=lambda r: len(os.path.realpath(r.root)))
      groups[os.path.realpath(owner.root)].evals.append((eval_path, data))
      continue
    root = _policy_run_root(data.get("policy_dir"))
    if not root or not os.path.isdir(root):
      root = _policy_run_root(eval_path) or os.path.dirname(eval_path)
    group = groups.setdefault(os.path.realpath(root), _Group(root=root, top=top))
    group.evals.append((eval_path, data))
  for group in groups.values():
    if group.run is None and os.path.isdir(group.root):
      # A results folder's eval.json names a run directory that exists here: read its events.
      linked = [r for r in events.find_run_dirs(group.root)
                if os.path.realpath(r.root) == os.path.realpath(group.root)]
      if linked:
        group.run = linked[0]
  return groups


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
  """One RunResult per evaluation of the group (oldest first), or one without any: each
  earlier evaluation of a run (e.g. at the issue's budget, before the run was resumed) is
  a row of its own; the newest is the run's score for the medians."""
  variants = [e for e in group.evals if is_policy_only(e[1])]
  group.evals = [e for e in group.evals if not is_policy_only(e[1])]
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
  """A RunResult from a group's run directory, one evaluation (`chosen`, a (path, dict);
  default: the newest) and the run_info.json nearest to it. `run_events`: the run's
  summaries if already read."""
  run = group.run
  root = run.root if run else group.root
  result = RunResult(name=os.path.basename(os.path.normpath(root)), root=root, folder=root)
  run_config = run.run_config if run else {}

  if chosen is None and group.evals:
    chosen = sorted(group.evals, key=_eval_order)[-1]
  if chosen is not None:
    result.eval_path, result.evaluation = chosen
    if not _under(result.eval_path, root):
      result.folder = os.path.dirname(result.eval_path)

  starts = ([os.path.dirname(result.eval_path)] if result.eval_path else []) + [root]
  info_path = _nearest(RUN_INFO, starts, group.top)
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
  result.network = run_config.get("network")
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
      policy_steps = run_events.env_steps_at_update(int(train_step))
      source = "the evaluated policy's update %d, from the training summaries" % train_step
    if (policy_steps is None and str(run_config.get("algorithm")) == "paac" and
        run_config.get("num_envs") and run_config.get("t_max")):
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


def _sort_key(result):
  return (result.game or result.env_name or "~", algorithm_name(result.algorithm),
          result.config or "~", result.frames if result.frames is not None else -1.0,
          result.folder_name)


def collect_archived(paths):
  """[(folder, run_info dict, [RunResult])]: each folder in an archive/ folder below the
  given paths, with its run_info.json and what compare reads from it (maybe nothing)."""
  out = []
  for path in paths:
    for archive in run_labels.archive_dirs(os.path.abspath(os.path.expanduser(path))):
      for name in sorted(os.listdir(archive)):
        folder = os.path.join(archive, name)
        if not os.path.isdir(folder) or name.startswith("."):
          continue
        info_path = os.path.join(folder, RUN_INFO)
        info = (events.read_json(info_path) if os.path.isfile(info_path) else None) or {}
        try:
          results = [r for g in find_groups(folder).values() for r in build_results(g)]
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
    for key, group in find_groups(path).items():
      if key in merged:
        seen = {os.path.realpath(p) for p, _ in merged[key].evals}
        merged[key].evals.extend(e for e in group.evals if os.path.realpath(e[0]) not in seen)
        merged[key].run = merged[key].run or group.run
      else:
        merged[key] = group
  results = [r for g in merged.values() for r in build_results(g)]
  results.sort(key=_sort_key)
  return results

