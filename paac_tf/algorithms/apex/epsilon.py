"""Ape-X's exploration ladder (Horgan et al. 2018, section 4.1).

The paper's actors had one environment each; here an actor steps a batch of `num_envs`
environments, and the ladder spans every environment of every actor. With N environments
in all (num_actors x num_envs, each actor the same num_envs), global environment i
(actor a's environment j is i = a * num_envs + j) acts epsilon-greedily with

  epsilon_i = base ** (1 + alpha * i / (N - 1)),   base = 0.4, alpha = 7,

so environment 0 (actor 0's first) explores most (0.4) and environment N-1 (the last
actor's last) least (0.4 ** 8 ~= 0.00066); a single environment uses `base`. Each actor
holds a contiguous slice of the ladder, actor 0 the most exploring one.
"""
import numpy as np

BASE = 0.4
ALPHA = 7.0


def environment_epsilons(actor_index, num_actors, num_envs, base=BASE, alpha=ALPHA):
  """The epsilons [num_envs] (float64) of actor `actor_index`'s (0-based) environments
  among `num_actors` actors of `num_envs` environments each."""
  actor_index, num_actors, num_envs = int(actor_index), int(num_actors), int(num_envs)
  if num_actors < 1:
    raise ValueError("num_actors must be >= 1, got %d." % num_actors)
  if num_envs < 1:
    raise ValueError("num_envs must be >= 1, got %d." % num_envs)
  if not 0 <= actor_index < num_actors:
    raise ValueError("actor_index must be in [0, %d), got %d." % (num_actors, actor_index))
  total = num_actors * num_envs
  if total == 1:
    return np.full([1], float(base), np.float64)
  i = actor_index * num_envs + np.arange(num_envs, dtype=np.float64)
  return np.power(float(base), 1.0 + float(alpha) * i / (total - 1))


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
