"""PAAC's update (Clemente et al. 2017, Algorithm 1; the original code's train()), on one
rollout of t_max = T steps from n_e = B environments, as T * B samples:

  R_t = r_t + gamma * d_t * R_{t+1}, bootstrapped from V(s_T) at the rollout's end
  A_t = R_t - V(s_t)                      (V under the weights that acted)
  loss = loss_scale * (policy_loss - entropy_coef * entropy + value_coef * value_loss)
  gradients of the loss (a GradientTape over the Keras model), clipped to a global norm,
  applied by RMSProp (TF1's: networks/optimizers.py)

Time-major arrays [T, B]; step t goes from time step ts_t (observation s_t, action a_t) to
ts_{t+1}: rewards[t], discounts[t] (0 where the episode terminated), next_is_last[t]
(ts_{t+1} is LAST: terminated or truncated), is_last[t] (ts_t is LAST: the step from it is
the environment's auto-reset, masked out of the loss), values[t] = V(s_t) for t = 0..T.
At an episode's end R_t bootstraps from the value of the true final observation, which the
LAST time step carries: 0 times it if terminated (d = 0), all of it if truncated.
"""
import tensorflow as tf

# The metrics of an update, in the order `train_step` returns them.
METRIC_NAMES = ("Losses/policy", "Losses/value", "Losses/entropy", "Losses/total",
                "Optimizer/learning_rate", "Optimizer/global_norm")


def n_step_returns(rewards, discounts, next_is_last, values, gamma):
  """R [T, B] as defined above; `values` is [T + 1, B], T static."""
  returns, bootstrap = [], values[-1]
  for t in reversed(range(rewards.shape[0])):
    if returns:   # t + 1 < T: the next step's return, or V(s_{t+1}) if ts_{t+1} is LAST
      bootstrap = tf.where(next_is_last[t] > 0.5, values[t + 1], returns[-1])
    returns.append(rewards[t] + gamma * discounts[t] * bootstrap)
  return tf.stack(returns[::-1])


def masked_mean(x, mask):
  return tf.reduce_sum(x * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)


def policy_loss(logits, actions, advantages, mask):
  log_probs = tf.gather(tf.nn.log_softmax(logits), actions, batch_dims=1)
  return -masked_mean(log_probs * tf.stop_gradient(advantages), mask)


def entropy(logits, mask):
  log_probs = tf.nn.log_softmax(logits)
  return masked_mean(-tf.reduce_sum(tf.exp(log_probs) * log_probs, axis=-1), mask)


def value_loss(values, returns, mask):
  return masked_mean(tf.square(tf.stop_gradient(returns) - values), mask)


def total_loss(policy, value, ent, entropy_coef, value_coef, loss_scale):
  return loss_scale * (policy - entropy_coef * ent + value_coef * value)


def loss(logits, value_pred, actions, rollout, values, settings):
  """(total loss, metrics) of the model's outputs (logits [T * B, A], value_pred [T * B]) on a
  rollout: `rollout` [4, T, B] = (rewards, discounts, next_is_last, is_last) as float32,
  `values` [T + 1, B] from acting; `settings`: gamma and the loss's weights."""
  rewards, discounts, next_is_last, is_last = tf.unstack(rollout)
  returns = tf.reshape(n_step_returns(rewards, discounts, next_is_last, values,
                                      settings.gamma), [-1])
  advantages = returns - tf.reshape(values[:-1], [-1])
  mask = tf.reshape(1.0 - is_last, [-1])
  policy = policy_loss(logits, tf.reshape(actions, [-1]), advantages, mask)
  value = value_loss(value_pred, returns, mask)
  ent = entropy(logits, mask)
  total = total_loss(policy, value, ent, settings.entropy_coef, settings.value_coef,
                     settings.loss_scale)
  return total, (policy, value, ent, total)


def train_step(model, optimizer, settings, observations, actions, rollout, values, loss=loss):
  """One synchronous update of `model` on a rollout (observations [T, B, ...], actions
  [T, B], `rollout` and `values` as `loss` takes them); the metrics, float32 [6] in
  METRIC_NAMES' order. `loss`: the algorithm's (PAAC's above)."""
  flat_obs = tf.reshape(observations, [-1] + list(observations.shape[2:]))
  with tf.GradientTape() as tape:
    logits, value_pred = model(flat_obs, training=True)
    total, metrics = loss(logits, value_pred, actions, rollout, values, settings)
  grads = tape.gradient(total, model.trainable_variables)
  grads, global_norm = tf.clip_by_global_norm(grads, settings.max_grad_norm)
  learning_rate = optimizer.apply_gradients(zip(grads, model.trainable_variables))
  return tf.stack(list(metrics) + [learning_rate, global_norm])
