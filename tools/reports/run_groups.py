"""Finds the runs and the evaluations under a path and groups each evaluation with its run.

`find_groups` walks a run directory, a results directory or a folder of either (leaving
out `archive/` folders below it): the run directories (TensorBoard event files) and the
`eval.json` files in it, each evaluation given to the run it lies in, else to the run its
`policy_dir` names (see `run_results` for what is read from a group). An evaluation made at
another epsilon than its export's default is left out (`run_record.off_protocol`).
"""
import dataclasses
import os
import re
from typing import Optional

from absl import logging

from paac_tf import errors
from tools import events
from tools.reports import run_labels
from tools.reports import run_record

RUN_INFO = "run_info.json"    # a run's or results folder's facts (run_results reads it)
# The bindings the run used (tools/campaign/publish_run.py copies it into the results folder).
OPERATIVE_CONFIG = "operative_config.gin"
_EVAL_NAME = re.compile(r"^(?:.*[._-])?eval(?:[._-].*)?\.json$")


def _is_eval_file(name):
  return bool(_EVAL_NAME.match(name)) and name != events.RUN_CONFIG and name != RUN_INFO


def _read_eval(path):
  data = events.read_json(path)
  if data is None:
    return None
  if data.get("mean") is None and not data.get("returns"):
    logging.warning("Skipping %s: no 'mean' nor 'returns' (not an evaluation).", path)
    return None
  if run_record.off_protocol(data):
    logging.info("Leaving out %s: evaluated at epsilon %g, not the protocol's %g (a study "
                 "of the policy, not the run's score).", path, data["epsilon"],
                 data["default_epsilon"])
    return None
  return with_distinct_episodes(path, data)


DISTINCT_EPISODES = "distinct_episodes.json"   # a later recount of an evaluation's episodes
_DISTINCT_KEYS = ("distinct_episodes", "most_repeated_episode", "replays", "replay_warning")


def with_distinct_episodes(path, data):
  """The evaluation `data` (read from `path`) with how many of its episodes are distinct,
  from the DISTINCT_EPISODES beside it where the evaluation predates that count and the file
  holds the same returns (the same policy, seeds and episodes evaluated again)."""
  recount_path = os.path.join(os.path.dirname(path), DISTINCT_EPISODES)
  if "replays" in data or not os.path.isfile(recount_path):   # most runs have no recount
    return data
  recount = events.read_json(recount_path)
  if not recount or recount.get("returns") != data.get("returns"):
    return data
  return dict(data, **{k: recount[k] for k in _DISTINCT_KEYS if k in recount})


def operative_binding(folder, parameter):
  """The value bound to `parameter` in the folder's operative_config.gin, as written there
  (quotes around a string removed), or None where the file is missing or does not bind it.
  `parameter`: 'configurable.name', or '*.name' for that name of any configurable (the first
  binding)."""
  path = os.path.join(folder, OPERATIVE_CONFIG)
  if not os.path.isfile(path):
    return None
  name = (r"[\w.]+\." + re.escape(parameter[2:]) if parameter.startswith("*.")
          else re.escape(parameter))
  with open(path, encoding="utf-8") as f:
    match = re.search(r"^\s*%s\s*=\s*(.*?)\s*$" % name, f.read(), re.M)
  if not match:
    return None
  value = match.group(1)
  return value[1:-1] if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"" else value


def under(path, directory):
  """Whether `path` is `directory` or lies below it (both resolved to real paths)."""
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


@dataclasses.dataclass
class _Group:
  """A run directory (or the folder its evaluations name) and its evaluations."""
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
    owners = [r for r in runs if under(eval_path, r.root)]
    if not owners:
      owners = [r for r in runs if data.get("policy_dir") and under(data["policy_dir"], r.root)]
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
    if group.run is None and os.path.isdir(group.root) and under(group.root, top):
      # An eval.json names a run directory under the argument: read its events. One outside
      # it (e.g. /work/runs/x, where a results folder's run was trained) is not read, so
      # that a report regenerates from its results folders alone; runs given as arguments
      # of their own are joined to it by collect.
      linked = [r for r in events.find_run_dirs(group.root)
                if os.path.realpath(r.root) == os.path.realpath(group.root)]
      if linked:
        group.run = linked[0]
  return groups
