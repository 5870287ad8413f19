"""Prioritized replay's priorities and importance-sampling weights (Schaul et al. 2016), as
every algorithm on the Ape-X machinery uses them.

- A transition's priority is |n-step TD error| + epsilon (epsilon keeps zero-error items
  sampleable). The table raises it to the power alpha = 0.6 itself (Reverb's
  `Prioritized(0.6)` selector): P(i) = p_i^alpha / sum_k p_k^alpha.
- The learner corrects for the non-uniform sampling with w_i = (N * P(i))^-beta,
  beta = 0.4, normalized by the largest weight of the batch so that weights only scale
  updates down. Reverb's sample info gives P(i) (`probability`) and N (`table_size`).

The TD error itself is each algorithm's (algorithms/apex/priorities.py for DQN's double-Q
error, algorithms/apex_dpg/ for the critic's): numpy in the actors, TF in the learner.
"""
import numpy as np
import tensorflow as tf

PRIORITY_EPSILON = 1e-6


def priorities_from_td_np(td_errors, epsilon=PRIORITY_EPSILON):
  """The actors' priorities, numpy: |TD error| + epsilon, float64 as Reverb takes them."""
  return (np.abs(np.asarray(td_errors, np.float64)) + epsilon).astype(np.float64)


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
