"""PAAC losses (pure functions), weighted as in the original PAAC code:

  total = loss_scale * (policy_loss - entropy_coef * entropy + value_coef * value_loss)
  policy_loss = -mean(log pi(a|s) * stop_gradient(A))
  value_loss  = mean((R - V)^2)
  entropy     = mean(H(pi(.|s)))

with loss_scale 5 and value_coef 0.25 by default. Means are over valid samples.
"""
import tensorflow as tf


def masked_mean(x, mask):
  return tf.reduce_sum(x * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)


def policy_loss(logits, actions, advantages, mask):
  log_probs = tf.nn.log_softmax(logits)
  chosen = tf.gather(log_probs, tf.cast(actions, tf.int32), batch_dims=1)
  return -masked_mean(chosen * tf.stop_gradient(advantages), mask)


def entropy(logits, mask):
  log_probs = tf.nn.log_softmax(logits)
  return masked_mean(-tf.reduce_sum(tf.exp(log_probs) * log_probs, axis=-1), mask)


def value_loss(values, returns, mask):
  return masked_mean(tf.square(tf.stop_gradient(returns) - values), mask)


def total_loss(policy, value, ent, entropy_coef, value_coef=0.25, loss_scale=5.0):
  return loss_scale * (policy - entropy_coef * ent + value_coef * value)
