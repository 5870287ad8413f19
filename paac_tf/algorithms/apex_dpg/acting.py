"""Ape-X DPG's acting: the deterministic actor's actions under the actor's local network
copies, Gaussian noise of each environment's own scale (exploration.py), the critic's
values for the transitions' initial priorities.

Per batched step, two compiled calls on the local copies:
  mu(s), Q(s, mu(s))   the actions to perturb, and each state's bootstrap value (used when
                       the state ends a transition: R + D * Q(s', mu(s')));
  Q(s, a)              of the noisy actions a that are sent, kept with the transitions that
                       start here.
The initial priority of a transition is |R + D * Q(s', mu(s')) - Q(s, a)| + epsilon, with the
local copies standing in for the learner's online and target networks (Ape-X, section 3).
"""
import numpy as np
import tensorflow as tf

from paac_tf.algorithms.apex_dpg import exploration
from paac_tf.algorithms.apex_dpg import losses
from paac_tf.algorithms.replay import prioritized


class NoisyDeterministic:
  """An actor's acting on its batch of `num_envs` environments.

  Attributes:
    network: the local copies (`.actor`, `.critic`) the learner's weights go into.
    epsilons: float64 [num_envs], each environment's noise scale (the machinery's name for
      an environment's exploration: reports and the low-exploration window use it).
  """

  def __init__(self, network, observation_spec, action_spec, num_envs, noise_scales, rng):
    self.network = network
    self.epsilons = np.asarray(noise_scales, np.float64)
    self._low = np.asarray(action_spec.minimum, np.float32)
    self._high = np.asarray(action_spec.maximum, np.float32)
    self._rng = rng
    batch = int(num_envs)
    observations = tf.TensorSpec([batch, *observation_spec.shape], observation_spec.dtype)
    actions = tf.TensorSpec([batch, *action_spec.shape], tf.float32)
    # Concrete functions for the fixed batch: no per-call signature matching.
    self._policy = tf.function(self._policy_and_value).get_concrete_function(observations)
    self._q = tf.function(self._q_value).get_concrete_function(observations, actions)

  def _policy_and_value(self, observation):
    mean = self.network.actor(observation)
    return mean, self.network.critic((observation, mean))

  def _q_value(self, observation, action):
    return self.network.critic((observation, action))

  def act(self, observation):
    """(actions float32 [B, *action_shape], q_taken float32 [B]: Q(s, a) of the sent
    actions, values float32 [B]: Q(s, mu(s)), each state's bootstrap value)."""
    observation = tf.convert_to_tensor(observation)
    mean, values = self._policy(observation)
    actions = exploration.noisy_actions(mean.numpy(), self.epsilons, self._low, self._high,
                                        self._rng)
    q_taken = self._q(observation, tf.convert_to_tensor(actions)).numpy()
    return actions, q_taken, values.numpy()

  def initial_priorities(self, transitions, values):
    """The priorities of `transitions` (n_step.Transitions completed at this step) given the
    bootstrap values `act` returned for this step's observations."""
    td = losses.td_errors_np(transitions.q_taken, transitions.reward, transitions.discount,
                             values[transitions.env])
    return prioritized.priorities_from_td_np(td)
