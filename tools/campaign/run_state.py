"""A campaign run's directory: its state file (campaign.json: the history of its training
processes, what was published, which runs trained beside it) and its newest checkpoint."""
import json
import os

from paac_tf.bookkeeping import last_stop

RUN_STATE = "campaign.json"
now = last_stop.now   # the time stamps of campaign.json, as last_stop.json's


def run_dir(plan, run):
  return os.path.join(plan["runs_dir"], run.get("run_dir", run["name"]))


def read_state(directory):
  path = os.path.join(directory, RUN_STATE)
  if not os.path.exists(path):
    return {"history": []}
  with open(path) as f:
    return json.load(f)


def write_state(directory, state):
  os.makedirs(directory, exist_ok=True)
  path = os.path.join(directory, RUN_STATE)
  with open(path + ".tmp", "w") as f:
    json.dump(state, f, indent=2)
  os.replace(path + ".tmp", path)


def checkpoint_step(directory):
  """The agent step of the run's newest checkpoint (train/checkpoint), or 0."""
  index = os.path.join(directory, "train", "checkpoint")
  if not os.path.exists(index):
    return 0
  with open(index) as f:
    for line in f:
      if line.startswith("model_checkpoint_path:"):
        return int(line.split('"')[1].rsplit("-", 1)[1])
  return 0


def alive(pid, directory):
  """Whether process `pid` is alive and trains in `directory`."""
  try:
    with open("/proc/%d/cmdline" % int(pid), "rb") as f:
      cmdline = f.read().decode(errors="replace")
  except (OSError, ValueError):
    return False
  return "--root_dir=" + directory in cmdline


def training_spans(history):
  """(start, end) of each time a run trained (its campaign.json history). A start whose end
  went unrecorded (its session's machine went with the process) ended, at the latest, where
  the next one starts; only the newest may still be open (until now)."""
  starts = [h["started"] for h in history]
  return [(h["started"], h.get("ended") or (starts[i + 1] if i + 1 < len(starts) else now()))
          for i, h in enumerate(history)]


def overlapped(plan, run):
  """Names of the other campaign runs whose training time overlapped this run's."""
  spans = lambda r: training_spans(read_state(run_dir(plan, r)).get("history", []))
  mine = spans(run)
  return sorted(o["name"] for o in plan["runs"] if o is not run and any(
      a < d and c < b for a, b in mine for c, d in spans(o)))


def shared_with(plan, run):
  """Names of the other campaign runs that trained while this one did: those whose spans
  overlap its own now (overlapped) and those recorded in its state before (`shared_with`),
  which it keeps: another run's directory, and with it its spans, may be gone by the time
  this one is published (removed once published, or on a new machine)."""
  directory = run_dir(plan, run)
  state = read_state(directory)
  names = sorted(set(overlapped(plan, run)) | set(state.get("shared_with", [])))
  if names != state.get("shared_with", []):
    state["shared_with"] = names
    write_state(directory, state)
  return names
