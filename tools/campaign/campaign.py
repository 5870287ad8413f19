r"""The learning-run campaign: the planned runs, started two at a time, resumable across sessions.

  python -m tools.campaign.campaign status   # writes results/CAMPAIGN.md: every planned run,
                                            # its command, status (done / running / stopped /
                                            # queued)
  python -m tools.campaign.campaign run      # keeps --slots runs going (nohup ... &)
  python -m tools.campaign.campaign save     # copies each unfinished run's newest checkpoint
                                            # (and its summaries) into
                                            # results/campaign_state/<name>/
  python -m tools.campaign.campaign restore  # on a new machine: brings them back into the
                                            # runs folder

The plan is results/campaign_plan.json (the runs in the order they start; each run's stages
are the total agent steps at which it stops, is evaluated and published with
tools/campaign/publish_run.py; a later stage resumes the same run directory). Each run trains
with the code of one commit (a detached git worktree /work/campaign-<commit>, made when
missing: the plan's "commit" for the run if it names one, else the driver's --commit),
recorded in its run directory's campaign.json with every command and start/stop time, so
that a run continued in a later session uses the code it started with. While a run trains,
the 1-minute load average is sampled every tick into its load.csv, and the other runs
training beside it are kept in its campaign.json (`shared_with`); publish_run states both.
An 'alone' run starts only with `--allow_alone` and when no other run trains or is being
evaluated; the runs after it in the plan wait for it, and it holds the other slots while it
runs. A run whose training stops early at its target average return
(stop_at_average_return: 'target' in the last_stop.json its process wrote) is published there
and done; it is not resumed towards its last stage.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time

from absl import app
from absl import flags

from paac_tf import errors
from paac_tf.bookkeeping import last_stop
from tools import REPO
from tools.campaign import run_state

PLAN = os.path.join(REPO, "results", "campaign_plan.json")
REPORT = os.path.join(REPO, "results", "CAMPAIGN.md")
STATE_DIR = os.path.join(REPO, "results", "campaign_state")


def load_plan(path=PLAN):
  with open(path) as f:
    plan = json.load(f)
  names = [r["name"] for r in plan["runs"]]
  if len(set(names)) != len(names):
    raise SystemExit("error: %s names a run twice." % path)
  return plan


def published_info(run):
  """The run's published results/<name>/run_info.json, or {}."""
  path = os.path.join(REPO, "results", run["name"], "run_info.json")
  if not os.path.exists(path):
    return {}
  with open(path) as f:
    return json.load(f)


def published_steps(run):
  """Agent steps of the run's published results (results/<name>/run_info.json), or 0."""
  return int(published_info(run).get("agent_steps") or 0)


def recorded_published(state):
  """The highest stage the run directory's campaign.json records as published (exit 0), or
  0: a driver started from a checkout older than that publication has no run_info.json for
  it, and would take the run's newest checkpoint for a stage to publish."""
  return max((int(p["step"]) for p in state.get("published", []) if p.get("returncode") == 0),
             default=0)


# Runs of commits before last_stop.json: the last line their training process logged.
STOP_LINE = re.compile(r"[Ss]topped \((\w+)\) at agent step \d+")


def stop_reason(directory, since=None):
  """Why the run's last process stopped: 'done', 'target' or 'signal', from its
  last_stop.json (paac_tf/bookkeeping/last_stop.py) if that process (started at or after
  `since`) wrote one, else from the last 'Stopped (<reason>) at agent step N' line of its
  train.log (runs of earlier commits; there a signal reads 'SIGTERM' or 'SIGINT'), or None."""
  record = last_stop.read(directory, since=since)
  if record is not None:
    return record.get("reason")
  found = None
  path = os.path.join(directory, "train.log")
  if os.path.exists(path):
    with open(path, errors="replace") as f:
      for line in f:
        match = STOP_LINE.search(line)
        if match:
          found = match.group(1)
  return found


def target_step(state, run=None):
  """The agent step at which the run's last process stopped because the training average
  reached its target (stop_at_average_return), or None: that stop is the run's last stage.
  From the run directory's state, else (the directory gone with its machine) from the
  published run_info.json of `run` (its stop_reason, written by publish_run)."""
  last = (state.get("history") or [{}])[-1]
  if last.get("reason") == "target":
    return last.get("end_step")
  info = published_info(run) if run is not None and not state.get("history") else {}
  return int(info["agent_steps"]) if info.get("stop_reason") == "target" else None


def status_of(plan, run):
  """(status, detail): done / running / trained (a stage to publish) / stopped / queued."""
  directory = run_state.run_dir(plan, run)
  state = run_state.read_state(directory)
  step = run_state.checkpoint_step(directory)
  final = run["stages"][-1]
  if state.get("pid") and run_state.alive(state["pid"], directory):
    return "running", "agent step %d of %d (newest checkpoint)" % (step, final)
  published = max(published_steps(run), recorded_published(state))
  target = target_step(state, run)
  stages = [s for s in run["stages"] if not target or s < target] + ([target] if target else [])
  if published >= stages[-1]:
    return "done", "%d agent steps, published" % published
  reached = max([s for s in stages if s <= step], default=0)
  if reached > published:
    return "trained", "agent step %d: stage trained, to evaluate and publish" % step
  if step > 0:
    return "stopped", "stopped at agent step %d (newest checkpoint); next stage %d" % (
        step, next_stage(run, step))
  saved = os.path.exists(os.path.join(STATE_DIR, run["name"], "train", "checkpoint"))
  return "queued", "saved state to restore" if saved else "not started"


def next_stage(run, step):
  """The first stage above `step`, or None once the last stage is reached."""
  return next((s for s in run["stages"] if s > step), None)


def commit_of(code_dir):
  return subprocess.run(["git", "rev-parse", "HEAD"], cwd=code_dir, capture_output=True,
                        text=True, check=True).stdout.strip()


def code_dir_for(commit):
  """A detached worktree of `commit` (made when missing); runs train with its code."""
  path = "/work/campaign-%s" % commit[:7]
  if not os.path.isdir(path):
    subprocess.run(["git", "worktree", "add", "--detach", path, commit], cwd=REPO, check=True)
  return path


def train_command(plan, run, total_steps):
  return ["python", "-m", "paac_tf.train", "--root_dir=" + run_state.run_dir(plan, run)] + list(
      run["args"]) + ["--gin_bindings=train_eval.total_steps=%d" % total_steps]


def start(plan, run, commit):
  """Starts (or resumes) `run` to its next stage with the code of its commit."""
  directory = run_state.run_dir(plan, run)
  state = run_state.read_state(directory)
  commit = state.get("commit") or run.get("commit") or commit
  code = code_dir_for(commit)
  stage = next_stage(run, run_state.checkpoint_step(directory))
  command = train_command(plan, run, stage)
  os.makedirs(directory, exist_ok=True)
  log = open(os.path.join(directory, "train.log"), "a")
  env = dict(os.environ, PYTHONPATH=code)
  proc = subprocess.Popen([sys.executable] + command[1:], cwd=code, env=env, stdout=log,
                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                          start_new_session=True)
  state.update(commit=commit, pid=proc.pid)
  state["history"].append({"command": " ".join(command), "stage": stage, "started": run_state.now(),
                           "start_step": run_state.checkpoint_step(directory), "code_dir": code})
  run_state.write_state(directory, state)
  print("%s started %s to %d (pid %d, commit %s)" % (run_state.now(), run["name"], stage, proc.pid,
                                                    commit[:7]), flush=True)
  return proc


def load_note(plan, run):
  path = os.path.join(run_state.run_dir(plan, run), "load.csv")
  loads = []
  if os.path.exists(path):
    with open(path) as f:
      loads = [float(line.split(",")[1]) for line in f if "," in line]
  text = "2 cores"
  others = run_state.shared_with(plan, run)
  text += (", under load: shared with " + ", ".join(others)) if others else (
      ", no other campaign run")
  if loads:
    text += "; 1-min load average mean %.1f, max %.1f (%d samples)" % (
        sum(loads) / len(loads), max(loads), len(loads))
  return text


def publish(plan, run):
  """Evaluates the run's newest export and writes results/<name>/
  (tools/campaign/publish_run.py)."""
  directory = run_state.run_dir(plan, run)
  state = run_state.read_state(directory)
  commands = " ; then resumed with: ".join(h["command"] for h in state["history"]) or " ".join(
      train_command(plan, run, run["stages"][-1]))
  step = run_state.checkpoint_step(directory)
  args = [sys.executable, "-m", "tools.campaign.publish_run",
          "--run_dir=" + directory, "--name=" + run["name"], "--command=" + commands,
          "--config=" + run["config"], "--machine_note=" + load_note(plan, run),
          "--notes=" + "Issue %s. Made by tools/campaign/campaign.py (plan "
          "results/campaign_plan.json)." % run["item"]]
  if state.get("commit"):
    args.append("--commit=" + state["commit"])
  if run.get("commit_policy"):
    args.append("--commit_policy")
  # An intermediate stage: its evaluation is kept beside the final one.
  if step < run["stages"][-1] and not target_step(state):
    args.append("--eval_name=eval_at_%d.json" % step)
  print("%s publishing %s at %d" % (run_state.now(), run["name"], step), flush=True)
  log = open(os.path.join(directory, "publish.log"), "a")
  return subprocess.Popen(args, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL), step


def published(plan, run, proc, step):
  """Records a finished publish_run of `run` (its Popen `proc`); True if it succeeded."""
  directory = run_state.run_dir(plan, run)
  state = run_state.read_state(directory)
  state.setdefault("published", []).append({"step": step, "at": run_state.now(),
                                            "returncode": proc.returncode})
  run_state.write_state(directory, state)
  print("%s published %s at %d: exit %d" % (run_state.now(), run["name"], step, proc.returncode),
        flush=True)
  return proc.returncode == 0


def runs_to_start(runs, statuses, failed, slots, allow_alone):
  """The runs to start now, in plan order, given each run's status ('running',
  'publishing', ...). An 'alone' run (only with allow_alone) starts when nothing else trains
  or is being evaluated, and until then no run after it in the plan starts; while it runs,
  nothing else does."""
  running = [r for r in runs if statuses[r["name"]] == "running"]
  busy = running or any(s == "publishing" for s in statuses.values())
  if any(r.get("alone") for r in running):
    return []
  starts = []
  for run in runs:
    if len(running) + len(starts) >= slots:
      break
    if run["name"] in failed or statuses[run["name"]] not in ("queued", "stopped"):
      continue
    if run.get("alone"):
      if not allow_alone:
        continue
      if busy or starts:
        break
      return [run]
    starts.append(run)
  return starts


def drive(plan, slots, allow_alone, tick_s, commit):
  """Keeps `slots` runs going, publishing each stage as it ends, until the plan is done."""
  procs = {}
  publishing = {}   # name: (Popen of publish_run, agent step)
  failed = set()
  while True:
    for run in plan["runs"]:
      directory = run_state.run_dir(plan, run)
      state = run_state.read_state(directory)
      if not state.get("pid"):
        continue
      if run_state.alive(state["pid"], directory):
        with open(os.path.join(directory, "load.csv"), "a") as f, open("/proc/loadavg") as g:
          f.write("%s,%s\n" % (run_state.now(), g.read().split()[0]))
        run_state.shared_with(plan, run)   # recorded while the others' directories are here
        continue
      proc = procs.pop(run["name"], None)   # ended (a run of an earlier driver: code unknown)
      code = proc.poll() if proc is not None else None
      last = state["history"][-1]
      last.update(ended=run_state.now(), returncode=code,
                  end_step=run_state.checkpoint_step(directory),
                  reason=stop_reason(directory, since=last.get("started")))
      state.pop("pid", None)
      run_state.write_state(directory, state)
      if code not in (0, None):
        failed.add(run["name"])
        print("%s %s exited with %d: left for a person (train.log)" % (
            run_state.now(), run["name"], code), flush=True)
    for run in plan["runs"]:   # evaluations in the background: the slot goes on training
      job = publishing.get(run["name"])
      if job is not None and job[0].poll() is not None:
        del publishing[run["name"]]
        if not published(plan, run, *job):
          failed.add(run["name"])
    statuses = {r["name"]: status_of(plan, r)[0] for r in plan["runs"]}
    for run in plan["runs"]:
      name = run["name"]
      if statuses[name] == "trained" and name not in publishing and name not in failed:
        publishing[name] = publish(plan, run)
      if name in publishing:
        statuses[name] = "publishing"
    for run in runs_to_start(plan["runs"], statuses, failed, slots, allow_alone):
      procs[run["name"]] = start(plan, run, commit)
    write_report(plan)
    if all(statuses[r["name"]] == "done" or r["name"] in failed for r in plan["runs"]
           if not r.get("alone") or allow_alone) and not procs and not publishing:
      print("%s nothing left to run." % run_state.now(), flush=True)
      return
    time.sleep(tick_s)


def write_checkpoint_index(train_dir, step):
  """Writes train_dir/checkpoint naming ckpt-<step> alone, as TF's CheckpointManager
  writes it: with the checkpoint's timestamp above the last preserved one. Without the
  timestamps the manager lists no checkpoint, and the run starts again from step 0 (the
  state saved before this was written so: `restore` rewrites its index)."""
  stamp = os.path.getmtime(os.path.join(train_dir, "ckpt-%d.index" % step))
  with open(os.path.join(train_dir, "checkpoint"), "w") as f:
    f.write('model_checkpoint_path: "ckpt-%d"\nall_model_checkpoint_paths: "ckpt-%d"\n'
            'all_model_checkpoint_timestamps: %.6f\nlast_preserved_timestamp: %.6f\n'
            % (step, step, stamp, stamp - 1.0))


def save(plan):
  """Copies each unfinished run's newest checkpoint, summaries and state into STATE_DIR."""
  for run in plan["runs"]:
    status, _ = status_of(plan, run)
    directory = run_state.run_dir(plan, run)
    step = run_state.checkpoint_step(directory)
    target = os.path.join(STATE_DIR, run["name"])
    if status == "done" or step == 0:
      if status == "done" and os.path.isdir(target):
        shutil.rmtree(target)
      continue
    tmp = target + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "train"))
    train = os.path.join(directory, "train")
    names = glob.glob(os.path.join(train, "ckpt-%d.*" % step)) + glob.glob(
        os.path.join(train, "events.out.tfevents*")) + [os.path.join(train, "run_config.json")]
    for path in names:
      shutil.copy2(path, os.path.join(tmp, "train"))
    write_checkpoint_index(os.path.join(tmp, "train"), step)
    for name in ("operative_config.gin", run_state.RUN_STATE, "load.csv"):
      if os.path.exists(os.path.join(directory, name)):
        shutil.copy2(os.path.join(directory, name), tmp)
    shutil.rmtree(target, ignore_errors=True)
    os.replace(tmp, target)
    print("saved %s at agent step %d -> %s" % (run["name"], step, target))


def restore(plan):
  """Brings saved state back into the runs folder where the run directory is missing."""
  for run in plan["runs"]:
    source = os.path.join(STATE_DIR, run["name"])
    directory = run_state.run_dir(plan, run)
    if not os.path.isdir(source):
      continue
    if run_state.checkpoint_step(directory) >= run_state.checkpoint_step(source):
      print("%s: %s is as new as the saved state; kept" % (run["name"], directory))
      continue
    shutil.copytree(source, directory, dirs_exist_ok=True)
    write_checkpoint_index(os.path.join(directory, "train"), run_state.checkpoint_step(source))
    state = run_state.read_state(directory)
    state.pop("pid", None)
    run_state.write_state(directory, state)
    print("restored %s at agent step %d -> %s" % (run["name"], run_state.checkpoint_step(directory),
                                                 directory))


def write_report(plan, path=REPORT):
  lines = ["Generated by `python -m tools.campaign.campaign status` from "
           "results/campaign_plan.json and "
           "the run directories; do not edit by hand.", "", "# The learning-run campaign", "",
           "Runs directory: `%s` (outside the repository: it is lost with its machine). At the "
           "end of a session `python -m tools.campaign.campaign save` copies each unfinished "
           "run's newest checkpoint and summaries into `results/campaign_state/<name>/` "
           "(committed); on a new machine `python -m tools.campaign.campaign restore` puts them "
           "back and `nohup python -m tools.campaign.campaign run &` continues: each run "
           "resumes from its checkpoint with the code of the commit it started with. A run "
           "whose checkpoint is lost starts again from zero (its commands and seed are "
           "below)." % plan["runs_dir"], "",
           "| run | issue item | status | where | commit | commands (each start or resume) |",
           "|---|---|---|---|---|---|"]
  counts = {}
  for run in plan["runs"]:
    status, detail = status_of(plan, run)
    counts[status] = counts.get(status, 0) + 1
    state = run_state.read_state(run_state.run_dir(plan, run))
    published = published_info(run)
    # A published run whose run directory went with its machine: its run_info.json's
    # command(s) (';'-separated) and commit.
    commands = [h["command"] for h in state.get("history", [])] or [
        c.strip() for c in published.get("command", "").split(";") if c.strip()] or [
            " ".join(train_command(plan, run, run["stages"][-1])) + "  (not yet run)"]
    stages = ", ".join("%d" % s for s in run["stages"])
    lines.append("| `%s`%s | %s | **%s** | %s; stages (agent steps) %s | %s | %s |" % (
        run["name"], " (alone)" if run.get("alone") else "", run["item"], status, detail,
        stages, (state.get("commit") or published.get("commit") or "")[:7],
        "<br>".join("`%s`" % c for c in commands)))
  lines += ["", "Totals: " + ", ".join("%d %s" % (n, s) for s, n in sorted(counts.items())), ""]
  with open(path + ".tmp", "w") as f:
    f.write("\n".join(lines))
  os.replace(path + ".tmp", path)


ACTIONS = ("status", "run", "save", "restore")
FLAGS = flags.FLAGS


def _define_flags():
  flags.DEFINE_string("plan", PLAN, "The campaign's plan (JSON).")
  flags.DEFINE_integer("slots", 2, "Runs kept going at once (run).")
  flags.DEFINE_boolean("allow_alone", False, "Start a run planned to train alone (run).")
  flags.DEFINE_float("tick_s", 30.0, "Seconds between two looks at the runs (run).")
  flags.DEFINE_string("commit", None, "Code for runs not yet started (default: this "
                      "checkout's HEAD).")


def main(argv):
  if len(argv) != 2 or argv[1] not in ACTIONS:
    raise errors.UserError("Give one action of %s (got %s)." % (", ".join(ACTIONS),
                                                                " ".join(argv[1:]) or "none"))
  action = argv[1]
  plan = load_plan(FLAGS.plan)
  if action == "run":
    drive(plan, FLAGS.slots, FLAGS.allow_alone, FLAGS.tick_s, FLAGS.commit or commit_of(REPO))
  elif action == "save":
    save(plan)
  elif action == "restore":
    restore(plan)
  write_report(plan)


if __name__ == "__main__":
  _define_flags()
  app.run(main, flags_parser=errors.parse_flags)
