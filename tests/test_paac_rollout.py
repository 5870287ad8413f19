"""RolloutRunner: grouped / pipelined rollouts give consistent, time-ordered batches."""
import numpy as np
import pytest

from paac_tf.algorithms.paac import agent as agent_lib
from paac_tf.envs import environment
from paac_tf.runners.sync import rollout
from paac_tf.runners.sync import tensor_views
from paac_tf.networks import actor_critic


class RecordingCalls(rollout.CompiledCalls):
  """The real agent's calls, remembering the batches it trained on (observations, actions,
  step data, values), whichever of its train calls the loop uses."""

  def __init__(self, agent):
    super().__init__(agent)
    self.batches = []
    packed = self.train_packed
    self.train_packed = lambda *batch: (self.batches.append(batch), packed(*batch))[1]
    if self.stores_activations:
      stored = self.train_stored
      self.train_stored = lambda *args: (self.batches.append(args[:4]), stored(*args))[1]


@pytest.mark.parametrize("num_groups,overlap", [(1, False), (2, False), (2, True)])
def test_batches_are_consistent_rollouts(num_groups, overlap):
  t_max, n = 5, 4
  env = environment.make_environment("CartPole-v1", n, 0, seed=3, num_groups=num_groups)
  try:
    model = actor_critic.build_actor_critic(env.num_actions, env.observation_spec(), torso="mlp")
    agent = agent_lib.PaacAgent(model, total_updates=100)
    calls = RecordingCalls(agent)
    runner = rollout.RolloutRunner(env, agent, t_max, overlap_learner=overlap, calls=calls)
    assert runner.steps_per_update == n * t_max
    for _ in range(12):   # 60 steps: CartPole episodes end inside rollouts at random
      metrics = runner.run_update()
      assert np.isfinite(float(metrics["Losses/total"]))
  finally:
    env.close()
  for obs, actions, step_data, values in calls.batches:
    assert step_data.shape == (4, t_max, n) and step_data.dtype == np.float32
    rewards, discounts, next_last, is_last = step_data
    assert set(np.unique(next_last)) <= {0.0, 1.0} and set(np.unique(is_last)) <= {0.0, 1.0}
    next_last, is_last = next_last > 0.5, is_last > 0.5
    assert obs.shape == (t_max, n, 4) and actions.shape == (t_max, n)
    assert values.shape == (t_max + 1, n)
    # The step type seen after step t is the one acted on at step t + 1.
    np.testing.assert_array_equal(is_last[1:], next_last[:-1])
    # CartPole: reward 1 for every real step, 0 for the auto-reset step after a LAST.
    np.testing.assert_array_equal(rewards, np.where(is_last, 0.0, 1.0))
    # Discount 0 exactly where an episode terminated.
    assert np.all(discounts[~next_last] == 1.0)
  assert any(np.any(b[2][2]) for b in calls.batches), "no episode ended inside a rollout"


def test_grouped_environment_matches_specs_and_splits_seeds():
  plain = environment.make_environment("CartPole-v1", 4, 0, seed=5)
  grouped = environment.make_environment("CartPole-v1", 4, 0, seed=5, num_groups=2)
  try:
    assert grouped.batch_size == 4 and len(grouped.groups) == 2
    assert grouped.observation_spec() == plain.observation_spec()
    np.testing.assert_array_equal(plain.reset().observation, grouped.reset().observation)
  finally:
    plain.close()
    grouped.close()


def test_bad_group_split_is_a_clear_error():
  with pytest.raises(ValueError, match="multiple of num_groups"):
    environment.make_environment("CartPole-v1", 5, 0, seed=0, num_groups=2)


def test_numpy_view_shares_the_tensors_memory_and_keeps_it_alive():
  import gc  # pylint: disable=import-outside-toplevel
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  tensor = tf.reshape(tf.range(12, dtype=tf.float32), [3, 4]) * 2.0
  view = tensor_views.numpy_view(tensor)
  assert view.dtype == np.float32 and view.shape == (3, 4) and not view.flags.owndata
  again = tensor_views.numpy_view(tensor)
  assert np.shares_memory(view, again)   # both over the tensor's buffer: no copy
  del tensor, again
  gc.collect()
  np.testing.assert_array_equal(view, np.arange(12, dtype=np.float32).reshape(3, 4) * 2)
