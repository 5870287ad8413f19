"""Repeated episodes in evaluations: the drawn no-op starts and env seeds of each episode,
and the distinct-episode counts eval.json records beside the mean."""
import json
import os

import numpy as np
import pytest

from paac_tf.envs import atari_vector
from paac_tf.policies import evaluation
from paac_tf.policies import replays

pytestmark = pytest.mark.timeout(300)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _NoopPolicy:

  def actions(self, observations):
    return np.zeros(len(observations), np.int64)


def test_distinct_counts_by_hand():
  counts = replays.distinct_counts([19, 19, 27, 19, 22], [624, 624, 900, 624, 751],
                                   [0, 4, 1, 8, None])
  assert counts == {"distinct_scores": 3, "distinct_episodes": 3, "most_repeated_episode": 3,
                    "distinct_start_frames": 4}
  # The same score in two lengths: two episodes, one score.
  assert replays.distinct_counts([22, 22], [712, 751])["distinct_episodes"] == 2
  assert replays.distinct_counts([1.0], [5])["distinct_start_frames"] is None
  # Fewer distinct (score, length) pairs than half the episodes: a replay.
  assert replays.replays({"distinct_episodes": 2}, 5)
  assert not replays.replays({"distinct_episodes": 3}, 5)
  assert not replays.replays({"distinct_episodes": 1}, 1)
  assert replays.replay_warning({"distinct_episodes": 3, "distinct_scores": 3,
                                 "most_repeated_episode": 3}, 5) is None


def test_episodes_cut_at_the_time_cap_are_no_replays():
  """CartPole-v1: every episode of a policy that keeps the pole up is (500, 500), cut at the
  500-step cap; no replay. Among the episodes that ended before the cap, copies still are."""
  capped = replays.distinct_counts([500.0] * 30, [500] * 30, capped=[True] * 30)
  assert (capped["distinct_episodes"], capped["capped_episodes"],
          capped["distinct_uncapped_episodes"]) == (1, 30, 0)
  assert not replays.replays(capped, 30) and replays.replay_warning(capped, 30) is None
  # The same 30 episodes, the cap not known (an eval.json before `capped`): copies.
  assert replays.replays(replays.distinct_counts([500.0] * 30, [500] * 30), 30)
  # 26 capped, 4 lost games of 2 kinds: 2 distinct of 4 is not under half of them...
  mixed = replays.distinct_counts([500.0] * 26 + [9, 9, 31, 31], [500] * 26 + [9, 9, 31, 31],
                                  capped=[True] * 26 + [False] * 4)
  assert (mixed["capped_episodes"], mixed["distinct_uncapped_episodes"]) == (26, 2)
  assert not replays.replays(mixed, 30)
  # ...1 distinct of 4 is: the warning names the episodes before the cap.
  copies = replays.distinct_counts([500.0] * 26 + [9] * 4, [500] * 26 + [9] * 4,
                                   capped=[True] * 26 + [False] * 4)
  assert replays.replay_warning(copies, 30).startswith(
      "only 1 distinct (score, length) pairs in the 4 of 30 episodes that ended before the "
      "time cap: the policy replays")
  # eval.json's per-episode "capped" list is read back for the tables.
  assert not replays.summary_counts({"returns": [500.0] * 3, "lengths": [500] * 3,
                                     "capped": [True] * 3})["replays"]


def test_the_committed_breakout_apex_evaluation_replays_few_games():
  """results/breakout_apex_small: 30 episodes, 6 distinct scores (19 eleven times)."""
  with open(os.path.join(ROOT, "results", "breakout_apex_small", "eval.json")) as f:
    v1 = json.load(f)
  counts = replays.summary_counts(v1)
  assert (counts["distinct_scores"], counts["distinct_episodes"],
          counts["most_repeated_episode"]) == (6, 7, 11)
  assert counts["replays"] and counts["distinct_start_frames"] is None   # not recorded then
  warning = replays.replay_warning(counts, 30)
  assert warning.startswith("only 7 distinct (score, length) pairs (6 distinct scores) in 30")


def test_no_op_starts_are_drawn_per_game_from_each_envs_seeded_generator():
  """Each env's games start after a number of no-op frames drawn from its own generator
  (0 to noop_max - 1), seeded with its seed: different envs draw different numbers, each
  new game a new draw, the same seeds the same draws; eval's run_episodes records them and
  the env (seed) of each episode."""
  def draws(seed):
    env = atari_vector.AtariVectorPyEnvironment("breakout", 4, num_threads=1, seed=seed,
                                                reward_clipping=False, noop_max=30,
                                                max_episode_frames=40)   # 10-step games
    try:
      env.reset()
      first = env.start_frames
      sources = []
      results = evaluation.run_episodes(_NoopPolicy(), env, 12, 0.0, sources=sources)
      return first, results, sources
    finally:
      env.close()

  first, results, sources = draws(10**9)
  assert len(results) == len(sources) == 12
  assert [slot for slot, _ in sources] == [0, 1, 2, 3] * 3        # round-robin over envs
  starts = [frames for _, frames in sources]
  assert list(first) == starts[:4]                                # the reset's draws
  assert all(0 <= s <= 29 for s in starts)
  assert len(set(starts[:4])) > 1                                 # envs draw apart
  assert starts[:4] != starts[4:8]                                # each game a new draw
  assert all(length == 10 for _, length in results)               # 40 frames after no-ops
  again, _, sources_again = draws(10**9)
  assert list(again) == list(first) and sources_again == sources  # seeded: reproducible
  other, _, _ = draws(10**9 + 4)
  assert list(other) != list(first)
