"""The PAAC agent: the model, its optimizer and RNG, batched acting and the compiled update.

`act` picks all n_e actions in one batched forward pass (a sample of the policy) and
returns the values beside them; `train` is the update of update.py, on a rollout. Each is
one `tf.function` (XLA optional). The training loop calls them as `act_packed` /
`train_packed` (packed_calls.py: one tensor out of each call) or, with `reuse_activations`
(the default, for the torsos networks/stored_activations.py supports), as `act_stored` /
`train_stored` (stored_update.py: the update takes the torso's gradients from the
activations stored while acting, instead of a second forward pass on the same observations
under the same weights): the same update, less CPU.
"""
import functools

import tensorflow as tf

from paac_tf.algorithms.paac import packed_calls
from paac_tf.algorithms.paac import stored_update
from paac_tf.algorithms.paac import update
from paac_tf.networks import optimizers
from paac_tf.networks import stored_activations
from paac_tf.runtime import checks


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
    compiled = functools.partial(tf.function, jit_compile=jit_compile)
    self.act = compiled(self.policy)
    self.train = compiled(self._train)
    self.act_packed = compiled(functools.partial(packed_calls.act, self))
    self.train_packed = compiled(functools.partial(packed_calls.train, self))
    torso = getattr(model, "torso", None)
    self.stores_activations = bool(reuse_activations and torso is not None and
                                   stored_activations.supports(torso))
    if self.stores_activations:
      self.activation_size = stored_activations.stored_size(torso)
      self.act_stored = compiled(functools.partial(stored_update.act, self))
      self.train_stored = compiled(functools.partial(stored_update.train, self))

  def policy(self, observation):
    """obs [B, ...] -> (actions int64 [B], values [B]); samples from the policy."""
    logits, values = self.model(observation)
    return self.sample(logits), values

  def sample(self, logits):
    """One action per row of `logits`, drawn with the agent's RNG."""
    seeds = self.rng.uniform_full_int([2], tf.int32)
    return tf.random.stateless_categorical(logits, 1, seeds, dtype=tf.int64)[:, 0]

  def _train(self, observations, actions, rewards, discounts, next_is_last, is_last, values):
    """One synchronous update on a rollout (update.update).

    observations [T, B, ...], actions [T, B], rewards/discounts/next_is_last/is_last [T, B]
    (see returns.py), values [T + 1, B] from action selection under the same weights.
    """
    return update.update(self, observations, actions,
                         update.step_data(rewards, discounts, next_is_last, is_last), values)
