"""n-step returns and advantages against hand-computed values."""
import numpy as np
import pytest

from paac_tf.algorithms.paac import returns

GAMMA = 0.9


def _returns(rewards, discounts, next_is_last, values):
  col = lambda x: np.asarray(x, np.float32)[:, None]
  out = returns.n_step_returns(col(rewards), col(discounts), np.asarray(next_is_last)[:, None],
                               col(values), GAMMA)
  return out.numpy()[:, 0]


def test_no_episode_end_bootstraps_from_last_value():
  # R2 = 3 + .9 * 10 = 12; R1 = 2 + .9 * 12 = 12.8; R0 = 1 + .9 * 12.8 = 12.52
  r = _returns([1, 2, 3], [1, 1, 1], [False, False, False], [0.5, 0.5, 0.5, 10.0])
  np.testing.assert_allclose(r, [12.52, 12.8, 12.0], rtol=1e-6)


def test_terminated_inside_rollout_does_not_bootstrap():
  # ts_2 is LAST with discount 0: R1 = 2 + .9 * 0 * V(s2) = 2; R0 = 1 + .9 * 2 = 2.8.
  # R2 (from the LAST step, masked out of the loss) still bootstraps from V(s3): 3 + 9 = 12.
  r = _returns([1, 2, 3], [1, 0, 1], [False, True, False], [0.5, 0.5, 7.0, 10.0])
  np.testing.assert_allclose(r, [2.8, 2.0, 12.0], rtol=1e-6)


def test_truncated_inside_rollout_bootstraps_from_true_final_observation():
  # ts_2 is LAST with discount 1 (truncated): R1 = 2 + .9 * V(s2) = 2 + 6.3 = 8.3,
  # not 2 + .9 * R2; R0 = 1 + .9 * 8.3 = 8.47.
  r = _returns([1, 2, 3], [1, 1, 1], [False, True, False], [0.5, 0.5, 7.0, 10.0])
  np.testing.assert_allclose(r, [8.47, 8.3, 12.0], rtol=1e-6)


def test_terminated_at_last_step_of_rollout():
  # ts_3 LAST, discount 0: R2 = 3; R1 = 2 + 2.7 = 4.7; R0 = 1 + 4.23 = 5.23
  r = _returns([1, 2, 3], [1, 1, 0], [False, False, True], [0.5, 0.5, 0.5, 10.0])
  np.testing.assert_allclose(r, [5.23, 4.7, 3.0], rtol=1e-6)


def test_batch_columns_are_independent():
  rewards = np.array([[1, 0], [2, 0], [3, 1]], np.float32)
  discounts = np.array([[1, 1], [0, 1], [1, 1]], np.float32)
  next_last = np.array([[False, False], [True, False], [False, False]])
  values = np.array([[0, 0], [0, 0], [7, 0], [10, 2]], np.float32)
  r = returns.n_step_returns(rewards, discounts, next_last, values, GAMMA).numpy()
  np.testing.assert_allclose(r[:, 0], [2.8, 2.0, 12.0], rtol=1e-6)
  np.testing.assert_allclose(r[:, 1], [0.81 * 2.8, 0.9 * 2.8, 2.8], rtol=1e-6)


def test_advantages_and_valid_mask():
  np.testing.assert_allclose(returns.advantages([[3.0, 1.0]], [[1.0, 2.0]]).numpy(), [[2.0, -1.0]])
  np.testing.assert_allclose(returns.valid_mask(np.array([True, False])).numpy(), [0.0, 1.0])


def test_needs_static_length():
  import tensorflow as tf

  @tf.function(input_signature=[tf.TensorSpec([None, 1])] * 2 + [tf.TensorSpec([None, 1], tf.bool),
                                                               tf.TensorSpec([None, 1])])
  def dynamic(r, d, n, v):
    return returns.n_step_returns(r, d, n, v, GAMMA)

  with pytest.raises(ValueError, match="static"):
    dynamic.get_concrete_function()
