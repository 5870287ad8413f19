"""Both Atari paths (fast C++ vector env, portable gymnasium + workers) and the factory."""

import numpy as np
import pytest
from tf_agents.trajectories import time_step as ts

from conftest import assert_gone
from paac_tf.envs import atari_portable
from paac_tf.envs import atari_vector
from paac_tf.envs import factory
from paac_tf.envs import names

pytestmark = pytest.mark.timeout(120)

FIRST, MID, LAST = ts.StepType.FIRST, ts.StepType.MID, ts.StepType.LAST
BACKENDS = ("vector", "portable")


def make(game, num_envs, backend, num_workers=0, **kwargs):
  return factory.make_batched_env(game, num_envs, num_workers=num_workers, num_threads=2,
                                  seed=0, atari_backend=backend, **kwargs)




@pytest.mark.parametrize("backend", BACKENDS)
def test_pong_batch_shapes_and_truncated_episodes(backend):
  # 400 frames = 100 agent steps: every game is truncated at step 100.
  env = make("Pong", 8, backend, num_workers=2, max_episode_frames=400)
  pids = list(getattr(env, "worker_pids", []))
  try:
    assert env.batched and env.batch_size == 8 and env.num_actions == 6
    obs_spec, action_spec = env.observation_spec(), env.action_spec()
    assert (obs_spec.shape, obs_spec.dtype, obs_spec.name) == ((84, 84, 4), np.uint8,
                                                               "observation")
    assert (action_spec.shape, action_spec.dtype, action_spec.name) == ((), np.int64, "action")
    assert (action_spec.minimum, action_spec.maximum) == (0, 5)
    t = env.reset()
    assert t.observation.shape == (8, 84, 84, 4) and t.observation.dtype == np.uint8
    assert np.all(t.step_type == FIRST) and t.step_type.dtype == np.int32
    assert not t.observation[..., :3].any() and t.observation[..., 3].any()  # zero padding
    rng = np.random.default_rng(0)
    for step in range(1, 102):
      t = env.step(rng.integers(0, 6, 8))
      assert t.observation.shape == (8, 84, 84, 4) and t.observation.dtype == np.uint8
      assert t.reward.dtype == np.float32 and t.discount.dtype == np.float32
      assert np.all(np.abs(t.reward) <= 1.0)
      if step < 100:
        assert np.all(t.step_type == MID)
      elif step == 100:
        assert np.all(t.step_type == LAST) and np.all(t.discount == 1.0)
      else:
        assert np.all(t.step_type == FIRST) and np.all(t.reward == 0.0)
    finished = env.pop_finished_episodes()
    assert len(finished) == 8 and all(length == 100 for _, length in finished)
    assert all(-21.0 <= score <= 21.0 for score, _ in finished)
  finally:
    env.close()
  assert_gone(pids)


@pytest.mark.parametrize("game", ["Pong", "Breakout"])
def test_both_paths_same_specs_and_action_sets(game):
  envs = {backend: make(game, 1, backend) for backend in BACKENDS}
  try:
    vector, portable = envs["vector"], envs["portable"]
    assert vector.observation_spec() == portable.observation_spec()
    assert vector.action_spec() == portable.action_spec()
    assert vector.reward_spec() == portable.reward_spec()
    assert vector.num_actions == portable.num_actions
    if game == "Pong":   # same preprocessing: Pong's start screens agree pixel for pixel
      a = vector.reset().observation.astype(int)
      b = portable.reset().observation.astype(int)
      assert np.mean(np.abs(a - b) > 1) < 0.01
  finally:
    for env in envs.values():
      env.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_episodic_life_lost_life_is_last_with_discount_zero(backend):
  env = make("Breakout", 1, backend, episodic_life=True)
  try:
    env.reset()
    rng = np.random.default_rng(0)
    for _ in range(2000):
      t = env.step(rng.integers(0, 4, 1))
      if t.step_type[0] == LAST:
        assert t.discount[0] == 0.0        # a lost life (the game is not over yet)
        t = env.step(rng.integers(0, 4, 1))
        assert t.step_type[0] == FIRST and t.reward[0] == 0.0
        assert env.step(rng.integers(0, 4, 1)).step_type[0] == MID   # the game goes on
        assert env.pop_finished_episodes() == []
        break
      assert t.discount[0] == 1.0
    else:
      pytest.fail("no life was lost in 2000 random steps")
  finally:
    env.close()


def test_portable_episode_accounting():
  # 200 frames = 50 agent steps; Pong's rewards are +-1, so clipped sums are raw scores.
  env = make("Pong", 2, "portable", max_episode_frames=200, reward_clipping=True)
  try:
    env.reset()
    rewards = np.array([env.step(np.zeros(2, np.int64)).reward for _ in range(50)])
    assert np.all(np.abs(rewards) <= 1.0)
    finished = env.pop_finished_episodes()
    assert [length for _, length in finished] == [50, 50]
    assert sorted(score for score, _ in finished) == sorted(rewards.sum(axis=0).tolist())
  finally:
    env.close()


def test_area_resizer_properties():
  resize = atari_portable.AreaResizer((210, 160), (84, 84))
  flat = np.full((210, 160), 77, np.uint8)
  np.testing.assert_array_equal(resize(flat), np.full((84, 84), 77, np.uint8))
  image = np.random.default_rng(0).integers(0, 256, (168, 168), dtype=np.uint8)
  blocks = image.reshape(84, 2, 84, 2).astype(np.float64).mean(axis=(1, 3))
  out = atari_portable.AreaResizer((168, 168), (84, 84))(image)
  assert np.max(np.abs(out.astype(int) - blocks)) <= 0.5 + 1e-6


def test_area_resizer_matches_opencv():
  cv2 = pytest.importorskip("cv2")
  rng = np.random.default_rng(0)
  resize = atari_portable.AreaResizer((210, 160), (84, 84))
  for _ in range(20):
    image = rng.integers(0, 256, (210, 160), dtype=np.uint8)
    expected = cv2.resize(image, (84, 84), interpolation=cv2.INTER_AREA)
    assert np.max(np.abs(resize(image).astype(int) - expected)) <= 1


def test_area_resizer_matches_the_vector_envs_frames():
  """The portable path's numpy resize gives the C++ vector env's frames exactly: ALE's
  AtariVectorEnv max-pools the last two of four frames and resizes with INTER_AREA.
  Both play the same actions from the same seed, without no-op starts."""
  import gymnasium as gym  # pylint: disable=import-outside-toplevel
  from ale_py.vector_env import AtariVectorEnv  # pylint: disable=import-outside-toplevel
  vector = AtariVectorEnv("pong", 1, num_threads=1, repeat_action_probability=0.0,
                          noop_max=0, stack_num=1, frameskip=4, maxpool=True,
                          use_fire_reset=False, reward_clipping=False, episodic_life=False)
  raw = gym.make("ALE/Pong-v5", obs_type="grayscale", frameskip=1,
                 repeat_action_probability=0.0)
  try:
    vector.reset(seed=0)
    raw.reset(seed=0)
    resize = atari_portable.AreaResizer((210, 160), (84, 84))
    rng = np.random.default_rng(0)
    for _ in range(150):
      action = int(rng.integers(0, 6))
      vector.send(np.array([action]))
      frame = vector.recv()[0][0, 0]
      screens = [raw.step(action)[0] for _ in range(4)]
      np.testing.assert_array_equal(frame, resize(np.maximum(screens[2], screens[3])))
  finally:
    vector.close()
    raw.close()


# --- factory ---------------------------------------------------------------------------
def test_bad_name_lists_close_names():
  with pytest.raises(names.UnknownEnvironmentError, match="Pong"):
    factory.make_batched_env("Pongg", 2)
  with pytest.raises(names.UnknownEnvironmentError, match="CartPole-v1"):
    factory.make_batched_env("CartPol-v1", 2)


def test_bad_backend():
  with pytest.raises(ValueError, match="atari_backend.*'vector', 'portable'"):
    factory.make_batched_env("Pong", 2, atari_backend="turbo")


def test_portable_accepts_all_atari_name_forms():
  env = factory.make_batched_env("PongNoFrameskip-v4", 1, atari_backend="portable")
  try:
    assert env.num_actions == 6
  finally:
    env.close()


def test_describe_env():
  info = factory.describe_env("ALE/Pong-v5", atari_backend="portable", episodic_life=True)
  assert info["env_name"] == "Pong" and info["is_atari"] and info["rom_id"] == "pong"
  assert info["atari_backend"] == "portable"
  assert info["preprocessing"]["observation_shape"] == [84, 84, 4]
  assert info["preprocessing"]["episodic_life"] is True
  assert info["preprocessing"]["fire_reset"] is False
  info = factory.describe_env("Breakout", fire_reset=True)
  assert info["preprocessing"]["fire_reset"] is True
  info = factory.describe_env("CartPole-v1")
  assert info == {"env_name": "CartPole-v1", "is_atari": False, "gymnasium_id": "CartPole-v1",
                  "preprocessing": {"float64_observations_cast_to_float32": True,
                                    "reward_clipping": False}}


def test_channels_last_is_the_transpose_as_a_new_contiguous_array():
  rng = np.random.default_rng(0)
  for shape in ((32, 4, 84, 84), (1, 3, 5, 7)):
    obs = rng.integers(0, 256, size=shape, dtype=np.uint8)
    out = atari_vector.channels_last(obs)
    np.testing.assert_array_equal(out, obs.transpose(0, 2, 3, 1))
    assert out.flags.c_contiguous and not np.shares_memory(out, obs)


def test_channels_last_into_a_given_array_is_the_same_copy():
  rng = np.random.default_rng(1)
  for shape in ((32, 4, 84, 84), (2, 3, 5, 7), (2, 1, 5, 7)):
    obs = rng.integers(0, 256, size=shape, dtype=np.uint8)
    out = np.empty((shape[0], shape[2], shape[3], shape[1]), np.uint8)
    assert atari_vector.channels_last(obs, out) is out
    np.testing.assert_array_equal(out, obs.transpose(0, 2, 3, 1))
