"""PAAC's loss (algorithms/paac/update.py) against hand-computed values."""
import numpy as np
import pytest
import tensorflow as tf

from paac_tf.algorithms.paac import settings as settings_lib
from paac_tf.algorithms.paac import update
from paac_tf.networks import actor_critic
from paac_tf.networks import optimizers

LOGITS = np.log(np.array([[0.5, 0.25, 0.25], [0.1, 0.6, 0.3]], np.float32))
H0 = -(0.5 * np.log(0.5) + 2 * 0.25 * np.log(0.25))
H1 = -(0.1 * np.log(0.1) + 0.6 * np.log(0.6) + 0.3 * np.log(0.3))


def test_policy_loss():
  # -(log .5 * 2 + log .6 * -1) / 2
  got = update.policy_loss(LOGITS, [0, 1], np.array([2.0, -1.0], np.float32),
                           np.ones(2, np.float32))
  np.testing.assert_allclose(got.numpy(), -(np.log(0.5) * 2 - np.log(0.6)) / 2, rtol=1e-5)


def test_policy_loss_masks_invalid_samples():
  got = update.policy_loss(LOGITS, [0, 1], np.array([2.0, -1.0], np.float32),
                           np.array([1.0, 0.0], np.float32))
  np.testing.assert_allclose(got.numpy(), -np.log(0.5) * 2, rtol=1e-5)


def test_policy_loss_takes_int64_actions():
  """The loop's actions are int64 (stateless_categorical's)."""
  got = update.policy_loss(LOGITS, tf.constant([0, 1], tf.int64),
                           np.array([2.0, -1.0], np.float32), np.ones(2, np.float32))
  np.testing.assert_allclose(got.numpy(), -(np.log(0.5) * 2 - np.log(0.6)) / 2, rtol=1e-5)


def test_policy_loss_does_not_backprop_into_advantages():
  adv = tf.Variable([2.0, -1.0])
  with tf.GradientTape() as tape:
    loss = update.policy_loss(LOGITS, [0, 1], adv, tf.ones(2))
  assert tape.gradient(loss, adv) is None


def test_entropy():
  got = update.entropy(LOGITS, np.ones(2, np.float32))
  np.testing.assert_allclose(got.numpy(), (H0 + H1) / 2, rtol=1e-5)


def test_value_loss():
  got = update.value_loss(np.array([1.0, 2.0], np.float32), np.array([3.0, 0.0], np.float32),
                          np.ones(2, np.float32))
  np.testing.assert_allclose(got.numpy(), (4.0 + 4.0) / 2)


def test_value_loss_does_not_backprop_into_returns():
  returns = tf.Variable([3.0, 0.0])
  with tf.GradientTape() as tape:
    loss = update.value_loss(tf.constant([1.0, 2.0]), returns, tf.ones(2))
  assert tape.gradient(loss, returns) is None


def test_total_loss_weighting_of_the_original_code():
  # 5 * (policy - 0.02 * entropy + 0.25 * value)
  got = update.total_loss(1.0, 2.0, 3.0, entropy_coef=0.02, value_coef=0.25, loss_scale=5.0)
  np.testing.assert_allclose(float(got), 5 * (1.0 - 0.06 + 0.5))


def test_masked_mean_of_empty_mask_is_zero():
  assert float(update.masked_mean(tf.constant([1.0, 2.0]), tf.zeros(2))) == 0.0


def _loss(truncated):
  """update.loss on a rollout of T = 2 steps of one environment: rewards 1, 2, the acting
  values V(s_0..s_2) = 0.5, 1.0, 3.0, the model's value predictions 1.0, 2.0 (not the
  acting ones), gamma 0.5; no episode end, or one truncated at ts_1 (LAST, discount 1)."""
  end = float(truncated)
  rollout = np.array([[[1.0], [2.0]],          # rewards
                      [[1.0], [1.0]],          # discounts
                      [[end], [0.0]],          # next_is_last: ts_1 is LAST
                      [[0.0], [end]]],         # is_last: the step from ts_1 is a reset
                     np.float32)
  values = np.array([[0.5], [1.0], [3.0]], np.float32)
  settings = settings_lib.PaacSettings(gamma=0.5, entropy_coef=0.02, value_coef=0.25,
                                       loss_scale=5.0)
  total, metrics = update.loss(tf.constant(LOGITS), tf.constant([1.0, 2.0]),
                               tf.constant([[0], [1]], tf.int64), tf.constant(rollout),
                               tf.constant(values), settings)
  return float(total), [float(m) for m in metrics]


def test_loss_uses_the_acting_values_for_the_advantages():
  # R1 = 2 + .5 * 3 = 3.5, R0 = 1 + .5 * 3.5 = 2.75; A = R - V(acting) = 2.25, 2.5;
  # the value loss is against the model's predictions: ((2.75 - 1)^2 + (3.5 - 2)^2) / 2.
  total, (policy, value, ent, total_again) = _loss(truncated=False)
  assert policy == pytest.approx(-(np.log(0.5) * 2.25 + np.log(0.6) * 2.5) / 2, rel=1e-5)
  assert value == pytest.approx((1.75 ** 2 + 1.5 ** 2) / 2, rel=1e-5)
  assert ent == pytest.approx((H0 + H1) / 2, rel=1e-5)
  assert total == total_again == pytest.approx(5 * (policy - 0.02 * ent + 0.25 * value),
                                               rel=1e-5)


def test_loss_masks_the_step_from_a_last_time_step():
  # ts_1 is LAST (truncated): R0 = 1 + .5 * V(s_1) = 1.5, A0 = 1.5 - .5 = 1; the step from
  # ts_1 (the auto-reset) leaves the means.
  _, (policy, value, ent, _) = _loss(truncated=True)
  assert policy == pytest.approx(-np.log(0.5) * 1.0, rel=1e-5)
  assert value == pytest.approx(0.5 ** 2, rel=1e-5)
  assert ent == pytest.approx(H0, rel=1e-5)


def test_train_step_returns_its_metrics_in_metric_names_order():
  """One update of a small MLP actor-critic on the rollout of `_loss`: the loss's four terms
  at the weights before it, the learning rate it applied (annealed from 0.01 over 4 updates:
  0.01 at the first), the gradients' global norm before the clip; and the weights moved by
  the clipped gradients (max_grad_norm 0.1, below that norm)."""
  assert update.METRIC_NAMES == ("Losses/policy", "Losses/value", "Losses/entropy",
                                 "Losses/total", "Optimizer/learning_rate",
                                 "Optimizer/global_norm")
  spec = tf.TensorSpec([3], tf.float32)
  model = actor_critic.build_actor_critic(3, spec, torso="mlp", mlp_units=(8,), seed=0)
  optimizer = optimizers.rmsprop(model, 0.01, anneal_updates=4, decay=0.99, epsilon=0.1)
  settings = settings_lib.PaacSettings(gamma=0.5, entropy_coef=0.02, value_coef=0.25,
                                       loss_scale=5.0, max_grad_norm=0.1)
  observations = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 1, 3) / 6)
  actions = tf.constant([[0], [1]], tf.int64)
  rollout = tf.constant([[[1.0], [2.0]], [[1.0], [1.0]], [[0.0], [0.0]], [[0.0], [0.0]]])
  values = tf.constant([[0.5], [1.0], [3.0]])
  before = [v.numpy() for v in model.trainable_variables]
  with tf.GradientTape() as tape:
    logits, value_pred = model(tf.reshape(observations, [2, 3]), training=True)
    total, expected = update.loss(logits, value_pred, actions, rollout, values, settings)
  grads = tape.gradient(total, model.trainable_variables)
  norm = float(tf.linalg.global_norm(grads))
  assert norm > settings.max_grad_norm

  got = update.train_step(model, optimizer, settings, observations, actions, rollout, values)
  assert got.shape == (len(update.METRIC_NAMES),) and got.dtype == tf.float32
  np.testing.assert_allclose(got[:4].numpy(), [float(m) for m in expected], rtol=1e-5)
  assert float(got[4]) == pytest.approx(0.01)
  assert float(got[5]) == pytest.approx(norm, rel=1e-5)
  # TF1 RMSProp's first step (ms from 1): var -= lr * g' / sqrt(.99 + .01 g'^2 + .1), g' the
  # gradient scaled by max_grad_norm / norm.
  for b, g, v in zip(before, grads, model.trainable_variables):
    clipped = g.numpy() * settings.max_grad_norm / norm
    step = 0.01 * clipped / np.sqrt(0.99 + 0.01 * clipped ** 2 + 0.1)
    np.testing.assert_allclose(v.numpy(), b - step, rtol=1e-4, atol=1e-7)
