"""The gin-configurable way for training jobs to build their batched environment, and an
environment's specs."""
import os

import numpy as np

from paac_tf.envs import batched
from paac_tf.envs import factory
from paac_tf.envs import names
from paac_tf.bookkeeping import checks
from paac_tf.bookkeeping import config


config.removed(("make_environment",), "num_groups", "all n_e environments step as one batch")


@checks.configurable(module="paac_tf.envs",
                     denylist=["env_name", "num_envs", "num_workers", "seed"])
def make_environment(env_name, num_envs, num_workers, seed,
                     atari_backend: checks.one_of(factory.ATARI_BACKENDS) = "vector",
                     num_threads: checks.OptionalCount = None,
                     reward_clipping: checks.Bool = True, episodic_life: checks.Bool = False,
                     noop_max: checks.NonNegativeInt = 30,
                     max_episode_frames: checks.Count = 108000, fire_reset: checks.Bool = False):
  """Builds the batched env of n_e = `num_envs` environments of `env_name` (a
  `names.Environment`, resolved once by the caller; a name is resolved here).

  For the Atari vector backend, `num_threads` defaults to min(num_workers, CPU cores): its
  C++ pool plays the role of PAAC's workers. Environment i is seeded with seed + i.

  Atari options (see `atari_vector`): `episodic_life` makes a lost life a LAST step with
  discount 0 (training only: evaluation plays whole games); `fire_reset` presses FIRE at
  game start and after each lost life in games whose action 1 is FIRE (off: the env never
  presses FIRE, as the original PAAC code). A policy trained with `fire_reset` should be
  evaluated with it.

  Args:
    atari_backend: how Atari games step: 'vector' (ale-py's C++ vector env, the fast path)
      or 'portable' (gymnasium's ALE envs and wrappers in the worker processes); see
      docs/extending.md#environments.
    num_threads: the Atari vector env's C++ threads (None: min(num_workers, CPU cores)).
    reward_clipping: Atari rewards clipped to [-1, 1] for learning (the episodes' scores
      stay raw).
    episodic_life: a lost Atari life ends the episode for training (a LAST step with
      discount 0).
    noop_max: random starts: up to this many no-op actions at each Atari episode's start.
    max_episode_frames: an Atari episode is cut after this many frames (108,000: 30 minutes
      of play).
    fire_reset: press FIRE at an Atari game's start and after each lost life, in games
      whose action 1 is FIRE.
  """
  num_envs, num_workers = int(num_envs), int(num_workers)
  if num_threads is None:
    num_threads = max(1, min(num_workers or 1, os.cpu_count() or 1))
  return factory.make_batched_env(
      env_name, num_envs, num_workers=num_workers, seed=int(seed), atari_backend=atari_backend,
      num_threads=num_threads, reward_clipping=reward_clipping, episodic_life=episodic_life,
      noop_max=noop_max, max_episode_frames=max_episode_frames, fire_reset=fire_reset)


def specs(env):
  """(observation spec, action spec) of `env` (a `names.Environment` or a name) as
  `make_environment` builds it (its settings change no spec): from the spaces of one
  gymnasium env per environment and process (`factory.specs`), no batched env built."""
  return factory.specs(names.resolve(env))


def describe_actions(action_spec):
  """"6 discrete actions" or "continuous (Box) actions of shape (1,) in [-2, 2]": for messages."""
  if batched.is_discrete_spec(action_spec):
    return "%d discrete actions" % batched.num_actions(action_spec)
  low, high = np.asarray(action_spec.minimum), np.asarray(action_spec.maximum)
  bounds = ("[%g, %g]" % (low.min(), high.max()) if low.size and np.all(low == low.flat[0])
            and np.all(high == high.flat[0]) else "bounds %s..%s" % (low.tolist(), high.tolist()))
  return "continuous (Box) actions of shape %s in %s" % (tuple(action_spec.shape), bounds)
