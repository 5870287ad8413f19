"""Atari fast path: ale-py's C++ AtariVectorEnv as one batched TF-Agents PyEnvironment.

Preprocessing defaults follow the papers' protocol: frameskip 4, max-pool over the
last two frames, grayscale, 84x84, stack of 4, up to 30 no-op starts, no sticky
actions (repeat_action_probability=0), rewards clipped to [-1, 1] for learning.

Semantics (TF-Agents auto-reset convention, per environment):
- a game that ends yields a LAST step that carries the true final observation;
  discount 0 if terminated, 1 if truncated (so learners bootstrap);
- the following step of that environment is FIRST (the reset observation, reward 0),
  and the action given for it is ignored.
- with `episodic_life`, a lost life is a MID step with discount 0: the learner does not
  bootstrap across it, but the game goes on, so episode returns stay whole games.
Observations are NHWC uint8 `(84, 84, 4)`. Rewards in time steps are clipped (if
configured); `pop_finished_episodes()` reports raw, unclipped scores of whole games.
"""
import numpy as np
from tf_agents.specs import array_spec
from tf_agents.trajectories import time_step as ts

from paac_tf.envs import batched
from paac_tf.envs import episode_stats

FIRST, MID, LAST = batched.FIRST, batched.MID, batched.LAST


def channels_last(obs):
  """(N, C, H, W) -> a new C-contiguous (N, H, W, C) array. One strided copy per channel:
  ~7x faster than numpy's copy of the transposed view for (32, 4, 84, 84) uint8 (0.26 vs
  1.75 ms, measured), which cost ~5% of the PAAC loop."""
  obs = np.asarray(obs)
  out = np.empty((obs.shape[0], *obs.shape[2:], obs.shape[1]), obs.dtype)
  for c in range(obs.shape[1]):
    out[..., c] = obs[:, c]
  return out


class AtariVectorPyEnvironment(batched.BatchedPyEnvironment):
  """n_e Atari games stepped by ale-py's C++ thread pool, batched."""

  def __init__(self, rom_id, num_envs, num_threads=0, seed=0, reward_clipping=True,
               episodic_life=False, noop_max=30, frameskip=4, frame_stack=4,
               repeat_action_probability=0.0, max_episode_frames=108000,
               full_action_space=False):
    super().__init__(handle_auto_reset=False)
    from ale_py.vector_env import AtariVectorEnv  # pylint: disable=import-outside-toplevel
    self._num_envs = int(num_envs)
    self._seed = int(seed)
    self._reward_clipping = bool(reward_clipping)
    self._episodic_life = bool(episodic_life)
    self._env = AtariVectorEnv(
        rom_id, self._num_envs, num_threads=int(num_threads),
        repeat_action_probability=float(repeat_action_probability),
        max_num_frames_per_episode=int(max_episode_frames),
        full_action_space=bool(full_action_space), autoreset_mode="NextStep",
        img_height=84, img_width=84, grayscale=True, stack_num=int(frame_stack),
        frameskip=int(frameskip), maxpool=True, noop_max=int(noop_max),
        episodic_life=False, reward_clipping=False)
    self._num_actions = int(self._env.single_action_space.n)
    self._obs_spec = array_spec.BoundedArraySpec(
        (84, 84, int(frame_stack)), np.uint8, 0, 255, name="observation")
    self._action_spec = array_spec.BoundedArraySpec(
        (), np.int64, 0, self._num_actions - 1, name="action")
    self._stats = episode_stats.EpisodeStats(self._num_envs)
    self._was_last = np.zeros(self._num_envs, bool)
    self._lives = np.zeros(self._num_envs, np.int64)
    self._closed = False

  # --- PyEnvironment API -------------------------------------------------------
  def _reset(self):
    obs, info = self._env.reset(seed=self._seed)
    obs = self._ordered(obs, info)
    self._lives = np.asarray(info["lives"])[np.argsort(info["env_id"])]
    self._was_last[:] = False
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
    self._env.send(np.asarray(action, np.int64).reshape(self._num_envs))

  def recv(self):
    """Waits for the step started by `send` and returns its batched TimeStep."""
    obs, reward, terminated, truncated, info = self._env.recv()
    order = info["env_id"]
    if not np.array_equal(order, np.arange(self._num_envs)):
      idx = np.argsort(order)
      obs, reward, terminated, truncated = obs[idx], reward[idx], terminated[idx], truncated[idx]
      info = {k: np.asarray(v)[idx] for k, v in info.items()}
    obs = channels_last(obs)
    raw = np.asarray(reward, np.float32)
    first = self._was_last
    last = np.logical_or(terminated, truncated) & ~first
    raw = np.where(first, 0.0, raw).astype(np.float32)
    self._stats.update(raw, ~first, last)
    step_type = np.where(first, FIRST, np.where(last, LAST, MID)).astype(np.int32)
    discount = np.where(terminated & ~first, 0.0, 1.0).astype(np.float32)
    lives = np.asarray(info["lives"])
    if self._episodic_life:
      life_lost = (lives < self._lives) & ~first & ~last
      discount = np.where(life_lost, 0.0, discount).astype(np.float32)
    self._lives = lives
    self._was_last = last
    reward = np.clip(raw, -1.0, 1.0) if self._reward_clipping else raw
    self._current_time_step = ts.TimeStep(step_type, reward.astype(np.float32), discount, obs)
    return self._current_time_step

  def _ordered(self, obs, info):
    idx = np.argsort(info["env_id"])
    return channels_last(obs[idx])

  # --- extras --------------------------------------------------------------------
  @property
  def num_actions(self):
    return self._num_actions

  def pop_finished_episodes(self):
    """(raw return, length in agent steps) of each whole game finished since last call."""
    return self._stats.pop_finished()

  def close(self):
    if not self._closed:
      self._closed = True
      self._env.close()
