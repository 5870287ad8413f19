"""Ape-X DPG behind the algorithm seam: its networks, acting, update, checkpoint and exported
policy; its run is the replay runner's (runners/apex/family.py), as Ape-X DQN's."""
import numpy as np
import tensorflow as tf
from tf_agents.specs import tensor_spec

from paac_tf.algorithms.apex_dpg import acting
from paac_tf.algorithms.apex_dpg import exploration
from paac_tf.algorithms.apex_dpg import learner_step
from paac_tf.algorithms.apex_dpg import networks as networks_lib
from paac_tf.algorithms.replay import algorithm as replay_algorithm
from paac_tf.bookkeeping import checks

ACTIVATIONS = ("relu", "tanh", "elu")


@checks.configurable(module="apex_dpg")
def dpg_networks(actor_units: checks.Units = (400, 300), critic_units: checks.Units = (400, 300),
                 activation: checks.one_of(ACTIVATIONS) = "relu",
                 layer_norm: checks.Bool = False):
  """The actor's and the critic's settings (shared by learner, actors and exports).

  Args:
    actor_units: the actor's hidden layers.
    critic_units: the critic's hidden layers.
    activation: the hidden layers' activation: 'relu', 'tanh' or 'elu'.
    layer_norm: a LayerNorm after each hidden Dense layer, before its activation.
  """
  return {"network": "mlp", "actor_units": [int(u) for u in actor_units],
          "critic_units": [int(u) for u in critic_units], "activation": str(activation),
          "layer_norm": bool(layer_norm)}


@checks.configurable(module="apex_dpg")
def dpg_exploration(noise_base: checks.Fraction = 0.5, noise_alpha: checks.NonNegative = 3.0):
  """The actors' Gaussian noise scales on the Ape-X ladder: environment i of N explores with
  noise_base ** (1 + noise_alpha * i / (N - 1)) of half the action range (exploration.py);
  noise_base in (0, 1], so that the ladder falls from the first environment to the last.

  Args:
    noise_base: the first environment's noise scale, a fraction of half the action range.
    noise_alpha: how fast the scale falls along the ladder (0: every environment at
      noise_base).
  """
  return float(noise_base), float(noise_alpha)


class ActorAndCritic(tf.Module):
  """The actor mu(s) and the critic Q(s, a): what the learner trains and publishes and the
  actors copy (its `variables`, in one fixed order)."""

  def __init__(self, observation_spec, action_spec, settings, seed=None):
    super().__init__(name="actor_and_critic")
    common = {"activation": settings["activation"], "layer_norm": settings["layer_norm"]}
    self.actor = networks_lib.build_actor(observation_spec, action_spec,
                                          tuple(settings["actor_units"]), seed=seed, **common)
    self.critic = networks_lib.build_critic(
        observation_spec, action_spec, tuple(settings["critic_units"]),
        seed=None if seed is None else int(seed) + 1, **common)


class ApexDpg(replay_algorithm.ReplayAlgorithm):
  """Distributed prioritized experience replay with deterministic policy gradients (Horgan
  et al. 2018, Ape-X DPG): continuous, bounded actions."""
  name = "apex_dpg"
  action_kind = "continuous"
  checkpoint_model_key = "actor"
  network_configurable = "apex_dpg.dpg_networks"
  network_parameters = ("actor_units", "activation", "layer_norm")
  output_names = ("action",)
  exploration = "deterministic"
  export_greedy = True

  def network_settings(self):
    return dpg_networks()

  def network_spec(self, action_spec, observation_spec, **settings):
    """The exported network's spec: the actor's."""
    return networks_lib.actor_spec(
        observation_spec, action_spec,
        hidden_units=tuple(settings.get("actor_units", networks_lib.DEFAULT_SETTINGS[
            "hidden_units"])),
        activation=settings.get("activation", "relu"),
        layer_norm=settings.get("layer_norm", False))

  def build_network(self, spec):
    return networks_lib.build_actor_from_spec(spec)

  def make_acting(self, action_spec, observation_spec, num_envs, actor_index, num_actors, seed,
                  epsilon_base, epsilon_alpha):
    del epsilon_base, epsilon_alpha   # Ape-X DQN's ladder; DPG's noise is dpg_exploration's
    base, alpha = dpg_exploration()
    scales = exploration.environment_noise_scales(actor_index, num_actors, num_envs, base,
                                                  alpha)
    network = ActorAndCritic(observation_spec, action_spec, self.network_settings(), seed=seed)
    return acting.NoisyDeterministic(network, observation_spec, action_spec, num_envs, scales,
                                     np.random.default_rng([int(seed), int(actor_index)]))

  def make_learner_step(self, action_spec, observation_spec, layout, seed):
    settings = self.network_settings()
    step = learner_step.ApexDpgLearnerStep(
        ActorAndCritic(observation_spec, action_spec, settings, seed=seed),
        ActorAndCritic(observation_spec, action_spec, settings), layout)
    step.build()
    return step

  def policy_scores(self, model, observation):
    return model(observation, training=False), {}

  def policy_action_spec(self, model):
    return tensor_spec.BoundedTensorSpec(model.action_shape, tf.float32, model.action_low,
                                         model.action_high, name="action")
