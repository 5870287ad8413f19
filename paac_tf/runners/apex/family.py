"""The algorithms that train on Ape-X's machinery: the replay server, the actors and the
learner of this package, on one machine (`launcher.run_local`) or on Ray
(`ray_launcher.run_ray`).

The machinery is the same for every such algorithm; what differs, it asks the algorithm
object for (a `ReplayAlgorithm`):
  network_settings()                  the configured network settings (run_config.json;
                                      with a "network" entry, which exports record)
  make_acting(action_spec, observation_spec, num_envs, actor_index, num_actors, seed,
              epsilon_base, epsilon_alpha)
                                      an actor's acting: `.network` (the local copy the
                                      learner's weights go into), `.epsilons` (each
                                      environment's exploration scale on the ladder,
                                      ladder.py; what a report's episodes were played at),
                                      `.act(observation)` -> (actions, q_taken: Q(s, a) of
                                      the actions, bootstrap values of the states) and
                                      `.initial_priorities(transitions, bootstrap values)`
  make_learner_step(action_spec, observation_spec, layout, seed)
                                      the learner's compiled update: `.network` (published
                                      to the actors, checked finite), `.policy_network`
                                      (exported), `.steps`, `.optimizer`, `.train(sample)`
                                      -> (keys, priorities, metrics),
                                      `.checkpoint_trackables()`, `.finite_metric_keys`
The actions are the environment's (`action_spec`): discrete (one integer) or continuous
(a float array); the replay stores either (replay_layout.py). epsilon_base and
epsilon_alpha are the actors' ladder settings for Ape-X DQN's epsilons (apex_actor's
bindings); an algorithm that explores otherwise configures its own and ignores them.
Its own package holds those (algorithms/apex/ for Ape-X's double-dueling DQN,
algorithms/apex_dpg/ for Ape-X DPG).
"""
from paac_tf import errors
from paac_tf.algorithms import base
from paac_tf.algorithms import registry
from paac_tf.runners.apex import actor
from paac_tf.runners.apex import launcher as local_launcher
from paac_tf.runners.apex import ray_launcher
from paac_tf.runners import validation
from paac_tf.runtime import config


class ReplayAlgorithm(base.Algorithm):
  """An algorithm run by the Ape-X machinery (see the module docstring)."""
  launchers = ("local", "ray")

  def run(self, root_dir, env, total_steps, seed, launcher="local", ray_address=None):
    if launcher == "ray":
      return ray_launcher.run_ray(root_dir, env, int(total_steps), seed=seed,
                                  address=ray_address, algorithm=self)
    return local_launcher.run_local(root_dir, env, int(total_steps), seed=seed,
                                    algorithm=self)

  def check_config(self, bound):
    validation.check_worker_split(actor.apex_actor, bound)

  def network_settings(self):
    raise NotImplementedError

  def make_acting(self, action_spec, observation_spec, num_envs, actor_index, num_actors, seed,
                  epsilon_base, epsilon_alpha):
    raise NotImplementedError

  def make_learner_step(self, action_spec, observation_spec, layout, seed):
    raise NotImplementedError


def configured(name=None):
  """The ReplayAlgorithm a program of the machinery runs: `name` (its --algorithm flag) if
  given, else the parsed configuration's train_eval.algorithm; a UserError if that is not
  an algorithm of this family."""
  name = name or config.configured("train_eval.algorithm", registry.DEFAULT)
  algorithm = registry.get(name)
  if not isinstance(algorithm, ReplayAlgorithm):
    family = [a.name for a in registry.algorithms() if isinstance(a, ReplayAlgorithm)]
    raise errors.UserError(
        "train_eval.algorithm = %r: %s does not train on the replay, actors and learner of "
        "the Ape-X programs; choose one of %s." % (name, algorithm.display_name,
                                                   ", ".join(repr(n) for n in family)))
  return algorithm
