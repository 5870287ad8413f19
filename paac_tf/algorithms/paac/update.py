"""The PAAC update, top to bottom (Clemente et al. 2017 and the original PAAC code).

A rollout of t_max = T steps from n_e = B environments is one batch of T * B samples:

  1. n-step bootstrapped returns R_t, each from the next rollout step's return or, at the
     rollout's end or an episode's, from the value of the next observation (returns.py);
  2. advantages A = R - V(s) under the weights that acted;
  3. loss = loss_scale * (policy loss - entropy_coef * entropy + value_coef * value loss),
     each a mean over the valid samples (losses.py; a step taken from a LAST time step is
     the environment's auto-reset and masked out);
  4. gradients clipped to a global norm, applied by RMSProp (TF1's, as the original code:
     epsilon inside the square root, networks/optimizers.py) with the learning rate annealed
     linearly to 0.

`update` is this path as written; `loss` (1-3) and `apply` (4) are its parts, which the
agent calls (`PaacAgent.loss`, `.apply`; the algorithm object gives the agent this `loss`).
The synchronous runner (runners/sync/) calls the same `loss` and `apply` faster: it takes
the torso's gradients from the activations stored while acting instead of a second forward
pass (runners/sync/stored_update.py), and packs each call's inputs and outputs into few
tensors (runners/sync/packed_calls.py); tests/test_stored_activations.py and
tests/test_paac_agent.py check that they give this update.
"""
import tensorflow as tf

from paac_tf.algorithms.paac import losses
from paac_tf.algorithms.paac import returns as returns_lib

# The metrics of an update, in the order of the packed calls' vector.
METRIC_NAMES = ("Losses/policy", "Losses/value", "Losses/entropy", "Losses/total",
                "Optimizer/learning_rate", "Optimizer/global_norm")


def step_data(rewards, discounts, next_is_last, is_last):
  """The rollout's per-step arrays [T, B] stacked as one float32 tensor [4, T, B] (the flags
  as 0 / 1), as `update` takes them."""
  return tf.stack([tf.cast(rewards, tf.float32), tf.cast(discounts, tf.float32),
                   tf.cast(next_is_last, tf.float32), tf.cast(is_last, tf.float32)])


def update(agent, observations, actions, rollout_steps, values):
  """One synchronous update of `agent.model` on a rollout (`agent.loss`: `loss` below for
  PAAC; `agent.apply`: `apply` below); the metrics dict.

  observations [T, B, ...], actions [T, B], rollout_steps [4, T, B] (`step_data`: rewards,
  discounts, next_is_last, is_last; see returns.py), values [T + 1, B] from action selection
  under the same weights (values[T]: the bootstrap value of the rollout's last observation).
  """
  # [T * B, ...]; -1: B may be unknown until run time (a TF-Agents dataset's batch).
  flat_obs = tf.reshape(observations, [-1] + observations.shape[2:].as_list())
  with tf.GradientTape() as tape:
    total, metrics = agent.loss(agent.model(flat_obs, training=True), actions, rollout_steps,
                                values)
  grads = tape.gradient(total, agent.model.trainable_variables)
  return agent.apply(grads, metrics)


def loss(agent, outputs, actions, rollout_steps, values):
  """(total loss, metrics) of the model's outputs (logits, values) [T * B, ...] on a
  rollout: n-step returns, advantages, the three losses."""
  logits, value_pred = outputs
  rewards, discounts, next_is_last, is_last = tf.unstack(rollout_steps)
  returns = returns_lib.n_step_returns(rewards, discounts, next_is_last > 0.5, values,
                                       agent.gamma)
  mask = tf.reshape(returns_lib.valid_mask(is_last > 0.5), [-1])
  flat_returns = tf.reshape(returns, [-1])
  advantages = returns_lib.advantages(flat_returns, value_pred)
  policy = losses.policy_loss(logits, tf.reshape(actions, [-1]), advantages, mask)
  value = losses.value_loss(value_pred, flat_returns, mask)
  entropy = losses.entropy(logits, mask)
  total = losses.total_loss(policy, value, entropy, agent.entropy_coef, agent.value_coef,
                            agent.loss_scale)
  return total, {"Losses/policy": policy, "Losses/value": value, "Losses/entropy": entropy,
                 "Losses/total": total}


def apply(agent, grads, metrics):
  """Clips the gradients by global norm and applies them; the update's metrics."""
  grads, global_norm = tf.clip_by_global_norm(grads, agent.max_grad_norm)
  lr = agent.optimizer.apply_gradients(zip(grads, agent.model.trainable_variables))
  return dict(metrics, **{"Optimizer/learning_rate": lr, "Optimizer/global_norm": global_norm})
