"""Priorities and importance-sampling weights of prioritized replay (Schaul et al. 2016),
as Ape-X uses them.

- A transition's priority is |n-step TD error| + epsilon (epsilon keeps zero-error items
  sampleable). The table raises it to the power alpha = 0.6 itself (Reverb's
  `Prioritized(0.6)` selector): P(i) = p_i^alpha / sum_k p_k^alpha.
- Actors compute the initial priority before inserting, with their local network as both
  online and target network (Ape-X, section 3): the double-Q target then reduces to
  R + D * max_a Q(s', a).
- The learner corrects for the non-uniform sampling with w_i = (N * P(i))^-beta,
  beta = 0.4, normalized by the largest weight of the batch so that weights only scale
  updates down. Reverb's sample info gives P(i) (`probability`) and N (`table_size`).

numpy versions run in the actors' Python loops; the TF versions in the learner's
compiled step.
"""
import numpy as np
import tensorflow as tf

PRIORITY_EPSILON = 1e-6


def double_q_td_errors_np(q_taken, reward, discount, next_q_online, next_q_target):
  """n-step double-Q TD errors, numpy: R + D * Q_target(s', argmax Q_online(s')) - Q(s, a).

  q_taken [M]; reward, discount [M]; next_q_online, next_q_target [M, A].
  """
  next_q_online = np.asarray(next_q_online, np.float32)
  next_q_target = np.asarray(next_q_target, np.float32)
  best = np.argmax(next_q_online, axis=-1)
  bootstrap = np.take_along_axis(next_q_target, best[:, None], axis=-1)[:, 0]
  target = np.asarray(reward, np.float32) + np.asarray(discount, np.float32) * bootstrap
  return target - np.asarray(q_taken, np.float32)


def initial_priorities(q_taken, reward, discount, next_q, epsilon=PRIORITY_EPSILON):
  """The actor's priorities: |TD error| + epsilon with its network as online and target."""
  td = double_q_td_errors_np(q_taken, reward, discount, next_q, next_q)
  return (np.abs(td) + epsilon).astype(np.float64)


def priorities_from_td(td_errors, epsilon=PRIORITY_EPSILON):
  """The learner's new priorities, TF: |TD error| + epsilon, float64 as Reverb takes them."""
  return tf.cast(tf.abs(td_errors), tf.float64) + epsilon


def importance_weights(probabilities, table_size, beta=0.4):
  """w_i = (N * P(i))^-beta / max_j w_j, TF (float32 [B]).

  probabilities [B] (float64 from Reverb), table_size [B] (int64, N at sampling time).
  """
  probabilities = tf.cast(probabilities, tf.float64)
  table_size = tf.cast(table_size, tf.float64)
  weights = tf.pow(table_size * probabilities, -tf.cast(beta, tf.float64))
  weights = weights / tf.reduce_max(weights)
  return tf.cast(weights, tf.float32)


def importance_weights_np(probabilities, table_size, beta=0.4):
  """numpy twin of `importance_weights`, for tests and tools."""
  weights = (np.asarray(table_size, np.float64) * np.asarray(probabilities, np.float64)) ** -beta
  return (weights / weights.max()).astype(np.float32)
