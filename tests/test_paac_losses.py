"""PAAC losses against hand-computed values."""
import numpy as np
import tensorflow as tf

from paac_tf.algorithms.paac import losses

LOGITS = np.log(np.array([[0.5, 0.25, 0.25], [0.1, 0.6, 0.3]], np.float32))


def test_policy_loss():
  # -(log .5 * 2 + log .6 * -1) / 2
  got = losses.policy_loss(LOGITS, [0, 1], np.array([2.0, -1.0], np.float32),
                           np.ones(2, np.float32))
  np.testing.assert_allclose(got.numpy(), -(np.log(0.5) * 2 - np.log(0.6)) / 2, rtol=1e-5)


def test_policy_loss_masks_invalid_samples():
  got = losses.policy_loss(LOGITS, [0, 1], np.array([2.0, -1.0], np.float32),
                           np.array([1.0, 0.0], np.float32))
  np.testing.assert_allclose(got.numpy(), -np.log(0.5) * 2, rtol=1e-5)


def test_policy_loss_does_not_backprop_into_advantages():
  adv = tf.Variable([2.0, -1.0])
  with tf.GradientTape() as tape:
    loss = losses.policy_loss(LOGITS, [0, 1], adv, tf.ones(2))
  assert tape.gradient(loss, adv) is None


def test_entropy():
  h0 = -(0.5 * np.log(0.5) + 2 * 0.25 * np.log(0.25))
  h1 = -(0.1 * np.log(0.1) + 0.6 * np.log(0.6) + 0.3 * np.log(0.3))
  got = losses.entropy(LOGITS, np.ones(2, np.float32))
  np.testing.assert_allclose(got.numpy(), (h0 + h1) / 2, rtol=1e-5)


def test_value_loss():
  got = losses.value_loss(np.array([1.0, 2.0], np.float32), np.array([3.0, 0.0], np.float32),
                          np.ones(2, np.float32))
  np.testing.assert_allclose(got.numpy(), (4.0 + 4.0) / 2)


def test_total_loss_weighting_of_the_original_code():
  # 5 * (policy - 0.02 * entropy + 0.25 * value)
  got = losses.total_loss(1.0, 2.0, 3.0, entropy_coef=0.02)
  np.testing.assert_allclose(float(got), 5 * (1.0 - 0.06 + 0.5))


def test_masked_mean_of_empty_mask_is_zero():
  assert float(losses.masked_mean(tf.constant([1.0, 2.0]), tf.zeros(2))) == 0.0
