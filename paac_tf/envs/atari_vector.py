"""Atari fast path: ale-py's C++ AtariVectorEnv as one batched TF-Agents PyEnvironment.

Preprocessing defaults follow the papers' protocol: frameskip 4, max-pool over the
last two frames, grayscale, 84x84, stack of 4, up to 30 no-op starts, no sticky
actions (repeat_action_probability=0), rewards clipped to [-1, 1] for learning.

Semantics (TF-Agents auto-reset convention, per environment):
- a game that ends yields a LAST step that carries the true final observation;
  discount 0 if terminated, 1 if truncated (so learners bootstrap);
- the following step of that environment is FIRST (the reset observation, reward 0),
  and the action given for it is ignored.
- `fire_reset` (default off, as the original PAAC code): in games whose action 1 is FIRE
  and that have at least 3 actions (`uses_fire`, as baselines' FireResetEnv), FIRE is
  pressed at each game start (ale-py's `use_fire_reset`: right after the game's reset,
  one frame of FIRE in place of the first no-op; measured: a reset with noop_max=0 plays
  1 frame instead of none, one with no-ops as many frames as without FIRE) and after each
  lost life (the next agent step plays FIRE instead of the agent's action). Off, the env
  never presses FIRE (ale-py's own default, FIRE at each game start, is turned off).
- with `episodic_life` (for training; evaluation plays whole games), a lost life that does
  not end the game is a LAST step with discount 0, so learners neither bootstrap across
  it nor train on the action given there. The env's next step is FIRST (reward 0,
  discount 1): it ignores the agent's action and plays FIRE (with `fire_reset`, in games
  that use it) or NOOP, and the game goes on (no reset, no no-ops; the frame stack goes
  on too). Should that step end the game (the time limit), it is LAST instead of FIRST.
  A life lost at the step that ends the game makes that LAST's discount 0.
- `pop_finished_episodes()` reports whole games either way: raw, unclipped scores (the
  rewards of the FIRST steps after lost lives included) and lengths in agent steps (all
  steps of the game, the ones that played the env's FIRE or NOOP included);
  `pop_finished_episodes(with_env_index=True)` adds the index (batch row) of the
  environment that played each game.
Observations are NHWC uint8 `(84, 84, 4)`. Rewards in time steps are clipped (if
configured).
"""

import numpy as np
from tf_agents.specs import array_spec
from tf_agents.trajectories import time_step as ts

from paac_tf.envs import batched
from paac_tf.envs import episode_stats

FIRST, MID, LAST = batched.FIRST, batched.MID, batched.LAST


def channels_last(obs, out=None):
  """(N, C, H, W) -> a C-contiguous (N, H, W, C) array: `out` if given, else a new one. One
  strided copy per channel: 1.7 ms at n_e 32 on this machine against 6.1 ms for numpy's copy
  of the transposed view (`python -m tools.bench.interleaved` measures what it gains end to end:
  docs/performance.md)."""
  obs = np.asarray(obs)
  if out is None:
    out = np.empty((obs.shape[0], *obs.shape[2:], obs.shape[1]), obs.dtype)
  for c in range(obs.shape[1]):
    out[..., c] = obs[:, c]
  return out


FIRE_ACTION = 1     # the action index that is FIRE in games that `uses_fire`
NOOP_ACTION = 0
_NO_ACTION = -1     # no action forced by the env


def uses_fire(action_meanings):
  """Whether `fire_reset` presses FIRE in a game with these action meanings (its action
  set, in order): action 1 is FIRE and there are at least 3 actions, as baselines'
  FireResetEnv requires."""
  meanings = [str(m) for m in action_meanings]
  return len(meanings) >= 3 and meanings[FIRE_ACTION] == "FIRE"


def presses_fire(rom_id, fire_reset, full_action_space=False):
  """Whether `fire_reset` presses FIRE in ROM `rom_id`: it is on and the game `uses_fire`."""
  return bool(fire_reset) and uses_fire(rom_action_meanings(rom_id, full_action_space))


def rom_action_meanings(rom_id, full_action_space=False):
  """The action meanings of ROM `rom_id` ("breakout"), in the order of its action set."""
  # Lazy, here and in the class: ale-py's import loads its ROMs and C++ library, needed
  # only once an Atari environment is made (this module is imported for its constants).
  import ale_py  # pylint: disable=import-outside-toplevel
  from ale_py import roms  # pylint: disable=import-outside-toplevel
  ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)   # as the C++ vector env does
  ale = ale_py.ALEInterface()
  ale.loadROM(roms.get_rom_path(rom_id))
  actions = ale.getLegalActionSet() if full_action_space else ale.getMinimalActionSet()
  return [action.name for action in actions]


def _frame_numbers(info, default):
  """The frames each env's game has played (ale-py's info "episode_frame_number"); `default`
  for an env stand-in whose info lacks it."""
  return np.asarray(info.get("episode_frame_number", default))


class AtariVectorPyEnvironment(batched.BatchedPyEnvironment):
  """n_e Atari games stepped by ale-py's C++ thread pool, batched."""

  def __init__(self, rom_id, num_envs, num_threads=0, seed=0, reward_clipping=True,
               episodic_life=False, fire_reset=False, noop_max=30, frameskip=4,
               frame_stack=4, repeat_action_probability=0.0, max_episode_frames=108000,
               full_action_space=False):
    super().__init__(handle_auto_reset=False)
    # Lazy: as in rom_action_meanings.
    from ale_py.vector_env import AtariVectorEnv  # pylint: disable=import-outside-toplevel
    self._num_envs = int(num_envs)
    self._seed = int(seed)
    self._reward_clipping = bool(reward_clipping)
    self._episodic_life = bool(episodic_life)
    self._fire_reset = bool(fire_reset)

    # ale-py's use_fire_reset presses FIRE in any game whose action set holds FIRE: it is
    # only turned on where `uses_fire` agrees (then FIRE is action 1, in the set).
    self._presses_fire = presses_fire(rom_id, self._fire_reset, full_action_space)
    self._env = AtariVectorEnv(
        rom_id, self._num_envs, num_threads=int(num_threads),
        repeat_action_probability=float(repeat_action_probability),
        max_num_frames_per_episode=int(max_episode_frames),
        full_action_space=bool(full_action_space), autoreset_mode="NextStep",
        img_height=84, img_width=84, grayscale=True, stack_num=int(frame_stack),
        frameskip=int(frameskip), maxpool=True, noop_max=int(noop_max),
        episodic_life=False, reward_clipping=False, use_fire_reset=self._presses_fire)
    self._num_actions = int(self._env.single_action_space.n)
    self._obs_spec = array_spec.BoundedArraySpec(
        (84, 84, int(frame_stack)), np.uint8, 0, 255, name="observation")
    self._action_spec = array_spec.BoundedArraySpec(
        (), np.int64, 0, self._num_actions - 1, name="action")
    self._stats = episode_stats.EpisodeStats(self._num_envs)
    n = self._num_envs
    self._was_last = np.zeros(n, bool)        # the game ended: the C++ env resets next
    self._life_first = np.zeros(n, bool)      # a life was lost (episodic): next is FIRST
    self._forced = np.full(n, _NO_ACTION, np.int64)   # the action the env plays next
    self._lives = np.zeros(n, np.int64)
    self._start_frames = np.zeros(n, np.int64)   # see start_frames
    self._closed = False

  # --- PyEnvironment API -------------------------------------------------------
  def _reset(self):
    obs, info = self._env.reset(seed=self._seed)
    obs = self._ordered(obs, info)
    self._lives = np.asarray(info["lives"])[np.argsort(info["env_id"])]
    self._start_frames = _frame_numbers(info, self._start_frames)[np.argsort(info["env_id"])]
    self._was_last[:] = False
    self._life_first[:] = False
    self._forced[:] = _NO_ACTION
    self._stats.reset()
    n = self._num_envs
    return ts.TimeStep(np.full(n, FIRST), np.zeros(n, np.float32), np.ones(n, np.float32),
                       obs)

  def _step(self, action):
    self.send(action)
    return self.recv()

  # --- asynchronous halves of a step ------------------------------------------
  def send(self, action):
    """Starts stepping all environments with `action` ([n_e] ints)."""
    action = np.asarray(action, np.int64).reshape(self._num_envs)
    forced = self._forced >= 0
    if forced.any():
      action = np.where(forced, self._forced, action)
    self._env.send(action)

  def recv(self, out=None):
    """Waits for the step started by `send` and returns its batched TimeStep. `out`: an
    array of the batch's observation shape that receives the observations (the time step's
    observation is then `out`; the PAAC rollout passes its own, saving a copy)."""
    obs, reward, terminated, truncated, info = self._env.recv()
    order = info["env_id"]
    if not np.array_equal(order, np.arange(self._num_envs)):
      idx = np.argsort(order)
      obs, reward, terminated, truncated = obs[idx], reward[idx], terminated[idx], truncated[idx]
      info = {k: np.asarray(v)[idx] for k, v in info.items()}
    obs = channels_last(obs, out)
    raw = np.asarray(reward, np.float32)
    reset = self._was_last                  # the C++ env's auto-reset step
    terminated = np.asarray(terminated, bool) & ~reset
    last = (np.asarray(truncated, bool) | terminated) & ~reset
    raw = np.where(reset, 0.0, raw).astype(np.float32)
    self._stats.update(raw, ~reset, last)   # whole games: every step of the game counts
    lives = np.asarray(info["lives"])
    life_lost = (lives < self._lives) & ~reset
    going_on = life_lost & ~last            # a lost life, the game goes on
    discount = np.where(terminated, 0.0, 1.0)
    first = reset
    if self._episodic_life:
      discount = np.where(life_lost, 0.0, discount)
      last = last | going_on
      first = reset | (self._life_first & ~last)
      self._life_first = going_on
      self._forced = np.where(going_on, FIRE_ACTION if self._presses_fire else NOOP_ACTION,
                              _NO_ACTION)
    elif self._presses_fire:
      self._forced = np.where(going_on, FIRE_ACTION, _NO_ACTION)
    step_type = np.where(first, FIRST, np.where(last, LAST, MID)).astype(np.int32)
    self._lives = lives
    # A game's reset step: the frames its reset played (the no-ops) are its frame count.
    self._start_frames = np.where(reset, _frame_numbers(info, self._start_frames),
                                  self._start_frames)
    self._was_last = last & ~going_on       # games that ended
    reward = np.where(first, 0.0, raw)
    if self._reward_clipping:
      reward = np.clip(reward, -1.0, 1.0)
    self._current_time_step = ts.TimeStep(step_type, reward.astype(np.float32),
                                          discount.astype(np.float32), obs)
    return self._current_time_step

  def _ordered(self, obs, info):
    idx = np.argsort(info["env_id"])
    return channels_last(obs[idx])

  # --- extras --------------------------------------------------------------------
  @property
  def num_actions(self):
    return self._num_actions

  @property
  def presses_fire(self):
    """Whether the env presses FIRE (`fire_reset` is on and the game `uses_fire`)."""
    return self._presses_fire

  @property
  def start_frames(self):
    """Per environment, the emulator frames its current game played before its first
    observation: the no-ops drawn at its reset (the C++ env draws 0 to noop_max - 1 from each
    environment's generator, seeded with its seed, one draw per game), with `fire_reset` the
    FIRE frame in place of the first. Still the ended game's at the step that ends it."""
    return self._start_frames.copy()

  def pop_finished_episodes(self, with_env_index=False):
    """(raw return, length in agent steps) of each whole game finished since last call;
    with `with_env_index`, (return, length, index of the environment that played it)."""
    return self._stats.pop_finished(with_env_index)

  def close(self):
    if not self._closed:
      self._closed = True
      self._env.close()
