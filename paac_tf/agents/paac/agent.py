"""The PAAC agent: one batched action selection and one synchronous update.

The whole update in one place (Clemente et al. 2017 and the original PAAC code):
a rollout of t_max steps from n_e environments gives a batch of n_e * t_max samples;
n-step bootstrapped returns (returns.py), advantage = R - V, policy loss with an
entropy bonus and value loss (losses.py), RMSProp (decay 0.99, epsilon 0.1 inside the
square root, as TF1's RMSProp and the original code; agents/optimizers.py) with the learning
rate annealed linearly to 0, and global-norm gradient clipping. `act` and `train` are each one
`tf.function` (XLA optional).

The training loop calls them through `act_packed` and `train_packed`: the same functions
with one tensor out of each call and the rollout's per-step arrays in one tensor.
TensorFlow 2.15 on Python 3.11 never frees ~48 bytes of each EagerTensor it creates
(tensorflow/tensorflow#62551); at 29 tensors an update a Pong trainer grew by ~1 MB a
minute, the packed calls create 15.
"""
import gin
import tensorflow as tf

from paac_tf.agents import optimizers
from paac_tf.agents.paac import losses
from paac_tf.agents.paac import returns as returns_lib


# The metrics of `train`, in the order of `train_packed`'s vector.
METRIC_NAMES = ("Losses/policy", "Losses/value", "Losses/entropy", "Losses/total",
                "Optimizer/learning_rate", "Optimizer/global_norm")


@gin.configurable(module="paac")
class PaacAgent(tf.Module):
  """Holds the model, optimizer and RNG; exposes compiled `act` and `train`."""

  def __init__(self, model, total_updates, learning_rate=0.0224, lr_anneal_steps=None,
               steps_per_update=1, rmsprop_decay=0.99, rmsprop_epsilon=0.1, entropy_coef=0.02,
               value_coef=0.25, loss_scale=5.0, max_grad_norm=3.0, gamma=0.99, jit_compile=False,
               seed=0):
    """Args (the gin-settable ones are the algorithm's hyperparameters):
      model: the actor-critic Keras model.
      total_updates: updates of the whole run (the default learning-rate horizon).
      learning_rate: initial learning rate, annealed linearly to 0.
      lr_anneal_steps: the annealing horizon in agent steps (None: the whole run); turned
        into updates with `steps_per_update` (n_e * t_max), so that it keeps meaning the
        same number of agent steps whatever n_e and t_max are (the original code: 80M).
      steps_per_update: agent steps per update, n_e * t_max (given by the training loop).
    """
    super().__init__(name="paac_agent")
    self.model = model
    self.gamma = float(gamma)
    self.entropy_coef = float(entropy_coef)
    self.value_coef = float(value_coef)
    self.loss_scale = float(loss_scale)
    self.max_grad_norm = float(max_grad_norm)
    anneal = (int(-(-int(lr_anneal_steps) // int(steps_per_update))) if lr_anneal_steps
              else int(total_updates))
    self.learning_rate = tf.keras.optimizers.schedules.PolynomialDecay(
        float(learning_rate), decay_steps=max(anneal, 1), end_learning_rate=0.0, power=1.0)
    # TF1's RMSProp, as the original code: lr * g / sqrt(ms + epsilon), ms starting at 1.
    self.optimizer = optimizers.RMSProp(self.learning_rate, decay=rmsprop_decay,
                                        epsilon=rmsprop_epsilon)
    self.optimizer.build(self.model.trainable_variables)
    self.rng = tf.random.Generator.from_seed(seed)
    self.act = tf.function(self._act, jit_compile=jit_compile)
    self.train = tf.function(self._train, jit_compile=jit_compile)
    self.act_packed = tf.function(self._act_packed, jit_compile=jit_compile)
    self.train_packed = tf.function(self._train_packed, jit_compile=jit_compile)

  def _act(self, observation):
    """obs [B, ...] -> (actions int64 [B], values [B]); samples from the policy."""
    logits, values = self.model(observation)
    seeds = self.rng.uniform_full_int([2], tf.int32)
    actions = tf.random.stateless_categorical(logits, 1, seeds, dtype=tf.int64)[:, 0]
    return actions, values

  def _act_packed(self, observation):
    """`act` as one float32 tensor [B, 2]: each row (action, value)."""
    actions, values = self._act(observation)
    return tf.stack([tf.cast(actions, tf.float32), values], axis=1)

  def _train_packed(self, observations, actions, step_data, values):
    """`train` with rewards, discounts, next_is_last and is_last stacked in `step_data`
    float32 [4, T, B] (the flags as 0 / 1); returns the metrics as one float32 vector
    in the order of METRIC_NAMES."""
    metrics = self._train(observations, actions, step_data[0], step_data[1],
                          step_data[2] > 0.5, step_data[3] > 0.5, values)
    return tf.stack([tf.cast(metrics[name], tf.float32) for name in METRIC_NAMES])

  def _train(self, observations, actions, rewards, discounts, next_is_last, is_last, values):
    """One synchronous update on a rollout.

    observations [T, B, ...], actions [T, B], rewards/discounts/next_is_last/is_last [T, B]
    (see returns.py), values [T + 1, B] from action selection under the same weights.
    """
    num_steps, batch = actions.shape[0], actions.shape[1]
    returns = returns_lib.n_step_returns(rewards, discounts, next_is_last, values, self.gamma)
    mask = tf.reshape(returns_lib.valid_mask(is_last), [-1])
    flat_obs = tf.reshape(observations, [num_steps * batch] + observations.shape[2:].as_list())
    flat_returns = tf.reshape(returns, [-1])
    flat_actions = tf.reshape(actions, [-1])
    with tf.GradientTape() as tape:
      logits, value_pred = self.model(flat_obs, training=True)
      advantages = returns_lib.advantages(flat_returns, value_pred)
      policy = losses.policy_loss(logits, flat_actions, advantages, mask)
      value = losses.value_loss(value_pred, flat_returns, mask)
      ent = losses.entropy(logits, mask)
      total = losses.total_loss(policy, value, ent, self.entropy_coef, self.value_coef,
                                self.loss_scale)
    variables = self.model.trainable_variables
    grads = tape.gradient(total, variables)
    grads, global_norm = tf.clip_by_global_norm(grads, self.max_grad_norm)
    lr = self.optimizer.apply_gradients(zip(grads, variables))
    return {
        "Losses/policy": policy, "Losses/value": value, "Losses/entropy": ent,
        "Losses/total": total, "Optimizer/learning_rate": lr,
        "Optimizer/global_norm": global_norm,
    }
