"""Faults with real processes and signals: kill -9 then resume; divergence stops cleanly."""
import glob
import hashlib
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from conftest import REPO, run_module

CARTPOLE = ["--gin_file=cartpole.gin", "--gin_bindings=paac_train.stop_at_average_return=None"]


def _checkpoints(root):
  state = tf.train.get_checkpoint_state(os.path.join(root, "train"))
  return [] if state is None else list(state.all_model_checkpoint_paths)


def _digest(paths):
  h = hashlib.sha256()
  for p in sorted(paths):
    with open(p, "rb") as f:
      h.update(f.read())
  return h.hexdigest()


@pytest.mark.timeout(600)
def test_kill_9_during_training_then_rerun_resumes_from_last_checkpoint(tmp_path):
  root = str(tmp_path / "run")
  proc = subprocess.Popen(
      [sys.executable, "-m", "paac_tf.train", "--root_dir=" + root] + CARTPOLE +
      ["--gin_bindings=paac_train.checkpoint_interval=4000",
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
                     "--gin_bindings=paac_train.checkpoint_interval=4000",
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
                    "--gin_bindings=PaacAgent.learning_rate=1e30",
                    "--gin_bindings=paac_train.summary_interval=1",
                    "--gin_bindings=paac_train.checkpoint_interval=160")
  assert proc.returncode == 2, proc.stderr[-3000:]
  assert "not finite" in proc.stderr and "Traceback" not in proc.stderr
  assert _digest(good) == before
  latest = _checkpoints(root)[-1]
  reader = tf.train.load_checkpoint(latest)
  for name in reader.get_variable_to_shape_map():
    value = reader.get_tensor(name)
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
      assert np.all(np.isfinite(value)), (latest, name)
