"""The synchronous runner's calls of acting and the update, packed: one tensor out of each
call, the rollout's per-step arrays in one tensor in (the agent's own `policy` and `update`).

TensorFlow 2.15 on Python 3.11 never frees ~48 bytes of each EagerTensor it creates
(tensorflow/tensorflow#62551); at 29 tensors an update a Pong trainer grew by ~1 MB a
minute, the packed calls create 15.
"""
import tensorflow as tf


def act(agent, observation):
  """`agent.policy` as one float32 tensor [B, 2]: each row (action, value)."""
  actions, values = agent.policy(observation)
  return tf.stack([tf.cast(actions, tf.float32), values], axis=1)


def train(agent, observations, actions, rollout_steps, values):
  """`agent.update` (rollout_steps [4, T, B]: rewards, discounts, next_is_last, is_last);
  the metrics as one float32 vector in the order of agent.metric_names."""
  return metrics_vector(agent, agent.update(observations, actions, rollout_steps, values))


def metrics_vector(agent, metrics):
  """The metrics as one float32 vector in the order of agent.metric_names."""
  return tf.stack([tf.cast(metrics[name], tf.float32) for name in agent.metric_names])
