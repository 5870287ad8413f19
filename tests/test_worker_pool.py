"""ParallelBatchedPyEnvironment: the batched contract, in-process vs workers, failures."""
import functools
import multiprocessing
import os
import signal
import threading
import time

import gymnasium as gym
import numpy as np
import psutil
import pytest
from gymnasium import spaces
from tf_agents.trajectories import time_step as ts

from conftest import assert_gone
from paac_tf.envs import factory
from paac_tf.envs.gym_adapter import GymnasiumPyEnvironment
from paac_tf.envs.worker_pool import ParallelBatchedPyEnvironment, WorkerError

pytestmark = pytest.mark.timeout(120)

FIRST, MID, LAST = ts.StepType.FIRST, ts.StepType.MID, ts.StepType.LAST
CONTINUE, TRUNCATE, TERMINATE = 0, 1, 2


# --- picklable test environments (workers import this module to unpickle them) ---------
class ScriptedEnv(gym.Env):
  """Action 0 continues, 1 truncates, 2 terminates; reward = 5 * (action + 1).

  Observation: uint8 [env index, steps since reset, last action]. `fail_at` makes the
  env misbehave at that step: mode "raise", "exit" (hard crash) or "hang".
  """

  observation_space = spaces.Box(0, 255, (3,), np.uint8)
  action_space = spaces.Discrete(3)

  def __init__(self, index, fail_at=None, mode="raise"):
    self.index, self.fail_at, self.mode = index, fail_at, mode
    self.t = 0

  def reset(self, *, seed=None, options=None):
    super().reset(seed=seed)
    self.t = 0
    return np.array([self.index, 0, 0], np.uint8), {}

  def step(self, action):
    self.t += 1
    if self.fail_at is not None and self.t >= self.fail_at:
      if self.mode == "raise":
        raise ValueError("boom in env %d" % self.index)
      if self.mode == "exit":
        os._exit(3)
      if self.mode == "hang":
        time.sleep(60)
      if self.mode == "slow":
        time.sleep(3.0)
    a = int(action)
    return (np.array([self.index, self.t, a], np.uint8), 5.0 * (a + 1), a == TERMINATE,
            a == TRUNCATE, {})


def make_scripted(index, fail_index=None, fail_at=None, mode="raise"):
  failing = index == fail_index
  return GymnasiumPyEnvironment(
      ScriptedEnv(index, fail_at if failing else None, mode))


def make_broken(index):
  if index == 3:
    raise RuntimeError("cannot build env 3")
  return make_scripted(index)


def scripted_fns(n, **kwargs):
  return [functools.partial(make_scripted, i, **kwargs) for i in range(n)]


def cartpole_fns(n, seed=0):
  return [functools.partial(GymnasiumPyEnvironment, "CartPole-v1", seed=seed + i)
          for i in range(n)]




# --- the batched contract ------------------------------------------------------------
def test_cartpole_shapes_dtypes_and_episodes_with_workers():
  env = factory.make_batched_env("CartPole-v1", 8, num_workers=2, seed=0)
  pids = env.worker_pids
  try:
    assert len(pids) == 2 and env.num_workers == 2
    assert env.batched and env.batch_size == 8 and env.num_actions == 2
    assert env.observation_spec().shape == (4,) and env.observation_spec().name == "observation"
    spec = env.action_spec()
    assert (spec.shape, spec.dtype, spec.name, spec.minimum, spec.maximum) == (
        (), np.int64, "action", 0, 1)
    t = env.reset()
    assert t.observation.shape == (8, 4) and t.observation.dtype == np.float32
    assert t.step_type.dtype == np.int32 and np.all(t.step_type == FIRST)
    assert t.reward.dtype == np.float32 and t.discount.dtype == np.float32
    rng = np.random.default_rng(0)
    lengths = np.zeros(8, int)
    expected = []
    for _ in range(60):
      t = env.step(rng.integers(0, 2, 8))
      assert t.observation.shape == (8, 4) and t.step_type.shape == (8,)
      assert t.reward.dtype == np.float32 and t.discount.dtype == np.float32
      lengths += t.step_type != FIRST
      for i in np.flatnonzero(t.step_type == LAST):
        assert t.discount[i] == 0.0   # CartPole falls: terminated
        expected.append((float(lengths[i]), int(lengths[i])))
        lengths[i] = 0
    finished = env.pop_finished_episodes()
    assert expected and sorted(finished) == sorted(expected)
    assert env.pop_finished_episodes() == []
  finally:
    env.close()
  assert_gone(pids)


def test_in_process_and_workers_give_identical_trajectories():
  actions = np.random.default_rng(1).integers(0, 2, (40, 8))
  results = []
  for num_workers in (0, 4):
    env = ParallelBatchedPyEnvironment(cartpole_fns(8, seed=3), num_workers)
    steps = [env.reset()] + [env.step(a) for a in actions]
    results.append(steps)
    env.close()
  for a, b in zip(*results):
    for x, y in zip(a, b):
      np.testing.assert_array_equal(x, y)


def test_auto_reset_clipping_and_raw_returns_per_env():
  env = ParallelBatchedPyEnvironment(scripted_fns(4), 2, reward_clipping=True)
  try:
    env.reset()
    t = env.step([CONTINUE, TRUNCATE, TERMINATE, CONTINUE])
    np.testing.assert_array_equal(t.step_type, [MID, LAST, LAST, MID])
    np.testing.assert_array_equal(t.discount, [1.0, 1.0, 0.0, 1.0])
    np.testing.assert_array_equal(t.reward, [1.0, 1.0, 1.0, 1.0])   # clipped from 5, 10, 15
    np.testing.assert_array_equal(t.observation[:, 0], [0, 1, 2, 3])   # env order kept
    np.testing.assert_array_equal(t.observation[1], [1, 1, TRUNCATE])  # true final obs
    assert sorted(env.pop_finished_episodes()) == [(10.0, 1), (15.0, 1)]
    t = env.step([TERMINATE, TERMINATE, TERMINATE, TERMINATE])
    np.testing.assert_array_equal(t.step_type, [LAST, FIRST, FIRST, LAST])
    np.testing.assert_array_equal(t.reward, [1.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(t.discount, [0.0, 1.0, 1.0, 0.0])
    np.testing.assert_array_equal(t.observation[1], [1, 0, 0])   # reset observation
    assert sorted(env.pop_finished_episodes()) == [(5.0 + 15.0, 2), (5.0 + 15.0, 2)]
  finally:
    env.close()


def test_returned_arrays_are_not_overwritten_by_later_steps():
  env = ParallelBatchedPyEnvironment(scripted_fns(2), 1)
  try:
    env.reset()
    t1 = env.step([CONTINUE, CONTINUE])
    env.step([CONTINUE, CONTINUE])
    np.testing.assert_array_equal(t1.observation[:, 1], [1, 1])
  finally:
    env.close()


def test_send_recv_halves():
  env = ParallelBatchedPyEnvironment(scripted_fns(4), 2)
  try:
    env.reset()
    env.send(np.zeros(4, np.int64))
    with pytest.raises(RuntimeError, match="twice"):
      env.send(np.zeros(4, np.int64))
    t = env.recv()
    assert np.all(t.step_type == MID) and env.current_time_step() is t
    with pytest.raises(RuntimeError, match="without"):
      env.recv()
    with pytest.raises(ValueError, match="Expected 4 actions"):
      env.step(np.zeros(3, np.int64))
  finally:
    env.close()


def test_workers_and_their_fork_server_ignore_sigint_and_sigterm():
  """A signal to the whole process group (Ctrl-C, a container stop) reaches the workers and
  the fork server that forked them too: they go on; the parent decides and closes them."""
  env = ParallelBatchedPyEnvironment(scripted_fns(2), 2)
  pids = env.worker_pids
  try:
    env.reset()
    fork_server = psutil.Process(pids[0]).parent()
    assert fork_server.pid != os.getpid() and "forkserver" in " ".join(fork_server.cmdline())
    for sig in (signal.SIGINT, signal.SIGTERM):
      for pid in pids + [fork_server.pid]:
        os.kill(pid, sig)
    time.sleep(0.5)
    assert fork_server.is_running() and fork_server.status() != psutil.STATUS_ZOMBIE
    for _ in range(3):
      assert np.all(env.step([CONTINUE, CONTINUE]).step_type == MID)
  finally:
    env.close()
  assert_gone(pids)


# --- configuration errors ---------------------------------------------------------------
def test_indivisible_envs_per_worker():
  with pytest.raises(ValueError, match=r"\(6\).*divisible.*\(4\)"):
    ParallelBatchedPyEnvironment(scripted_fns(6), 4)


def test_unpicklable_env_fns():
  with pytest.raises(TypeError, match="picklable"):
    ParallelBatchedPyEnvironment([lambda: make_scripted(0)] * 2, 2)


def test_bad_start_method():
  with pytest.raises(ValueError, match="never 'fork'"):
    ParallelBatchedPyEnvironment(scripted_fns(2), 2, start_method="fork")


# --- failures surface as WorkerError, workers never outlive them ------------------------
def test_exception_in_worker_step():
  env = ParallelBatchedPyEnvironment(scripted_fns(8, fail_index=5, fail_at=2), 2)
  pids = env.worker_pids
  env.reset()
  env.step(np.zeros(8, np.int64))
  with pytest.raises(WorkerError, match=r"(?s)Worker 1 .*environments 4-7.*ValueError: "
                                        r"boom in env 5.*Traceback"):
    env.step(np.zeros(8, np.int64))
  assert_gone(pids)
  with pytest.raises(RuntimeError, match="closed.*boom"):
    env.step(np.zeros(8, np.int64))
  env.close()


def test_exception_while_building_envs():
  fns = [functools.partial(make_broken, i) for i in range(4)]
  before = {p.pid for p in multiprocessing.active_children()}
  with pytest.raises(WorkerError, match="Worker 1 .*cannot build env 3.*building"):
    ParallelBatchedPyEnvironment(fns, 2)
  new = {p.pid for p in multiprocessing.active_children()} - before
  assert not new


def test_worker_crash_is_reported():
  env = ParallelBatchedPyEnvironment(scripted_fns(4, fail_index=0, fail_at=1, mode="exit"), 2)
  pids = env.worker_pids
  env.reset()
  with pytest.raises(WorkerError, match="Worker 0 .*exited with code 3.*stepping"):
    env.step(np.zeros(4, np.int64))
  assert_gone(pids)


def test_killed_worker_is_reported():
  env = ParallelBatchedPyEnvironment(scripted_fns(4), 2)
  pids = env.worker_pids
  env.reset()
  os.kill(pids[1], signal.SIGKILL)
  with pytest.raises(WorkerError, match="Worker 1 .*SIGKILL"):
    for _ in range(3):   # the first send may still go through
      env.step(np.zeros(4, np.int64))
  assert_gone(pids)


def test_hung_worker_times_out():
  env = ParallelBatchedPyEnvironment(scripted_fns(2, fail_index=1, fail_at=1, mode="hang"), 2,
                                     timeout=3.0)
  pids = env.worker_pids
  env.reset()
  started = time.monotonic()
  with pytest.raises(WorkerError, match="Worker 1 .*did not answer within 3 s while stepping"):
    env.step(np.zeros(2, np.int64))
  assert time.monotonic() - started < 15
  assert_gone(pids)


def test_ctrl_c_during_a_step_closes_the_environment():
  env = ParallelBatchedPyEnvironment(scripted_fns(2, fail_index=0, fail_at=1, mode="slow"), 2)
  pids = env.worker_pids
  env.reset()
  # Python's own Ctrl-C behaviour, whatever handler an earlier test in this process left.
  previous = signal.signal(signal.SIGINT, signal.default_int_handler)
  timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
  timer.start()
  try:
    with pytest.raises(KeyboardInterrupt):
      env.step(np.zeros(2, np.int64))
  finally:
    timer.cancel()
    signal.signal(signal.SIGINT, previous)
  assert_gone(pids)
  with pytest.raises(RuntimeError, match="closed.*interrupted while stepping"):
    env.step(np.zeros(2, np.int64))


def test_close_is_idempotent_and_stops_workers():
  env = ParallelBatchedPyEnvironment(scripted_fns(4), 2)
  pids = env.worker_pids
  assert all(psutil.pid_exists(pid) for pid in pids)
  env.close()
  env.close()
  assert_gone(pids)
  with pytest.raises(RuntimeError, match="closed"):
    env.reset()


def test_garbage_collection_stops_workers():
  env = ParallelBatchedPyEnvironment(scripted_fns(2), 2)
  pids = env.worker_pids
  env.reset()
  del env
  assert_gone(pids)
