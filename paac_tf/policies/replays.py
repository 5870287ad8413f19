"""Repeated episodes in an evaluation: how many of its episodes are copies of others.

A deterministic policy (Ape-X's argmax, a greedy PAAC export) in a deterministic emulator
(no sticky actions) replays the same game from the same start. The no-op starts are meant
to vary the start, but in some games they barely do: in Breakout the game waits for FIRE,
and a policy that acts every 4 frames meets the same game whatever the no-ops, up to their
number modulo 4 (measured: the Ape-X policy of results/breakout_apex_small, epsilon 0, on
64 environments with 27 different no-op counts played 4 different games, one per count
modulo 4). Its 30 episodes then sample a handful of games, and their standard error, which
assumes 30 independent games, overstates the precision of the score as a measure of the
policy. eval.json records the counts below beside the mean, and says so (`replays`,
`replay_warning`) where the episodes are few distinct games.
"""
import collections

REPLAY_FRACTION = 0.5   # fewer distinct (score, length) pairs than this share of episodes


def distinct_counts(returns, lengths, start_frames=None):
  """The distinct scores, distinct (score, length) pairs and the count of the most common
  pair among the episodes; with `start_frames` (per episode, None where unknown), the
  distinct numbers of frames played before the first observation (the no-op starts)."""
  pairs = collections.Counter(zip((float(r) for r in returns), (int(n) for n in lengths)))
  counts = {"distinct_scores": len({float(r) for r in returns}),
            "distinct_episodes": len(pairs),
            "most_repeated_episode": max(pairs.values()) if pairs else 0}
  known = [int(s) for s in (start_frames or []) if s is not None]
  counts["distinct_start_frames"] = len(set(known)) if known else None
  return counts


def replays(counts, episodes):
  """Whether the episodes are copies of few games: fewer distinct (score, length) pairs
  than REPLAY_FRACTION of the episodes (never for a single episode)."""
  return episodes > 1 and counts["distinct_episodes"] < REPLAY_FRACTION * episodes


def replay_warning(counts, episodes):
  """The warning line for an evaluation whose episodes are copies of few games, or None."""
  if not replays(counts, episodes):
    return None
  return ("only %d distinct (score, length) pairs (%d distinct scores) in %d episodes, the "
          "most common %d times: the policy replays the same few games, and the standard "
          "error, which assumes independent games, overstates the precision" % (
              counts["distinct_episodes"], counts["distinct_scores"], episodes,
              counts["most_repeated_episode"]))


def summary_counts(summary):
  """distinct_counts and `replays` of an eval.json dict, also one written before eval.json
  recorded them (from its returns and lengths): for the results tables."""
  returns, lengths = summary.get("returns") or [], summary.get("lengths") or []
  if len(returns) != len(lengths):
    lengths = [0] * len(returns)    # lengths unknown: count scores alone
  counts = distinct_counts(returns, lengths, summary.get("start_frames"))
  counts["replays"] = replays(counts, len(returns))
  return counts
