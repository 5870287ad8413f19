"""Property-based tests (hypothesis): the returns math and the environment adapter under
random episode boundaries."""
import numpy as np
import tensorflow as tf
from hypothesis import given, settings, strategies as st
from tf_agents.trajectories import time_step as ts

from paac_tf.algorithms.paac import update
from paac_tf.envs.gym_adapter import GymnasiumPyEnvironment
from test_gym_adapter import CONTINUE, TERMINATE, TRUNCATE, ScriptedEnv

GAMMA = 0.97


def forward_view_return(t, rewards, discounts, next_is_last, values):
  """R_t by walking forward from t (independent of the backward recursion under test)."""
  total, scale, k = 0.0, 1.0, t
  while True:
    total += scale * rewards[k]
    scale *= GAMMA * discounts[k]
    if next_is_last[k] or k + 1 == len(rewards):
      return total + scale * values[k + 1]
    k += 1


@st.composite
def rollouts(draw):
  t_max = draw(st.integers(1, 8))
  ends = draw(st.lists(st.sampled_from(["none", "terminated", "truncated"]),
                       min_size=t_max, max_size=t_max))
  rewards = draw(st.lists(st.floats(-1, 1), min_size=t_max, max_size=t_max))
  values = draw(st.lists(st.floats(-10, 10), min_size=t_max + 1, max_size=t_max + 1))
  next_is_last = np.array([e != "none" for e in ends])
  discounts = np.array([0.0 if e == "terminated" else 1.0 for e in ends], np.float32)
  return (np.array(rewards, np.float32), discounts, next_is_last, np.array(values, np.float32))


@settings(max_examples=200, deadline=None)
@given(rollouts())
def test_n_step_returns_match_the_forward_view(rollout):
  rewards, discounts, next_is_last, values = rollout
  col = lambda x: tf.constant(np.asarray(x, np.float32)[:, None])   # next_is_last as 0/1
  got = update.n_step_returns(col(rewards), col(discounts), col(next_is_last), col(values),
                              GAMMA).numpy()[:, 0]
  expected = [forward_view_return(t, rewards, discounts, next_is_last, values)
              for t in range(len(rewards))]
  np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([CONTINUE, CONTINUE, CONTINUE, TRUNCATE, TERMINATE]),
                min_size=1, max_size=40))
def test_adapter_step_types_and_discounts_follow_the_episode_script(script):
  env = GymnasiumPyEnvironment(ScriptedEnv(), seed=0)
  step = env.reset()
  assert step.step_type == ts.StepType.FIRST
  for action in script:
    prev = step
    step = env.step(np.int64(action))
    if prev.step_type == ts.StepType.LAST:
      # The step after an episode end starts a new one and ignores the action.
      assert step.step_type == ts.StepType.FIRST
      assert step.reward == 0.0 and step.discount == 1.0
      continue
    assert step.reward == action + 1
    if action == CONTINUE:
      assert step.step_type == ts.StepType.MID and step.discount == 1.0
    elif action == TRUNCATE:
      assert step.step_type == ts.StepType.LAST and step.discount == 1.0
    else:
      assert step.step_type == ts.StepType.LAST and step.discount == 0.0
  env.close()
