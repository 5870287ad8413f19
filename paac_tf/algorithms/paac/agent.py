"""The PAAC agent: the model, its optimizer and RNG, batched acting and the update.

`policy` picks all n_e actions in one batched forward pass (a sample of the policy) and
returns the values beside them; `loss` is the algorithm's loss (update.loss for PAAC, given
by the algorithm object), `apply` clips and applies the gradients (update.apply), `update`
is the two with the forward pass between (update.update); `act` and `train` are `policy`
and `update` compiled (XLA optional). The synchronous runner (runners/sync/) calls the same
`policy`, `loss` and `apply`, packed into few tensors and, where the torso supports it,
with the torso's gradients from the activations stored while acting.
"""
import functools

import tensorflow as tf

from paac_tf.algorithms.paac import update as update_lib
from paac_tf.networks import optimizers
from paac_tf.bookkeeping import checks


@checks.configurable(module="paac")
class PaacAgent(tf.Module):
  """Holds the model, optimizer and RNG; exposes compiled `act` and `train`."""

  def __init__(self, model, total_updates, learning_rate: checks.Positive = 0.0224,
               lr_anneal_steps: checks.OptionalCount = None, steps_per_update=1,
               rmsprop_decay: checks.Decay = 0.99, rmsprop_epsilon: checks.Positive = 0.1,
               entropy_coef: checks.NonNegative = 0.02, value_coef: checks.NonNegative = 0.25,
               loss_scale: checks.Positive = 5.0, max_grad_norm: checks.Positive = 3.0,
               gamma: checks.Fraction = 0.99, jit_compile: checks.Bool = False,
               reuse_activations=True, seed=0, loss=None, metric_names=None):
    """Args (the gin-settable ones are the algorithm's hyperparameters):
      model: the actor-critic Keras model.
      total_updates: updates of the whole run (the default learning-rate horizon).
      learning_rate: initial learning rate, annealed linearly to 0.
      lr_anneal_steps: the annealing horizon in agent steps (None: the whole run); turned
        into updates with `steps_per_update` (n_e * t_max), so that it keeps meaning the
        same number of agent steps whatever n_e and t_max are (the original code: 80M).
      steps_per_update: agent steps per update, n_e * t_max (given by the training loop).
      reuse_activations: let the training loop take the torso's gradients from the
        activations stored while acting (the forward pass once per observation) where the
        model's torso supports it (runners/sync/stored_update.py).
      loss: loss(agent, outputs, actions, rollout_steps, values) -> (total, metrics), the
        algorithm's loss (None: PAAC's, update.loss).
      metric_names: the names of the metrics `update` returns, in a fixed order (None:
        PAAC's, update.METRIC_NAMES).
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
    self.jit_compile = bool(jit_compile)
    self.reuse_activations = bool(reuse_activations)
    self._loss = loss or update_lib.loss
    self.metric_names = tuple(metric_names or update_lib.METRIC_NAMES)
    compiled = functools.partial(tf.function, jit_compile=self.jit_compile)
    self.act = compiled(self.policy)
    self.train = compiled(self._train)

  def policy(self, observation):
    """obs [B, ...] -> (actions int64 [B], values [B]); samples from the policy."""
    logits, values = self.model(observation)
    return self.sample(logits), values

  def sample(self, logits):
    """One action per row of `logits`, drawn with the agent's RNG."""
    seeds = self.rng.uniform_full_int([2], tf.int32)
    return tf.random.stateless_categorical(logits, 1, seeds, dtype=tf.int64)[:, 0]

  def loss(self, outputs, actions, rollout_steps, values):
    """(total loss, metrics) of the model's outputs on a rollout: the algorithm's loss."""
    return self._loss(self, outputs, actions, rollout_steps, values)

  def apply(self, grads, metrics):
    """Clips and applies the gradients (update.apply); the update's metrics."""
    return update_lib.apply(self, grads, metrics)

  def update(self, observations, actions, rollout_steps, values):
    """One update on a rollout (update.update: the forward pass, `loss`, `apply`)."""
    return update_lib.update(self, observations, actions, rollout_steps, values)

  def _train(self, observations, actions, rewards, discounts, next_is_last, is_last, values):
    """One synchronous update on a rollout (`update`).

    observations [T, B, ...], actions [T, B], rewards/discounts/next_is_last/is_last [T, B]
    (see returns.py), values [T + 1, B] from action selection under the same weights.
    """
    return self.update(observations, actions,
                       update_lib.step_data(rewards, discounts, next_is_last, is_last), values)
