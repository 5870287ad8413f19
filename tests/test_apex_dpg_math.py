"""Ape-X DPG's pure math and networks: targets, TD errors, losses, the noise ladder, noisy
actions, the actor and critic, the actor's spec."""
import json

import numpy as np
import pytest
import tensorflow as tf
from tf_agents.specs import array_spec

from paac_tf.algorithms.apex_dpg import exploration
from paac_tf.algorithms.apex_dpg import losses
from paac_tf.algorithms.apex_dpg import networks

G = 0.9   # gamma of the hand computations


# --- targets, TD errors, losses ---------------------------------------------------------------

def test_critic_targets_by_hand_with_terminal_and_truncated_n_step():
  # A full 3-step transition (D = G^3), a terminated one (D = 0), a truncated 2-step one.
  targets = losses.critic_targets(reward=[1.0, 2.0, 0.5], discount=[G ** 3, 0.0, G ** 2],
                                  next_q_target=tf.constant([10.0, 99.0, -4.0]))
  assert targets.dtype == tf.float32
  assert targets.numpy() == pytest.approx([1.0 + 0.729 * 10.0, 2.0, 0.5 - 0.81 * 4.0])


def test_critic_targets_stop_the_gradient():
  next_q = tf.Variable([1.0, 2.0])
  with tf.GradientTape() as tape:
    loss = tf.reduce_sum(losses.critic_targets([0.0, 0.0], [1.0, 1.0], next_q))
  assert tape.gradient(loss, next_q) is None


def test_td_errors_tf_and_np_agree_by_hand():
  q_taken, reward, discount, next_value = [1.0, 0.0, 2.0], [0.5, 1.0, 0.0], [G, 0.0, G ** 2], \
      [3.0, 7.0, -1.0]
  expected = [0.5 + G * 3.0 - 1.0, 1.0, -0.81 - 2.0]
  tf_td = losses.td_errors(losses.critic_targets(reward, discount, next_value), q_taken)
  np_td = losses.td_errors_np(q_taken, reward, discount, next_value)
  assert np_td.dtype == np.float32 and tf_td.dtype == tf.float32
  assert np_td == pytest.approx(expected, rel=1e-6)
  np.testing.assert_array_equal(tf_td.numpy(), np_td)


def test_critic_loss_squared_and_huber_by_hand():
  td = tf.constant([0.5, -2.0, 1.0])
  weights = [1.0, 0.5, 0.25]
  # 0.5 delta^2 = [0.125, 2.0, 0.5]
  assert losses.critic_loss(td, weights).numpy() == pytest.approx(
      (0.125 + 0.5 * 2.0 + 0.25 * 0.5) / 3)
  # huber, delta 1: [0.125, 1 * (2 - 0.5) = 1.5, 0.5]
  assert losses.critic_loss(td, weights, huber_delta=1.0).numpy() == pytest.approx(
      (0.125 + 0.5 * 1.5 + 0.25 * 0.5) / 3)
  # delta 0.5: [0.5 * (0.5 - 0.25) = 0.125, 0.5 * (2 - 0.25) = 0.875, 0.5 * 0.75 = 0.375]
  assert losses.critic_loss(td, [1.0, 1.0, 1.0], huber_delta=0.5).numpy() == pytest.approx(
      (0.125 + 0.875 + 0.375) / 3)


def test_actor_loss_is_minus_the_mean_q():
  assert losses.actor_loss(tf.constant([1.0, -3.0, 5.0])).numpy() == pytest.approx(-1.0)


# --- exploration ------------------------------------------------------------------------------

def test_noise_scales_are_the_ladder():
  # 2 actors x 2 environments, base 0.5, alpha 3: scale_i = 0.5 ** (1 + 3 i / 3) = 0.5^(1+i).
  assert exploration.environment_noise_scales(0, 2, 2, 0.5, 3.0) == pytest.approx([0.5, 0.25])
  assert exploration.environment_noise_scales(1, 2, 2, 0.5, 3.0) == pytest.approx(
      [0.125, 0.0625])
  assert exploration.environment_noise_scales(0, 1, 1, 0.3, 7.0) == pytest.approx([0.3])
  assert exploration.environment_noise_scales(2, 5, 1, 0.4, 7.0) == pytest.approx(
      [0.4 ** 4.5])


def test_noisy_actions_zero_scale_is_the_clipped_mean_exactly():
  mean = np.array([[0.3, -0.7], [1.5, -2.0]], np.float32)
  out = exploration.noisy_actions(mean, [0.0, 0.0], -1.0, 1.0, np.random.default_rng(0))
  assert out.dtype == np.float32
  np.testing.assert_array_equal(out, np.float32([[0.3, -0.7], [1.0, -1.0]]))


def test_noisy_actions_by_hand_with_per_row_scales_and_asymmetric_bounds():
  mean = np.array([[0.0, 1.0], [2.0, -0.5], [1.0, 1.0]], np.float32)
  scales = [0.1, 0.0, 0.5]
  out = exploration.noisy_actions(mean, scales, -1.0, 3.0, np.random.default_rng(7))
  n = np.random.default_rng(7).standard_normal((3, 2))
  half_range = (3.0 - (-1.0)) / 2   # 2
  expected = np.clip(mean + np.array(scales)[:, None] * half_range * n, -1.0, 3.0)
  np.testing.assert_allclose(out, expected, rtol=1e-6)
  np.testing.assert_array_equal(out[1], mean[1])    # scale 0: the mean


def test_noisy_actions_clip_at_per_dimension_bounds():
  mean = np.zeros((200, 2), np.float32)
  out = exploration.noisy_actions(mean, np.full(200, 10.0), [-2.0, 0.0], [2.0, 1.0],
                                  np.random.default_rng(1))
  assert out[:, 0].min() == -2.0 and out[:, 0].max() == 2.0
  assert out[:, 1].min() == 0.0 and out[:, 1].max() == 1.0


# --- networks ---------------------------------------------------------------------------------

OBS = array_spec.ArraySpec((3,), np.float32, name="observation")


def _action_spec(low, high, shape=(2,)):
  return array_spec.BoundedArraySpec(shape, np.float32, low, high, name="action")


@pytest.mark.parametrize("low,high,shape", [(-2.0, 2.0, (2,)), (0.0, 1.0, (2,)),
                                            ([-1.0, 0.0], [3.0, 0.5], (2,)),
                                            (-1.0, 1.0, (2, 3))])
def test_actor_outputs_lie_inside_the_bounds(low, high, shape):
  actor = networks.build_actor(OBS, _action_spec(low, high, shape), hidden_units=(16, 8),
                               seed=0)
  assert actor.action_shape == shape
  assert actor.action_low.shape == shape and actor.action_low.dtype == np.float32
  obs = 1e3 * np.random.default_rng(0).standard_normal((64, 3)).astype(np.float32)
  lo, hi = np.broadcast_to(low, shape), np.broadcast_to(high, shape)
  # The small initial output layer, then a large one that saturates the tanh.
  for scale in (1.0, 1e4):
    actor.out.kernel.assign(actor.out.kernel * scale)
    actions = actor(obs, training=False).numpy()
    assert actions.shape == (64, *shape) and actions.dtype == np.float32
    assert (actions >= lo).all() and (actions <= hi).all()
  assert (actions == lo).any() and (actions == hi).any()


def test_actor_at_zero_preactivation_is_the_middle_of_the_range():
  actor = networks.build_actor(OBS, _action_spec([-1.0, 0.0], [3.0, 1.0]), hidden_units=(4,))
  for v in actor.out.variables:
    v.assign(tf.zeros_like(v))
  assert actor(np.ones((1, 3), np.float32)).numpy()[0] == pytest.approx([1.0, 0.5])


def test_critic_returns_one_value_per_row_and_flattens_image_like_inputs():
  critic = networks.build_critic(OBS, _action_spec(-1.0, 1.0), hidden_units=(16, 8), seed=0)
  q = critic((np.ones((5, 3), np.float32), np.zeros((5, 2), np.float32)))
  assert q.shape == (5,) and q.dtype == tf.float32
  obs2d = array_spec.ArraySpec((2, 3), np.float32)
  critic = networks.build_critic(obs2d, _action_spec(-1.0, 1.0, (2, 2)), hidden_units=(8,),
                                 layer_norm=True)
  assert critic((np.ones((4, 2, 3)), np.ones((4, 2, 2)))).shape == (4,)
  assert critic.hidden[0].kernel.shape == (6 + 4, 8)   # observation and action concatenated


def test_actor_gets_a_policy_gradient_through_the_critic():
  action_spec = _action_spec(-2.0, 2.0)
  actor = networks.build_actor(OBS, action_spec, hidden_units=(16, 8), seed=1)
  critic = networks.build_critic(OBS, action_spec, hidden_units=(16, 8), seed=2)
  obs = np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32)
  with tf.GradientTape() as tape:
    loss = losses.actor_loss(critic((obs, actor(obs, training=True)), training=True))
  grads = tape.gradient(loss, actor.trainable_variables)
  assert len(grads) == len(actor.trainable_variables) == 6
  assert all(g is not None for g in grads)
  assert sum(float(tf.reduce_sum(tf.abs(g))) for g in grads) > 0.0


def test_same_seed_same_initial_weights():
  action_spec = _action_spec(-1.0, 1.0)
  a, b, c = (networks.build_actor(OBS, action_spec, hidden_units=(8, 4), seed=s)
             for s in (3, 3, 4))
  for x, y in zip(a.get_weights(), b.get_weights()):
    np.testing.assert_array_equal(x, y)
  assert not np.array_equal(a.get_weights()[0], c.get_weights()[0])
  q1, q2 = (networks.build_critic(OBS, action_spec, hidden_units=(8,), layer_norm=True, seed=5)
            for _ in range(2))
  for x, y in zip(q1.get_weights(), q2.get_weights()):
    np.testing.assert_array_equal(x, y)
  # The output layers start small: U(+-3e-3).
  assert np.abs(a.out.kernel.numpy()).max() <= 3e-3


def test_actor_rebuilt_from_its_spec_matches_after_copying_weights():
  observation_spec = array_spec.BoundedArraySpec((3,), np.float32, -np.inf, np.inf,
                                                 name="observation")
  action_spec = _action_spec([-1.0, 0.0], [3.0, 0.5])
  settings = {"hidden_units": (16, 8), "activation": "tanh", "layer_norm": True}
  actor = networks.build_actor(observation_spec, action_spec, seed=0, **settings)
  spec = json.loads(json.dumps(networks.actor_spec(observation_spec, action_spec, **settings)))
  assert spec["kind"] == "dpg_actor" and spec["action"] == {
      "shape": [2], "low": [-1.0, 0.0], "high": [3.0, 0.5]}
  assert spec["hidden_units"] == [16, 8] and spec["layer_norm"] is True
  rebuilt = networks.build_actor_from_spec(spec)
  assert [v.shape for v in rebuilt.variables] == [v.shape for v in actor.variables]
  np.testing.assert_array_equal(rebuilt.action_high, actor.action_high)
  rebuilt.set_weights(actor.get_weights())
  obs = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
  np.testing.assert_array_equal(rebuilt(obs).numpy(), actor(obs).numpy())


def test_actor_spec_and_builder_reject_bad_input():
  with pytest.raises(ValueError):
    networks.actor_spec(OBS, _action_spec(-1.0, 1.0), hidden=(8,))
  for low, high in ((-np.inf, np.inf), (1.0, 1.0)):   # unbounded (float32 extremes); empty
    with pytest.raises(ValueError):
      networks.build_actor(OBS, _action_spec(low, high))
  with pytest.raises(ValueError):
    networks.build_actor_from_spec({"kind": "dueling_q"})
