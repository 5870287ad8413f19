"""A tiny gymnasium environment that registers itself on import, for the custom-env tests.

`TinyCorridor-v0`: a corridor of LENGTH cells; action 1 moves right, 0 left; reaching
the right end gives reward 1 and ends the episode (terminated), 20 steps without reaching
it truncate. Observation: float32 [position / (LENGTH - 1), steps / 20].

Importable as `tests.custom_env_module` from the repository root, so both
`"tests.custom_env_module:TinyCorridor-v0"` and a plain `"TinyCorridor-v0"` after
`import tests.custom_env_module` name it.
"""
import gymnasium as gym
import numpy as np
from gymnasium import spaces

ENV_ID = "TinyCorridor-v0"
LENGTH = 5
MAX_STEPS = 20


class TinyCorridorEnv(gym.Env):
  """Walk right to the end of a 5-cell corridor."""

  def __init__(self):
    self.observation_space = spaces.Box(0.0, 1.0, (2,), np.float32)
    self.action_space = spaces.Discrete(2)
    self._position = 0
    self._steps = 0

  def _observation(self):
    return np.array([self._position / (LENGTH - 1), self._steps / MAX_STEPS], np.float32)

  def reset(self, *, seed=None, options=None):
    super().reset(seed=seed)
    self._position = int(self.np_random.integers(0, LENGTH - 1))
    self._steps = 0
    return self._observation(), {}

  def step(self, action):
    self._position = max(0, self._position + (1 if int(action) == 1 else -1))
    self._steps += 1
    terminated = self._position >= LENGTH - 1
    truncated = not terminated and self._steps >= MAX_STEPS
    return self._observation(), float(terminated), terminated, truncated, {}


if ENV_ID not in gym.registry:
  gym.register(ENV_ID, entry_point="%s:TinyCorridorEnv" % __name__)


JACKPOT_ID = "Jackpot-v0"


class JackpotEnv(gym.Env):
  """One step per episode, return 1000 whatever the action: any config's stop-at-return
  target is met by its first 100 episodes (tests/test_stop_target.py). No reward_threshold."""

  def __init__(self):
    self.observation_space = spaces.Box(0.0, 1.0, (2,), np.float32)
    self.action_space = spaces.Discrete(2)

  def reset(self, *, seed=None, options=None):
    super().reset(seed=seed)
    return np.zeros(2, np.float32), {}

  def step(self, action):
    return np.zeros(2, np.float32), 1000.0, True, False, {}


if JACKPOT_ID not in gym.registry:
  gym.register(JACKPOT_ID, entry_point="%s:JackpotEnv" % __name__)
