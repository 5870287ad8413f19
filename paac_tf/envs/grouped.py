"""Several batched envs presented as one, with their groups exposed for pipelining.

PAAC's training loop can keep the groups in flight at different times: while one group's
environments step (C++ threads or worker processes), the learner picks the actions of
another group. As one batched PyEnvironment (the project's contract, see atari_vector.py)
the groups are simply concatenated along the batch axis.
"""
import numpy as np
from tf_agents.environments import py_environment
from tf_agents.trajectories import time_step as ts

from paac_tf.envs import episode_stats


def _concat(steps):
  return ts.TimeStep(*[np.concatenate(parts, axis=0) for parts in zip(*steps)])


class GroupedBatchedPyEnvironment(py_environment.PyEnvironment):
  """Concatenation of batched envs with identical specs."""

  def __init__(self, groups):
    super().__init__(handle_auto_reset=False)
    if not groups:
      raise ValueError("GroupedBatchedPyEnvironment needs at least one group.")
    self._groups = list(groups)
    first = self._groups[0]
    for g in self._groups[1:]:
      if (g.observation_spec() != first.observation_spec() or
          g.action_spec() != first.action_spec()):
        raise ValueError("All groups must have the same specs.")
    self._sizes = [g.batch_size for g in self._groups]
    self._splits = np.cumsum(self._sizes)[:-1]
    self._offsets = [0, *self._splits.tolist()]   # each group's first row in the batch

  @property
  def groups(self):
    return self._groups

  @property
  def batched(self):
    return True

  @property
  def batch_size(self):
    return int(sum(self._sizes))

  def observation_spec(self):
    return self._groups[0].observation_spec()

  def action_spec(self):
    return self._groups[0].action_spec()

  def reward_spec(self):
    return self._groups[0].reward_spec()

  @property
  def num_actions(self):
    """The groups' number of discrete actions (continuous actions: the groups' error)."""
    return self._groups[0].num_actions

  def _reset(self):
    return _concat([g.reset() for g in self._groups])

  def _step(self, action):
    self.send(action)
    return self.recv()

  def send(self, action):
    """Splits the batch's actions ([n_e] ints or [n_e, *shape] floats) along the batch axis,
    one part per group; each group checks its part's shape."""
    for g, part in zip(self._groups, np.split(np.asarray(action), self._splits)):
      g.send(part)

  def recv(self):
    self._current_time_step = _concat([g.recv() for g in self._groups])
    return self._current_time_step

  def pop_finished_episodes(self, with_env_index=False):
    """The groups' finished episodes, group after group: (return, length) pairs, or with
    `with_env_index` (return, length, env index) triples, the index a row of the whole
    batch (a group's index plus the rows of the groups before it)."""
    finished = [(ret, length, int(offset) + index)
                for g, offset in zip(self._groups, self._offsets)
                for ret, length, index in g.pop_finished_episodes(with_env_index=True)]
    return episode_stats.select_episodes(finished, with_env_index)

  def close(self):
    for g in self._groups:
      g.close()
