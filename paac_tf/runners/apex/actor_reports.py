"""Actors' progress reports: agent steps and finished episodes since an actor's previous
report, one item of the actor-stats table each (actors insert, the learner drains)."""
import numpy as np
import tree

from paac_tf.runners.apex import replay_layout
from paac_tf.runtime import summaries

_TEMPLATE = {"actor_index": None, "env_steps": None, "epsilon": None,
             "episode_lengths": None, "episode_returns": None, "items": None}


class ActorReports:
  """Agent steps and finished episodes reported by the actors (drained from Reverb)."""

  def __init__(self, window=100):
    self.env_steps = 0
    self.items = 0
    self.window = summaries.EpisodeWindow(window)
    self.per_actor = {}        # actor index -> EpisodeWindow
    self.epsilons = {}         # actor index -> its reported (median) epsilon
    self._window_size = window

  def drain(self, client, info=None, calls=None, timeout_s=30):
    """Reads every pending report; returns how many there were. `info`: the server's
    table infos if just read; `calls`: a call_thread.CallThread to sample on (then a lost
    server raises replay_client.ReplayUnavailableError after `timeout_s`)."""
    if info is None:
      info = client.server_info(timeout=int(timeout_s))
    size = info[replay_layout.STATS_TABLE].current_size
    if size == 0:
      return 0
    sample_all = lambda: list(client.sample(replay_layout.STATS_TABLE, size,
                                            emit_timesteps=False))
    samples = sample_all() if calls is None else calls.call(sample_all, timeout_s,
                                                           "Draining actor reports")
    for sample in samples:
      report = tree.unflatten_as(_TEMPLATE, [np.asarray(x)[0] for x in sample.data])
      index = int(report["actor_index"])
      self.env_steps += int(report["env_steps"])
      self.items += int(report["items"])
      self.epsilons[index] = float(report["epsilon"])
      episodes = list(zip(report["episode_returns"].tolist(),
                          report["episode_lengths"].tolist()))
      self.window.add(episodes)
      self.per_actor.setdefault(index, summaries.EpisodeWindow(self._window_size)).add(episodes)
    return size

  def lowest_epsilon_window(self):
    """Episodes of the actor that explores least (~ the greedy policy), or None.

    That is the actor with the lowest reported epsilon (the median of its environments'):
    the last one, holding the bottom slice of the ladder (down to 0.4 ** 8). Its window
    mixes the episodes of all its environments (episodes carry no environment index); with
    one actor, that is the whole ladder.
    """
    if not self.epsilons:
      return None
    index = min(self.epsilons, key=lambda i: (self.epsilons[i], -i))
    return self.per_actor.get(index)


def report_item(actor_index, epsilon, report):
  """The stats-table item of an actor's `report`: {env_steps, items, episodes: [(return,
  length)]} since its previous report. `epsilon`: one value for the actor, the median of
  its environments' epsilons (it orders the actors by how much they explore)."""
  returns = np.asarray([ret for ret, _ in report["episodes"]], np.float32)
  lengths = np.asarray([length for _, length in report["episodes"]], np.int64)
  return {"actor_index": np.int32(actor_index), "env_steps": np.int64(report["env_steps"]),
          "epsilon": np.float32(epsilon), "episode_lengths": lengths,
          "episode_returns": returns, "items": np.int64(report["items"])}
