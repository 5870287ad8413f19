"""Episodes of the near-greedy policy in Ape-X: batched envs report which environment played
each finished episode, actors report its epsilon, the learner's `ActorReports` keeps the
episodes played at epsilon <= low_epsilon. Real envs and a real Reverb server, no mocks."""
import numpy as np
import pytest
import reverb
from tf_agents.specs import array_spec
from tf_agents.trajectories import time_step as ts

from paac_tf.envs import environment
from paac_tf.envs import episode_stats
from paac_tf.envs.worker_pool import ParallelBatchedPyEnvironment
from paac_tf.runners.apex import actor_reports
from paac_tf.runners.apex import replay
from paac_tf.runners.apex import replay_client
from paac_tf.runners.apex import replay_layout
from test_worker_pool import CONTINUE, TERMINATE, TRUNCATE, scripted_fns

pytestmark = pytest.mark.timeout(120)

LAST = int(ts.StepType.LAST)


# --- batched envs: the index of the environment that played each episode --------------------
def test_episode_stats_records_the_env_index():
  stats = episode_stats.EpisodeStats(3)
  no = np.zeros(3, bool)
  stats.update(np.array([1.0, 2.0, 3.0]), np.ones(3, bool), no)
  stats.update(np.array([10.0, 20.0, 30.0]), np.array([True, False, True]),
               np.array([False, True, True]))        # envs 1 and 2 end (env 1: 1 step)
  stats.update(np.array([4.0, 5.0, 6.0]), np.ones(3, bool), np.array([True, False, False]))
  assert stats.pop_finished(with_env_index=True) == [(2.0, 1, 1), (33.0, 2, 2), (15.0, 3, 0)]
  assert stats.pop_finished(with_env_index=True) == []
  stats.update(np.array([1.0, 1.0, 1.0]), np.ones(3, bool), np.array([False, True, True]))
  assert stats.pop_finished() == [(6.0, 2), (7.0, 2)]   # default: (return, length) pairs


def test_worker_pool_reports_rows_of_the_whole_batch():
  """Scripted envs (action 0 goes on, 1 truncates, 2 terminates; reward 5 * (action + 1))
  in two worker processes of 2 each: each episode's index is its row of the whole batch
  (the second worker's rows are 2 and 3, not its own 0 and 1)."""
  env = ParallelBatchedPyEnvironment(scripted_fns(4), 2)
  try:
    assert env.num_workers == 2
    env.reset()
    t = env.step([CONTINUE, TERMINATE, TRUNCATE, TERMINATE])
    assert t.step_type.tolist() == [1, LAST, LAST, LAST]
    assert env.pop_finished_episodes(with_env_index=True) == [
        (15.0, 1, 1), (10.0, 1, 2), (15.0, 1, 3)]
    # Rows 1, 2, 3 restart (FIRST, their actions ignored); row 0 ends after 2 steps.
    env.step([TERMINATE, CONTINUE, CONTINUE, TRUNCATE])
    assert env.pop_finished_episodes(with_env_index=True) == [(20.0, 2, 0)]
    env.step([CONTINUE, CONTINUE, TERMINATE, CONTINUE])   # row 0: FIRST
    assert env.pop_finished_episodes() == [(15.0, 1)]   # default: (return, length) pairs
    env.step([CONTINUE, TERMINATE, CONTINUE, TERMINATE])   # row 2: FIRST
    assert env.pop_finished_episodes(with_env_index=True) == [(20.0, 2, 1), (20.0, 2, 3)]
  finally:
    env.close()


def test_cartpole_episodes_match_the_rows_that_ended():
  """make_environment's batch (4 CartPoles in 2 worker processes): each episode's index is
  the row whose LAST step ended it, its length that row's steps since its previous
  episode."""
  env = environment.make_environment("CartPole-v1", num_envs=4, num_workers=2, seed=3)
  try:
    env.reset()
    rng = np.random.default_rng(0)
    lengths = np.zeros(4, int)
    expected = []
    for _ in range(120):
      t = env.step(rng.integers(0, 2, 4))
      lengths += t.step_type != int(ts.StepType.FIRST)
      for i in np.flatnonzero(t.step_type == LAST):
        expected.append((float(lengths[i]), int(lengths[i]), int(i)))   # reward 1 a step
        lengths[i] = 0
    finished = env.pop_finished_episodes(with_env_index=True)
    assert {i for *_, i in expected} == {0, 1, 2, 3}
    assert sorted(finished) == sorted(expected)
  finally:
    env.close()


# --- actor reports through Reverb: the window of the near-greedy policy ---------------------
@pytest.fixture(name="client")
def fixture_client():
  """A client of a real Ape-X Reverb server (the stats table as the runs build it)."""
  layout = replay_layout.ReplayLayout(array_spec.ArraySpec((4,), np.float32))
  server = replay.start_server(layout)
  try:
    yield reverb.Client("127.0.0.1:%d" % server.port)
  finally:
    server.stop()


def _report(client, actor_index, epsilon, epsilon_min, episodes, agent_steps=100, items=90):
  """Inserts a report as an actor does: episodes are (return, length, epsilon)."""
  item = actor_reports.report_item(actor_index, epsilon, epsilon_min,
                                   {"agent_steps": agent_steps, "items": items,
                                    "episodes": episodes})
  assert replay_client.insert_one(client, item, replay_layout.STATS_TABLE, timeout_s=10) is None


def test_reports_round_trip_and_the_window_takes_episodes_at_epsilon_up_to_0_01(client):
  reports = actor_reports.ActorReports()
  assert reports.low_epsilon_window() is None and reports.low_epsilon_bound() is None
  _report(client, 0, 0.1, 0.02, [(10.0, 100, 0.4), (20.0, 200, 0.02)])
  _report(client, 1, 0.005, 0.4 ** 8,
          [(30.0, 300, 0.013), (40.0, 400, 0.01), (50.0, 500, 0.4 ** 8)],
          agent_steps=50, items=40)
  _report(client, 0, 0.1, 0.02, [], agent_steps=7, items=6)     # no episode
  assert reports.drain(client) == 3
  assert (reports.agent_steps, reports.items) == (157, 136)
  assert reports.epsilons == {0: pytest.approx(0.1), 1: pytest.approx(0.005)}
  assert reports.lowest_epsilon == pytest.approx(0.4 ** 8)
  assert list(reports.window.returns) == [10.0, 20.0, 30.0, 40.0, 50.0]
  assert list(reports.window.lengths) == [100, 200, 300, 400, 500]
  # 0.01 itself counts (epsilons travel as float32, compared in float32).
  low = reports.low_epsilon_window()
  assert low is reports.low_window
  assert (list(low.returns), list(low.lengths)) == ([40.0, 50.0], [400, 500])
  assert low.average_return == 45.0 and reports.low_epsilon_bound() == 0.01
  assert reports.drain(client) == 0   # each report is read once

  # The window keeps the last 100: returns 0..149 at epsilon 0.001 leave 50..149 (+ none
  # of the earlier two), average (50 + 149) / 2.
  _report(client, 1, 0.005, 0.4 ** 8, [(float(r), 1, 0.001) for r in range(150)])
  _report(client, 0, 0.1, 0.02, [(1000.0, 1, 0.0101)])   # above 0.01: not in the window
  assert reports.drain(client) == 2
  assert len(low.returns) == 100 and low.total == 152
  assert low.average_return == pytest.approx(99.5)
  assert reports.window.total == 156


def test_the_window_falls_back_to_the_lowest_epsilon_when_none_is_that_low(client):
  reports = actor_reports.ActorReports()
  # One environment at 0.4 (N = 1): its episodes.
  _report(client, 0, 0.4, 0.4, [(1.0, 10, 0.4), (3.0, 30, 0.4)])
  reports.drain(client)
  assert reports.low_window.total == 0
  assert list(reports.low_epsilon_window().returns) == [1.0, 3.0]
  assert reports.low_epsilon_bound() == pytest.approx(0.4)
  # An actor whose lowest environment explores with 0.05: only the episodes at 0.05 now.
  _report(client, 1, 0.1, 0.05, [(5.0, 50, 0.05), (7.0, 70, 0.2)])
  _report(client, 0, 0.4, 0.4, [(9.0, 90, 0.4)])
  reports.drain(client)
  assert list(reports.low_epsilon_window().returns) == [5.0]
  assert reports.low_epsilon_bound() == pytest.approx(0.05)
  # An actor with an environment at 0.005 joins: the window is the episodes at <= 0.01,
  # empty until one of them ends.
  _report(client, 2, 0.05, 0.005, [(11.0, 110, 0.05)])
  reports.drain(client)
  assert reports.low_epsilon_window() is reports.low_window
  assert not reports.low_window.returns and reports.low_epsilon_bound() == 0.01
  _report(client, 2, 0.05, 0.005, [(13.0, 130, 0.005)])
  reports.drain(client)
  assert list(reports.low_epsilon_window().returns) == [13.0]


def test_low_epsilon_is_a_constructor_argument(client):
  reports = actor_reports.ActorReports(window=2, low_epsilon=0.1)
  _report(client, 0, 0.2, 0.05, [(1.0, 1, 0.4), (2.0, 2, 0.1), (3.0, 3, 0.05), (4.0, 4, 0.09)])
  reports.drain(client)
  assert list(reports.low_epsilon_window().returns) == [3.0, 4.0]   # window of 2
  assert reports.low_epsilon_window().total == 3
  assert reports.low_epsilon_bound() == 0.1
