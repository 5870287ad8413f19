"""Ape-X behind the algorithm seam: its network, acting, update, checkpoint and exported
policy; its run is the replay runner's (runners/apex/family.py)."""
import numpy as np

from paac_tf.algorithms.apex import acting
from paac_tf.algorithms.apex import epsilon as epsilon_lib
from paac_tf.algorithms.apex import learner_step
from paac_tf.envs import batched
from paac_tf.networks import dueling_q
from paac_tf.networks import specs
from paac_tf.algorithms.replay import algorithm as replay_algorithm


class Apex(replay_algorithm.ReplayAlgorithm):
  """Distributed prioritized experience replay with a double-dueling DQN (Horgan et al.
  2018)."""
  name = "apex"
  checkpoint_model_key = "q_network"
  network_configurable = "apex.apex_network"
  network_parameters = ("network", "mlp_units", "head_units")
  output_names = ("action", "q_values")
  exploration = "epsilon_greedy"
  export_greedy = True
  # The evaluation epsilon of greedy exports: Dopamine's DQN and Rainbow `epsilon_eval`
  # (the Nature DQN used 0.05; docs/apex.md, "Evaluation").
  greedy_eval_epsilon = 0.001

  def network_settings(self):
    return dueling_q.apex_network()

  def network_spec(self, action_spec, observation_spec, **settings):
    return specs.dueling_q_spec(batched.num_actions(action_spec), observation_spec,
                                **settings)

  def build_network(self, spec):
    return specs.build_model(spec)

  def make_acting(self, action_spec, observation_spec, num_envs, actor_index, num_actors, seed,
                  epsilon_base, epsilon_alpha):
    num_actions = batched.num_actions(action_spec)
    epsilons = epsilon_lib.environment_epsilons(actor_index, num_actors, num_envs,
                                                epsilon_base, epsilon_alpha)
    network = dueling_q.build_q_network(num_actions, observation_spec, seed=seed)
    return acting.EpsilonGreedy(network, observation_spec, num_envs, epsilons,
                                np.random.default_rng([int(seed), int(actor_index)]))

  def make_learner_step(self, action_spec, observation_spec, layout, seed):
    num_actions = batched.num_actions(action_spec)
    settings = self.network_settings()
    q_network = dueling_q.build_q_network(num_actions, observation_spec, settings, seed=seed)
    target_network = dueling_q.build_q_network(num_actions, observation_spec, settings)
    step = learner_step.ApexLearnerStep(q_network, target_network, layout)
    step.build()
    return step

  def policy_scores(self, model, observation):
    q_values = model(observation, training=False)
    return q_values, {"q_values": q_values}

  def eval_epsilon(self, greedy):
    return self.greedy_eval_epsilon if greedy else 0.0
