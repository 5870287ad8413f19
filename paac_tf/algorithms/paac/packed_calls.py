"""The training loop's calls of acting and the update, packed: one tensor out of each call,
the rollout's per-step arrays in one tensor in (the same functions as `PaacAgent.act` and
`update.update`).

TensorFlow 2.15 on Python 3.11 never frees ~48 bytes of each EagerTensor it creates
(tensorflow/tensorflow#62551); at 29 tensors an update a Pong trainer grew by ~1 MB a
minute, the packed calls create 15.
"""
import tensorflow as tf

from paac_tf.algorithms.paac import update


def act(agent, observation):
  """`agent.act` as one float32 tensor [B, 2]: each row (action, value)."""
  actions, values = agent.policy(observation)
  return tf.stack([tf.cast(actions, tf.float32), values], axis=1)


def train(agent, observations, actions, rollout_steps, values):
  """`update.update` (rollout_steps: `update.step_data`); the metrics as one float32 vector
  in the order of update.METRIC_NAMES."""
  return metrics_vector(update.update(agent, observations, actions, rollout_steps, values))


def metrics_vector(metrics):
  """The metrics as one float32 vector in the order of update.METRIC_NAMES."""
  return tf.stack([tf.cast(metrics[name], tf.float32) for name in update.METRIC_NAMES])
