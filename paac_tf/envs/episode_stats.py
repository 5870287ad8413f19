"""Per-environment accounting of whole-game returns and lengths for batched envs."""
import numpy as np


def select_episodes(finished, with_env_index):
  """`finished` ((return, length, env index) triples) as the batched envs'
  `pop_finished_episodes(with_env_index)` returns them: the triples, or (return, length)
  pairs."""
  return list(finished) if with_env_index else [(ret, length) for ret, length, _ in finished]


class EpisodeStats:
  """Accumulates raw (unclipped) rewards per environment and records finished episodes,
  with the index (row of the batch) of the environment that played each."""

  def __init__(self, num_envs):
    self._returns = np.zeros(num_envs, np.float64)
    self._lengths = np.zeros(num_envs, np.int64)
    self._finished = []

  def reset(self, mask=None):
    if mask is None:
      self._returns[:] = 0
      self._lengths[:] = 0
    else:
      self._returns[mask] = 0
      self._lengths[mask] = 0

  def update(self, raw_rewards, counted, episode_over):
    """raw_rewards: [n]; counted: [n] bool, steps that are real agent steps;
    episode_over: [n] bool, whole games that ended at this step."""
    self._returns += np.where(counted, raw_rewards, 0.0)
    self._lengths += counted
    if episode_over.any():
      for i in np.flatnonzero(episode_over):
        self._finished.append((float(self._returns[i]), int(self._lengths[i]), int(i)))
      self._returns[episode_over] = 0
      self._lengths[episode_over] = 0

  def pop_finished(self, with_env_index=False):
    """Returns and clears the episodes finished so far, in the order they ended: (return,
    length) pairs, or (return, length, env index) triples if `with_env_index`."""
    finished, self._finished = self._finished, []
    return select_episodes(finished, with_env_index)
