"""Atari portable path: one gymnasium `ALE/<Game>-v5` env per slot, in worker processes.

The same protocol and the same specs and action set as the fast path
(`atari_vector.AtariVectorPyEnvironment`), built from plain gymnasium parts so that it
runs wherever gymnasium and ale-py do:

- `gymnasium.make("ALE/<Game>-v5", frameskip=1, repeat_action_probability=0.0,
  full_action_space=False, obs_type="grayscale")`: no sticky actions, the minimal action
  set (the preprocessing reads ALE's screen itself);
- gymnasium's `AtariPreprocessing(noop_max=30, frame_skip=4, screen_size=84,
  grayscale_obs=True, terminal_on_life_loss=False, scale_obs=False)`: up to 30 no-op
  starts, frame skip 4 with a max-pool over the last two frames, grayscale 84x84;
- gymnasium's `FrameStackObservation(4, padding_type="zero")`, transposed to NHWC:
  observations are `(84, 84, 4)` uint8, zero-padded after a reset like the fast path;
- a `TimeLimit` of max_episode_frames / frameskip agent steps (108000 frames = 27000
  steps = 30 minutes of play, the papers' limit), counted after the no-op start as the
  fast path does, reported as `truncated` (LAST with discount 1);
- rewards are clipped to [-1, 1] by the batched wrapper for learning (if configured),
  while `pop_finished_episodes()` reports raw scores of whole games;
- with `episodic_life`, a lost life is a MID step with discount 0; the game goes on.

gymnasium's `AtariPreprocessing` resizes with OpenCV (INTER_AREA). Where OpenCV is not
installed (it is not a dependency of this project), a subclass does the same area
resize in numpy; it agrees with OpenCV's to within 1 grey level on a handful of pixels,
and gives the fast path's Pong frames exactly (AtariVectorEnv resizes with INTER_AREA
too; tests/test_atari_envs.py plays both side by side).
"""
import functools
import importlib.util
import math

import ale_py
import gymnasium as gym
import numpy as np
from gymnasium.wrappers import AtariPreprocessing

from paac_tf.envs import gym_adapter
from paac_tf.envs import names
from paac_tf.envs import worker_pool

# Importing ale_py registers its `ALE/...` envs with gymnasium (in each worker process
# too, as workers import this module to unpickle their env constructors).
gym.register_envs(ale_py)

_HAVE_CV2 = importlib.util.find_spec("cv2") is not None


# --- OpenCV-free INTER_AREA resize -------------------------------------------------------
def _area_taps(src, dst):
  """OpenCV's INTER_AREA weights for downscaling `src` pixels to `dst`, as gather taps.

  Returns (indices [dst, k], weights [dst, k] float32): output pixel d is
  sum_j weights[d, j] * input[indices[d, j]]. Follows `computeResizeAreaTab` in OpenCV.
  """
  if dst > src:
    raise ValueError("The numpy area resize only downscales (%d -> %d)." % (src, dst))
  scale = src / dst
  taps = []
  for d in range(dst):
    lo, hi = d * scale, (d + 1) * scale
    cell = min(scale, src - lo)
    first, last = math.ceil(lo), min(math.floor(hi), src - 1)
    first = min(first, last)
    row = []
    if first - lo > 1e-3:
      row.append((first - 1, (first - lo) / cell))
    row.extend((s, 1.0 / cell) for s in range(first, last))
    if hi - last > 1e-3:
      row.append((last, min(hi - last, 1.0, cell) / cell))
    taps.append(row)
  k = max(len(row) for row in taps)
  indices = np.zeros((dst, k), np.intp)
  weights = np.zeros((dst, k), np.float32)   # padded taps have weight 0
  for d, row in enumerate(taps):
    for j, (s, w) in enumerate(row):
      indices[d, j], weights[d, j] = s, w
  return indices, weights


class AreaResizer:
  """Resizes 2-D uint8 images (H, W) -> (h, w) like `cv2.resize(..., INTER_AREA)`."""

  def __init__(self, src_shape, dst_shape):
    self._rows = _area_taps(src_shape[0], dst_shape[0])
    self._cols = _area_taps(src_shape[1], dst_shape[1])

  def __call__(self, image):
    row_idx, row_w = self._rows
    col_idx, col_w = self._cols
    tmp = np.einsum("dk,dkw->dw", row_w, image[row_idx].astype(np.float32))
    out = np.einsum("dk,hdk->hd", col_w, tmp[:, col_idx])
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


class NumpyAtariPreprocessing(AtariPreprocessing):
  """gymnasium's AtariPreprocessing (its own reset and step: no-op starts, frame skip,
  max-pool) with the INTER_AREA resize done in numpy. Grayscale, unscaled uint8 only.

  `AtariPreprocessing.__init__` refuses to run without OpenCV, so this one sets up the
  same state itself (gymnasium 1.x attribute names, which its reset and step use).
  """

  def __init__(self, env, noop_max=30, frame_skip=4, screen_size=84):
    gym.utils.RecordConstructorArgs.__init__(
        self, noop_max=noop_max, frame_skip=frame_skip, screen_size=screen_size)
    gym.Wrapper.__init__(self, env)
    if frame_skip > 1 and getattr(env.unwrapped, "_frameskip", None) != 1:
      raise ValueError("Disable frame skipping in the wrapped env (frameskip=1).")
    if noop_max > 0 and env.unwrapped.get_action_meanings()[0] != "NOOP":
      raise ValueError("No-op starts need action 0 to be NOOP.")
    self.noop_max = int(noop_max)
    self.frame_skip = int(frame_skip)
    self.screen_size = (int(screen_size), int(screen_size))
    self.terminal_on_life_loss = False
    self.grayscale_obs = True
    self.grayscale_newaxis = False
    self.scale_obs = False
    screen_shape = env.observation_space.shape[:2]
    self.obs_buffer = [np.empty(screen_shape, np.uint8), np.empty(screen_shape, np.uint8)]
    self.lives = 0
    self.game_over = False
    self.observation_space = gym.spaces.Box(0, 255, self.screen_size[::-1], np.uint8)
    self._resize = AreaResizer(screen_shape, self.screen_size[::-1])

  def _get_obs(self):
    if self.frame_skip > 1:
      np.maximum(self.obs_buffer[0], self.obs_buffer[1], out=self.obs_buffer[0])
    return self._resize(self.obs_buffer[0])


class ChannelsLast(gym.ObservationWrapper):
  """(stack, H, W) -> (H, W, stack), as the fast path and the networks expect."""

  def __init__(self, env):
    super().__init__(env)
    space = env.observation_space
    self.observation_space = gym.spaces.Box(
        np.moveaxis(space.low, 0, -1), np.moveaxis(space.high, 0, -1), dtype=space.dtype)

  def observation(self, observation):
    return np.moveaxis(np.asarray(observation), 0, -1)


def make_preprocessed_atari_env(gymnasium_id, noop_max=30, frameskip=4, frame_stack=4,
                                repeat_action_probability=0.0, max_episode_frames=108000,
                                full_action_space=False):
  """The gymnasium env of one slot: ALE env + AtariPreprocessing + frame stack, NHWC."""
  # ALE's own frame limit is disabled (None): it would count the no-op frames too.
  # obs_type="grayscale": the preprocessing reads the screen from ALE itself, so the raw
  # env's per-frame observation is waste; grayscale is the cheapest screen it can return.
  env = gym.make(gymnasium_id, frameskip=1, obs_type="grayscale",
                 repeat_action_probability=float(repeat_action_probability),
                 full_action_space=bool(full_action_space), max_num_frames_per_episode=None)
  if _HAVE_CV2:
    env = AtariPreprocessing(
        env, noop_max=int(noop_max), frame_skip=int(frameskip), screen_size=84,
        grayscale_obs=True, terminal_on_life_loss=False, scale_obs=False)
  else:
    env = NumpyAtariPreprocessing(
        env, noop_max=int(noop_max), frame_skip=int(frameskip), screen_size=84)
  env = gym.wrappers.FrameStackObservation(env, int(frame_stack), padding_type="zero")
  env = ChannelsLast(env)
  # The time limit in agent steps, as the fast path counts it: frames after the no-ops.
  return gym.wrappers.TimeLimit(env, max(1, int(max_episode_frames) // int(frameskip)))


class AtariPortablePyEnvironment(gym_adapter.GymnasiumPyEnvironment):
  """One preprocessed Atari game as a non-batched PyEnvironment (one slot of the batch).

  Adds episodic life to `GymnasiumPyEnvironment`: with `episodic_life`, a step that
  loses a life without ending the game is MID with discount 0.
  """

  def __init__(self, gym_env, seed=None, episodic_life=False):
    super().__init__(gym_env, seed=seed)
    self._ale = gym_env.unwrapped.ale
    self._episodic_life = bool(episodic_life)
    self._lives = 0

  def _reset(self):
    time_step = super()._reset()
    self._lives = self._ale.lives()
    return time_step

  def _step(self, action):
    time_step = super()._step(action)
    lives = self._ale.lives()
    if self._episodic_life and lives < self._lives and time_step.step_type == gym_adapter.MID:
      time_step = time_step._replace(discount=np.zeros((), np.float32))
    self._lives = lives
    return time_step


def make_atari_slot_env(gymnasium_id, seed, episodic_life=False, **preprocessing):
  """Builds one slot (a top-level function, so that partials of it pickle to workers)."""
  return AtariPortablePyEnvironment(
      make_preprocessed_atari_env(gymnasium_id, **preprocessing), seed=seed,
      episodic_life=episodic_life)


def _as_game(game):
  if isinstance(game, names.AtariGame):
    return game
  resolved = names.check_env_name(game)
  if not isinstance(resolved, names.AtariGame):
    raise ValueError("%r is not an Atari game." % (game,))
  return resolved


def make_atari_portable_env(game, num_envs, num_workers, seed=0, reward_clipping=True,
                            episodic_life=False, noop_max=30, frameskip=4, frame_stack=4,
                            repeat_action_probability=0.0, max_episode_frames=108000,
                            full_action_space=False, start_method="forkserver", timeout=300.0,
                            startup_timeout=600.0):
  """n_e preprocessed Atari games over n_w worker processes, as one batched PyEnvironment.

  Args:
    game: a `names.AtariGame` or a name that resolves to one ("Pong", "ALE/Pong-v5").
    num_envs: n_e, the batch size.
    num_workers: n_w processes (n_e must be divisible by it); 0 = in-process.
    seed: environment i is seeded with `seed + i`.
    reward_clipping: clip time-step rewards to [-1, 1]; episode returns stay raw.
    episodic_life: a lost life is a MID step with discount 0 (the game goes on).
    noop_max, frameskip, frame_stack, repeat_action_probability, max_episode_frames,
    full_action_space: as in `AtariVectorPyEnvironment`.
    start_method, timeout, startup_timeout: as in `ParallelBatchedPyEnvironment`.

  Returns:
    A `ParallelBatchedPyEnvironment` with the same specs as `AtariVectorPyEnvironment`.
  """
  game = _as_game(game)
  preprocessing = dict(noop_max=int(noop_max), frameskip=int(frameskip),
                       frame_stack=int(frame_stack),
                       repeat_action_probability=float(repeat_action_probability),
                       max_episode_frames=int(max_episode_frames),
                       full_action_space=bool(full_action_space))
  env_fns = [functools.partial(make_atari_slot_env, game.gymnasium_id, int(seed) + i,
                               episodic_life=bool(episodic_life), **preprocessing)
             for i in range(int(num_envs))]
  return worker_pool.ParallelBatchedPyEnvironment(
      env_fns, num_workers, reward_clipping=reward_clipping, start_method=start_method,
      timeout=timeout, startup_timeout=startup_timeout)
