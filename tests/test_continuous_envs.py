"""Continuous (gymnasium `Box`) actions through the adapter, the worker pool and the factory:
specs, clipping, float arrays reaching the envs, shapes, LAST/auto-reset,
in-process vs workers, and the refused action spaces with their one-line messages."""
import functools
import re

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from tf_agents.environments import py_environment
from tf_agents.specs import array_spec
from tf_agents.trajectories import time_step as ts

from paac_tf import errors
from paac_tf.envs import batched
from paac_tf.envs import factory
from paac_tf.envs import gym_adapter
from paac_tf.envs.gym_adapter import GymnasiumPyEnvironment, UnsupportedSpaceError
from paac_tf.envs.worker_pool import ParallelBatchedPyEnvironment

pytestmark = pytest.mark.timeout(120)

FIRST, MID, LAST = ts.StepType.FIRST, ts.StepType.MID, ts.StepType.LAST
ECHO_ID = "PaacTestEchoBox-v0"


# --- test environments (module level: workers import this module to unpickle them) -----
class EchoBoxEnv(gym.Env):
  """Echoes its (clipped) action. Reward = action[0]; an action at `high` in every element
  terminates, at `low` in every element truncates.

  Observation (float32): [action..., steps since reset, env index, ok], where ok is 1 when
  the action arrived as an ndarray of the space's dtype and shape.
  """

  def __init__(self, low=-2.0, high=2.0, shape=(1,), dtype=np.float32, index=0):
    low, high = (np.broadcast_to(np.asarray(b, dtype), shape).copy() for b in (low, high))
    self.action_space = spaces.Box(low, high, shape, dtype)
    size = int(np.prod(shape))
    self.observation_space = spaces.Box(-np.inf, np.inf, (size + 3,), np.float32)
    self.index, self.t = index, 0

  def _observation(self, action, ok):
    return np.concatenate([np.ravel(action), [self.t, self.index, ok]]).astype(np.float32)

  def reset(self, *, seed=None, options=None):
    super().reset(seed=seed)
    self.t = 0
    return self._observation(np.zeros(self.action_space.shape), 1.0), {}

  def step(self, action):
    self.t += 1
    space = self.action_space
    ok = (isinstance(action, np.ndarray) and action.dtype == space.dtype
          and action.shape == space.shape)
    terminated = bool(np.all(action == space.high))
    truncated = not terminated and bool(np.all(action == space.low))
    return (self._observation(action, float(ok)), float(np.ravel(action)[0]), terminated,
            truncated, {})


def make_echo(index, **kwargs):
  return GymnasiumPyEnvironment(EchoBoxEnv(index=index, **kwargs))


def echo_fns(n, **kwargs):
  return [functools.partial(make_echo, i, **kwargs) for i in range(n)]


class SpaceEnv(EchoBoxEnv):
  """An EchoBoxEnv whose action space is one of REFUSED's."""

  def __init__(self, kind):
    super().__init__()
    self.action_space = REFUSED[kind][0]()


def _nan_box():
  box = spaces.Box(-1.0, 1.0, (2,), np.float32)
  box.high[1] = np.nan   # gymnasium refuses NaN bounds when building a Box: set one after
  return box


# kind: (action space builder, what the one-line message must say)
REFUSED = {
    "unbounded": (lambda: spaces.Box(-np.inf, np.inf, (2,), np.float32),
                  r"^Unbounded action space .*: a continuous action space must have finite "
                  r"bounds \(within float32's range\)\.$"),
    "beyond_float32": (lambda: spaces.Box(-1e300, 1e300, (2,), np.float64),
                       r"^Unbounded action space "),
    "half_bounded": (lambda: spaces.Box(np.full(40, -1.0, np.float32),
                                        np.array([1.0] * 39 + [np.inf], np.float32)),
                     r"^Unbounded action space "),   # long arrays: numpy wraps their str
    "nan": (_nan_box, r"^Unbounded action space "),
    "integer": (lambda: spaces.Box(0, 5, (2,), np.int64), r"^Non-float action space .* must "
                r"be float, not int64\.$"),
    "empty": (lambda: spaces.Box(-1.0, 1.0, (0,), np.float32), r"^Empty action space "),
    "multi_discrete": (lambda: spaces.MultiDiscrete([2, 3]), r"\(MultiDiscrete\).*only "
                       r"Discrete and bounded float Box"),
    "multi_binary": (lambda: spaces.MultiBinary(3), r"\(MultiBinary\)"),
    "dict": (lambda: spaces.Dict({"a": spaces.Discrete(2)}), r"\(Dict\)"),
    "tuple": (lambda: spaces.Tuple((spaces.Discrete(2), spaces.Discrete(3))), r"\(Tuple\)"),
}

if ECHO_ID not in gym.registry:
  gym.register(ECHO_ID, entry_point=EchoBoxEnv)
  for _kind in REFUSED:
    gym.register("PaacTestRefused-%s-v0" % _kind, entry_point=SpaceEnv, kwargs={"kind": _kind})


def _steps_equal(a, b):
  for x, y in zip(a, b):
    np.testing.assert_array_equal(x, y)


# --- the adapter ----------------------------------------------------------------------------
def test_pendulum_spec_and_steps_match_gymnasium_with_clipping():
  env = GymnasiumPyEnvironment("Pendulum-v1", seed=3, max_episode_steps=4)
  spec = env.action_spec()
  assert spec == array_spec.BoundedArraySpec((1,), np.float32, -2.0, 2.0, name="action")
  assert spec.minimum.shape == () and spec.maximum.shape == ()   # compact scalar bounds
  reference = gym.make("Pendulum-v1", max_episode_steps=4)
  expected, _ = reference.reset(seed=3)
  np.testing.assert_allclose(env.reset().observation, expected)
  for action, clipped in [([0.5], [0.5]), ([7.0], [2.0]), ([-3.0], [-2.0])]:
    t = env.step(np.array(action))
    obs, reward, _, _, _ = reference.step(np.array(clipped, np.float32))
    assert t.step_type == MID
    np.testing.assert_allclose(t.observation, obs)
    np.testing.assert_allclose(t.reward, reward, rtol=1e-6)
  t = env.step(np.array([0.0], np.float32))   # the time limit: LAST, discount 1
  assert (t.step_type, t.discount) == (LAST, 1.0)
  assert env.step(np.array([1.0])).step_type == FIRST   # auto reset, action ignored
  env.close()
  reference.close()


def test_box_action_arrives_clipped_float_of_the_space_dtype():
  raw = EchoBoxEnv(low=[-1.0, -2.0, -3.0], high=[1.0, 2.0, 3.0], shape=(3,), dtype=np.float64)
  env = GymnasiumPyEnvironment(raw)
  spec = env.action_spec()
  assert spec.dtype == np.float32 and spec.shape == (3,)   # float64 Box: float32 spec
  np.testing.assert_array_equal(spec.minimum, [-1.0, -2.0, -3.0])
  assert spec.minimum.dtype == np.float32 and spec.maximum.dtype == np.float32
  env.reset()
  t = env.step([0.5, -9, 9])   # a list of mixed ints and floats
  np.testing.assert_array_equal(t.observation[:3], [0.5, -2.0, 3.0])
  assert t.observation[-1] == 1.0   # an ndarray of float64 and shape (3,)
  assert (t.step_type, t.reward) == (MID, 0.5)
  t = env.step(np.full(3, 100.0, np.float32))   # clipped to high everywhere: terminated
  assert (t.step_type, t.reward, t.discount) == (LAST, 1.0, 0.0)
  t = env.step(np.zeros(3))
  assert t.step_type == FIRST and t.observation[3] == 0   # a new episode, action ignored
  t = env.step(np.full(3, -100.0))   # clipped to low: truncated
  assert (t.step_type, t.reward, t.discount) == (LAST, -1.0, 1.0)
  env.close()


def test_box_action_of_another_shape_is_a_value_error():
  env = GymnasiumPyEnvironment(EchoBoxEnv(shape=(2,)))
  env.reset()
  with pytest.raises(ValueError, match=r"'EchoBoxEnv' takes actions of shape \(2,\), got "
                                       r"shape \(3,\)"):
    env.step(np.zeros(3))
  env.close()


def test_num_actions_is_for_discrete_actions_only():
  env = GymnasiumPyEnvironment("Pendulum-v1")
  assert not hasattr(env, "num_actions") and getattr(env, "num_actions", None) is None
  with pytest.raises(batched.NoDiscreteActionsError, match="only for discrete.*Pendulum-v1"):
    _ = env.num_actions
  with pytest.raises(ValueError):   # NoDiscreteActionsError is a ValueError too
    _ = env.num_actions
  env.close()
  assert GymnasiumPyEnvironment("CartPole-v1").num_actions == 2


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_refused_action_spaces_have_one_line_errors_naming_env_and_space(kind):
  with pytest.raises(UnsupportedSpaceError) as info:
    GymnasiumPyEnvironment(SpaceEnv(kind))
  message = str(info.value)
  assert "\n" not in message and "'SpaceEnv'" in message
  assert REFUSED[kind][0]().__class__.__name__ in message
  assert re.search(REFUSED[kind][1], message), message
  assert isinstance(info.value, errors.UserError) and isinstance(info.value, ValueError)
  with pytest.raises(UnsupportedSpaceError, match="'my-env'"):
    gym_adapter.action_spec_from_space(REFUSED[kind][0](), "my-env")


# --- the worker pool, the factory --------------------------------------------------------
def test_pool_in_process_and_workers_agree_on_echo_env():
  actions = [np.array([[0.5], [-0.25], [3.0], [1.0]]),       # env 2 clipped to high: LAST
             np.array([[-9.0], [2.0], [0.0], [0.75]], np.float32),   # 1 LAST, 2 FIRST
             np.array([[1.5], [0.1], [-2.0], [-5.0]])]       # 2: truncated; 3 too
  results = []
  for num_workers in (0, 2):
    env = ParallelBatchedPyEnvironment(echo_fns(4), num_workers)
    try:
      assert env.action_spec() == array_spec.BoundedArraySpec((1,), np.float32, -2.0, 2.0,
                                                              name="action")
      assert env.batch_size == 4 and getattr(env, "num_actions", None) is None
      steps = [env.reset()] + [env.step(a) for a in actions]
      results.append((steps, sorted(env.pop_finished_episodes())))
    finally:
      env.close()
  _steps_equal(*[[x for step in steps for x in step] for steps, _ in results])
  steps, finished = results[0]
  np.testing.assert_array_equal(steps[1].observation[:, 0], [0.5, -0.25, 2.0, 1.0])
  np.testing.assert_array_equal(steps[1].step_type, [MID, MID, LAST, MID])
  np.testing.assert_array_equal(steps[1].discount, [1.0, 1.0, 0.0, 1.0])
  np.testing.assert_array_equal(steps[2].step_type, [LAST, LAST, FIRST, MID])
  np.testing.assert_array_equal(steps[2].discount, [1.0, 0.0, 1.0, 1.0])
  np.testing.assert_array_equal(steps[3].step_type, [FIRST, FIRST, LAST, LAST])
  np.testing.assert_array_equal(steps[3].discount, [1.0, 1.0, 1.0, 1.0])
  assert np.all(np.concatenate([s.observation[:, -1] for s in steps]) == 1.0)  # float32 [1]
  assert finished == [(-2.0, 1), (-1.5, 2), (-0.25, 3), (1.75, 2), (2.0, 1)]


def test_pool_checks_the_shape_of_float_actions():
  env = ParallelBatchedPyEnvironment(echo_fns(4, shape=(2,)), 0)
  try:
    env.reset()
    for bad in (np.zeros(4), np.zeros(8), np.zeros((4, 3)), np.zeros((3, 2)),
                np.zeros((2, 4)), np.zeros((4, 2, 1))):
      with pytest.raises(ValueError, match=r"^Expected actions of shape \(4, 2\) \(one action "
                                           r"of shape \(2,\) per environment\), got shape"):
        env.send(bad)
    t = env.step(np.full((4, 2), 0.5, np.float64))   # still usable; float64 is cast
    assert np.all(t.step_type == MID) and np.all(t.reward == 0.5)
  finally:
    env.close()


class _KeepingEnv(py_environment.PyEnvironment):
  """A plain PyEnvironment with a float64 action spec that keeps every action it got."""

  def __init__(self, bounds=(-1.0, 1.0)):
    super().__init__(handle_auto_reset=False)
    self.kept = []
    self._action = array_spec.BoundedArraySpec((2,), np.float64, *bounds, name="a")

  def observation_spec(self):
    return array_spec.ArraySpec((), np.float32, name="observation")

  def action_spec(self):
    return self._action

  def _reset(self):
    return ts.restart(np.float32(0))

  def _step(self, action):
    self.kept.append(action)
    return ts.transition(np.float32(0), np.float32(0))


def test_pool_gives_envs_actions_no_later_step_overwrites():
  env = ParallelBatchedPyEnvironment([_KeepingEnv, _KeepingEnv], 0)
  try:
    spec = env.action_spec()
    assert (spec.dtype, spec.shape, spec.name) == (np.float32, (2,), "action")
    env.reset()
    env.step(np.ones((2, 2)))
    env.step(np.zeros((2, 2)))
    kept = env._group.envs[1].kept   # pylint: disable=protected-access
    np.testing.assert_array_equal(kept, [[1.0, 1.0], [0.0, 0.0]])
  finally:
    env.close()


def test_pool_refuses_float_specs_without_finite_bounds():
  with pytest.raises(ValueError, match="float actions with finite bounds"):
    ParallelBatchedPyEnvironment([functools.partial(_KeepingEnv, (-np.inf, 1.0))], 0)
  with pytest.raises(ValueError, match="float actions with finite bounds"):
    ParallelBatchedPyEnvironment([functools.partial(_KeepingEnv, (-1e300, 1.0))], 0)


def test_factory_builds_pendulum_in_process_and_with_workers_alike():
  actions = np.random.default_rng(0).uniform(-3.0, 3.0, (6, 4, 1))
  results = []
  for num_workers in (0, 2):
    env = factory.make_batched_env("Pendulum-v1", 4, num_workers=num_workers, seed=5)
    try:
      assert len(env.worker_pids) == num_workers
      assert env.action_spec() == array_spec.BoundedArraySpec((1,), np.float32, -2.0, 2.0,
                                                              name="action")
      assert env.observation_spec().shape == (3,)
      with pytest.raises(batched.NoDiscreteActionsError):
        _ = env.num_actions
      results.append([env.reset()] + [env.step(a) for a in actions])
    finally:
      env.close()
  _steps_equal(*[[x for step in steps for x in step] for steps in results])
  # Environment i is seeded with seed + i.
  reference = GymnasiumPyEnvironment("Pendulum-v1", seed=5 + 2)
  np.testing.assert_array_equal(results[0][0].observation[2], reference.reset().observation)
  reference.close()


def test_factory_runs_a_custom_box_env_in_workers():
  env = factory.make_batched_env(ECHO_ID, 4, num_workers=2)
  try:
    env.reset()
    t = env.step(np.array([[0.5], [3.0], [-0.5], [-3.0]]))
    np.testing.assert_array_equal(t.reward, [0.5, 2.0, -0.5, -2.0])
    np.testing.assert_array_equal(t.step_type, [MID, LAST, MID, LAST])
    np.testing.assert_array_equal(t.discount, [1.0, 0.0, 1.0, 1.0])
    assert np.all(t.observation[:, -1] == 1.0)
  finally:
    env.close()


@pytest.mark.parametrize("kind", ["unbounded", "integer", "empty", "multi_discrete"])
def test_factory_refuses_unsupported_action_spaces_in_this_process(kind):
  with pytest.raises(UnsupportedSpaceError, match=REFUSED[kind][1]) as info:
    factory.make_batched_env("PaacTestRefused-%s-v0" % kind, 2, num_workers=2)
  assert "\n" not in str(info.value) and "PaacTestRefused-%s-v0" % kind in str(info.value)
