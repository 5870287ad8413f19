"""The algorithms trained by the replay runner: the Ape-X machinery's replay server, actors and
learner (runners/apex/), on one machine or on Ray.

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
(a float array); the replay stores either (runners/apex/replay_layout.py). epsilon_base and
epsilon_alpha are the actors' ladder settings for Ape-X DQN's epsilons (apex_actor's
bindings); an algorithm that explores otherwise configures its own and ignores them.
Its own package holds those (algorithms/apex/ for Ape-X's double-dueling DQN,
algorithms/apex_dpg/ for Ape-X DPG).
"""
from paac_tf.algorithms import base


class ReplayAlgorithm(base.Algorithm):
  """An algorithm trained by the replay runner (see the module docstring)."""
  runner = "replay"

  def network_settings(self):
    raise NotImplementedError

  def make_acting(self, action_spec, observation_spec, num_envs, actor_index, num_actors, seed,
                  epsilon_base, epsilon_alpha):
    raise NotImplementedError

  def make_learner_step(self, action_spec, observation_spec, layout, seed):
    raise NotImplementedError
