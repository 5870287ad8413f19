"""n-step returns (algorithms/paac/update.py) against hand-computed values."""
import numpy as np
import tensorflow as tf

from paac_tf.algorithms.paac import update

GAMMA = 0.9


def _returns(rewards, discounts, next_is_last, values):
  """One environment's returns: the arrays as [T, 1] float32 tensors (next_is_last 0/1)."""
  col = lambda x: tf.constant(np.asarray(x, np.float32)[:, None])
  out = update.n_step_returns(col(rewards), col(discounts), col(next_is_last), col(values),
                              GAMMA)
  return out.numpy()[:, 0]


def test_no_episode_end_bootstraps_from_last_value():
  # R2 = 3 + .9 * 10 = 12; R1 = 2 + .9 * 12 = 12.8; R0 = 1 + .9 * 12.8 = 12.52
  r = _returns([1, 2, 3], [1, 1, 1], [0, 0, 0], [0.5, 0.5, 0.5, 10.0])
  np.testing.assert_allclose(r, [12.52, 12.8, 12.0], rtol=1e-6)


def test_terminated_inside_rollout_does_not_bootstrap():
  # ts_2 is LAST with discount 0: R1 = 2 + .9 * 0 * V(s2) = 2; R0 = 1 + .9 * 2 = 2.8.
  # R2 (from the LAST step, masked out of the loss) still bootstraps from V(s3): 3 + 9 = 12.
  r = _returns([1, 2, 3], [1, 0, 1], [0, 1, 0], [0.5, 0.5, 7.0, 10.0])
  np.testing.assert_allclose(r, [2.8, 2.0, 12.0], rtol=1e-6)


def test_truncated_inside_rollout_bootstraps_from_true_final_observation():
  # ts_2 is LAST with discount 1 (truncated): R1 = 2 + .9 * V(s2) = 2 + 6.3 = 8.3,
  # not 2 + .9 * R2; R0 = 1 + .9 * 8.3 = 8.47.
  r = _returns([1, 2, 3], [1, 1, 1], [0, 1, 0], [0.5, 0.5, 7.0, 10.0])
  np.testing.assert_allclose(r, [8.47, 8.3, 12.0], rtol=1e-6)


def test_terminated_at_last_step_of_rollout():
  # ts_3 LAST, discount 0: R2 = 3; R1 = 2 + 2.7 = 4.7; R0 = 1 + 4.23 = 5.23
  r = _returns([1, 2, 3], [1, 1, 0], [0, 0, 1], [0.5, 0.5, 0.5, 10.0])
  np.testing.assert_allclose(r, [5.23, 4.7, 3.0], rtol=1e-6)


def test_a_one_step_rollout_bootstraps_from_its_last_value():
  # T = 1: R0 = 2 + .9 * 10 = 11 (no later return to chain to).
  np.testing.assert_allclose(_returns([2], [1], [0], [0.5, 10.0]), [11.0], rtol=1e-6)


def test_batch_columns_are_independent():
  rewards = tf.constant([[1, 0], [2, 0], [3, 1]], tf.float32)
  discounts = tf.constant([[1, 1], [0, 1], [1, 1]], tf.float32)
  next_last = tf.constant([[0, 0], [1, 0], [0, 0]], tf.float32)
  values = tf.constant([[0, 0], [0, 0], [7, 0], [10, 2]], tf.float32)
  r = update.n_step_returns(rewards, discounts, next_last, values, GAMMA).numpy()
  assert r.shape == (3, 2)
  np.testing.assert_allclose(r[:, 0], [2.8, 2.0, 12.0], rtol=1e-6)
  np.testing.assert_allclose(r[:, 1], [0.81 * 2.8, 0.9 * 2.8, 2.8], rtol=1e-6)


def test_compiled_returns_equal_eager_ones():
  """The training loop compiles the update (tf.function, XLA optional): the unrolled
  recursion over the static T gives the same returns there."""
  rng = np.random.default_rng(0)
  rewards = tf.constant(rng.normal(size=(5, 3)), tf.float32)
  discounts = tf.constant(rng.integers(0, 2, (5, 3)), tf.float32)
  next_last = tf.constant(rng.integers(0, 2, (5, 3)), tf.float32)
  values = tf.constant(rng.normal(size=(6, 3)), tf.float32)
  eager = update.n_step_returns(rewards, discounts, next_last, values, GAMMA).numpy()
  for jit in (False, True):
    compiled = tf.function(lambda *a: update.n_step_returns(*a, GAMMA), jit_compile=jit)
    np.testing.assert_allclose(compiled(rewards, discounts, next_last, values).numpy(), eager,
                               rtol=1e-6)
