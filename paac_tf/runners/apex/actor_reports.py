"""Actors' progress reports: agent steps and finished episodes since an actor's previous
report, one item of the actor-stats table each (actors insert, the learner drains).

Each episode carries the epsilon of the environment that played it (Ape-X's ladder gives
every environment its own, `algorithms/apex/epsilon.py`), so the learner can follow the
near-greedy policy: `ActorReports.low_epsilon_window` holds the last episodes played at
epsilon <= `low_epsilon` (default 0.01, the final training epsilon of the 2015 DQN and of
Dopamine's), or, in a run whose ladder reaches no such epsilon (no reporting actor has an
environment that low), those played at the lowest epsilon of any environment. Reports
also carry the actor's lowest environment epsilon, for that choice.
"""
import numpy as np
import tree

from paac_tf.runners.apex import replay_layout
from paac_tf.bookkeeping import summaries

# The default `low_epsilon`: the final training epsilon of the 2015 DQN and of Dopamine's.
DEFAULT_LOW_EPSILON = 0.01

_TEMPLATE = {"actor_index": None, "agent_steps": None, "epsilon": None, "epsilon_min": None,
             "episode_epsilons": None, "episode_lengths": None, "episode_returns": None,
             "items": None}


class ActorReports:
  """Agent steps and finished episodes reported by the actors (drained from Reverb).

  Attributes:
    agent_steps, items: agent steps and replay items reported so far.
    window: the last `window` episodes of all environments.
    low_window: the last `window` episodes played at epsilon <= `low_epsilon`.
    lowest_epsilon: the lowest epsilon of any environment of the reporting actors (None
      before the first report).
    epsilons: actor index -> its reported epsilon (the median of its environments').
  """

  def __init__(self, window=100, low_epsilon=DEFAULT_LOW_EPSILON):
    self.agent_steps = 0
    self.items = 0
    self.window = summaries.EpisodeWindow(window)
    self.low_epsilon = float(low_epsilon)
    self.low_window = summaries.EpisodeWindow(window)
    self.lowest_epsilon = None
    self.epsilons = {}
    self._window_size = window
    # Epsilons travel as float32: compare them with the bound in the same precision.
    self._bound = float(np.float32(low_epsilon))
    self._lowest_window = summaries.EpisodeWindow(window)  # the episodes at lowest_epsilon

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
      self.agent_steps += int(report["agent_steps"])
      self.items += int(report["items"])
      self.epsilons[int(report["actor_index"])] = float(report["epsilon"])
      epsilon_min = float(report["epsilon_min"])
      if self.lowest_epsilon is None or epsilon_min < self.lowest_epsilon:
        self.lowest_epsilon = epsilon_min
        self._lowest_window = summaries.EpisodeWindow(self._window_size)
      returns = report["episode_returns"].tolist()
      lengths = report["episode_lengths"].tolist()
      self.window.add(zip(returns, lengths))
      for ret, length, epsilon in zip(returns, lengths, report["episode_epsilons"].tolist()):
        self._add_to_low(ret, length, epsilon)
    return size

  def _add_to_low(self, ret, length, epsilon):
    if epsilon <= self._bound:
      self.low_window.add([(ret, length)])
    if epsilon <= self.lowest_epsilon:
      self._lowest_window.add([(ret, length)])

  def _falls_back(self):
    return self.lowest_epsilon is not None and self.lowest_epsilon > self._bound

  def low_epsilon_window(self):
    """The last episodes of the near-greedy policy (None before the first report).

    That is `low_window`, the episodes played at epsilon <= `low_epsilon`, from any actor
    and environment; in a run where no environment explores that little (a ladder that
    stops above `low_epsilon`, e.g. one environment at 0.4), the episodes played at the
    lowest epsilon of any environment (`lowest_epsilon`).
    """
    if self.lowest_epsilon is None:
      return None
    return self._lowest_window if self._falls_back() else self.low_window

  def low_epsilon_bound(self):
    """The epsilon up to which `low_epsilon_window` takes episodes (None before the first
    report)."""
    if self.lowest_epsilon is None:
      return None
    return self.lowest_epsilon if self._falls_back() else self.low_epsilon


def report_item(actor_index, epsilon, epsilon_min, report):
  """The stats-table item of an actor's `report`: {agent_steps, items, episodes: [(return,
  length, epsilon of the environment that played it)]} since its previous report.
  `epsilon`: one value for the actor, the median of its environments' epsilons (it orders
  the actors by how much they explore); `epsilon_min`: the lowest of its environments'."""
  episodes = report["episodes"]
  return {"actor_index": np.int32(actor_index), "agent_steps": np.int64(report["agent_steps"]),
          "epsilon": np.float32(epsilon), "epsilon_min": np.float32(epsilon_min),
          "episode_epsilons": np.asarray([e[2] for e in episodes], np.float32),
          "episode_lengths": np.asarray([e[1] for e in episodes], np.int64),
          "episode_returns": np.asarray([e[0] for e in episodes], np.float32),
          "items": np.int64(report["items"])}
