"""Shared test set-up: quiet TF logs, the repo root on sys.path, helpers for CLI runs."""
import json
import multiprocessing
import re
import os
import secrets
import signal
import subprocess
import sys
import time

import psutil
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# The one Ray token of every test's cluster in this pytest process: Ray reads the token once
# per process and keeps it, so a second cluster with another token refuses this process's
# client ("InvalidAuthToken").
RAY_TEST_TOKEN = secrets.token_hex(16)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
  sys.path.insert(0, REPO)

# Before any test module imports TensorFlow: on the current stack, tf.keras is to be Keras 2
# (paac_tf/stacks.py), in this process and the commands it starts.
import paac_tf  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import
from paac_tf import stacks  # noqa: E402  pylint: disable=wrong-import-position


def run_module(module, *args, timeout=600, env=None, cwd=REPO):
  """Runs `python -m module args` as a user would; returns the CompletedProcess."""
  full_env = dict(os.environ)
  full_env.update(env or {})
  command = [sys.executable, "-m", module, *args]
  # A session of its own: a command that runs past `timeout` is killed with every process
  # it started (subprocess.run's timeout kills the command alone; its children lived on).
  with subprocess.Popen(command, cwd=cwd, env=full_env, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True, start_new_session=True) as proc:
    try:
      stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
      os.killpg(proc.pid, signal.SIGKILL)
      proc.communicate()
      raise
  return subprocess.CompletedProcess(command, proc.returncode, stdout, stderr)


def run_snippet_json(code, timeout, cwd=REPO):
  """Runs the Python snippet `code` in a fresh interpreter (for code that defines absl flags
  or forks processes) and returns the JSON object its last stdout line prints."""
  proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True,
                        timeout=timeout)
  assert proc.returncode == 0, proc.stderr[-3000:]
  return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def replay_children(tmp_path):
  """Replay servers the test runs as child processes (tests/replay_child.py), SIGKILLed at
  its end if still running."""
  import replay_child  # pylint: disable=import-outside-toplevel  (reverb: only where used)
  children = replay_child.ReplayChildren(tmp_path)
  yield children
  children.kill_all()


@pytest.fixture
def no_new_children():
  """After the test, no child process it started is left (children that existed before,
  e.g. a multiprocessing fork server of another test file, are not its business)."""
  before = {p.pid for p in psutil.Process().children(recursive=True)}
  yield
  deadline = time.monotonic() + 10
  while True:
    left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
    if not left or time.monotonic() > deadline:
      break
    time.sleep(0.2)
  assert not left, "left behind: %s" % [(p.pid, p.cmdline()) for p in left]


def loss_rows_spanning(seconds, start=1e9, every_s=60.0):
  """summaries.csv rows [step, wall time, tag, value] of a loss summary every `every_s` seconds
  over `seconds` from `start`: a published run that trained `seconds` without a pause (the
  tools read a run's training time from its summaries, gaps over 300 s left out)."""
  count = int(seconds // every_s)
  return [[i, start + seconds * i / count, "Losses/total", 0.5] for i in range(count + 1)]


def read_text(path):
  """A log file's text ('' if it does not exist yet)."""
  try:
    with open(path, errors="replace") as f:
      return f.read()
  except OSError:
    return ""


def assert_gone(pids, timeout=10.0):
  """All pids have exited (reaped or zombie) and are no active children of ours."""
  deadline = time.monotonic() + timeout
  alive = list(pids)
  while alive and time.monotonic() < deadline:
    alive = [pid for pid in alive if psutil.pid_exists(pid) and
             psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
    time.sleep(0.05)
  assert not alive, "worker processes still alive: %s" % alive
  assert not set(pids) & {p.pid for p in multiprocessing.active_children()}


# Warnings of third-party code that the project cannot act on, kept out of the summary at
# the end of a run (measured on tests/test_paac*.py and test_export.py: 226 warnings, 0
# after): distutils' LooseVersion in tf-agents, tensorflow-probability and reverb's import
# checks; Keras 2.15 seeding its layers with random.randint(1, 1e9), a float
# (keras/src/utils/tf_utils.py), once per model built; on Python 3.13, gast (under TF's
# autograph) passing its own keyword to the ast classes, once per node of each converted
# function (make test's CURRENT_TESTS on 3.13.0: 4,914 warnings, all of them this one).
THIRD_PARTY_WARNINGS = (
    "ignore:distutils Version classes are deprecated:DeprecationWarning",
    "ignore:non-integer arguments to randrange:DeprecationWarning:random",
    "ignore:.*got an unexpected keyword argument '___pyct_anno':DeprecationWarning",
)


def pytest_configure(config):
  for line in THIRD_PARTY_WARNINGS:
    config.addinivalue_line("filterwarnings", line)
  config.addinivalue_line(
      "markers", "cluster: Ape-X on a multi-node Ray cluster: of network namespaces (root, `ip "
      "netns`; tests/test_apex_cluster.py) or on loopback (tests/test_apex_ray.py); "
      "`make test-cluster`, the last step of .ci/run")
  config.addinivalue_line(
      "markers", "system: whole-system and fault-injection runs (tests/test_apex_system.py, "
      "test_apex_faults.py, test_reliability.py); `make test-system`, the second step of "
      ".ci/run")
  config.addinivalue_line(
      "markers", "stops: signals at random moments of whole runs of every launcher "
      "(tests/test_stops.py); `make test-stops`, the third step of .ci/run")
  config.addinivalue_line(
      "markers", "reverb: needs dm-reverb (Ape-X's replay), which only the reference stack "
      "has; skipped elsewhere (every test of a file that needs it is, too: "
      "`pytest_pycollect_makemodule`)")


# Where dm-reverb is absent (the current stack, paac_tf/stacks.py), the tests of Ape-X skip
# with this reason: those marked `reverb`, and every test of a file that imports Reverb or
# the Ape-X runner at its top (directly or through replay_child or an Ape-X tool), or is
# named test_apex*.py.
REVERB_ABSENT = ("needs dm-reverb: Ape-X runs on the reference stack only (%s)"
                 % stacks.describe(stacks.REFERENCE))
_NEEDS_REVERB = re.compile(r"^(import reverb|from reverb|from paac_tf\.runners\.apex |"
                           r"import replay_child|from tools\.apex import )", re.M)


def needs_reverb(path):
  """Whether the test file at `path` is one of Ape-X's (see REVERB_ABSENT)."""
  if os.path.basename(path).startswith("test_apex"):
    return True
  with open(path, encoding="utf-8") as f:
    return bool(_NEEDS_REVERB.search(f.read()))


class _SkippedForReverb(pytest.File):
  """A test file of Ape-X where Reverb is absent: collected as one skip with its reason."""

  def collect(self):
    pytest.skip(REVERB_ABSENT, allow_module_level=True)


def pytest_pycollect_makemodule(module_path, parent):
  """A test file of Ape-X, where Reverb is absent, is one skip instead of its module."""
  if not stacks.has_reverb() and needs_reverb(str(module_path)):
    return _SkippedForReverb.from_parent(parent, path=module_path)
  return None


def pytest_collection_modifyitems(config, items):
  del config
  if stacks.has_reverb():
    return
  skip = pytest.mark.skip(reason=REVERB_ABSENT)
  for item in items:
    if "reverb" in item.keywords:
      item.add_marker(skip)
