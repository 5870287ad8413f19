"""Ape-X behind the algorithm seam: its run, network, checkpoint and exported policy."""
from paac_tf.algorithms import base
from paac_tf.networks import specs
from paac_tf.runners import validation
from paac_tf.runners.apex import actor
from paac_tf.runners.apex import launcher as local
from paac_tf.runners.apex import ray_launcher


class Apex(base.Algorithm):
  """Distributed prioritized experience replay with a double-dueling DQN (Horgan et al.
  2018)."""
  name = "apex"
  display_name = "Ape-X"
  launchers = ("local", "ray")
  checkpoint_model_key = "q_network"
  network_configurable = "apex.apex_network"
  network_parameters = ("network", "mlp_units", "head_units")
  output_names = ("action", "q_values")
  exploration = "epsilon_greedy"
  export_greedy = True
  # The evaluation epsilon of greedy exports: Dopamine's DQN and Rainbow `epsilon_eval`
  # (the Nature DQN used 0.05; docs/apex.md, "Evaluation").
  greedy_eval_epsilon = 0.001

  def run(self, root_dir, env_name, total_steps, seed, launcher="local", ray_address=None):
    if launcher == "ray":
      return ray_launcher.run_ray(root_dir, env_name, int(total_steps), seed=seed,
                                  address=ray_address)
    return local.run_local(root_dir, env_name, int(total_steps), seed=seed)

  def check_config(self, bound):
    validation.check_worker_split(actor.apex_actor, bound)

  def network_spec(self, num_actions, observation_spec, **settings):
    return specs.dueling_q_spec(num_actions, observation_spec, **settings)

  def build_network(self, spec):
    return specs.build_model(spec)

  def policy_scores(self, model, observation):
    q_values = model(observation, training=False)
    return q_values, {"q_values": q_values}

  def eval_epsilon(self, greedy):
    return self.greedy_eval_epsilon if greedy else 0.0
