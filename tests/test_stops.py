"""Stops: SIGTERM or SIGINT to `python -m paac_tf.train`, or to its whole process group (what a
terminal's Ctrl-C, Kubernetes, Slurm, systemd and `docker stop` send), at random moments of
real runs of each launcher: PAAC without and with environment worker processes, Ape-X with
the local launcher, Ape-X on Ray (a cluster this test starts, and a Ray started by the run).

Each try starts the command in a session of its own (its process group is its own), waits
until its stop handler is installed (SIGTERM in /proc/PID/status's SigCgt; a signal before
that lands in the interpreter's own start-up and ends it the default way), then sends one
signal, SIGTERM or SIGINT (a seeded RNG), to the process or to its group (in turn), at a
moment drawn uniformly from a window after one of four moments, in turn (ANCHORS): the
handler's installation, the run directory's creation, the model's (a new train/ summaries
file), the run's first interval checkpoint; so moments land in every phase on a fast or a
slow machine. Checkpoint and export intervals are short; a quarter of the tries send a
second signal shortly after the first. Tries are chained in a few run directories: each
later try is a rerun that must resume from the checkpoint the one before left.

Every try checks: exit status 0; no traceback and none of TensorFlow's INFO lines; the last
lines (where it stopped and its checkpoint, the newest export, the command that resumes it:
the one that was run); a whole checkpoint (the latest of the index) if the model existed
when the signal was sent, never an older one than before; a rerun restores the previous
try's checkpoint; no process of the run left (every descendant seen during the try has
exited, none names the run directory; on Ray, no role process). The counts are printed
(pytest -s); docs/training.md records them.
"""
import collections
import importlib.util
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

import psutil
import pytest

from conftest import RAY_TEST_TOKEN
from conftest import REPO
from conftest import read_text

# Whole-run tries of every launcher (about 8 minutes alone on 2 cores, 19 under load): not
# in `make test`; `make test-stops`, a later step of .ci/run.
pytestmark = pytest.mark.stops

FAST = ["--gin_bindings=train_eval.total_steps=100000000"]
PAAC = ["--gin_file=cartpole.gin", "--gin_bindings=paac.stop_at_average_return=None",
        "--gin_bindings=paac.checkpoint_interval=800",
        "--gin_bindings=paac.export_interval=2400"] + FAST
APEX = ["--gin_file=apex_cartpole.gin", "--gin_bindings=apex_learner.stop_at_average_return=None",
        "--gin_bindings=apex_learner.checkpoint_interval=1500",
        "--gin_bindings=apex_learner.export_interval=4500",
        "--gin_bindings=apex_replay.learning_starts=500"] + FAST
# The moments a signal is sent at, in turn: a uniform draw from [0, window] seconds after
#   start    the stop handler is installed (the imports, the configuration, ...);
#   run      the run directory is made ("Run directory:"; environments, model, restore);
#   model    the model exists (a new train/ summaries file; tracing, the first updates);
#   trained  the run saved its first interval checkpoint (stepping, checkpoints, exports).
ANCHORS = ("start", "run", "model", "trained")
WINDOWS = {"run": 5.0, "model": 5.0, "trained": 8.0}
# launcher: (arguments, tries, run directories they are chained in, the start's window, the
# anchors its tries take in turn).
RAY = APEX + ["--gin_bindings=train_eval.launcher='ray'"]
LAUNCHERS = {
    "paac_in_process": (PAAC + ["--gin_bindings=paac.num_workers=0"], 10, 3, 10.0,
                        ANCHORS),
    "paac_workers": (PAAC, 10, 3, 10.0, ANCHORS),
    "apex_local": (APEX, 10, 3, 10.0, ANCHORS),
    "apex_ray_cluster": (RAY, 8, 3, 15.0, ANCHORS),
    # Ray's start (ray.init, the signal to the process) and a trained learner (to the
    # group, Ray's processes in it): what this mode adds. With the 8 above, 10 Ray tries.
    "apex_ray_own": (RAY, 2, 1, 15.0, ("run", "trained")),
}
# TensorFlow's INFO lines at every export (SavedModel builder, fingerprinting, Keras's input
# renaming and untraced functions) and at its start-up, which the run keeps off the terminal.
TF_NOISE = ("Assets written to", "Writing fingerprint", "will be renamed", "untraced functions",
            "oneDNN custom operations", "cpu_feature_guard", "Unable to register", "TensorRT")
STOP_LINE = re.compile(r"^Stopped \((SIGTERM|SIGINT)\) (.*)$", re.M)
SIGTERM_BIT = 1 << (signal.SIGTERM - 1)


def _latest_checkpoint(root):
  """The latest checkpoint the index names (absolute path), or None."""
  match = re.search(r'^model_checkpoint_path: "(.*)"$',
                    read_text(os.path.join(root, "train", "checkpoint")), re.M)
  if not match:
    return None
  path = match.group(1)
  return path if os.path.isabs(path) else os.path.join(root, "train", path)


def _summary_files(root):
  """The run's train/ summary files: a new one means that this try's model exists (the
  PAAC loop and the Ape-X learner open it once the model is built and restored)."""
  train = os.path.join(root, "train")
  return {n for n in (os.listdir(train) if os.path.isdir(train) else [])
          if n.startswith("events.out.tfevents")}


def _handler_installed(pid):
  """True once the process catches SIGTERM (the run's stop handler is installed)."""
  try:
    with open("/proc/%d/status" % pid) as f:
      caught = re.search(r"^SigCgt:\s*([0-9a-f]+)", f.read(), re.M).group(1)
  except (OSError, AttributeError):
    return False
  return bool(int(caught, 16) & SIGTERM_BIT)


def _watch(pid, seen, log_path, wall_started):
  """Adds the process's descendants and the Ray role processes its log names to `seen`."""
  seen.update(_ray_roles(read_text(log_path), wall_started))
  try:
    for child in psutil.Process(pid).children(recursive=True):
      try:
        seen[(child.pid, child.create_time())] = " ".join(child.cmdline())[:160]
      except psutil.Error:
        pass
  except psutil.Error:
    pass


def _left(seen, root):
  """Processes of the try still running: descendants seen during it (with the Ray role
  processes the run's log names) and any process whose command line names its run
  directory."""
  left = []
  for (pid, created), cmd in seen.items():
    try:
      process = psutil.Process(pid)
      if process.create_time() == created and process.status() != psutil.STATUS_ZOMBIE:
        left.append((pid, cmd))
    except psutil.Error:
      pass
  for process in psutil.process_iter(["pid", "cmdline"]):
    try:
      cmd = " ".join(process.info["cmdline"] or [])
      if root in cmd and process.status() != psutil.STATUS_ZOMBIE:
        left.append((process.pid, cmd[:160]))
    except psutil.Error:
      pass
  return sorted(set(left))


def _ray_roles(text, started):
  """{(pid, create time): title} of the Ray role processes that the run's log names (on a
  cluster they are no descendants of the run) and that were created after `started`."""
  line = re.search(r"Ape-X on Ray: .*", text)
  roles = {}
  for pid in re.findall(r"pid (\d+)", line.group(0) if line else ""):
    try:
      process = psutil.Process(int(pid))
      if process.create_time() >= started:
        roles[(process.pid, process.create_time())] = " ".join(process.cmdline())[:160]
    except psutil.Error:
      pass
  return roles


def _wait_gone(seen, root, timeout_s=15.0):
  deadline = time.monotonic() + timeout_s
  while True:
    left = _left(seen, root)
    if not left or time.monotonic() > deadline:
      return left
    time.sleep(0.25)


def _reached(anchor, text, root, old_summaries):
  """Whether the run passed the `anchor` moment (see ANCHORS)."""
  if anchor == "run":
    return "Run directory: " in text
  if anchor == "model":
    return bool(_summary_files(root) - old_summaries)
  if anchor == "trained":
    return "Saved checkpoint" in text
  return True


def _one_try(args, root, rng, env, log_path, anchor, to_group, window, stats):
  """Starts the command, sends the signal(s), checks everything; returns a dict of facts."""
  command = [sys.executable, "-m", "paac_tf.train"] + args + ["--root_dir=%s" % root]
  old_events = _summary_files(root)
  before = _latest_checkpoint(root)
  sig = rng.choice([signal.SIGTERM, signal.SIGINT])
  offset = rng.uniform(0.0, window)
  second = rng.uniform(0.2, 3.0) if rng.random() < 0.25 else None
  seen = {}
  with open(log_path, "wb") as log:
    started, wall_started = time.monotonic(), time.time() - 1
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, start_new_session=True)
  try:
    while not _handler_installed(process.pid):
      assert process.poll() is None, read_text(log_path)[-3000:]
      time.sleep(0.005)
    installed = time.monotonic() - started
    deadline = None
    while deadline is None or time.monotonic() < deadline:
      _watch(process.pid, seen, log_path, wall_started)
      assert process.poll() is None, read_text(log_path)[-3000:]
      if deadline is None and _reached(anchor, read_text(log_path), root, old_events):
        deadline = time.monotonic() + offset
      assert time.monotonic() - started < 400, "no %s after 400 s:\n%s" % (
          anchor, read_text(log_path)[-3000:])
      time.sleep(0.1)
    model_existed = bool(_summary_files(root) - old_events)
    _watch(process.pid, seen, log_path, wall_started)
    sent, sent_wall = time.monotonic(), time.time()
    (os.killpg if to_group else os.kill)(process.pid, sig)
    if second is not None:
      while time.monotonic() < sent + second and process.poll() is None:
        _watch(process.pid, seen, log_path, wall_started)
        time.sleep(0.05)
      if process.poll() is None:
        (os.killpg if to_group else os.kill)(process.pid, sig)
    while process.poll() is None:
      _watch(process.pid, seen, log_path, wall_started)
      assert time.monotonic() - sent < 180, "no exit 180 s after the signal:\n" + read_text(
          log_path)[-3000:]
      time.sleep(0.05)
    latency = time.monotonic() - sent
  finally:
    if process.poll() is None:
      os.killpg(process.pid, signal.SIGKILL)
      process.wait()
  text = read_text(log_path)
  left = _wait_gone(seen, root)
  latest = _latest_checkpoint(root)
  facts = {"rc": process.returncode, "latency": latency, "installed": installed,
           "model": model_existed, "checkpoint": latest is not None, "left": left,
           "mode": "%s to %s" % (signal.Signals(sig).name, "group" if to_group else "pid"),
           "second": second is not None, "anchor": anchor, "offset": offset,
           "sent_at": time.strftime("%H:%M:%S", time.localtime(sent_wall)) + (
               "%.3f" % (sent_wall % 1))[1:]}
  stats.append(facts)
  where = "\n%s (%s at %s, %s + %.1f s, %s):\n%s" % (
      log_path, facts["mode"], facts["sent_at"], anchor, offset,
      "two signals" if second else "one signal", text[-3000:])
  assert process.returncode == 0, where
  assert "Traceback" not in text, where
  assert [n for n in TF_NOISE if n in text] == [], where
  assert not left, "left behind: %s%s" % (left, where)
  stops = STOP_LINE.findall(text)
  assert len(stops) == 1 and stops[0][0] == signal.Signals(sig).name, where
  tail = text.rstrip("\n").splitlines()
  if "during the start-up, before the run made anything" in stops[0][1]:
    facts["phase"] = "before the run"
    assert not model_existed and latest == before, where
    assert tail[-1].startswith("Start it again with: "), where
    assert _same_command(tail[-1][len("Start it again with: "):], command), where
    return facts
  if model_existed:
    assert latest is not None, where
  if before is not None:
    assert latest is not None and _step(latest) >= _step(before), (before, latest, where)
    restored = re.findall(r"Restored checkpoint (\S+)", text)
    assert all(path == before for path in restored), (before, restored, where)
    facts["resumed"] = bool(restored)
  if latest is not None:
    for suffix in (".index", ".data-00000-of-00001"):
      assert os.path.isfile(latest + suffix), where
    assert stops[0][1] == "at agent step %d; checkpoint %s." % (_step(latest), latest), where
    assert tail[-1].startswith("Resume with: "), where
    assert _same_command(tail[-1][len("Resume with: "):], command), where
  else:
    assert stops[0][1] == "before the model was built: nothing to save.", where
  export = re.search(r"^Newest export: (.*)$", text, re.M).group(1)
  assert export == "none yet" or os.path.isfile(os.path.join(export, "saved_model.pb")), where
  facts["phase"] = _phase(text, model_existed)
  return facts


def _same_command(shown, command):
  """True if the shell line `shown` runs `command`: the same interpreter (by its path, or a
  name that PATH resolves to it) and the same arguments."""
  words = shlex.split(shown)
  python = shutil.which(words[0]) if words else None
  return (python is not None and os.path.realpath(python) == os.path.realpath(command[0])
          and words[1:] == command[1:])


def _step(checkpoint):
  return int(checkpoint.rsplit("-", 1)[1])


def _phase(text, model_existed):
  """What the run was doing when the signal came: an interval checkpoint or export if the
  run's next log line after the signal's says it finished one, else training or start-up."""
  after = text[text.find("received: stopping"):].splitlines()[1:]
  logged = [line for line in after if re.search(r"^[IWE]\d{4} |(INFO|WARNING):absl:", line)][:1]
  if logged and "Saved checkpoint" in logged[0]:
    return "checkpoint"
  if logged and "Exported" in logged[0]:
    return "export"
  return "training" if model_existed else "start-up"


def _run_tries(name, tmp_path, env, seed, extra=()):
  args, tries, chains, window_start, anchors = LAUNCHERS[name]
  args = args + list(extra)
  rng = random.Random(seed)
  stats = []
  began = time.monotonic()
  for i in range(tries):
    root = str(tmp_path / ("run%d" % (i % chains)))
    anchor = anchors[i % len(anchors)]
    # To the process or to its group, in turn, shifted every round of anchors: each
    # anchor gets both within two rounds.
    to_group = (i + i // len(anchors)) % 2 == 1
    _one_try(args, root, rng, env, str(tmp_path / ("try%d.log" % i)), anchor, to_group,
             WINDOWS.get(anchor, window_start), stats)
  elapsed = time.monotonic() - began
  latencies = sorted(f["latency"] for f in stats)
  began_run = sorted(f["latency"] for f in stats if f["phase"] != "before the run") or [0.0]
  print("\n%s: %d tries in %.0f s; exit statuses %s; checkpoints after a stop with a model "
        "%d/%d; processes left %d; resumed %d; modes %s; after %s; phases %s; two signals %d; "
        "stop latency median %.1f s, max %.1f s; handler installed after %.2f-%.2f s; stop "
        "latency once the run began median %.1f s, max %.1f s" % (
            name, len(stats), elapsed, dict(collections.Counter(f["rc"] for f in stats)),
            sum(f["checkpoint"] for f in stats if f["model"]), sum(f["model"] for f in stats),
            sum(len(f["left"]) for f in stats), sum(f.get("resumed", False) for f in stats),
            dict(collections.Counter(f["mode"] for f in stats)),
            dict(collections.Counter(f["anchor"] for f in stats)),
            dict(collections.Counter(f["phase"] for f in stats)),
            sum(f["second"] for f in stats), latencies[len(latencies) // 2], latencies[-1],
            min(f["installed"] for f in stats), max(f["installed"] for f in stats),
            began_run[len(began_run) // 2], began_run[-1]))
  assert sum(f["model"] for f in stats) >= 1   # some tries stopped a run that had a model
  return stats


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name, seed", [("paac_in_process", 1), ("paac_workers", 2),
                                        ("apex_local", 3)])
def test_every_stop_saves_exits_0_and_leaves_no_process(name, seed, tmp_path):
  _run_tries(name, tmp_path, _user_env(), seed)


def _user_env(**extra):
  """A user's environment: no TF_CPP_MIN_LOG_LEVEL (conftest sets one), unbuffered output."""
  env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
  env.update(PYTHONUNBUFFERED="1", **extra)
  return env


needs_ray = pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                               reason="Ray is not installed: pip install -e '.[ray]'")
# One token for the test's cluster and the runs (Ray keeps the first one it reads).
RAY_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "token",
           "RAY_AUTH_TOKEN": RAY_TEST_TOKEN, "RAY_DEDUP_LOGS": "0"}


@needs_ray
@pytest.mark.timeout(1200)
def test_every_stop_on_a_ray_cluster_saves_exits_0_and_leaves_no_process(tmp_path, monkeypatch):
  """The runs join one cluster (train_eval.ray_address) that the test starts once: a head
  with 3 CPUs on loopback, as `ray start --head` would make it."""
  for key, value in RAY_ENV.items():
    monkeypatch.setenv(key, value)
  from ray import cluster_utils  # pylint: disable=import-outside-toplevel
  cluster = cluster_utils.Cluster()
  try:
    cluster.add_node(num_cpus=3, node_ip_address="127.0.0.1", include_dashboard=False)
    cluster.wait_for_nodes()
    _run_tries("apex_ray_cluster", tmp_path, _user_env(**RAY_ENV), 4,
               extra=["--gin_bindings=train_eval.ray_address='%s'" % cluster.address])
  finally:
    cluster.shutdown()


@needs_ray
@pytest.mark.timeout(600)
def test_every_stop_of_a_run_that_started_its_own_ray_shuts_it_down(tmp_path):
  """The run starts Ray itself (its GCS, raylet and agents in the run's process group):
  after the stop none of them is left (they are descendants of the run)."""
  _run_tries("apex_ray_own", tmp_path, _user_env(**RAY_ENV), 5)
