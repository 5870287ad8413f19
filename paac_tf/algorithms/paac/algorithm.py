"""PAAC behind the algorithm seam: its settings, model, optimizer and update, which the
synchronous runner (runners/sync/train_loop.py) trains; its checkpoint and exported policy."""
import tensorflow as tf

from paac_tf.algorithms import base
from paac_tf.algorithms.paac import settings as settings_lib
from paac_tf.algorithms.paac import update
from paac_tf.envs import batched
from paac_tf.networks import actor_critic
from paac_tf.networks import optimizers
from paac_tf.networks import specs


class Paac(base.Algorithm):
  """Synchronous parallel advantage actor-critic (Clemente et al. 2017).

  What the synchronous runner asks an on-policy algorithm for: `settings` (its gin
  namespace, read once), `make_model` (the actor-critic network), `make_optimizer`, `loss`
  (a plain function, update.loss's arguments) and `metric_names`. An on-policy algorithm of
  the same network and optimizer subclasses it with its own `loss` (docs/extending.md).
  """
  name = "paac"
  runner = "sync"
  checkpoint_model_key = "model"
  # Where runs recorded before their network spec held the network's settings (before
  # the paac.* namespace); a run records its spec since (train/run_config.json).
  network_configurable = "paac.paac_train"
  network_parameters = ("network", "mlp_units", "initializer")
  output_names = ("action", "probabilities", "value")
  exploration = "sample"
  export_greedy = False
  metric_names = update.METRIC_NAMES
  settings = settings_lib.PaacSettings
  loss = staticmethod(update.loss)
  train_step = staticmethod(update.train_step)

  def make_model(self, action_spec, observation_spec, settings, seed=None):
    """The actor-critic network of `settings` (a PaacSettings)."""
    return actor_critic.build_actor_critic(
        batched.num_actions(action_spec), observation_spec, torso=settings.network,
        mlp_units=settings.mlp_units, initializer=settings.initializer,
        precision=settings.precision, seed=seed)

  def make_optimizer(self, model, settings, total_updates):
    """TF1's RMSProp (as the original code) on `model`'s variables, its learning rate
    annealed linearly to 0 over `settings.lr_anneal_steps` agent steps (None: the run's
    `total_updates`)."""
    anneal = (-(-int(settings.lr_anneal_steps) // settings.steps_per_update)
              if settings.lr_anneal_steps else int(total_updates))
    return optimizers.rmsprop(model, settings.learning_rate, max(anneal, 1),
                              settings.rmsprop_decay, settings.rmsprop_epsilon)

  def network_spec(self, action_spec, observation_spec, **settings):
    return specs.actor_critic_spec(batched.num_actions(action_spec), observation_spec,
                                   **settings)

  def build_network(self, spec):
    return specs.build_model(spec)

  def policy_scores(self, model, observation):
    logits, value = model(observation, training=False)
    outputs = {"probabilities": tf.nn.softmax(logits, axis=-1),
               "value": tf.cast(value, tf.float32)}
    return logits, {k: v for k, v in outputs.items() if k in self.output_names}
