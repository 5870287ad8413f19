"""The batched-environment contract shared by this package's environments (the Atari vector
env, the n_w worker pool, the gymnasium adapter): step-type values, the spec plumbing of
n_e environments behind one batched TF-Agents PyEnvironment, and what `num_actions` means.

Actions are either discrete (an int64 scalar spec [0, n-1]: `num_actions` is n) or
continuous (a float32 `BoundedArraySpec` of some shape with finite bounds, from a gymnasium
`Box`): such an environment has no `num_actions`; reading it raises `NoDiscreteActionsError`,
an AttributeError (so `getattr(env, "num_actions", None)` is None and `hasattr` is False)
that is also a ValueError.
"""
import numpy as np
from tf_agents.environments import py_environment
from tf_agents.specs import array_spec
from tf_agents.trajectories import time_step as ts

# TF-Agents' step types as the int32 values of the batched `step_type` arrays.
FIRST, MID, LAST = (np.int32(ts.StepType.FIRST), np.int32(ts.StepType.MID),
                    np.int32(ts.StepType.LAST))


class NoDiscreteActionsError(AttributeError, ValueError):
  """`num_actions` of an environment whose actions are continuous (a float Box)."""


def is_discrete_spec(action_spec):
  """Whether `action_spec` is one integer action (Discrete), not an array of floats (Box)."""
  return tuple(action_spec.shape) == () and np.issubdtype(np.dtype(action_spec.dtype),
                                                          np.integer)


def num_actions(action_spec, owner="this environment"):
  """n of a discrete action spec [minimum, maximum]; NoDiscreteActionsError for a Box."""
  if not is_discrete_spec(action_spec):
    raise NoDiscreteActionsError(
        "num_actions is defined only for discrete actions; %s has continuous actions %s "
        "(use action_spec())." % (owner, action_spec))
  return int(action_spec.maximum) - int(action_spec.minimum) + 1


class BatchedPyEnvironment(py_environment.PyEnvironment):
  """A batched PyEnvironment whose subclass sets `_num_envs`, `_obs_spec` and
  `_action_spec`; rewards are float32 scalars per environment."""

  @property
  def batched(self):
    return True

  @property
  def batch_size(self):
    return self._num_envs

  def observation_spec(self):
    return self._obs_spec

  def action_spec(self):
    return self._action_spec

  def reward_spec(self):
    return array_spec.ArraySpec((), np.float32, name="reward")
