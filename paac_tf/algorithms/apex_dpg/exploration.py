"""Ape-X DPG's exploration: the deterministic actor's actions plus Gaussian noise, each
environment with its own noise scale on the Ape-X ladder (algorithms/replay/ladder.py),

  scale_i = base ** (1 + alpha * i / (N - 1))   over the N environments of all actors,
  a       = clip(mu(s) + scale_i * (high - low) / 2 * n,  low, high),   n ~ N(0, I).

The scale is the noise's standard deviation as a fraction of half the action range:
scale 1 puts one standard deviation from the middle of the range at either bound, so the
noise spans the whole range; scale 0 acts greedily (mu(s), clipped to the bounds).
"""
import numpy as np

from paac_tf.algorithms.replay import ladder


def environment_noise_scales(actor_index, num_actors, num_envs, base, alpha):
  """The noise scales [num_envs] (float64) of actor `actor_index`'s (0-based) environments
  among `num_actors` actors of `num_envs` environments each: the machinery's ladder
  (algorithms/replay/ladder.py), environment 0 of actor 0 exploring most (`base`). Each is the
  Gaussian noise's std as a fraction of half the action range."""
  return ladder.environment_scales(actor_index, num_actors, num_envs, base, alpha)


def noisy_actions(mean_actions, noise_scales, low, high, rng):
  """clip(mean + scale[:, None] * (high - low) / 2 * N(0, 1), low, high), float32 [B, A].

  mean_actions [B, A] (or [B, *action_shape]): the deterministic actor's; noise_scales [B]:
  one per environment row; low, high: broadcastable to the action shape; rng: a
  `np.random.Generator` (one `standard_normal` draw of the actions' shape, every row, so
  the stream does not depend on the scales). Rows of scale 0 return their mean, clipped.
  """
  mean_actions = np.asarray(mean_actions, np.float32)
  low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
  scales = np.asarray(noise_scales, np.float64).reshape(
      (mean_actions.shape[0],) + (1,) * (mean_actions.ndim - 1))
  noise = rng.standard_normal(mean_actions.shape)
  # float64 until the end: a row of scale 0 adds exactly 0 to its float32 mean.
  actions = mean_actions.astype(np.float64) + scales * ((high - low) / 2.0) * noise
  return np.clip(actions, low, high).astype(np.float32)
