"""How a run directory's last training process ended: `<root_dir>/last_stop.json`.

Written by `train_eval` when its training returns (finished, reached its target average
return, or stopped by a signal), so that tools (the campaign) read why a run stopped from a
file rather than from its log. A process that dies without returning (killed, crashed,
diverged) writes none: the file is then an earlier process's, which `read(..., since=...)`
leaves out by its start time. Standard library only: tools read it without TensorFlow.
"""
import datetime
import json
import math
import os

FILE = "last_stop.json"


def now():
  """The time stamps of the record: ISO 8601, UTC, to the second."""
  return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def record(result, started, ended):
  """The record of a process's RunResult `result` (reason 'done', 'target', 'signal' or
  'callback'); `started` and `ended` are the process's training start and end (`now()`)."""
  average = float(result.average_return)
  return {"reason": result.reason, "agent_steps": int(result.agent_steps),
          "updates": int(result.updates), "episodes": int(result.episodes),
          "average_return": average if math.isfinite(average) else None,
          "started": started, "ended": ended}


def write(root_dir, result, started):
  """Writes the record of `result` to root_dir/last_stop.json, in place of the previous
  process's (whole or not at all: a temporary file renamed)."""
  path = os.path.join(root_dir, FILE)
  with open(path + ".tmp", "w") as f:
    json.dump(record(result, started, now()), f, indent=2, sort_keys=True)
  os.replace(path + ".tmp", path)


def read(root_dir, since=None):
  """The record in root_dir, or None: none written, or (with `since`, an ISO time stamp) one
  of a process that started before `since`."""
  path = os.path.join(root_dir, FILE)
  try:
    with open(path) as f:
      found = json.load(f)
  except (OSError, ValueError):
    return None
  if since is not None and _time(found.get("started")) < _time(since):
    return None
  return found


def _time(stamp):
  try:
    return datetime.datetime.fromisoformat(stamp)
  except (TypeError, ValueError):
    return datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)
