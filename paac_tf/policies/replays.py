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

An episode cut at the time cap (CartPole-v1's 500 steps, Atari's max_episode_frames) is a
game the policy did not lose, not a copy of one: a policy that keeps CartPole up for 500
steps scores (500, 500) in every episode whatever the starts. The replay test counts the
episodes that ended before the cap only (`capped`, where the evaluation knows it).
"""
import collections

REPLAY_FRACTION = 0.5   # fewer distinct (score, length) pairs than this share of episodes


def distinct_counts(returns, lengths, start_frames=None, capped=None):
  """The distinct scores, distinct (score, length) pairs and the count of the most common
  pair among the episodes; with `start_frames` (per episode, None where unknown), the
  distinct numbers of frames played before the first observation (the no-op starts); with
  `capped` (per episode, whether it ended at the time cap), the number of those and the
  distinct pairs among the others (None where not known)."""
  pairs = collections.Counter(zip((float(r) for r in returns), (int(n) for n in lengths)))
  counts = {"distinct_scores": len({float(r) for r in returns}),
            "distinct_episodes": len(pairs),
            "most_repeated_episode": max(pairs.values()) if pairs else 0}
  known = [int(s) for s in (start_frames or []) if s is not None]
  counts["distinct_start_frames"] = len(set(known)) if known else None
  if capped is not None:
    counts["capped_episodes"] = sum(bool(c) for c in capped)
    counts["distinct_uncapped_episodes"] = len(
        {(float(r), int(n)) for r, n, c in zip(returns, lengths, capped) if not c})
  return counts


def _uncapped(counts, episodes):
  """(episodes, distinct pairs) of the episodes that ended before the time cap: all of them
  where the counts do not say."""
  if counts.get("capped_episodes") is None:
    return episodes, counts["distinct_episodes"]
  return episodes - counts["capped_episodes"], counts["distinct_uncapped_episodes"]


def replays(counts, episodes):
  """Whether the episodes are copies of few games: among those that ended before the time
  cap, fewer distinct (score, length) pairs than REPLAY_FRACTION of them (never for a
  single episode, nor where every one reached the cap)."""
  played, distinct = _uncapped(counts, episodes)
  return played > 1 and distinct < REPLAY_FRACTION * played


def replay_warning(counts, episodes):
  """The warning line for an evaluation whose episodes are copies of few games, or None."""
  if not replays(counts, episodes):
    return None
  played, distinct = _uncapped(counts, episodes)
  if played != episodes:
    return ("only %d distinct (score, length) pairs in the %d of %d episodes that ended "
            "before the time cap: the policy replays the same few games, and the standard "
            "error, which assumes independent games, overstates the precision" % (
                distinct, played, episodes))
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
  capped = summary.get("capped")
  counts = distinct_counts(returns, lengths, summary.get("start_frames"),
                           capped if capped is not None and len(capped) == len(returns) else None)
  counts["replays"] = replays(counts, len(returns))
  return counts
