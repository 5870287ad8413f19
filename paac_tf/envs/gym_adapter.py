"""One gymnasium environment as a non-batched TF-Agents PyEnvironment.

Supported: any gymnasium env with a `Discrete` or a bounded float `Box` action space and a
`Box` or `Discrete` observation space. Anything else raises `UnsupportedSpaceError` with a
one-line message naming the env and the space: a `Box` action space with an infinite or NaN
bound, a non-float dtype or no element, and `MultiDiscrete`, `MultiBinary`, `Dict`,
`Tuple`, ... action or observation spaces.

Semantics (TF-Agents conventions, with `auto_reset=True`):
- `reset()` returns FIRST (reward 0, discount 1); on the very first reset the gymnasium
  env is reset with `seed=seed`, later resets continue its random stream;
- `step()` returns MID while the episode goes on, and LAST when it ends, carrying the
  true final observation: discount 0.0 if the env reported `terminated`, 1.0 if it
  reported only `truncated` (time limit: learners should bootstrap);
- the step after a LAST resets the env, returns its FIRST and ignores the action.

Specs are derived from the spaces:
- `Box` observation -> `BoundedArraySpec` with the space's shape, dtype and bounds
  (infinite bounds become the dtype's extremes, as TF-Agents does); a float64 `Box`
  is cast to float32 unless `cast_float64=False` (TensorFlow models want float32);
- `Discrete(n, start)` observation -> int64 scalar spec with bounds [start, start+n-1];
- `Discrete(n, start)` action -> int64 scalar `BoundedArraySpec` [0, n-1] named
  "action": agents always see 0-based actions, `start` is added before stepping;
  `num_actions` is n;
- float `Box` action -> float32 `BoundedArraySpec` named "action" with the space's shape and
  bounds (scalars when all equal). A step passes the action to the env as an array of the
  space's own dtype and shape, CLIPPED to [low, high] (an action of another shape is a
  ValueError); such an env has no `num_actions` (`batched.NoDiscreteActionsError`, an
  AttributeError and a ValueError).
"""
import gymnasium
from gymnasium import spaces
import numpy as np
from tf_agents.environments import py_environment
from tf_agents.specs import array_spec
from tf_agents.trajectories import time_step as ts

from paac_tf import errors
from paac_tf.envs import batched



def _constant(value, dtype):
  """A read-only 0-d array: shared by all time steps, so it must not be mutated."""
  array = np.array(value, dtype)
  array.setflags(write=False)
  return array


FIRST, MID, LAST = batched.FIRST, batched.MID, batched.LAST
_ZERO = _constant(0.0, np.float32)
_ONE = _constant(1.0, np.float32)


class UnsupportedSpaceError(errors.UserError, ValueError):
  """A gymnasium env has an observation or action space this adapter cannot represent."""


def import_gymnasium_for(env_id):
  """gymnasium, with ale-py's envs registered first when `env_id` is an `ALE/...` id."""
  if isinstance(env_id, str) and env_id.startswith("ALE/"):
    # Lazy: ale-py (its ROMs and envs) only for the ALE ids.
    import ale_py  # pylint: disable=import-outside-toplevel
    gymnasium.register_envs(ale_py)
  return gymnasium


def env_id_of(env):
  """A readable identifier for a gymnasium env instance (its registered id if any)."""
  spec = getattr(env, "spec", None)
  if spec is not None and getattr(spec, "id", None):
    return spec.id
  return type(getattr(env, "unwrapped", env)).__name__


def observation_spec_from_space(space, env_id="<env>", cast_float64=True):
  """`BoundedArraySpec` named "observation" for a Box or Discrete observation space."""
  if isinstance(space, spaces.Box):
    dtype = np.dtype(space.dtype)
    low, high = np.asarray(space.low), np.asarray(space.high)
    if dtype == np.float64 and cast_float64:
      dtype = np.dtype(np.float32)
      info = np.finfo(np.float32)
      low = np.clip(low, info.min, info.max)   # +-inf stay +-inf; huge finite bounds clip
      high = np.clip(high, info.min, info.max)
    return array_spec.BoundedArraySpec(space.shape, dtype, _compact(low), _compact(high),
                                       name="observation")
  if isinstance(space, spaces.Discrete):
    start = int(space.start)
    return array_spec.BoundedArraySpec((), np.int64, start, start + int(space.n) - 1,
                                       name="observation")
  raise UnsupportedSpaceError(
      "Unsupported observation space %s of environment %r: only Box and Discrete "
      "observation spaces are supported." % (_one_line(space), env_id))


def action_spec_from_space(space, env_id="<env>"):
  """The `BoundedArraySpec` named "action" of a Discrete or a bounded float Box action space.

  Discrete: a 0-based int64 scalar [0, n-1]. Box: float32 with the space's shape and bounds.
  Any other space, and a Box that is unbounded, not float or empty, raises
  `UnsupportedSpaceError` (one line, naming `env_id` and the space).
  """
  if isinstance(space, spaces.Discrete):
    return array_spec.BoundedArraySpec((), np.int64, 0, int(space.n) - 1, name="action")
  if isinstance(space, spaces.Box):
    low, high = _box_action_bounds(space, env_id)
    return array_spec.BoundedArraySpec(space.shape, np.float32, _compact(low), _compact(high),
                                       name="action")
  raise UnsupportedSpaceError(
      "Unsupported action space %s (%s) of environment %r: only Discrete and bounded float "
      "Box action spaces are supported." % (_one_line(space), type(space).__name__, env_id))


def _box_action_bounds(space, env_id):
  """The float32 (low, high) arrays of a Box action space; refuses what no agent can act in."""
  dtype = np.dtype(space.dtype)
  if not np.issubdtype(dtype, np.floating):
    problem = ("Non-float action space %s of environment %r: a continuous (Box) action space "
               "must be float, not %s." % (_one_line(space), env_id, dtype))
  elif int(np.prod(space.shape, dtype=np.int64)) == 0:
    problem = ("Empty action space %s of environment %r: a continuous action space must "
               "have at least one element." % (_one_line(space), env_id))
  else:
    bounds = _float32_bounds(space.low, space.high)
    if bounds is not None:
      return bounds
    problem = ("Unbounded action space %s of environment %r: a continuous action space must "
               "have finite bounds (within float32's range)." % (_one_line(space), env_id))
  raise UnsupportedSpaceError(problem)


def _float32_bounds(low, high):
  """(low, high) as float32 arrays, or None if a bound is infinite, NaN or beyond float32."""
  low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
  limit = float(np.finfo(np.float32).max)
  if not (np.all(np.abs(low) <= limit) and np.all(np.abs(high) <= limit)):   # NaN: False
    return None
  return low.astype(np.float32), high.astype(np.float32)


def _one_line(space):
  """`str(space)` on one line (numpy wraps long bound arrays over several)."""
  return " ".join(str(space).split())


def _compact(bound):
  """A scalar when all elements of a bound are equal (keeps specs readable), else the array."""
  bound = np.asarray(bound)
  if bound.size and np.all(bound == bound.flat[0]):
    return bound.flat[0]
  return bound


class GymnasiumPyEnvironment(py_environment.PyEnvironment):
  """A gymnasium env with Discrete or bounded float Box actions as a non-batched PyEnvironment.

  Box actions outside [low, high] are clipped to the bounds before the env sees them.

  Args:
    env: a registered gymnasium id (e.g. "CartPole-v1"; `ALE/...` ids register ale-py
      themselves) or a `gymnasium.Env` instance, which this object then owns (closes).
    seed: passed as `reset(seed=seed)` on the first reset only; None: unseeded.
    max_episode_steps: time limit given to `gymnasium.make` (only when `env` is an id).
    cast_float64: cast float64 Box observations (and their bounds) to float32.
    env_kwargs: extra keyword arguments for `gymnasium.make` (only when `env` is an id).
    auto_reset: the step after a LAST resets the env and returns FIRST (TF-Agents'
      convention; done here rather than by the base class, whose check costs more than
      a cheap env's step). Keep True unless a wrapper resets the env itself.
  """

  def __init__(self, env, seed=None, max_episode_steps=None, cast_float64=True,
               env_kwargs=None, auto_reset=True):
    super().__init__(handle_auto_reset=False)
    if isinstance(env, str):
      gymnasium = import_gymnasium_for(env)
      self._env_id = env
      self._env = gymnasium.make(env, max_episode_steps=max_episode_steps, **(env_kwargs or {}))
    else:
      if max_episode_steps is not None or env_kwargs:
        raise ValueError("max_episode_steps and env_kwargs apply only when `env` is an id; "
                         "configure the given env instance itself.")
      self._env = env
      self._env_id = env_id_of(env)
    try:
      self._observation_spec = observation_spec_from_space(
          self._env.observation_space, self._env_id, cast_float64)
      self._action_spec = action_spec_from_space(self._env.action_space, self._env_id)
    except UnsupportedSpaceError:
      self._env.close()
      raise
    space = self._env.action_space
    if isinstance(space, spaces.Box):
      self._action_start = None
      self._box_shape, self._box_dtype = tuple(space.shape), np.dtype(space.dtype)
      self._box_low = np.asarray(space.low, self._box_dtype)
      self._box_high = np.asarray(space.high, self._box_dtype)
    else:
      self._action_start = int(space.start)   # Discrete
    self._obs_dtype = self._observation_spec.dtype
    self._seed = None if seed is None else int(seed)
    self._seed_pending = True    # the seed is applied on the first reset only
    self._auto_reset = bool(auto_reset)
    self._episode_ended = False
    self._info = {}
    self._closed = False

  # --- PyEnvironment API -------------------------------------------------------
  def observation_spec(self):
    return self._observation_spec

  def action_spec(self):
    return self._action_spec

  def reward_spec(self):
    return array_spec.ArraySpec((), np.float32, name="reward")

  def _reset(self):
    if self._seed_pending:
      self._seed_pending = False
      obs, self._info = self._env.reset(seed=self._seed)
    else:
      obs, self._info = self._env.reset()
    self._episode_ended = False
    return ts.TimeStep(FIRST, _ZERO, _ONE, self._convert_obs(obs))

  def _step(self, action):
    if self._episode_ended and self._auto_reset:
      return self.reset()   # the action is ignored
    if self._action_start is not None:   # Discrete
      env_action = int(action) + self._action_start
    else:
      env_action = self._box_action(action)
    obs, reward, terminated, truncated, self._info = self._env.step(env_action)
    obs = self._convert_obs(obs)
    reward = np.asarray(reward, np.float32)
    self._episode_ended = bool(terminated or truncated)
    if terminated:
      return ts.TimeStep(LAST, reward, _ZERO, obs)
    if truncated:
      return ts.TimeStep(LAST, reward, _ONE, obs)
    return ts.TimeStep(MID, reward, _ONE, obs)

  def _box_action(self, action):
    """A Box action as a new array of the space's dtype, clipped to its bounds."""
    action = np.asarray(action, self._box_dtype)
    if action.shape != self._box_shape:
      raise ValueError("Environment %r takes actions of shape %s, got shape %s."
                       % (self._env_id, self._box_shape, action.shape))
    return np.clip(action, self._box_low, self._box_high)

  def _convert_obs(self, obs):
    return np.asarray(obs, dtype=self._obs_dtype)

  def seed(self, seed):
    """Seeds the next reset (gymnasium envs are seeded through `reset(seed=...)`)."""
    self._seed = None if seed is None else int(seed)
    self._seed_pending = True

  def get_info(self):
    """The gymnasium `info` dict of the latest reset or step."""
    return self._info

  def render(self, mode="rgb_array"):
    del mode  # gymnasium fixes the render mode at construction
    return self._env.render()

  def close(self):
    if not self._closed:
      self._closed = True
      self._env.close()

  # --- extras --------------------------------------------------------------------
  @property
  def gym_env(self):
    """The wrapped gymnasium env."""
    return self._env

  @property
  def env_id(self):
    return self._env_id

  @property
  def num_actions(self):
    """n of a Discrete(n) action space; `batched.NoDiscreteActionsError` for a Box."""
    return batched.num_actions(self._action_spec, "environment %r" % self._env_id)
