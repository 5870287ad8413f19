"""The PAAC agent: one batched action selection and one synchronous update.

The whole update in one place (Clemente et al. 2017 and the original PAAC code):
a rollout of t_max steps from n_e environments gives a batch of n_e * t_max samples;
n-step bootstrapped returns (returns.py), advantage = R - V, policy loss with an
entropy bonus and value loss (losses.py), RMSProp (decay 0.99, epsilon 0.1 inside the
square root, as TF1's RMSProp and the original code; agents/optimizers.py) with the learning
rate annealed linearly to 0, and global-norm gradient clipping. `act` and `train` are each one
`tf.function` (XLA optional).

The training loop calls them through `act_packed` and `train_packed`: the same functions
with one tensor out of each call and the rollout's per-step arrays in one tensor. With
`reuse_activations` (the default, for the torsos networks/stored_activations.py supports)
it calls `act_stored` and `train_stored` instead: acting also returns the torso's
activations, and the update takes its gradients from them instead of running the forward
pass on the same observations again under the same weights (the same update, less CPU).
TensorFlow 2.15 on Python 3.11 never frees ~48 bytes of each EagerTensor it creates
(tensorflow/tensorflow#62551); at 29 tensors an update a Pong trainer grew by ~1 MB a
minute, the packed calls create 15.
"""
import tensorflow as tf

from paac_tf.agents import optimizers
from paac_tf.algorithms.paac import losses
from paac_tf.algorithms.paac import returns as returns_lib
from paac_tf.networks import stored_activations
from paac_tf.runtime import checks


# The metrics of `train`, in the order of `train_packed`'s vector.
METRIC_NAMES = ("Losses/policy", "Losses/value", "Losses/entropy", "Losses/total",
                "Optimizer/learning_rate", "Optimizer/global_norm")


@checks.configurable(module="paac")
class PaacAgent(tf.Module):
  """Holds the model, optimizer and RNG; exposes compiled `act` and `train`."""

  def __init__(self, model, total_updates, learning_rate: checks.Positive = 0.0224,
               lr_anneal_steps: checks.OptionalCount = None, steps_per_update=1,
               rmsprop_decay: checks.Decay = 0.99, rmsprop_epsilon: checks.Positive = 0.1,
               entropy_coef: checks.NonNegative = 0.02, value_coef: checks.NonNegative = 0.25,
               loss_scale: checks.Positive = 5.0, max_grad_norm: checks.Positive = 3.0,
               gamma: checks.Fraction = 0.99, jit_compile: checks.Bool = False,
               reuse_activations=True, seed=0):
    """Args (the gin-settable ones are the algorithm's hyperparameters):
      model: the actor-critic Keras model.
      total_updates: updates of the whole run (the default learning-rate horizon).
      learning_rate: initial learning rate, annealed linearly to 0.
      lr_anneal_steps: the annealing horizon in agent steps (None: the whole run); turned
        into updates with `steps_per_update` (n_e * t_max), so that it keeps meaning the
        same number of agent steps whatever n_e and t_max are (the original code: 80M).
      steps_per_update: agent steps per update, n_e * t_max (given by the training loop).
      reuse_activations: let the training loop use `act_stored` / `train_stored` (the
        forward pass once per observation) where the model's torso supports it.
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
    torso = getattr(model, "torso", None)
    self.stores_activations = bool(reuse_activations and torso is not None and
                                   stored_activations.supports(torso))
    if self.stores_activations:
      self.activation_size = stored_activations.stored_size(torso)
      self.act_stored = tf.function(self._act_stored, jit_compile=jit_compile)
      self.train_stored = tf.function(self._train_stored, jit_compile=jit_compile)

  def _act(self, observation):
    """obs [B, ...] -> (actions int64 [B], values [B]); samples from the policy."""
    logits, values = self.model(observation)
    return self._sample(logits), values

  def _sample(self, logits):
    seeds = self.rng.uniform_full_int([2], tf.int32)
    return tf.random.stateless_categorical(logits, 1, seeds, dtype=tf.int64)[:, 0]

  def _act_packed(self, observation):
    """`act` as one float32 tensor [B, 2]: each row (action, value)."""
    actions, values = self._act(observation)
    return tf.stack([tf.cast(actions, tf.float32), values], axis=1)

  def _heads(self, features):
    return self.model.policy_head(features), tf.squeeze(self.model.value_head(features), -1)

  def _act_stored(self, observation):
    """`act_packed` with the torso's activations: float32 [B, 2 + activation_size], each
    row (action, value, activations packed by stored_activations.pack)."""
    features, stored = stored_activations.forward(self.model.torso, observation)
    logits, values = self._heads(features)
    actions = self._sample(logits)
    return tf.concat([tf.cast(actions, tf.float32)[:, None], values[:, None],
                      stored_activations.pack(stored)], axis=1)

  def _train_packed(self, observations, actions, step_data, values):
    """`train` with rewards, discounts, next_is_last and is_last stacked in `step_data`
    float32 [4, T, B] (the flags as 0 / 1); returns the metrics as one float32 vector
    in the order of METRIC_NAMES."""
    return _packed_metrics(self._update(observations, actions, step_data, values))

  def _train_stored(self, observations, actions, step_data, values, *acted):
    """`train_packed` from what `act_stored` returned for steps 1..T-1 of the rollout: `acted`
    is its outputs, float32 [rows, 2 + activation_size] each, in the order of the rollout's
    rows (step by step; within a step, env groups in turn), kept as the tensors it returned
    (no copy between acting and training). The heads' gradients by tape, the torso's by
    stored_activations.backward. Step 0's activations are computed here: its actions were
    chosen with the bootstrap values, before the last update."""
    num_steps, batch = actions.shape[0], actions.shape[1]
    flat_obs = tf.reshape(observations, [num_steps * batch] + observations.shape[2:].as_list())
    torso = self.model.torso
    _, first = stored_activations.forward(torso, observations[0])
    later = stored_activations.unpack(torso, acted, offset=2)
    stored = [tf.concat([a, b], axis=0) for a, b in zip(first, later)]
    features = stored[-1]
    heads = self.model.policy_head.trainable_variables + self.model.value_head.trainable_variables
    with tf.GradientTape() as tape:
      tape.watch(features)
      total, metrics = self._loss(self._heads(features), actions, step_data, values)
    d_features, *head_grads = tape.gradient(total, [features] + heads)
    torso_grads = stored_activations.backward(torso, flat_obs, stored, d_features)
    by_variable = {id(v): g for v, g in zip(torso.trainable_variables + heads,
                                            torso_grads + head_grads)}
    return _packed_metrics(
        self._apply([by_variable[id(v)] for v in self.model.trainable_variables], metrics))

  def _train(self, observations, actions, rewards, discounts, next_is_last, is_last, values):
    """One synchronous update on a rollout.

    observations [T, B, ...], actions [T, B], rewards/discounts/next_is_last/is_last [T, B]
    (see returns.py), values [T + 1, B] from action selection under the same weights.
    """
    step_data = tf.stack([tf.cast(rewards, tf.float32), tf.cast(discounts, tf.float32),
                          tf.cast(next_is_last, tf.float32), tf.cast(is_last, tf.float32)])
    return self._update(observations, actions, step_data, values)

  def _update(self, observations, actions, step_data, values):
    """`train` with the step data stacked (see `train_packed`); the metrics dict."""
    num_steps, batch = actions.shape[0], actions.shape[1]
    flat_obs = tf.reshape(observations, [num_steps * batch] + observations.shape[2:].as_list())
    with tf.GradientTape() as tape:
      total, metrics = self._loss(self.model(flat_obs, training=True), actions, step_data,
                                  values)
    grads = tape.gradient(total, self.model.trainable_variables)
    return self._apply(grads, metrics)

  def _loss(self, outputs, actions, step_data, values):
    """(total loss, metrics) of the model's outputs (logits, values) [T * B, ...] on a
    rollout: n-step returns, advantages, the three losses (losses.py)."""
    logits, value_pred = outputs
    returns = returns_lib.n_step_returns(step_data[0], step_data[1], step_data[2] > 0.5,
                                         values, self.gamma)
    mask = tf.reshape(returns_lib.valid_mask(step_data[3] > 0.5), [-1])
    flat_returns = tf.reshape(returns, [-1])
    advantages = returns_lib.advantages(flat_returns, value_pred)
    policy = losses.policy_loss(logits, tf.reshape(actions, [-1]), advantages, mask)
    value = losses.value_loss(value_pred, flat_returns, mask)
    ent = losses.entropy(logits, mask)
    total = losses.total_loss(policy, value, ent, self.entropy_coef, self.value_coef,
                              self.loss_scale)
    return total, {"Losses/policy": policy, "Losses/value": value, "Losses/entropy": ent,
                   "Losses/total": total}

  def _apply(self, grads, metrics):
    """Clips the gradients by global norm and applies them; the update's metrics."""
    grads, global_norm = tf.clip_by_global_norm(grads, self.max_grad_norm)
    lr = self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
    return dict(metrics, **{"Optimizer/learning_rate": lr, "Optimizer/global_norm": global_norm})


def _packed_metrics(metrics):
  """The metrics as one float32 vector in the order of METRIC_NAMES."""
  return tf.stack([tf.cast(metrics[name], tf.float32) for name in METRIC_NAMES])
