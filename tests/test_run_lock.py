"""One command per run directory (`paac_tf/bookkeeping/run_lock.py`), with real processes: a
second training or an export into a run in use is refused at once, with one error line
naming the holder, touching nothing; a killed run leaves no lock behind."""
import glob
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import tensorflow as tf

from conftest import REPO, run_module

import paac_tf
from paac_tf.bookkeeping import run_lock

CARTPOLE = ["--gin_file=cartpole.gin", "--gin_bindings=paac.stop_at_average_return=None"]
# A process that holds a run directory's lock, as a training would, without training.
HOLDER = ("import sys, time; from paac_tf.bookkeeping import run_lock; "
          "lock = run_lock.acquire(sys.argv[1]); print('held', flush=True); time.sleep(120)")


def _tree(root):
  """{path: mtime_ns} of the run directory and everything in it."""
  paths = [root] + glob.glob(os.path.join(root, "**"), recursive=True)
  return {p: os.stat(p).st_mtime_ns for p in paths}


def _assert_one_error_line(proc, *words):
  assert proc.returncode == 2, (proc.returncode, proc.stderr[-3000:])
  lines = proc.stderr.strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-3000:]
  for word in words:
    assert word in lines[0], (word, lines[0])


def _start(args, **kwargs):
  return subprocess.Popen(args, cwd=REPO, stdin=subprocess.DEVNULL, start_new_session=True,
                          **kwargs)


def _end(proc):
  """Kills what is left of the process group of a process a test started."""
  try:
    os.killpg(proc.pid, signal.SIGKILL)
  except ProcessLookupError:
    pass
  proc.wait(timeout=30)


@pytest.fixture
def holder(tmp_path):
  """(run directory, process) of a process holding the directory's lock."""
  root = str(tmp_path / "run")
  os.makedirs(root)
  proc = _start([sys.executable, "-c", HOLDER, root], stdout=subprocess.PIPE, text=True)
  try:
    assert proc.stdout.readline().strip() == "held"
    yield root, proc
  finally:
    _end(proc)


def _train(root, *flags, **kwargs):
  """Starts `python -m paac_tf.train` on CartPole in `root` (its own process group)."""
  return _start([sys.executable, "-m", "paac_tf.train", "--root_dir=" + root, *CARTPOLE,
                 *flags], stdout=subprocess.DEVNULL, **kwargs)


def _newest_checkpoint(root):
  """The agent step of the run's newest checkpoint (TF's checkpoint state), or None."""
  state = tf.train.get_checkpoint_state(os.path.join(root, "train"))
  return int(state.model_checkpoint_path.rsplit("-", 1)[1]) if state else None


def _wait_for_checkpoint(root, proc, timeout=300):
  deadline = time.time() + timeout
  while _newest_checkpoint(root) is None:
    assert proc.poll() is None and time.time() < deadline, proc.returncode
    time.sleep(0.5)


@pytest.mark.timeout(600)
def test_a_second_training_and_an_export_are_refused_while_a_training_runs(tmp_path):
  root = str(tmp_path / "run")
  with open(tmp_path / "first.log", "w") as log:
    first = _train(root, "--gin_bindings=train_eval.total_steps=10000000",
                   "--gin_bindings=paac.checkpoint_interval=800", stderr=log)
  try:
    _wait_for_checkpoint(root, first)
    os.kill(first.pid, signal.SIGSTOP)   # holds the lock, writes nothing meanwhile
    try:
      before = _tree(root)
      for module, args in (("paac_tf.train", CARTPOLE), ("paac_tf.export", [])):
        start = time.monotonic()
        proc = run_module(module, "--root_dir=" + root, *args, timeout=300)
        elapsed = time.monotonic() - start
        _assert_one_error_line(proc, root + " is in use by process %d (" % first.pid,
                               "paac_tf.train", "kill -TERM %d" % first.pid)
        print("%s refused in %.2f s" % (module, elapsed))
        assert _tree(root) == before, module
    finally:
      os.kill(first.pid, signal.SIGCONT)
    first.send_signal(signal.SIGTERM)   # the first run goes on, and ends as usual
    assert first.wait(timeout=300) == 0, (tmp_path / "first.log").read_text()[-3000:]
  finally:
    _end(first)


@pytest.mark.timeout(600)
@pytest.mark.system   # a whole run: `make test-system` (.ci/run's second step)
def test_a_run_killed_by_sigkill_leaves_no_lock_and_its_rerun_resumes(tmp_path):
  root = str(tmp_path / "run")
  first = _train(root, "--gin_bindings=train_eval.total_steps=10000000",
                 "--gin_bindings=paac.checkpoint_interval=800",
                 stderr=subprocess.DEVNULL)
  try:
    _wait_for_checkpoint(root, first)
    os.kill(first.pid, signal.SIGKILL)   # the training process alone: its workers may linger
    first.wait(timeout=30)
    last = _newest_checkpoint(root)
    rerun = run_module("paac_tf.train", "--root_dir=" + root, *CARTPOLE,
                       "--gin_bindings=train_eval.total_steps=%d" % (last + 800), timeout=300)
  finally:
    _end(first)
  assert rerun.returncode == 0, rerun.stderr[-3000:]
  assert "Resuming at agent step %d" % last in rerun.stderr
  assert os.path.isfile(os.path.join(root, run_lock.LOCK_FILE))


def test_the_refusal_names_the_holder_and_writes_nothing(holder):
  root, proc = holder
  before = _tree(root)
  start = time.monotonic()
  refused = run_module("paac_tf.train", "--root_dir=" + root, *CARTPOLE, timeout=300)
  print("refused in %.2f s" % (time.monotonic() - start))
  _assert_one_error_line(refused, "in use by process %d (python" % proc.pid, "run_lock",
                         "kill -TERM %d" % proc.pid)
  assert _tree(root) == before
  # The Ape-X learner program is refused too, before it connects to any replay server.
  learner = run_module("paac_tf.commands.apex_learner", "--replay_address=127.0.0.1:1",
                       "--root_dir=" + root, "--gin_file=apex_cartpole.gin", timeout=300,
                       env={"TF_CPP_MIN_LOG_LEVEL": "3"})   # a user's default: TF quiet
  _assert_one_error_line(learner, "in use by process %d" % proc.pid)
  assert _tree(root) == before


def test_a_call_in_another_thread_of_the_process_is_refused(tmp_path):
  root = str(tmp_path / "run")
  os.makedirs(root)
  taken, release = threading.Event(), threading.Event()

  def hold():
    with run_lock.acquire(root, what="a notebook cell"):
      taken.set()
      release.wait(60)

  thread = threading.Thread(target=hold)
  thread.start()
  try:
    assert taken.wait(60)
    with pytest.raises(run_lock.RunDirInUseError, match="in use by this process"):
      paac_tf.train("cartpole.gin", root_dir=root)
  finally:
    release.set()
    thread.join()
  # Released: another process takes it now.
  proc = subprocess.run([sys.executable, "-c", HOLDER.replace("time.sleep(120)", "0"), root],
                        cwd=REPO, capture_output=True, text=True, timeout=120)
  assert proc.returncode == 0 and proc.stdout.strip() == "held", proc.stderr


def test_the_thread_holding_the_lock_may_take_it_again(tmp_path):
  root = str(tmp_path / "run")
  os.makedirs(root)
  with run_lock.acquire(root):
    with run_lock.acquire(root):
      pass
    # The inner release is a no-op: another process is still refused.
    proc = subprocess.run([sys.executable, "-c", HOLDER, root], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "RunDirInUseError" in proc.stderr, proc.stderr[-2000:]
    assert "in use by process %d" % os.getpid() in proc.stderr
