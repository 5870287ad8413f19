"""Ape-X DQN's loss (pure TF functions): double-Q n-step targets and a weighted Huber loss.

  target_i = R_i + D_i * Q_target(s'_i, argmax_a Q_online(s'_i, a))    (van Hasselt 2016)
  delta_i  = target_i - Q_online(s_i, a_i)
  loss     = mean_i(w_i * huber(delta_i))                                 (Huber, kappa 1)

R and D come from the actors' n-step transitions (see `n_step.py`): D = gamma^k times the
discounts of the k steps, 0 if the episode terminated inside them. Targets are constants
(no gradient through the target network or the argmax).
"""
import tensorflow as tf


def double_q_targets(reward, discount, next_q_online, next_q_target):
  """R + D * Q_target(s', argmax Q_online(s')); [B] float32, gradient stopped."""
  best = tf.argmax(next_q_online, axis=-1, output_type=tf.int32)
  bootstrap = tf.gather(next_q_target, best, batch_dims=1)
  target = tf.cast(reward, tf.float32) + tf.cast(discount, tf.float32) * bootstrap
  return tf.stop_gradient(target)


def chosen_q(q_values, actions):
  """Q(s_i, a_i) [B] from q_values [B, A] and actions [B]."""
  return tf.gather(q_values, tf.cast(actions, tf.int32), batch_dims=1)


def huber(x, delta=1.0):
  """0.5 x^2 for |x| <= delta, delta * (|x| - 0.5 delta) beyond."""
  abs_x = tf.abs(x)
  quadratic = tf.minimum(abs_x, delta)
  linear = abs_x - quadratic
  return 0.5 * tf.square(quadratic) + delta * linear


def weighted_huber_loss(td_errors, weights, delta=1.0):
  """mean(w * huber(td)); `weights` are the importance-sampling weights."""
  return tf.reduce_mean(tf.cast(weights, tf.float32) * huber(td_errors, delta))
