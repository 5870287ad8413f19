"""Several seeds of one config as one row or one curve: their spread and their mean curve.

  spread([1.0, 2.0, 4.0])          # Spread(n=3, mean=2.33, std=1.53 (sample), low=1, high=4)
  frames, mean, low, high = mean_band(curves)     # ablation.Curve objects, one per seed
  draw(ax, curves, label, color)   # the mean with a min-max band; one seed: its curve

The std is the sample std (ddof 1) over seeds; the band is the min and max over seeds at
each point of a common grid of frames (each seed's curve linearly interpolated), from the
latest first point to the earliest last point of the seeds' curves.
"""
import dataclasses
import statistics

import numpy as np

GRID_POINTS = 400


@dataclasses.dataclass(frozen=True)
class Spread:
  """Mean, sample std (None for one value), min and max of n values."""
  n: int
  mean: float
  std: float
  low: float
  high: float

  def text(self, fmt="%.1f"):
    """'mean ± std (min to max)', or the value alone for one."""
    if self.n == 1:
      return fmt % self.mean
    return ("%s ± %s (%s to %s)" % (fmt, fmt, fmt, fmt)) % (self.mean, self.std, self.low,
                                                            self.high)


def spread(values):
  """Spread of a non-empty list of numbers, or None for an empty one."""
  values = [float(v) for v in values]
  if not values:
    return None
  return Spread(n=len(values), mean=statistics.fmean(values),
                std=statistics.stdev(values) if len(values) > 1 else None,
                low=min(values), high=max(values))


def mean_band(curves, points=GRID_POINTS):
  """(frames, mean, low, high) arrays of the curves' returns on a common grid of frames."""
  start = max(c.frames[0] for c in curves)
  end = min(c.frames[-1] for c in curves)
  grid = np.linspace(start, end, points) if end > start else np.array([start])
  values = np.array([np.interp(grid, c.frames, c.returns) for c in curves])
  return grid, values.mean(axis=0), values.min(axis=0), values.max(axis=0)


def draw(ax, curves, label, color, x="frames", linewidth=1.4):
  """Draws one config's seeds on `ax`: against frames (millions) the mean with a min-max
  band (one seed: its curve); against training wall minutes (`x="wall"`) each seed's curve,
  thin, in one colour (their wall times differ: no mean)."""
  if x == "wall":
    for i, c in enumerate(curves):
      ax.plot([w / 60.0 for w in c.wall_s], c.returns, color=color,
              linewidth=linewidth if len(curves) == 1 else 0.9,
              label=label if i == 0 else None)
    return
  if len(curves) == 1:
    c = curves[0]
    ax.plot([f / 1e6 for f in c.frames], c.returns, color=color, linewidth=linewidth,
            label=label)
    return
  frames, mean, low, high = mean_band(curves)
  ax.plot(frames / 1e6, mean, color=color, linewidth=linewidth, label=label)
  ax.fill_between(frames / 1e6, low, high, color=color, alpha=0.2, linewidth=0)
