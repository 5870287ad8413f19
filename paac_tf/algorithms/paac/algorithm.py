"""PAAC behind the algorithm seam: its model, agent (acting) and loss, which the synchronous
runner (runners/sync/) trains; its checkpoint and exported policy."""
import tensorflow as tf

from paac_tf.algorithms import base
from paac_tf.algorithms.paac import agent as agent_lib
from paac_tf.algorithms.paac import update
from paac_tf.envs import batched
from paac_tf.networks import actor_critic
from paac_tf.networks import specs


class Paac(base.Algorithm):
  """Synchronous parallel advantage actor-critic (Clemente et al. 2017).

  What the synchronous runner asks an on-policy algorithm for: `make_model` (the
  actor-critic network), `make_agent` (acting and the optimizer: `PaacAgent`, with this
  object's `loss` and `metric_names`), `loss`. An on-policy algorithm of the same network
  and optimizer subclasses it with its own `loss` (docs/algorithms.md).
  """
  name = "paac"
  runner = "sync"
  checkpoint_model_key = "model"
  network_configurable = "paac.paac_train"   # the runner's configurable holds the settings
  network_parameters = ("network", "mlp_units", "initializer")
  output_names = ("action", "probabilities", "value")
  exploration = "sample"
  export_greedy = False
  metric_names = update.METRIC_NAMES

  def loss(self, agent, outputs, actions, rollout_steps, values):
    """(total loss, metrics) of the model's outputs on a rollout (update.loss)."""
    return update.loss(agent, outputs, actions, rollout_steps, values)

  def make_model(self, action_spec, observation_spec, settings, precision="float32",
                 seed=None):
    """The actor-critic network of `settings` (network, mlp_units, initializer)."""
    return actor_critic.build_actor_critic(
        batched.num_actions(action_spec), observation_spec, torso=settings["network"],
        mlp_units=settings["mlp_units"], initializer=settings["initializer"],
        precision=precision, seed=seed)

  def make_agent(self, model, total_updates, steps_per_update, seed):
    """The agent that acts and updates `model` with this algorithm's loss."""
    return agent_lib.PaacAgent(model, total_updates=total_updates,
                               steps_per_update=steps_per_update, seed=seed, loss=self.loss,
                               metric_names=self.metric_names)

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
