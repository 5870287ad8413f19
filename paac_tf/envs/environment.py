"""The gin-configurable way for training jobs to build their batched environment."""
import os

import gin

from paac_tf.envs import factory


@gin.configurable(module="paac_tf.envs", denylist=["env_name", "num_envs", "num_workers", "seed"])
def make_environment(env_name, num_envs, num_workers, seed, atari_backend="vector",
                     num_threads=None, reward_clipping=True, episodic_life=False, noop_max=30,
                     max_episode_frames=108000):
  """Builds the batched env. For the Atari vector backend, `num_threads` defaults to
  min(num_workers, number of CPU cores): its C++ pool plays the role of PAAC's workers."""
  if num_threads is None:
    num_threads = max(1, min(int(num_workers) or 1, os.cpu_count() or 1))
  return factory.make_batched_env(
      env_name, num_envs, num_workers=num_workers, seed=seed, atari_backend=atari_backend,
      num_threads=num_threads, reward_clipping=reward_clipping, episodic_life=episodic_life,
      noop_max=noop_max, max_episode_frames=max_episode_frames)
