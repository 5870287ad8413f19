"""The batched-environment contract shared by this package's environments (the Atari vector
env, the n_w worker pool, the gymnasium adapter): step-type values and the spec plumbing of
n_e environments behind one batched TF-Agents PyEnvironment."""
import numpy as np
from tf_agents.environments import py_environment
from tf_agents.specs import array_spec
from tf_agents.trajectories import time_step as ts

# TF-Agents' step types as the int32 values of the batched `step_type` arrays.
FIRST, MID, LAST = (np.int32(ts.StepType.FIRST), np.int32(ts.StepType.MID),
                    np.int32(ts.StepType.LAST))


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
