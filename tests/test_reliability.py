"""Faults with real processes and signals: kill -9 then resume; divergence stops cleanly;
a full disk while saving keeps the previous checkpoint."""
import glob
import hashlib
import os
import resource
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from conftest import REPO, run_module

CARTPOLE = ["--gin_file=cartpole.gin", "--gin_bindings=paac.stop_at_average_return=None"]


def _checkpoints(root):
  state = tf.train.get_checkpoint_state(os.path.join(root, "train"))
  return [] if state is None else list(state.all_model_checkpoint_paths)


def _digest(paths):
  h = hashlib.sha256()
  for p in sorted(paths):
    with open(p, "rb") as f:
      h.update(f.read())
  return h.hexdigest()


pytestmark = pytest.mark.system   # `make test-system` (.ci/run's second step)


@pytest.mark.timeout(600)
def test_kill_9_during_training_then_rerun_resumes_from_last_checkpoint(tmp_path):
  root = str(tmp_path / "run")
  proc = subprocess.Popen(
      [sys.executable, "-m", "paac_tf.train", "--root_dir=" + root] + CARTPOLE +
      ["--gin_bindings=paac.checkpoint_interval=4000",
       "--gin_bindings=train_eval.total_steps=10000000"],
      cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
  try:
    deadline = time.time() + 300
    while len(_checkpoints(root)) < 2:
      assert proc.poll() is None and time.time() < deadline
      time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
  finally:
    if proc.poll() is None:
      os.killpg(proc.pid, signal.SIGKILL)
  last = int(_checkpoints(root)[-1].rsplit("-", 1)[1])
  rerun = run_module("paac_tf.train", "--root_dir=" + root, *CARTPOLE,
                     "--gin_bindings=paac.checkpoint_interval=4000",
                     "--gin_bindings=train_eval.total_steps=%d" % (last + 1600))
  assert rerun.returncode == 0, rerun.stderr[-3000:]
  assert "Resuming at agent step %d" % last in rerun.stderr
  assert int(_checkpoints(root)[-1].rsplit("-", 1)[1]) == last + 1600


@pytest.mark.timeout(600)
def test_divergence_stops_with_a_clear_error_and_keeps_the_last_good_checkpoint(tmp_path):
  root = str(tmp_path / "run")
  first = run_module("paac_tf.train", "--root_dir=" + root, *CARTPOLE,
                     "--gin_bindings=train_eval.total_steps=1600")
  assert first.returncode == 0, first.stderr[-3000:]
  good = glob.glob(os.path.join(root, "train", "ckpt-1600*"))
  before = _digest(good)
  proc = run_module("paac_tf.train", "--root_dir=" + root, *CARTPOLE,
                    "--gin_bindings=train_eval.total_steps=100000",
                    "--gin_bindings=paac.learning_rate=1e30",
                    "--gin_bindings=paac.summary_interval=1",
                    "--gin_bindings=paac.checkpoint_interval=160")
  assert proc.returncode == 2, proc.stderr[-3000:]
  assert "not finite" in proc.stderr and "Traceback" not in proc.stderr
  assert _digest(good) == before
  latest = _checkpoints(root)[-1]
  reader = tf.train.load_checkpoint(latest)
  for name in reader.get_variable_to_shape_map():
    value = reader.get_tensor(name)
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
      assert np.all(np.isfinite(value)), (latest, name)


def _train_dir_files(root):
  return sorted(os.listdir(os.path.join(root, "train")))


def _full_disk_then_resume(root, run_full):
  """Trains to ckpt-1600, then lets `run_full` fail the next save and checks what is left.

  run_full(args) runs `python -m paac_tf.train args` with the disk (or file size) full
  and returns the CompletedProcess.
  """
  train = os.path.join(root, "train")
  first = run_module("paac_tf.train", "--root_dir=" + root, *CARTPOLE,
                     "--gin_bindings=train_eval.total_steps=1600")
  assert first.returncode == 0, first.stderr[-3000:]
  kept = glob.glob(os.path.join(train, "ckpt-1600*")) + [os.path.join(train, "checkpoint")]
  before = _digest(kept)
  files_before = _train_dir_files(root)

  full = run_full(["--root_dir=" + root] + CARTPOLE + [
      "--gin_bindings=train_eval.total_steps=100000",
      "--gin_bindings=paac.checkpoint_interval=1600"])
  assert full.returncode == 2, full.stderr[-3000:]
  assert "Traceback" not in full.stderr, full.stderr[-3000:]
  lines = [x for x in full.stderr.splitlines() if x.startswith("error: ")]
  assert len(lines) == 1, full.stderr[-3000:]
  line = lines[0]
  assert line.startswith("error: Could not write checkpoint %s (disk full? " % (
      os.path.join(train, "ckpt-3200"))), line
  assert line.endswith("ckpt-1600 is intact and still the latest. Free disk space, then rerun "
                       "with the same --root_dir to resume."), line
  # The previous checkpoint and the index are untouched, nothing half-written is left.
  assert _digest(kept) == before
  assert _checkpoints(root) == [os.path.join(train, "ckpt-1600")]
  leftovers = [f for f in _train_dir_files(root) if f not in files_before
               and not f.startswith("events.out.tfevents")]
  assert not leftovers, leftovers
  reader = tf.train.load_checkpoint(os.path.join(train, "ckpt-1600"))
  assert reader.get_variable_to_shape_map()


def _resume_after_full_disk(root):
  """With space again, a rerun resumes from ckpt-1600 and saves ckpt-3200."""
  rerun = run_module("paac_tf.train", "--root_dir=" + root, *CARTPOLE,
                     "--gin_bindings=train_eval.total_steps=3200",
                     "--gin_bindings=paac.checkpoint_interval=1600")
  assert rerun.returncode == 0, rerun.stderr[-3000:]
  assert "Resuming at agent step 1600" in rerun.stderr
  assert _checkpoints(root) == [os.path.join(root, "train", "ckpt-%d" % s) for s in (1600, 3200)]


@pytest.mark.timeout(600)
def test_file_size_limit_during_checkpoint_save_keeps_the_previous_checkpoint(tmp_path):
  """Writes past RLIMIT_FSIZE fail with EFBIG (SIGXFSZ ignored), as on a full disk, without root."""
  root = str(tmp_path / "run")

  def run_limited(args):
    data = glob.glob(os.path.join(root, "train", "ckpt-1600.data-*"))
    limit = os.path.getsize(data[0]) // 2  # the checkpoint data no longer fits; logs do

    def limit_file_size():
      signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
      resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run([sys.executable, "-m", "paac_tf.train"] + args, cwd=REPO,
                          capture_output=True, text=True, timeout=600,
                          preexec_fn=limit_file_size)

  _full_disk_then_resume(root, run_limited)
  _resume_after_full_disk(root)


@pytest.mark.timeout(600)
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="mounting a tmpfs needs root")
def test_full_tmpfs_during_checkpoint_save_keeps_the_previous_checkpoint(tmp_path):
  """A real ENOSPC: root_dir on a small tmpfs, filled up before the rerun's first save."""
  mount = tmp_path / "disk"
  mount.mkdir()
  done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)],
                        capture_output=True, text=True)
  if done.returncode != 0:
    pytest.skip("cannot mount a tmpfs here: %s" % done.stderr.strip())
  try:
    root = str(mount / "run")
    filler = str(mount / "filler")

    def run_on_full_disk(args):
      data = glob.glob(os.path.join(root, "train", "ckpt-1600.data-*"))
      stat = os.statvfs(str(mount))
      free = stat.f_bavail * stat.f_frsize
      with open(filler, "wb") as f:  # leave less than half a checkpoint free
        f.write(b"\0" * max(0, free - os.path.getsize(data[0]) // 2))
      return subprocess.run([sys.executable, "-m", "paac_tf.train"] + args, cwd=REPO,
                            capture_output=True, text=True, timeout=600)

    _full_disk_then_resume(root, run_on_full_disk)
    os.remove(filler)
    _resume_after_full_disk(root)
  finally:
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)
