"""Ape-X's per-actor exploration ladder (Horgan et al. 2018, section 4.1).

Actor i of N acts epsilon-greedily with

  epsilon_i = base ** (1 + alpha * i / (N - 1)),   base = 0.4, alpha = 7,

so actor 0 explores most (0.4) and actor N-1 least (0.4 ** 8 ~= 0.00066). A single actor
uses `base`. Every environment of an actor's batch shares that actor's epsilon.
"""
import numpy as np

BASE = 0.4
ALPHA = 7.0


def actor_epsilon(actor_index, num_actors, base=BASE, alpha=ALPHA):
  """epsilon_i of actor `actor_index` (0-based) among `num_actors`."""
  actor_index, num_actors = int(actor_index), int(num_actors)
  if num_actors < 1:
    raise ValueError("num_actors must be >= 1, got %d." % num_actors)
  if not 0 <= actor_index < num_actors:
    raise ValueError("actor_index must be in [0, %d), got %d." % (num_actors, actor_index))
  if num_actors == 1:
    return float(base)
  return float(base ** (1.0 + alpha * actor_index / (num_actors - 1)))


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
