"""Aggregate scores over runs and games with their 95% stratified-bootstrap intervals (rliable).

Thin wrappers over the rliable library (Agarwal et al. 2021, "Deep RL at the edge of the
statistical precipice"): nothing here computes an estimate or an interval by hand.

  scores = np.array([[0.1, 0.9], [0.3, 0.5]])     # runs x games, human-normalized
  aggregates.interval_estimates(scores)           # {"iqm": Estimate, "median": Estimate}
  aggregates.probability_of_improvement(x, y)     # Estimate of P(X > Y)

- IQM: the interquartile mean of all run x game scores (rliable.metrics.aggregate_iqm);
  median: the median over games of each game's mean over runs (aggregate_median).
- The intervals are rliable's stratified bootstrap (rly.get_interval_estimates): runs are
  resampled within each game. With one run per game there is nothing to resample, so the
  interval is the point; `task_bootstrap=True` resamples the games as well (rliable's
  option), an interval for 'another draw of games'.
- P(X > Y): rliable.metrics.probability_of_improvement (per game the Mann-Whitney U
  statistic over the runs of X and Y divided by their product, averaged over games), its
  interval from the stratified bootstrap of both sets of runs independently; X and Y may
  have different numbers of runs, but the same games in the same order.
The bootstrap's seed is fixed (SEED), so that a table regenerates to the same digits (see
_estimates: rliable 1.2.0 draws from numpy's global generator, seeded here for the call).
"""
import dataclasses
import warnings

import numpy as np
from absl import logging

SEED = 0
REPS = 10000          # bootstrap replications of the IQM and median intervals
POI_REPS = 2000       # of P(X > Y) (a Mann-Whitney U per replication: slower; rliable's own)
CONFIDENCE = 0.95


@dataclasses.dataclass(frozen=True)
class Estimate:
  """A point estimate and its confidence interval [low, high]."""
  point: float
  low: float
  high: float

  def text(self, fmt="%.3f"):
    return (fmt + " (95%% CI " + fmt + " to " + fmt + ")") % (self.point, self.low, self.high)


def _rliable():
  # Lazy: rliable (the [plot] extra; with arch and pandas, seconds to import) loads only for the
  # bootstrap intervals.
  from rliable import library as rly  # pylint: disable=import-outside-toplevel
  from rliable import metrics  # pylint: disable=import-outside-toplevel
  return rly, metrics


def _matrix(scores):
  """`scores` as a float matrix runs x games; ValueError if it is not one (or is empty)."""
  matrix = np.asarray(scores, dtype=float)
  if matrix.ndim != 2 or matrix.size == 0:
    raise ValueError("scores must be a non-empty matrix runs x games, got shape %s"
                     % (matrix.shape,))
  if not np.all(np.isfinite(matrix)):
    raise ValueError("scores must be finite numbers (a missing score has no place in the "
                     "matrix: leave the run or the game out)")
  return matrix


def _estimates(score_dict, func, reps, seed, task_bootstrap=False):
  """rly.get_interval_estimates, seeded and quiet. rliable 1.2.0 hands `random_state` to
  arch but draws its resampled indices from numpy's global generator (np.random.choice in
  StratifiedBootstrap.update_indices): that generator is seeded for the call and put back
  as it was after it. Quiet: rliable's INFO lines and arch's FutureWarning (the way rliable
  hands it the RandomState is deprecated in arch 7)."""
  rly, _ = _rliable()
  verbosity = logging.get_verbosity()
  logging.set_verbosity(logging.WARNING)
  state = np.random.get_state()
  np.random.seed(seed)
  try:
    with warnings.catch_warnings():
      warnings.simplefilter("ignore", FutureWarning)
      return rly.get_interval_estimates(
          score_dict, func, reps=reps, confidence_interval_size=CONFIDENCE,
          task_bootstrap=task_bootstrap, random_state=np.random.RandomState(seed))
  finally:
    np.random.set_state(state)
    logging.set_verbosity(verbosity)


def interval_estimates(scores, reps=REPS, seed=SEED, task_bootstrap=False):
  """{"iqm": Estimate, "median": Estimate} of a runs x games matrix of scores."""
  _, metrics = _rliable()
  matrix = _matrix(scores)

  def aggregate(x):
    return np.array([metrics.aggregate_iqm(x), metrics.aggregate_median(x)])
  points, intervals = _estimates({"scores": matrix}, aggregate, reps, seed, task_bootstrap)
  point, interval = points["scores"], intervals["scores"]
  return {name: Estimate(float(point[i]), float(interval[0][i]), float(interval[1][i]))
          for i, name in enumerate(("iqm", "median"))}


def probability_of_improvement(scores_x, scores_y, reps=POI_REPS, seed=SEED):
  """Estimate of P(X > Y) from runs x games matrices of X and of Y (same games)."""
  _, metrics = _rliable()
  x, y = _matrix(scores_x), _matrix(scores_y)
  if x.shape[1] != y.shape[1]:
    raise ValueError("X and Y must have the same games: %d and %d columns"
                     % (x.shape[1], y.shape[1]))
  points, intervals = _estimates({"x,y": [x, y]}, metrics.probability_of_improvement, reps,
                                 seed)
  interval = np.asarray(intervals["x,y"]).reshape(-1)
  return Estimate(float(points["x,y"]), float(interval[0]), float(interval[1]))


def score_matrix(columns):
  """(matrix, pooled) from per-game lists of run scores, every run counted: where every game
  has the same number n of runs, the n x games matrix of them (rliable's runs: pooled False);
  otherwise the 1 x games matrix of each game's mean over its runs (pooled True), so that no
  run is dropped and a game's score in the aggregate is the one its table shows.
  ([] or a game without runs: (None, False).)"""
  columns = [[float(v) for v in c] for c in columns]
  if not columns or not all(columns):
    return None, False
  if len({len(c) for c in columns}) == 1:
    return np.array(columns, dtype=float).T, False
  return np.array([[float(np.mean(c)) for c in columns]]), True


def runs_text(names_by_game, pooled):
  """'Breakout: a, b (their mean); Pong: c' — exactly which runs an aggregate holds."""
  return "; ".join("%s: %s%s" % (game, ", ".join(names),
                                 " (their mean)" if pooled and len(names) > 1 else "")
                   for game, names in names_by_game)
