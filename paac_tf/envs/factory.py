"""Builds batched environments from a name (placeholder: Atari vector path only)."""
from paac_tf.envs import atari_vector
from paac_tf.envs import names


def make_batched_env(env_name, num_envs, num_workers=0, seed=0, atari_backend="vector",
                     num_threads=0, reward_clipping=True, episodic_life=False, noop_max=30,
                     max_episode_frames=108000):
  game = names.check_env_name(env_name)
  if isinstance(game, names.AtariGame) and atari_backend == "vector":
    return atari_vector.AtariVectorPyEnvironment(
        game.rom_id, num_envs, num_threads=num_threads, seed=seed,
        reward_clipping=reward_clipping, episodic_life=episodic_life, noop_max=noop_max,
        max_episode_frames=max_episode_frames)
  raise NotImplementedError(env_name)
