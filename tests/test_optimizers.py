"""TF1-style RMSProp against hand-computed values."""
import numpy as np
import tensorflow as tf

from paac_tf.networks import optimizers


def test_rmsprop_step_matches_tf1_formula():
  v = tf.Variable([1.0, -2.0])
  opt = optimizers.RMSProp(0.1, decay=0.9, epsilon=0.1)
  opt.build([v])
  g = tf.constant([0.5, 2.0])
  lr = opt.apply_gradients([(g, v)])
  ms = 0.9 * 1.0 + 0.1 * np.array([0.25, 4.0])          # ms starts at 1
  expected = np.array([1.0, -2.0]) - 0.1 * np.array([0.5, 2.0]) / np.sqrt(ms + 0.1)
  np.testing.assert_allclose(v.numpy(), expected, rtol=1e-6)
  np.testing.assert_allclose(opt.ms[0].numpy(), ms, rtol=1e-6)
  assert float(lr) == np.float32(0.1) and int(opt.iterations.numpy()) == 1


def test_centered_rmsprop_step():
  v = tf.Variable([0.0])
  opt = optimizers.RMSProp(1.0, decay=0.5, epsilon=0.01, centered=True, initial_ms=0.0)
  opt.build([v])
  opt.apply_gradients([(tf.constant([2.0]), v)])
  ms, mg = 0.5 * 4.0, 0.5 * 2.0
  np.testing.assert_allclose(v.numpy(), [-2.0 / np.sqrt(ms - mg ** 2 + 0.01)], rtol=1e-6)


def test_schedule_uses_update_count():
  v = tf.Variable([0.0])
  opt = optimizers.RMSProp(lambda step: 1.0 / tf.cast(step + 1, tf.float32))
  opt.build([v])
  assert float(opt.apply_gradients([(tf.constant([1.0]), v)])) == 1.0
  assert float(opt.apply_gradients([(tf.constant([1.0]), v)])) == 0.5


def test_slots_are_checkpointed(tmp_path):
  v = tf.Variable([1.0])
  opt = optimizers.RMSProp(0.1)
  opt.build([v])
  opt.apply_gradients([(tf.constant([3.0]), v)])
  path = tf.train.Checkpoint(opt=opt, v=v).save(str(tmp_path / "ckpt"))
  v2 = tf.Variable([0.0])
  opt2 = optimizers.RMSProp(0.1)
  opt2.build([v2])
  tf.train.Checkpoint(opt=opt2, v=v2).restore(path).assert_consumed()
  np.testing.assert_allclose(opt2.ms[0].numpy(), opt.ms[0].numpy())
  assert int(opt2.iterations.numpy()) == 1
