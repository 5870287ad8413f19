"""The best evaluation episode as a GIF (`evaluate --record`): on Atari the last frame of
each observation stack, upscaled; for classic-control envs whose observation is their state
(CartPole, MountainCar), the env's own renderer fed each state."""
import os
import zlib

import numpy as np

from paac_tf import errors
from paac_tf.envs import factory

ATARI_GIF_SCALE = 3   # 84x84 frames shown at 252x252


class Recorder:
  """Keeps the frames of each slot's current episode and of the best counted one."""

  def __init__(self, env_name, observation_shape, num_envs):
    self.image = len(observation_shape) == 3
    self.renderer = None
    if not self.image:
      self.renderer = state_renderer(env_name, observation_shape)
    self.frames = [[] for _ in range(num_envs)]
    self.best = None

  def add(self, observations, slots):
    for i in slots:
      obs = observations[i]
      if self.image:
        frame = np.ascontiguousarray(obs[..., -1])
        self.frames[i].append((frame.shape, frame.dtype.str,
                               zlib.compress(frame.tobytes(), 1)))
      else:
        self.frames[i].append(np.array(obs, copy=True))

  def start(self, i):
    self.frames[i] = []

  def finish(self, i, episode_return, counted):
    if counted and (self.best is None or episode_return > self.best[0]):
      self.best = (episode_return, self.frames[i])
    self.frames[i] = []

  def write(self, path):
    from PIL import Image  # pylint: disable=import-outside-toplevel  (lazy: only --record)
    if self.best is None:
      return None
    images = []
    if self.image:
      for shape, dtype, data in self.best[1]:
        frame = np.frombuffer(zlib.decompress(data), dtype=np.dtype(dtype)).reshape(shape)
        image = Image.fromarray(frame.astype(np.uint8))
        images.append(image.resize((shape[1] * ATARI_GIF_SCALE, shape[0] * ATARI_GIF_SCALE),
                                   Image.NEAREST))
      duration_ms = int(round(1000.0 * factory.ATARI_FRAMESKIP / 60.0))
    else:
      env, fps = self.renderer
      for obs in self.best[1]:
        env.unwrapped.state = np.array(obs, dtype=np.float64)
        images.append(Image.fromarray(env.render()))
      duration_ms = max(20, int(round(1000.0 / fps)))
    if not images:
      return None
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp.gif"
    images[0].save(tmp, save_all=True, append_images=images[1:], duration=duration_ms, loop=0)
    os.replace(tmp, path)
    return path

  def close(self):
    if self.renderer is not None:
      self.renderer[0].close()


def state_renderer(env_name, observation_shape):
  """(gymnasium env in rgb_array mode, fps) for envs whose observation is their state."""
  import gymnasium as gym  # pylint: disable=import-outside-toplevel  (lazy: only --record)
  # Classic-control renderers use pygame, which would otherwise probe the sound card.
  os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
  try:
    env = gym.make(env_name, render_mode="rgb_array")
    env.reset(seed=0)
  except Exception as e:  # pylint: disable=broad-except
    raise errors.UserError("--record cannot render %s (%s)." % (env_name, e)) from None
  state = getattr(env.unwrapped, "state", None)
  if state is None or tuple(np.shape(state)) != tuple(observation_shape):
    env.close()
    raise errors.UserError(
        "--record needs image observations, or a classic-control env whose observation is "
        "its state (CartPole-v1, MountainCar-v0); %s is neither." % env_name)
  return env, float(env.metadata.get("render_fps") or 30)
