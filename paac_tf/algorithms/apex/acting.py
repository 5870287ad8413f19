"""Ape-X's acting: Q-values of a batch of observations under the actor's local network copy,
epsilon-greedy actions (one epsilon per environment, `epsilon.py`'s ladder) and the
transitions' initial priorities (`priorities.py`)."""
import numpy as np
import tensorflow as tf

from paac_tf.algorithms.apex import epsilon as epsilon_lib
from paac_tf.algorithms.apex import priorities


class EpsilonGreedy:
  """An actor's acting on its batch of `num_envs` environments.

  Attributes:
    network: the local network copy (the actor copies the learner's weights into it).
    epsilons: float64 [num_envs], each environment's exploration.
  """

  def __init__(self, network, observation_spec, num_envs, epsilons, rng):
    self.network = network
    self.epsilons = np.asarray(epsilons, np.float64)
    self._rng = rng
    self._rows = np.arange(int(num_envs))
    # A concrete function for the fixed batch: calling it skips tf.function's per-call
    # signature matching (~1 ms a step, measured, more than the CartPole forward pass).
    self._q_function = tf.function(network).get_concrete_function(
        tf.TensorSpec([int(num_envs), *observation_spec.shape], observation_spec.dtype))

  def act(self, observation):
    """(actions int64 [B], q_taken float32 [B]: Q(s, a) of the chosen actions, q_values
    [B, A]) for a batch of observations."""
    q_values = self._q_function(observation).numpy()
    actions = epsilon_lib.epsilon_greedy(q_values, self.epsilons, self._rng)
    return actions, q_values[self._rows, actions], q_values

  def initial_priorities(self, transitions, q_values):
    """The priorities of `transitions` (n_step.Transitions completed at this step) given the
    Q-values `act` returned for this step's observations (their bootstrap states)."""
    return priorities.initial_priorities(transitions.q_taken, transitions.reward,
                                         transitions.discount, q_values[transitions.env])
