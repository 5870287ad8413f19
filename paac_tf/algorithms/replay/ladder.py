"""Ape-X's exploration ladder (Horgan et al. 2018, section 4.1): every environment of every
actor explores at its own scale, geometric from most to least exploring.

The paper's actors had one environment each; here an actor steps a batch of `num_envs`
environments, and the ladder spans every environment of every actor. With N environments
in all (num_actors x num_envs, each actor the same num_envs), global environment i
(actor a's environment j is i = a * num_envs + j) explores at

  scale_i = base ** (1 + alpha * i / (N - 1)),

so environment 0 (actor 0's first) explores most (`base`) and environment N-1 (the last
actor's last) least (base ** (1 + alpha)); a single environment uses `base`. Each actor
holds a contiguous slice of the ladder, actor 0 the most exploring one. What the scale
means is the algorithm's: Ape-X DQN's epsilon (base 0.4, alpha 7: algorithms/apex/
epsilon.py), Ape-X DPG's noise (algorithms/apex_dpg/).
"""
import numpy as np


def environment_scales(actor_index, num_actors, num_envs, base, alpha):
  """The exploration scales [num_envs] (float64) of actor `actor_index`'s (0-based)
  environments among `num_actors` actors of `num_envs` environments each."""
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
