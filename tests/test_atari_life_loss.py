"""Atari `fire_reset` and `episodic_life` (lost life = LAST with discount 0), both backends.

Scripted fakes check the bookkeeping of both backends step by step (forced FIRE/NOOP,
step types, discounts, rewards, whole-game accounting, edge cases); real games check that
the two backends play alike, bit for bit, and what FIRE does in Breakout.
"""
import ale_py
from ale_py import vector_env as ale_vector_env
import gymnasium as gym
import numpy as np
import pytest
from tf_agents.trajectories import time_step as ts

from paac_tf.envs import atari_portable
from paac_tf.envs import atari_vector
from paac_tf.envs import environment
from paac_tf.envs import factory

pytestmark = pytest.mark.timeout(300)

FIRST, MID, LAST = int(ts.StepType.FIRST), int(ts.StepType.MID), int(ts.StepType.LAST)
BACKENDS = ("vector", "portable")
FIRE_MEANINGS = ["NOOP", "FIRE", "RIGHT", "LEFT"]
NO_FIRE_MEANINGS = ["NOOP", "UP", "RIGHT", "LEFT"]


def test_uses_fire_rule():
  assert atari_vector.uses_fire(FIRE_MEANINGS)
  assert atari_vector.uses_fire(["NOOP", "FIRE", "UP"])
  assert not atari_vector.uses_fire(["NOOP", "FIRE"])            # fewer than 3 actions
  assert not atari_vector.uses_fire(NO_FIRE_MEANINGS)
  assert not atari_vector.uses_fire(["NOOP", "UP", "FIRE", "LEFT"])   # FIRE not action 1
  assert atari_vector.uses_fire(atari_vector.rom_action_meanings("pong"))
  assert atari_vector.uses_fire(atari_vector.rom_action_meanings("breakout"))
  assert not atari_vector.uses_fire(atari_vector.rom_action_meanings("ms_pacman"))


# --- scripted fakes: the same game for both backends ----------------------------------------
# Each executed step consumes (reward, lives after it, terminated, truncated). Lives start
# at 3. The agent always asks for action 2 (RIGHT); the env plays what it decides.
SCRIPT = [
    (1.0, 3, False, False),   # MID
    (0.0, 2, False, False),   # a life lost, the game goes on
    (5.0, 2, False, False),   # the step after it (FIRST with episodic life): reward 5
    (0.0, 1, False, False),   # a life lost
    (3.0, 1, False, True),    # the step after it hits the time limit: LAST (truncated)
    (2.0, 3, False, False),   # [reset before] second game: MID
    (0.0, 2, True, False),    # a life lost at the step that ends the game: LAST
    (1.0, 3, False, False),   # [reset before] third game
]
AGENT_ACTION = 2


class _Script:
  """The scripted game: hands out the script's steps, records the actions played."""

  def __init__(self):
    self.pos = 0
    self.lives = 3
    self.played = []

  def play(self, action):
    reward, self.lives, terminated, truncated = SCRIPT[self.pos]
    self.pos += 1
    self.played.append(int(action))
    return reward, terminated, truncated

  def reset(self):
    self.lives = 3

  def frame(self, stack):
    return np.full(stack, self.pos % 256, np.uint8)


class _FakeAle:

  def __init__(self, script):
    self._script = script

  def lives(self):
    return self._script.lives


class _FakeAtariVectorEnv:
  """Stands in for ale_py's AtariVectorEnv (one env, NextStep auto-reset)."""
  instances = []

  def __init__(self, rom_id, num_envs, use_fire_reset=True, **kwargs):
    del rom_id, kwargs
    assert num_envs == 1
    self.use_fire_reset = use_fire_reset
    self.script = _Script()
    self.single_action_space = gym.spaces.Discrete(4)
    self._ended = False
    self._action = None
    _FakeAtariVectorEnv.instances.append(self)

  def _info(self):
    return {"env_id": np.array([0]), "lives": np.array([self.script.lives])}

  def _obs(self):
    return self.script.frame((1, 4, 84, 84))

  def reset(self, seed=None):
    del seed
    self.script.reset()
    self._ended = False
    return self._obs(), self._info()

  def send(self, action):
    self._action = int(np.asarray(action)[0])

  def recv(self):
    if self._ended:
      self.script.reset()
      self._ended = False
      reward, terminated, truncated = 0.0, False, False
    else:
      reward, terminated, truncated = self.script.play(self._action)
      self._ended = terminated or truncated
    return (self._obs(), np.array([reward]), np.array([terminated]), np.array([truncated]),
            self._info())

  def close(self):
    pass


class _FakeGymAtari(gym.Env):
  """Stands in for the preprocessed gymnasium ALE env of a portable slot."""

  def __init__(self, meanings):
    self.script = _Script()
    self.ale = _FakeAle(self.script)
    self._meanings = list(meanings)
    self.observation_space = gym.spaces.Box(0, 255, (84, 84, 4), np.uint8)
    self.action_space = gym.spaces.Discrete(4)

  def get_action_meanings(self):
    return self._meanings

  def reset(self, *, seed=None, options=None):
    super().reset(seed=seed)
    self.script.reset()
    return self.script.frame((84, 84, 4)), {}

  def step(self, action):
    reward, terminated, truncated = self.script.play(action)
    return self.script.frame((84, 84, 4)), reward, terminated, truncated, {}


def _scripted_env(backend, meanings, monkeypatch, **kwargs):
  """A batched env of one scripted game and its script (to read the actions played)."""
  if backend == "vector":
    monkeypatch.setattr(ale_vector_env, "AtariVectorEnv", _FakeAtariVectorEnv)
    monkeypatch.setattr(atari_vector, "rom_action_meanings", lambda *args: meanings)
    _FakeAtariVectorEnv.instances.clear()
    env = atari_vector.AtariVectorPyEnvironment("fake", 1, **kwargs)
    fake = _FakeAtariVectorEnv.instances[0]
    assert fake.use_fire_reset == env.presses_fire   # ale-py presses FIRE at game start
    return env, fake.script
  fake = _FakeGymAtari(meanings)
  fire_reset = kwargs.pop("fire_reset", False)
  episodic_life = kwargs.pop("episodic_life", False)
  slot = atari_portable.AtariPortablePyEnvironment(
      fake, seed=0, episodic_life=episodic_life, fire_reset=fire_reset)
  env = atari_portable.AtariPortableBatchedPyEnvironment(
      [lambda: slot], 0, presses_fire=slot.presses_fire, **kwargs)
  return env, fake.script


def _play_script(env):
  steps = [env.reset()]
  for _ in range(len(SCRIPT) + 2):   # + the two resets
    steps.append(env.step(np.array([AGENT_ACTION])))
  return ([int(t.step_type[0]) for t in steps], [float(t.reward[0]) for t in steps],
          [float(t.discount[0]) for t in steps])


@pytest.mark.parametrize("backend", BACKENDS)
def test_scripted_episodic_life_with_fire_reset(backend, monkeypatch):
  env, script = _scripted_env(backend, FIRE_MEANINGS, monkeypatch, fire_reset=True,
                              episodic_life=True, reward_clipping=True)
  assert env.presses_fire
  step_types, rewards, discounts = _play_script(env)
  assert step_types == [FIRST, MID, LAST, FIRST, LAST, LAST, FIRST, MID, LAST, FIRST, MID]
  assert discounts == [1, 1, 0, 1, 0, 1, 1, 1, 0, 1, 1]
  assert rewards == [0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 1]   # clipped; FIRST steps report 0
  # The steps after lost lives played FIRE; the agent's actions at LAST steps were ignored.
  assert script.played == [2, 2, 1, 2, 1, 2, 2, 2]
  # Whole games: every step counts, the FIRST step's raw reward (5) included.
  assert env.pop_finished_episodes() == [(9.0, 5), (2.0, 2)]
  env.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_scripted_episodic_life_without_fire_plays_noop(backend, monkeypatch):
  # fire_reset on, but the game does not use FIRE (action 1 is UP): the env plays NOOP.
  env, script = _scripted_env(backend, NO_FIRE_MEANINGS, monkeypatch, fire_reset=True,
                              episodic_life=True, reward_clipping=False)
  assert not env.presses_fire
  step_types, rewards, discounts = _play_script(env)
  assert step_types == [FIRST, MID, LAST, FIRST, LAST, LAST, FIRST, MID, LAST, FIRST, MID]
  assert discounts == [1, 1, 0, 1, 0, 1, 1, 1, 0, 1, 1]
  assert rewards == [0, 1, 0, 0, 0, 3, 0, 2, 0, 0, 1]   # raw
  assert script.played == [2, 2, 0, 2, 0, 2, 2, 2]
  assert env.pop_finished_episodes() == [(9.0, 5), (2.0, 2)]
  env.close()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("meanings", [FIRE_MEANINGS, NO_FIRE_MEANINGS])
def test_scripted_fire_reset_without_episodic_life(backend, meanings, monkeypatch):
  # Evaluation of a policy trained with both: whole games, FIRE after each lost life.
  env, script = _scripted_env(backend, meanings, monkeypatch, fire_reset=True,
                              reward_clipping=False)
  step_types, rewards, discounts = _play_script(env)
  assert step_types == [FIRST, MID, MID, MID, MID, LAST, FIRST, MID, LAST, FIRST, MID]
  assert discounts == [1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1]
  assert rewards == [0, 1, 0, 5, 0, 3, 0, 2, 0, 0, 1]
  fire = 1 if meanings == FIRE_MEANINGS else 2   # else the agent's action is played
  assert script.played == [2, 2, fire, 2, fire, 2, 2, 2]
  assert env.pop_finished_episodes() == [(9.0, 5), (2.0, 2)]
  env.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_scripted_both_options_off(backend, monkeypatch):
  env, script = _scripted_env(backend, FIRE_MEANINGS, monkeypatch, reward_clipping=False)
  assert not env.presses_fire
  step_types, rewards, discounts = _play_script(env)
  assert step_types == [FIRST, MID, MID, MID, MID, LAST, FIRST, MID, LAST, FIRST, MID]
  assert discounts == [1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1]
  assert rewards == [0, 1, 0, 5, 0, 3, 0, 2, 0, 0, 1]
  assert script.played == [2] * len(SCRIPT)
  # With the index of the environment that played each game (the only one here).
  assert env.pop_finished_episodes(with_env_index=True) == [(9.0, 5, 0), (2.0, 2, 0)]
  env.close()


# --- real games ----------------------------------------------------------------------------
def _make(game, backend, num_envs=2, **kwargs):
  kwargs.setdefault("noop_max", 0)
  return factory.make_batched_env(game, num_envs, num_workers=0, num_threads=1, seed=0,
                                  atari_backend=backend, **kwargs)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("game,options,steps", [
    # Random Breakout: lost lives, games over and (802 frames: within a frame skip) time
    # limits all occur.
    ("Breakout", dict(fire_reset=True, episodic_life=True, max_episode_frames=802), 900),
    ("Pong", dict(fire_reset=True, episodic_life=True, max_episode_frames=402), 250),
    ("MsPacman", dict(fire_reset=True, episodic_life=True), 500),
    ("Pong", dict(), 150),
])
def test_backends_play_alike(game, options, steps):
  """Same seed, no no-op starts (the backends draw them from different generators), same
  actions: the same step types, rewards, discounts, frames (bit for bit) and games."""
  envs = {backend: _make(game, backend, **options) for backend in BACKENDS}
  try:
    vector, portable = envs["vector"], envs["portable"]
    assert vector.presses_fire == portable.presses_fire == bool(
        options.get("fire_reset") and game != "MsPacman")
    a, b = vector.reset(), portable.reset()
    np.testing.assert_array_equal(a.observation, b.observation)
    rng = np.random.default_rng(0)
    seen = set()
    for i in range(steps):
      action = rng.integers(0, vector.num_actions, 2)
      a, b = vector.step(action), portable.step(action)
      for field in ("step_type", "reward", "discount", "observation"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field),
                                      err_msg="%s at step %d" % (field, i))
      seen.update(zip(a.step_type.tolist(), a.discount.tolist()))
    assert (vector.pop_finished_episodes(with_env_index=True) ==
            portable.pop_finished_episodes(with_env_index=True))
    if game == "Breakout":   # lost lives, games over and time limits all happened
      assert {(FIRST, 1.0), (MID, 1.0), (LAST, 0.0), (LAST, 1.0)} <= seen
  finally:
    for env in envs.values():
      env.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_breakout_noop_with_fire_reset_loses_lives(backend):
  """The env's FIRE launches the ball; a paddle that never moves misses it: each lost
  life is LAST with discount 0, the next step FIRST, games are whole in the accounting."""
  env = _make("Breakout", backend, fire_reset=True, episodic_life=True, reward_clipping=False)
  try:
    assert env.presses_fire
    env.reset()
    noop = np.zeros(2, np.int64)
    steps = [env.step(noop) for _ in range(300)]
    step_type = np.array([t.step_type for t in steps])
    discount = np.array([t.discount for t in steps])
    reward = np.array([t.reward for t in steps])
    for e in range(2):
      lasts = np.flatnonzero(step_type[:, e] == LAST)
      assert len(lasts) >= 5                          # 5 lives: a whole game at least
      assert np.all(discount[lasts, e] == 0.0)        # lost lives and games over
      after = lasts[lasts + 1 < len(steps)] + 1
      assert np.all(step_type[after, e] == FIRST) and np.all(reward[after, e] == 0.0)
      assert np.all(discount[step_type[:, e] != LAST, e] == 1.0)
    finished = env.pop_finished_episodes(with_env_index=True)
    assert len(finished) >= 2
    # A game is 5 lives: as many LAST steps per game as lives, its length all its steps.
    assert all(length > 5 * 20 for _, length, _ in finished)
    for e in range(2):   # each environment's first game ends at its 5th LAST step
      games = [length for _, length, index in finished if index == e]
      assert games and games[0] == int(np.flatnonzero(step_type[:, e] == LAST)[4]) + 1
  finally:
    env.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_breakout_noop_without_fire_reset_loses_no_life(backend):
  env = _make("Breakout", backend, fire_reset=False, episodic_life=True)
  try:
    assert not env.presses_fire
    env.reset()
    for _ in range(300):   # nobody launches the ball
      t = env.step(np.zeros(2, np.int64))
      assert np.all(t.step_type == MID) and np.all(t.discount == 1.0)
    assert env.pop_finished_episodes() == []
  finally:
    env.close()


def test_game_without_fire_plays_the_same_with_fire_reset():
  """MsPacman's action 1 is UP: fire_reset changes nothing there (episodic life: NOOP)."""
  runs = []
  for fire_reset in (False, True):
    env = _make("MsPacman", "vector", fire_reset=fire_reset, episodic_life=True)
    try:
      assert not env.presses_fire
      steps = [env.reset()]
      rng = np.random.default_rng(1)
      steps += [env.step(rng.integers(0, env.num_actions, 2)) for _ in range(400)]
      runs.append((steps, env.pop_finished_episodes()))
    finally:
      env.close()
  (a, finished_a), (b, finished_b) = runs
  for x, y in zip(a, b):
    for field in ("step_type", "reward", "discount", "observation"):
      np.testing.assert_array_equal(getattr(x, field), getattr(y, field))
  assert finished_a == finished_b
  assert any((t.step_type == LAST).any() for t in a)   # lives were lost


@pytest.mark.parametrize("rom_id,gymnasium_id", [("pong", "ALE/Pong-v5"),
                                                 ("breakout", "ALE/Breakout-v5")])
def test_fire_at_game_start_is_one_frame_like_ale_py(rom_id, gymnasium_id):
  """What ale-py's C++ env does (measured) and the portable preprocessing copies: FIRE
  for one frame at reset, in place of the first no-op (none without no-ops)."""
  from ale_py.vector_env import AtariVectorEnv  # pylint: disable=import-outside-toplevel
  for noop_max in (0, 30):
    frames = {}
    for fire in (False, True):
      vector = AtariVectorEnv(rom_id, 4, num_threads=1, noop_max=noop_max,
                              use_fire_reset=fire)
      try:
        frames[fire] = vector.reset(seed=0)[1]["episode_frame_number"].tolist()
      finally:
        vector.close()
    if noop_max == 0:
      assert frames == {False: [0] * 4, True: [1] * 4}
    else:
      assert frames[True] == frames[False] and min(frames[False]) >= 1
  gym.register_envs(ale_py)
  for fire, expected in ((False, 0), (True, 1)):
    env = atari_portable.AtariVectorPreprocessing(
        gym.make(gymnasium_id, frameskip=1, obs_type="grayscale",
                 repeat_action_probability=0.0), noop_max=0, fire_reset=fire)
    try:
      env.reset(seed=0)
      assert env.unwrapped.ale.getEpisodeFrameNumber() == expected
    finally:
      env.close()


def test_make_environment_and_describe_env_take_fire_reset():
  env = environment.make_environment("Breakout", 2, 1, 0, fire_reset=True, episodic_life=True)
  try:
    assert env.presses_fire
  finally:
    env.close()
  env = environment.make_environment("Breakout", 2, 1, 0)
  try:
    assert not env.presses_fire
  finally:
    env.close()
  assert factory.describe_env("Breakout", fire_reset=True)["preprocessing"]["fire_reset"]
  assert not factory.describe_env("Breakout")["preprocessing"]["fire_reset"]
