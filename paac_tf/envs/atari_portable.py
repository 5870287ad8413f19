"""Atari portable path: one gymnasium `ALE/<Game>-v5` env per slot, in worker processes.

The same protocol and the same specs and action set as the fast path
(`atari_vector.AtariVectorPyEnvironment`, whose docstring states the semantics), built
from plain gymnasium parts so that it runs wherever gymnasium and ale-py do:

- `gymnasium.make("ALE/<Game>-v5", frameskip=1, repeat_action_probability=0.0,
  full_action_space=False, obs_type="grayscale")`: no sticky actions, the minimal action
  set (the preprocessing reads ALE's screen itself);
- `AtariVectorPreprocessing`, gymnasium's `AtariPreprocessing(noop_max=30, frame_skip=4,
  screen_size=84, grayscale_obs=True, terminal_on_life_loss=False, scale_obs=False)`
  (up to 30 no-op starts, frame skip 4 with a max-pool over the last two frames,
  grayscale 84x84) with its reset and step made to play and capture frames exactly as
  ale-py's C++ AtariVectorEnv does (see the class);
- gymnasium's `FrameStackObservation(4, padding_type="zero")`, transposed to NHWC:
  observations are `(84, 84, 4)` uint8, zero-padded after a reset like the fast path;
- a time limit of max_episode_frames frames (108000 frames = 27000 agent steps = 30
  minutes of play, the papers' limit), counted after the no-op start and applied as the
  fast path does (at the limit's frame, even within a frame skip, without capturing
  that frame), reported as `truncated` (LAST with discount 1);
- rewards are clipped to [-1, 1] by the batched wrapper for learning (if configured),
  while `pop_finished_episodes()` reports raw scores of whole games;
- `fire_reset`: FIRE at each game start (one frame, in place of the first no-op, as
  ale-py's C++ `use_fire_reset` plays it) and after each lost life (the next agent step
  plays FIRE), in games that `atari_vector.uses_fire`;
- `episodic_life`: a lost life that does not end the game is LAST with discount 0, the
  next step FIRST (it plays FIRE or NOOP, reward 0 in the time step) and the game goes on.
  Slots tell the batch (`AtariPortableBatchedPyEnvironment`) about these two steps with
  two internal step types, so that its accounting of whole games counts them as steps of
  the game (and the reward of the FIRST one in the score).

With the same seed, no no-op starts (their draws differ: gymnasium's numpy generator
draws 1..noop_max no-ops here, the C++ env's mt19937 0..noop_max-1 there) and the same
actions, both backends give the same step types, rewards, discounts, frames (bit for bit)
and whole games (tests/test_atari_life_loss.py plays them side by side).

gymnasium's `AtariPreprocessing` resizes with OpenCV (INTER_AREA), as the C++ env does;
where OpenCV is not installed (it is not a dependency of this project), `AreaResizer`
does the same area resize in numpy, with OpenCV's float32 arithmetic in OpenCV's order,
which gives the C++ env's frames exactly.
"""
import functools
import importlib.util
import math

import ale_py
import gymnasium as gym
import numpy as np
from gymnasium.wrappers import AtariPreprocessing
from tf_agents.trajectories import time_step as ts

from paac_tf.envs import atari_vector
from paac_tf.envs import batched
from paac_tf.envs import gym_adapter
from paac_tf.envs import names
from paac_tf.envs import worker_pool

# Importing ale_py registers its `ALE/...` envs with gymnasium (in each worker process
# too, as workers import this module to unpickle their env constructors).
gym.register_envs(ale_py)

_HAVE_CV2 = importlib.util.find_spec("cv2") is not None

FIRST, LAST = batched.FIRST, batched.LAST
# Step types that only travel from a slot to `AtariPortableBatchedPyEnvironment`, which
# turns them into LAST and FIRST (episodic life): a lost life that does not end the game,
# and the step after it. The batch's accounting counts neither as the end or the start of
# a game (they are not LAST or FIRST to it), and the slot gives the raw reward of the second.
LIFE_LAST, LIFE_FIRST = np.int32(3), np.int32(4)
_ZERO = np.zeros((), np.float32)
_ZERO.setflags(write=False)   # shared by time steps: never to be mutated


# --- OpenCV-free INTER_AREA resize -------------------------------------------------------
def _area_taps(src, dst):
  """OpenCV's INTER_AREA weights for downscaling `src` pixels to `dst`, as gather taps.

  Returns (indices [dst, k], weights [dst, k] float32): output pixel d is
  sum_j weights[d, j] * input[indices[d, j]], its taps in increasing input order. Follows
  `computeResizeAreaTab` in OpenCV (in double precision, the scale as OpenCV computes it,
  the weights rounded to float32).
  """
  if dst > src:
    raise ValueError("The numpy area resize only downscales (%d -> %d)." % (src, dst))
  scale = 1.0 / (dst / src)
  taps = []
  for d in range(dst):
    lo = d * scale
    hi = lo + scale
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
  """Resizes 2-D uint8 images (H, W) -> (h, w) like `cv2.resize(..., INTER_AREA)`.

  Bit for bit: OpenCV's area resize (`ResizeArea_Invoker`) sums each input row's taps
  across columns, then accumulates rows, in float32, one product and one sum at a time,
  in increasing input order, and rounds half to even. This does the same operations in
  the same order, vectorized over pixels (a padded tap adds +0.0, which changes nothing).
  """

  def __init__(self, src_shape, dst_shape):
    self._rows = _area_taps(src_shape[0], dst_shape[0])
    self._cols = _area_taps(src_shape[1], dst_shape[1])

  def __call__(self, image):
    row_idx, row_w = self._rows
    col_idx, col_w = self._cols
    image = np.asarray(image, np.float32)
    rows = image[:, col_idx[:, 0]] * col_w[:, 0]
    for j in range(1, col_idx.shape[1]):
      rows += image[:, col_idx[:, j]] * col_w[:, j]
    out = rows[row_idx[:, 0]] * row_w[:, 0, None]
    for j in range(1, row_idx.shape[1]):
      out += rows[row_idx[:, j]] * row_w[:, j, None]
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


class AtariVectorPreprocessing(AtariPreprocessing):
  """gymnasium's AtariPreprocessing (grayscale, unscaled uint8) that plays and captures
  frames as ale-py's C++ AtariVectorEnv does (ale-py 0.12.1, measured side by side):

  - reset: gymnasium's (the same draw of no-ops), but with `fire_reset`, in a game that
    `atari_vector.uses_fire`, FIRE is played for one frame first, in place of the first
    no-op (without no-ops: one frame more), as the C++ env does;
  - step: gymnasium's, plus the C++ env's time limit of `max_episode_frames` frames
    after the reset: the frame that reaches it ends the step, truncated, before its
    screen is captured (as a frame that ends the game does in both).
  The resize is OpenCV's INTER_AREA (gymnasium's), or `AreaResizer` without OpenCV.

  `AtariPreprocessing.__init__` refuses to run without OpenCV, so this one sets up the
  same state itself (gymnasium 1.x attribute names, which its methods use).
  """

  def __init__(self, env, noop_max=30, frame_skip=4, screen_size=84, fire_reset=False,
               max_episode_frames=None):
    gym.utils.RecordConstructorArgs.__init__(
        self, noop_max=noop_max, frame_skip=frame_skip, screen_size=screen_size,
        fire_reset=fire_reset, max_episode_frames=max_episode_frames)
    gym.Wrapper.__init__(self, env)
    if frame_skip > 1 and getattr(env.unwrapped, "_frameskip", None) != 1:
      raise ValueError("Disable frame skipping in the wrapped env (frameskip=1).")
    meanings = env.unwrapped.get_action_meanings()
    if noop_max > 0 and meanings[0] != "NOOP":
      raise ValueError("No-op starts need action 0 to be NOOP.")
    self.noop_max = int(noop_max)
    self.frame_skip = int(frame_skip)
    self.screen_size = (int(screen_size), int(screen_size))
    self.fire_reset = bool(fire_reset) and atari_vector.uses_fire(meanings)
    self.max_episode_frames = None if max_episode_frames is None else int(max_episode_frames)
    self.episode_frames = 0   # frames played since the reset (after its no-ops)
    self.terminal_on_life_loss = False
    self.grayscale_obs = True
    self.grayscale_newaxis = False
    self.scale_obs = False
    screen_shape = env.observation_space.shape[:2]
    self.obs_buffer = [np.zeros(screen_shape, np.uint8), np.zeros(screen_shape, np.uint8)]
    self.lives = 0
    self.game_over = False
    self.observation_space = gym.spaces.Box(0, 255, self.screen_size[::-1], np.uint8)
    self._resize = None if _HAVE_CV2 else AreaResizer(screen_shape, self.screen_size[::-1])

  def reset(self, *, seed=None, options=None):
    _, info = self.env.reset(seed=seed, options=options)
    noops = (self.env.unwrapped.np_random.integers(1, self.noop_max + 1)
             if self.noop_max > 0 else 0)
    if self.fire_reset:   # as the C++ env: FIRE first, in place of the first no-op
      info.update(self.env.step(atari_vector.FIRE_ACTION)[4])
      noops = max(0, noops - 1)
    for _ in range(noops):
      _, _, terminated, truncated, step_info = self.env.step(atari_vector.NOOP_ACTION)
      info.update(step_info)
      if terminated or truncated:
        _, info = self.env.reset(seed=seed, options=options)
    self.lives = self.ale.lives()
    self.game_over = False
    self.episode_frames = 0
    self.ale.getScreenGrayscale(self.obs_buffer[0])
    self.obs_buffer[1].fill(0)
    return self._get_obs(), info

  def step(self, action):
    total_reward, terminated, truncated, info = 0.0, False, False, {}
    for t in range(self.frame_skip):
      _, reward, terminated, truncated, info = self.env.step(action)
      total_reward += reward
      self.episode_frames += 1
      if self.max_episode_frames is not None and not terminated:
        truncated = truncated or self.episode_frames >= self.max_episode_frames
      if terminated or truncated:
        break
      if t == self.frame_skip - 2:
        self.ale.getScreenGrayscale(self.obs_buffer[1])
      elif t == self.frame_skip - 1:
        self.ale.getScreenGrayscale(self.obs_buffer[0])
    self.game_over = terminated
    return self._get_obs(), total_reward, terminated, truncated, info

  def _get_obs(self):
    if self._resize is None:
      return super()._get_obs()
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
                                full_action_space=False, fire_reset=False):
  """The gymnasium env of one slot: ALE env + AtariPreprocessing + frame stack, NHWC."""
  # ALE's own frame limit is disabled (None): it would count the no-op frames too.
  # obs_type="grayscale": the preprocessing reads the screen from ALE itself, so the raw
  # env's per-frame observation is waste; grayscale is the cheapest screen it can return.
  env = gym.make(gymnasium_id, frameskip=1, obs_type="grayscale",
                 repeat_action_probability=float(repeat_action_probability),
                 full_action_space=bool(full_action_space), max_num_frames_per_episode=None)
  env = AtariVectorPreprocessing(env, noop_max=int(noop_max), frame_skip=int(frameskip),
                                 screen_size=84, fire_reset=bool(fire_reset),
                                 max_episode_frames=int(max_episode_frames))
  env = gym.wrappers.FrameStackObservation(env, int(frame_stack), padding_type="zero")
  return ChannelsLast(env)


class AtariPortablePyEnvironment(gym_adapter.GymnasiumPyEnvironment):
  """One preprocessed Atari game as a non-batched PyEnvironment (one slot of the batch).

  Adds lives to `GymnasiumPyEnvironment`, as `atari_vector.AtariVectorPyEnvironment`
  handles them: with `fire_reset` (in a game that `uses_fire`), the step after a lost life
  plays FIRE instead of the given action; with `episodic_life`, a lost life that does not
  end the game is a LIFE_LAST step (discount 0) and the next step, which plays FIRE or
  NOOP whatever the action, a LIFE_FIRST step that carries its raw reward (the batch turns
  them into LAST and FIRST with reward 0); a life lost at the step that ends the game
  makes that LAST's discount 0.
  """

  def __init__(self, gym_env, seed=None, episodic_life=False, fire_reset=False):
    super().__init__(gym_env, seed=seed)
    self._ale = gym_env.unwrapped.ale
    self._episodic_life = bool(episodic_life)
    self._presses_fire = bool(fire_reset) and atari_vector.uses_fire(
        gym_env.unwrapped.get_action_meanings())
    self._lives = 0
    self._forced = None        # the action this env plays at the next step, if not the agent's
    self._life_first = False   # the next step is LIFE_FIRST

  @property
  def presses_fire(self):
    return self._presses_fire

  def _reset(self):
    time_step = super()._reset()
    self._lives = self._ale.lives()
    self._forced, self._life_first = None, False
    return time_step

  def _step(self, action):
    if self._episode_ended:   # the game is over: the base class resets (FIRST)
      return super()._step(action)
    forced, life_first = self._forced, self._life_first
    time_step = super()._step(action if forced is None else forced)
    lives = self._ale.lives()
    life_lost = lives < self._lives
    self._lives = lives
    self._forced, self._life_first = None, False
    game_over = time_step.step_type == LAST
    if life_lost and not game_over:   # the game goes on
      if self._episodic_life:
        self._life_first = True
        self._forced = atari_vector.FIRE_ACTION if self._presses_fire else (
            atari_vector.NOOP_ACTION)
        return time_step._replace(step_type=LIFE_LAST, discount=_ZERO)
      if self._presses_fire:
        self._forced = atari_vector.FIRE_ACTION
      return time_step
    if self._episodic_life:
      if game_over and life_lost:
        return time_step._replace(discount=_ZERO)
      if life_first and not game_over:
        return time_step._replace(step_type=LIFE_FIRST)
    return time_step


def make_atari_slot_env(gymnasium_id, seed, episodic_life=False, fire_reset=False,
                        **preprocessing):
  """Builds one slot (a top-level function, so that partials of it pickle to workers)."""
  return AtariPortablePyEnvironment(
      make_preprocessed_atari_env(gymnasium_id, fire_reset=fire_reset, **preprocessing),
      seed=seed, episodic_life=episodic_life, fire_reset=fire_reset)


class AtariPortableBatchedPyEnvironment(worker_pool.ParallelBatchedPyEnvironment):
  """The slots of the portable path over worker processes, batched: turns the slots'
  LIFE_LAST and LIFE_FIRST step types into LAST and FIRST (reward 0), after the base
  class has counted them as steps of the whole game in `pop_finished_episodes()`."""

  def __init__(self, env_fns, num_workers, presses_fire=False, **kwargs):
    super().__init__(env_fns, num_workers, **kwargs)
    self._presses_fire = bool(presses_fire)

  @property
  def presses_fire(self):
    """Whether the env presses FIRE (`fire_reset` is on and the game `uses_fire`)."""
    return self._presses_fire

  def recv(self):
    time_step = super().recv()
    step_type = time_step.step_type
    life_last, life_first = step_type == LIFE_LAST, step_type == LIFE_FIRST
    if life_last.any() or life_first.any():
      time_step = ts.TimeStep(
          np.where(life_last, LAST, np.where(life_first, FIRST, step_type)).astype(np.int32),
          np.where(life_first, 0.0, time_step.reward).astype(np.float32),
          time_step.discount, time_step.observation)
      self._current_time_step = time_step
    return time_step


def _as_game(game):
  if isinstance(game, names.AtariGame):
    return game
  resolved = names.check_env_name(game)
  if not isinstance(resolved, names.AtariGame):
    raise ValueError("%r is not an Atari game." % (game,))
  return resolved


def make_atari_portable_env(game, num_envs, num_workers, seed=0, reward_clipping=True,
                            episodic_life=False, fire_reset=False, noop_max=30, frameskip=4,
                            frame_stack=4, repeat_action_probability=0.0,
                            max_episode_frames=108000, full_action_space=False,
                            start_method="forkserver", timeout=300.0, startup_timeout=600.0):
  """n_e preprocessed Atari games over n_w worker processes, as one batched PyEnvironment.

  Args:
    game: a `names.AtariGame` or a name that resolves to one ("Pong", "ALE/Pong-v5").
    num_envs: n_e, the batch size.
    num_workers: n_w processes (n_e must be divisible by it); 0 = in-process.
    seed: environment i is seeded with `seed + i`.
    reward_clipping: clip time-step rewards to [-1, 1]; episode returns stay raw.
    episodic_life: a lost life that does not end the game is LAST with discount 0; the
      next step is FIRST and the game goes on (see `atari_vector`).
    fire_reset: press FIRE at game start and after each lost life, in games that
      `atari_vector.uses_fire`.
    noop_max, frameskip, frame_stack, repeat_action_probability, max_episode_frames,
    full_action_space: as in `AtariVectorPyEnvironment`.
    start_method, timeout, startup_timeout: as in `ParallelBatchedPyEnvironment`.

  Returns:
    An `AtariPortableBatchedPyEnvironment` with the same specs and semantics as
    `AtariVectorPyEnvironment`.
  """
  game = _as_game(game)
  preprocessing = dict(noop_max=int(noop_max), frameskip=int(frameskip),
                       frame_stack=int(frame_stack),
                       repeat_action_probability=float(repeat_action_probability),
                       max_episode_frames=int(max_episode_frames),
                       full_action_space=bool(full_action_space))
  env_fns = [functools.partial(make_atari_slot_env, game.gymnasium_id, int(seed) + i,
                               episodic_life=bool(episodic_life), fire_reset=bool(fire_reset),
                               **preprocessing)
             for i in range(int(num_envs))]
  presses_fire = atari_vector.presses_fire(game.rom_id, fire_reset, full_action_space)
  return AtariPortableBatchedPyEnvironment(
      env_fns, num_workers, presses_fire=presses_fire, reward_clipping=reward_clipping,
      start_method=start_method, timeout=timeout, startup_timeout=startup_timeout)
