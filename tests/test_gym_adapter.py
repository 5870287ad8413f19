"""GymnasiumPyEnvironment: time-step semantics, specs, seeding, unsupported spaces."""
import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from tf_agents.trajectories import time_step as ts

from paac_tf import errors
from paac_tf.envs import gym_adapter
from paac_tf.envs.gym_adapter import GymnasiumPyEnvironment, UnsupportedSpaceError

pytestmark = pytest.mark.timeout(60)

FIRST, MID, LAST = ts.StepType.FIRST, ts.StepType.MID, ts.StepType.LAST
CONTINUE, TRUNCATE, TERMINATE = 0, 1, 2


class ScriptedEnv(gym.Env):
  """The action decides: 0 continues, 1 truncates, 2 terminates. Reward = action + 1.

  Observations are float64 [last action, steps since reset]; actions are
  Discrete(3, start=action_start) (the agent-side actions stay 0..2).
  """

  def __init__(self, action_start=0):
    self.observation_space = spaces.Box(-100.0, 100.0, (2,), np.float64)
    self.action_space = spaces.Discrete(3, start=action_start)
    self.action_start = action_start
    self.received = []
    self.t = 0

  def reset(self, *, seed=None, options=None):
    super().reset(seed=seed)
    self.t = 0
    return np.array([-1.0, 0.0]), {"seed": seed}

  def step(self, action):
    self.received.append(int(action))
    a = int(action) - self.action_start
    self.t += 1
    return (np.array([float(a), float(self.t)]), float(a + 1), a == TERMINATE, a == TRUNCATE,
            {"t": self.t})


class DictObsEnv(ScriptedEnv):

  def __init__(self):
    super().__init__()
    self.observation_space = spaces.Dict({"x": spaces.Discrete(2)})


class MultiDiscreteActionEnv(ScriptedEnv):

  def __init__(self):
    super().__init__()
    self.action_space = spaces.MultiDiscrete([2, 3])


def test_specs_and_first_step_cartpole():
  env = GymnasiumPyEnvironment("CartPole-v1", seed=0)
  obs_spec, action_spec = env.observation_spec(), env.action_spec()
  assert obs_spec.name == "observation" and obs_spec.shape == (4,)
  assert obs_spec.dtype == np.float32
  assert action_spec.name == "action" and action_spec.shape == () and action_spec.dtype == np.int64
  assert (action_spec.minimum, action_spec.maximum) == (0, 1)
  assert env.num_actions == 2
  assert env.reward_spec().dtype == np.float32
  assert not env.batched
  t = env.reset()
  assert t.step_type == FIRST and t.step_type.dtype == np.int32
  assert t.reward == 0.0 and t.reward.dtype == np.float32
  assert t.discount == 1.0 and t.discount.dtype == np.float32
  assert t.observation.shape == (4,) and t.observation.dtype == np.float32
  t = env.step(np.int64(1))
  assert t.step_type == MID and t.reward == 1.0 and t.discount == 1.0
  env.close()
  env.close()   # idempotent


def test_truncation_by_time_limit_is_last_with_discount_one():
  env = GymnasiumPyEnvironment("CartPole-v1", seed=0, max_episode_steps=3)
  env.reset()
  types = [int(env.step(i % 2).step_type) for i in range(2)]
  assert types == [MID, MID]
  t = env.step(0)
  assert t.step_type == LAST and t.discount == 1.0 and t.reward == 1.0
  t = env.step(1)   # auto reset: FIRST, action ignored
  assert t.step_type == FIRST and t.reward == 0.0 and t.discount == 1.0
  assert env.step(1).step_type == MID
  env.close()


def test_terminated_vs_truncated_and_auto_reset():
  raw = ScriptedEnv()
  env = GymnasiumPyEnvironment(raw)
  assert env.observation_spec().dtype == np.float32   # float64 Box cast to float32
  t = env.reset()
  assert t.step_type == FIRST and t.observation.dtype == np.float32
  np.testing.assert_array_equal(t.observation, [-1.0, 0.0])
  t = env.step(CONTINUE)
  assert (t.step_type, t.reward, t.discount) == (MID, 1.0, 1.0)
  t = env.step(TERMINATE)
  assert (t.step_type, t.reward, t.discount) == (LAST, 3.0, 0.0)
  np.testing.assert_array_equal(t.observation, [2.0, 2.0])   # the true final observation
  t = env.step(TERMINATE)   # ignored: this step resets
  assert (t.step_type, t.reward, t.discount) == (FIRST, 0.0, 1.0)
  assert raw.received == [CONTINUE, TERMINATE]
  t = env.step(TRUNCATE)
  assert (t.step_type, t.reward, t.discount) == (LAST, 2.0, 1.0)
  np.testing.assert_array_equal(t.observation, [1.0, 1.0])
  assert env.step(CONTINUE).step_type == FIRST
  assert env.get_info() == {"seed": None}
  env.close()


def test_discrete_action_start_is_offset():
  raw = ScriptedEnv(action_start=-1)
  env = GymnasiumPyEnvironment(raw)
  spec = env.action_spec()
  assert (spec.minimum, spec.maximum) == (0, 2)
  env.reset()
  env.step(0)
  env.step(2)
  assert raw.received == [-1, 1]


def test_float64_kept_when_asked():
  env = GymnasiumPyEnvironment(ScriptedEnv(), cast_float64=False)
  assert env.observation_spec().dtype == np.float64
  assert env.reset().observation.dtype == np.float64


def test_discrete_observations_are_int64_scalars():
  env = GymnasiumPyEnvironment("FrozenLake-v1", seed=0)
  spec = env.observation_spec()
  assert spec.shape == () and spec.dtype == np.int64
  assert (spec.minimum, spec.maximum) == (0, 15)
  t = env.reset()
  assert t.observation.dtype == np.int64 and t.observation.shape == ()
  env.close()


def test_seed_applies_to_first_reset_only():
  env = GymnasiumPyEnvironment("CartPole-v1", seed=7)
  reference = gym.make("CartPole-v1")
  first, _ = reference.reset(seed=7)
  second, _ = reference.reset()
  np.testing.assert_allclose(env.reset().observation, first)
  np.testing.assert_allclose(env.reset().observation, second)
  env.seed(7)
  np.testing.assert_allclose(env.reset().observation, first)
  env.close()


def test_env_instance_rejects_make_arguments():
  with pytest.raises(ValueError, match="only when"):
    GymnasiumPyEnvironment(ScriptedEnv(), max_episode_steps=5)


def test_bounded_float_box_actions_are_accepted():
  # More on continuous actions (clipping, refused Box spaces): test_continuous_envs.py.
  env = GymnasiumPyEnvironment("Pendulum-v1")
  spec = env.action_spec()
  assert (spec.shape, spec.dtype, spec.name, spec.minimum, spec.maximum) == (
      (1,), np.float32, "action", -2.0, 2.0)
  env.close()


def test_unbounded_and_integer_box_actions_are_rejected_with_env_id():
  for space, message in [(spaces.Box(-np.inf, np.inf, (2,), np.float32), "finite bounds"),
                         (spaces.Box(0, 3, (2,), np.int64), "must be float")]:
    raw = ScriptedEnv()
    raw.action_space = space
    with pytest.raises(UnsupportedSpaceError, match="ScriptedEnv.*" + message) as info:
      GymnasiumPyEnvironment(raw)
    assert isinstance(info.value, ValueError) and isinstance(info.value, errors.UserError)


def test_dict_observations_are_rejected():
  with pytest.raises(UnsupportedSpaceError, match="Dict.*DictObsEnv"):
    GymnasiumPyEnvironment(DictObsEnv())


def test_multidiscrete_actions_are_rejected():
  with pytest.raises(UnsupportedSpaceError, match="MultiDiscrete"):
    GymnasiumPyEnvironment(MultiDiscreteActionEnv())


def test_space_helpers_compact_bounds():
  spec = gym_adapter.observation_spec_from_space(spaces.Box(0, 255, (3, 2), np.uint8))
  assert spec.dtype == np.uint8 and spec.minimum.shape == () and spec.maximum == 255
  spec = gym_adapter.observation_spec_from_space(
      spaces.Box(np.array([-1e300, 0.0]), np.array([1e300, 1.0]), dtype=np.float64))
  assert spec.dtype == np.float32 and np.all(np.isfinite(spec.minimum))
