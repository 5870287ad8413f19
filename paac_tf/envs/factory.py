"""Builds batched environments from a user-facing name (plain Python; entry points wrap it).

- Atari game (`Pong`, `PongNoFrameskip-v4`, `ALE/Pong-v5`) with `atari_backend="vector"`:
  `AtariVectorPyEnvironment`, ale-py's C++ vector env (`num_threads` C++ threads);
- Atari game with `atari_backend="portable"`: gymnasium ALE envs stepped by `num_workers`
  processes (`atari_portable.make_atari_portable_env`), same specs and action set;
- any other gymnasium id (registered, or `"module:EnvId"`): one `GymnasiumPyEnvironment`
  per slot stepped by `num_workers` processes (`ParallelBatchedPyEnvironment`; 0 =
  in-process); workers import the module that registers the env (`names.worker_env_id`).
  Its action space may be Discrete or a bounded float Box (continuous actions; whether an
  algorithm takes them is the algorithm's check), see `gym_adapter`. The Atari options
  (reward clipping, episodic life, FIRE reset, no-ops, frame limit) do not apply there.

All of them follow the project's batched-env contract (see `atari_vector.py`).
"""
import functools

import numpy as np

from paac_tf.envs import names

ATARI_BACKENDS = ("vector", "portable")

# Atari preprocessing fixed by both backends (the papers' protocol).
ATARI_FRAMESKIP = 4
ATARI_FRAME_STACK = 4
ATARI_SCREEN_SIZE = 84
ATARI_REPEAT_ACTION_PROBABILITY = 0.0


def _check_backend(atari_backend):
  if atari_backend not in ATARI_BACKENDS:
    raise ValueError("Unknown atari_backend %r: use one of %s." %
                     (atari_backend, ", ".join(repr(b) for b in ATARI_BACKENDS)))


def specs(env):
  """(observation spec, action spec) of the batched env `make_batched_env` builds for the
  `names.Environment` `env` (any settings: none changes a spec), from one `gymnasium.make`
  per environment and process (its spaces; the env is closed at once, no batched env is
  built). Raises the adapter's one-line `UnsupportedSpaceError` on spaces it cannot take
  (e.g. an unbounded or integer Box, a MultiDiscrete action space)."""
  return _specs(env.game if env.is_atari else env.gymnasium_id)


@functools.lru_cache(maxsize=None)
def _specs(resolved):
  # Lazy, here and below: only the path an environment takes is imported (ale-py's C++
  # vector env, the portable Atari envs, or gymnasium and its worker pool).
  from tf_agents.specs import array_spec  # pylint: disable=import-outside-toplevel
  from paac_tf.envs import gym_adapter  # pylint: disable=import-outside-toplevel
  from paac_tf.envs import worker_pool  # pylint: disable=import-outside-toplevel
  env_id = resolved.gymnasium_id if isinstance(resolved, names.AtariGame) else resolved
  gymnasium = gym_adapter.import_gymnasium_for(env_id)
  env = gymnasium.make(env_id)
  try:
    if isinstance(resolved, names.AtariGame):   # the preprocessed frames both backends give
      shape = (ATARI_SCREEN_SIZE, ATARI_SCREEN_SIZE, ATARI_FRAME_STACK)
      return (array_spec.BoundedArraySpec(shape, np.uint8, 0, 255, name="observation"),
              array_spec.BoundedArraySpec((), np.int64, 0, int(env.action_space.n) - 1,
                                          name="action"))
    return (gym_adapter.observation_spec_from_space(env.observation_space, env_id, True),
            worker_pool.batch_action_spec(
                gym_adapter.action_spec_from_space(env.action_space, env_id)))
  finally:
    env.close()


def make_batched_env(env_name, num_envs, num_workers=0, seed=0, atari_backend="vector",
                     num_threads=0, reward_clipping=True, episodic_life=False, noop_max=30,
                     max_episode_frames=108000, fire_reset=False):
  """Builds the batched PyEnvironment for `env_name` with n_e = `num_envs` environments.

  Args:
    env_name: a `names.Environment`, or an Atari game or a registered gymnasium id (see
      `names.check_env_name`; an unknown name raises `names.UnknownEnvironmentError`
      listing close names).
    num_envs: n_e, the batch size.
    num_workers: n_w worker processes for the portable Atari and gymnasium paths (n_e must
      be divisible by it; 0 = step in the calling process). Unused by the vector backend.
    seed: environment i is seeded with `seed + i` (the vector backend seeds its pool).
    atari_backend: "vector" (fast, C++) or "portable" (gymnasium, processes).
    num_threads: C++ threads of the vector backend (0 = ale-py's default).
    reward_clipping, episodic_life, noop_max, max_episode_frames, fire_reset: Atari only,
      see `atari_vector` (episodic_life: a lost life is LAST with discount 0, for training;
      fire_reset: FIRE at game start and after each lost life, in games that use it).

  Returns:
    A batched TF-Agents PyEnvironment with `num_actions` (discrete actions only: an env
    with continuous actions raises `batched.NoDiscreteActionsError`), `pop_finished_episodes()`
    ((return, length) pairs; `with_env_index=True`: (return, length, env index)), `close()`.
  """
  _check_backend(atari_backend)
  env = names.resolve(env_name)
  resolved = env.resolved
  num_envs, num_workers, seed = int(num_envs), int(num_workers), int(seed)
  if num_envs < 1:
    raise ValueError("num_envs must be >= 1, got %d." % num_envs)
  if isinstance(resolved, names.AtariGame):
    if atari_backend == "vector":
      # Lazy (as in _specs): only the path an environment takes is imported.
      from paac_tf.envs import atari_vector  # pylint: disable=import-outside-toplevel
      return atari_vector.AtariVectorPyEnvironment(
          resolved.rom_id, num_envs, num_threads=int(num_threads), seed=seed,
          reward_clipping=reward_clipping, episodic_life=episodic_life,
          fire_reset=bool(fire_reset), noop_max=noop_max, frameskip=ATARI_FRAMESKIP,
          frame_stack=ATARI_FRAME_STACK,
          repeat_action_probability=ATARI_REPEAT_ACTION_PROBABILITY,
          max_episode_frames=max_episode_frames)
    from paac_tf.envs import atari_portable  # pylint: disable=import-outside-toplevel  (lazy: as above)
    return atari_portable.make_atari_portable_env(
        resolved, num_envs, num_workers, seed=seed, reward_clipping=reward_clipping,
        episodic_life=episodic_life, fire_reset=bool(fire_reset), noop_max=noop_max,
        frameskip=ATARI_FRAMESKIP, frame_stack=ATARI_FRAME_STACK,
        repeat_action_probability=ATARI_REPEAT_ACTION_PROBABILITY,
        max_episode_frames=max_episode_frames)
  # Lazy (as in _specs): only the path an environment takes is imported.
  from paac_tf.envs import gym_adapter  # pylint: disable=import-outside-toplevel
  from paac_tf.envs import worker_pool  # pylint: disable=import-outside-toplevel
  # Fails fast, in this process, on spaces the adapter cannot take (before any worker
  # starts: the adapter's one-line error rather than a worker failure).
  specs(env)
  # Workers start without this process's imports: name the module that registers the env.
  env_id = names.worker_env_id(resolved) if num_workers else resolved
  env_fns = [functools.partial(gym_adapter.GymnasiumPyEnvironment, env_id, seed=seed + i)
             for i in range(num_envs)]
  return worker_pool.ParallelBatchedPyEnvironment(env_fns, num_workers, reward_clipping=False)


def describe_env(env_name, atari_backend="vector", reward_clipping=True, episodic_life=False,
                 noop_max=30, max_episode_frames=108000, fire_reset=False):
  """JSON-serializable metadata of the environment `make_batched_env` would build.

  For exported models and run records: the canonical name and, for Atari, the
  preprocessing a policy's observations went through. Builds no environment.
  """
  _check_backend(atari_backend)
  resolved = names.resolve(env_name).resolved
  if isinstance(resolved, names.AtariGame):
    return {
        "env_name": resolved.name,
        "is_atari": True,
        "rom_id": resolved.rom_id,
        "gymnasium_id": resolved.gymnasium_id,
        "atari_backend": atari_backend,
        "preprocessing": {
            "frameskip": ATARI_FRAMESKIP,
            "max_pool_last_two_frames": True,
            "grayscale": True,
            "screen_size": [ATARI_SCREEN_SIZE, ATARI_SCREEN_SIZE],
            "frame_stack": ATARI_FRAME_STACK,
            "observation_layout": "NHWC",
            "observation_dtype": "uint8",
            "observation_shape": [ATARI_SCREEN_SIZE, ATARI_SCREEN_SIZE, ATARI_FRAME_STACK],
            "noop_max": int(noop_max),
            "repeat_action_probability": ATARI_REPEAT_ACTION_PROBABILITY,
            "full_action_space": False,
            "max_episode_frames": int(max_episode_frames),
            "reward_clipping": bool(reward_clipping),
            "episodic_life": bool(episodic_life),
            "fire_reset": bool(fire_reset),
        },
    }
  return {
      "env_name": resolved,
      "is_atari": False,
      "gymnasium_id": resolved,
      "preprocessing": {
          "float64_observations_cast_to_float32": True,
          "reward_clipping": False,
      },
  }
