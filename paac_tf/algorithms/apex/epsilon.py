"""Ape-X DQN's exploration (Horgan et al. 2018, section 4.1): epsilon-greedy, each
environment with its epsilon on the machinery's ladder (algorithms/replay/ladder.py),

  epsilon_i = 0.4 ** (1 + 7 * i / (N - 1))   over the N environments of all actors,

so environment 0 (actor 0's first) explores most (0.4) and environment N-1 (the last
actor's last) least (0.4 ** 8 ~= 0.00066); a single environment uses 0.4.
"""
import numpy as np

from paac_tf.algorithms.replay import ladder

BASE = 0.4
ALPHA = 7.0


def environment_epsilons(actor_index, num_actors, num_envs, base=BASE, alpha=ALPHA):
  """The epsilons [num_envs] (float64) of actor `actor_index`'s (0-based) environments
  among `num_actors` actors of `num_envs` environments each (the machinery's ladder,
  algorithms/replay/ladder.py, with the paper's base and alpha)."""
  return ladder.environment_scales(actor_index, num_actors, num_envs, base, alpha)


def epsilon_greedy(q_values, epsilon, rng):
  """Actions [B] from Q-values [B, A]: greedy, or uniformly random with probability epsilon.

  `epsilon` is a scalar or one value per row; `rng` a `np.random.Generator`.
  """
  q_values = np.asarray(q_values)
  batch, num_actions = q_values.shape
  greedy = np.argmax(q_values, axis=-1)
  explore = rng.random(batch) < np.broadcast_to(np.asarray(epsilon, np.float64), (batch,))
  random_actions = rng.integers(0, num_actions, size=batch)
  return np.where(explore, random_actions, greedy).astype(np.int64)
