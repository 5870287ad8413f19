"""Ape-X DPG's losses (pure TF functions, and a numpy twin of the TD error for the actors).

  y_i      = R_i + D_i * Q_target(s'_i, mu_target(s'_i))      (the critic's n-step target)
  delta_i  = y_i - Q(s_i, a_i)                                 (its TD error)
  L_critic = mean_i(w_i * 0.5 * delta_i^2)                     (or w_i * huber(delta_i))
  L_actor  = -mean_i(Q(s_i, mu(s_i)))                          (Silver et al. 2014's DPG)

R and D come from the actors' n-step transitions (runners/apex/n_step.py): D = gamma^k
times the discounts of the k steps, 0 if the episode terminated inside them. The targets
are constants (no gradient through the target networks). w are prioritized replay's
importance weights (algorithms/replay/prioritized.py). The actor's loss is differentiated with
respect to the actor's variables alone: its gradient is the deterministic policy gradient
grad_a Q(s, a)|_{a = mu(s)} * grad_theta mu(s), taken through the critic.
"""
import numpy as np
import tensorflow as tf


def critic_targets(reward, discount, next_q_target):
  """R + D * Q_target(s', mu_target(s')); [B] float32, gradient stopped."""
  target = (tf.cast(reward, tf.float32)
            + tf.cast(discount, tf.float32) * tf.cast(next_q_target, tf.float32))
  return tf.stop_gradient(target)


def td_errors(targets, q_taken):
  """y - Q(s, a), [B] float32."""
  return tf.cast(targets, tf.float32) - tf.cast(q_taken, tf.float32)


def huber(x, delta):
  """0.5 x^2 for |x| <= delta, delta * (|x| - 0.5 delta) beyond."""
  quadratic = tf.minimum(tf.abs(x), delta)
  return 0.5 * tf.square(quadratic) + delta * (tf.abs(x) - quadratic)


def critic_loss(td_errors, weights, huber_delta=None):
  """mean(w * 0.5 * delta^2), or mean(w * huber(delta, huber_delta)) if `huber_delta` is
  given; `weights` are the importance-sampling weights [B]."""
  td_errors = tf.cast(td_errors, tf.float32)
  if huber_delta is None:
    per_item = 0.5 * tf.square(td_errors)
  else:
    per_item = huber(td_errors, float(huber_delta))
  return tf.reduce_mean(tf.cast(weights, tf.float32) * per_item)


def actor_loss(q_of_policy):
  """-mean(Q(s, mu(s))) from the critic's values [B] of the actor's actions."""
  return -tf.reduce_mean(tf.cast(q_of_policy, tf.float32))


def td_errors_np(q_taken, reward, discount, next_value):
  """The actors' TD errors, numpy float32 [M]: R + D * next_value - q_taken, next_value
  being Q(s', mu(s')) under the actor's local copies (its initial priorities' error)."""
  target = (np.asarray(reward, np.float32)
            + np.asarray(discount, np.float32) * np.asarray(next_value, np.float32))
  return (target - np.asarray(q_taken, np.float32)).astype(np.float32)
