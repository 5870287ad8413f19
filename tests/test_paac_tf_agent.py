"""PaacTFAgent (paac_tf/algorithms/paac/tf_agent.py): PAAC's update as a TF-Agents agent,
and examples/tf_agents_cartpole.py's training loop."""
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import time_step as ts
from tf_agents.trajectories import trajectory
from tf_agents.utils import common

from conftest import REPO
from paac_tf.algorithms.paac import PaacTFAgent
from paac_tf.algorithms.paac import settings as settings_lib
from paac_tf.algorithms.paac import update
from paac_tf.networks import actor_critic
from paac_tf.networks import optimizers

T, B, A = 4, 3, 2
FIRST, MID, LAST = int(ts.StepType.FIRST), int(ts.StepType.MID), int(ts.StepType.LAST)
SETTINGS = dict(learning_rate=0.03, entropy_coef=0.01, value_coef=0.25, loss_scale=5.0,
                max_grad_norm=3.0, gamma=0.99)
OBSERVATION = tensor_spec.TensorSpec((4,), tf.float32, "observation")
ACTION = tensor_spec.BoundedTensorSpec((), tf.int64, 0, A - 1, "action")
EXAMPLE = os.path.join(REPO, "examples", "tf_agents_cartpole.py")


def _model():
  return actor_critic.build_actor_critic(A, OBSERVATION, torso="mlp", seed=7)


def _rollout(seed=0):
  """A time-major rollout of T steps from B environments and its last observation (T + 1
  time steps ts_0..ts_T), with episode ends: env 0 terminates at ts_2 (its step 2 is the
  auto-reset), env 1 is truncated at ts_1 (discount 1) and terminates at ts_4 = ts_T."""
  rng = np.random.default_rng(seed)
  step_types = np.full((T + 1, B), MID, np.int32)
  step_types[2, 0], step_types[3, 0] = LAST, FIRST
  step_types[1, 1], step_types[2, 1], step_types[4, 1] = LAST, FIRST, LAST
  discounts = np.ones((T + 1, B), np.float32)   # of ts_{t+1}
  discounts[1, 0] = 0.0                         # ts_2 of env 0: terminated
  discounts[3, 1] = 0.0                         # ts_4 of env 1: terminated
  rewards = rng.uniform(-1, 1, (T + 1, B)).astype(np.float32)   # of ts_{t+1}
  rewards[2, 0] = rewards[1, 1] = 0.0           # a FIRST time step's reward
  next_types = np.concatenate([step_types[1:], np.full((1, B), MID, np.int32)])
  return dict(observation=rng.normal(size=(T + 1, B, 4)).astype(np.float32),
              action=rng.integers(0, A, (T + 1, B)).astype(np.int64), step_type=step_types,
              next_step_type=next_types, reward=rewards, discount=discounts)


def _experience(rollout):
  """The rollout as TF-Agents' [B, T + 1] Trajectory (what gather_all returns)."""
  batch_major = {k: tf.constant(np.swapaxes(v, 0, 1)) for k, v in rollout.items()}
  return trajectory.Trajectory(policy_info=(), **batch_major)


class _Reference:
  """The CLI's update, as the training loop makes its parts: the model, TF1's RMSProp
  annealed over 10 updates, and `update.train_step`."""

  def __init__(self):
    self.settings = settings_lib.PaacSettings(**SETTINGS)
    self.model = _model()
    self.optimizer = optimizers.rmsprop(self.model, self.settings.learning_rate, 10,
                                        self.settings.rmsprop_decay,
                                        self.settings.rmsprop_epsilon)


def _reference_update(rollout):
  """paac_tf's own update (update.train_step, the training loop's) on the rollout,
  time-major, the bootstrap values from the model: (its metrics, the reference parts after
  the step)."""
  reference = _Reference()
  values = reference.model(rollout["observation"].reshape(-1, 4))[1].numpy().reshape(T + 1, B)
  steps = np.stack([rollout["reward"][:T], rollout["discount"][:T],
                    rollout["next_step_type"][:T] == LAST,
                    rollout["step_type"][:T] == LAST]).astype(np.float32)
  vector = update.train_step(reference.model, reference.optimizer, reference.settings,
                             tf.constant(rollout["observation"][:T]),
                             tf.constant(rollout["action"][:T]), tf.constant(steps),
                             tf.constant(values))
  return dict(zip(update.METRIC_NAMES, vector.numpy().tolist())), reference


def _tf_agent(**kwargs):
  time_step_spec = ts.time_step_spec(OBSERVATION)
  return PaacTFAgent(time_step_spec, ACTION, actor_critic_network=_model(), t_max=T,
                     **dict(dict(total_updates=10, **SETTINGS), **kwargs))


def _assert_same_update(loss_info, agent, expected_metrics, reference):
  assert float(loss_info.loss) == pytest.approx(expected_metrics["Losses/total"], rel=1e-5)
  for name, value in expected_metrics.items():
    assert float(loss_info.extra[name]) == pytest.approx(value, rel=1e-5, abs=1e-6), name
  for got, want in zip(agent.model.get_weights(), reference.model.get_weights()):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
  for got, want in zip(agent.optimizer.ms, reference.optimizer.ms):
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("compiled", [False, True])
def test_train_is_paacs_own_update_on_the_same_batch(compiled):
  """Same initial weights, same batch: the TF-Agents agent's train(experience) gives the
  losses, weights and RMSProp state of update.train_step on the time-major rollout."""
  rollout = _rollout()
  expected, reference = _reference_update(rollout)
  agent = _tf_agent(train_step_counter=tf.Variable(0, dtype=tf.int64))
  initial = _model()
  for got, want in zip(agent.model.get_weights(), initial.get_weights()):
    np.testing.assert_array_equal(got, want)
  train = common.function(agent.train) if compiled else agent.train
  loss_info = train(_experience(rollout))
  _assert_same_update(loss_info, agent, expected, reference)
  assert int(agent.train_step_counter.numpy()) == 1
  assert float(loss_info.extra["Losses/value"]) > 0   # not an empty mask
  moved = [np.abs(a - b).max() for a, b in zip(agent.model.get_weights(),
                                                initial.get_weights())]
  assert min(moved) > 0


def test_train_takes_a_batch_of_unknown_size():
  """A replay buffer's dataset batch has no static batch size: the compiled train step
  traced for [None, T + 1] gives the same update."""
  rollout = _rollout(seed=1)
  expected, reference = _reference_update(rollout)
  agent = _tf_agent()
  experience = _experience(rollout)
  signature = tf.nest.map_structure(lambda x: tf.TensorSpec([None] + x.shape[1:], x.dtype),
                                    experience)
  train = tf.function(lambda experience: agent.train(experience), input_signature=[signature])
  _assert_same_update(train(experience), agent, expected, reference)


def test_train_refuses_a_rollout_of_another_length():
  agent = _tf_agent()
  short = {k: v[:T] for k, v in _rollout().items()}
  with pytest.raises(ValueError):
    agent.train(_experience(short))


def test_a_keras_optimizer_is_used_as_given():
  agent = _tf_agent(optimizer=tf.keras.optimizers.SGD(0.5), total_updates=None)
  before = agent.model.get_weights()
  loss_info = agent.train(_experience(_rollout()))
  assert float(loss_info.extra["Optimizer/learning_rate"]) == pytest.approx(0.5)
  assert any(np.abs(a - b).max() > 0 for a, b in zip(agent.model.get_weights(), before))


def test_the_policies_act_from_the_actors_logits():
  agent = _tf_agent()
  observations = tf.constant(np.random.default_rng(2).normal(size=(64, 4)), tf.float32)
  time_step = ts.restart(observations, batch_size=64)
  greedy = agent.policy.action(time_step).action.numpy()
  logits = agent.model(observations)[0].numpy()
  np.testing.assert_array_equal(greedy, logits.argmax(axis=1))
  sampled = agent.collect_policy.action(time_step).action.numpy()
  assert sampled.dtype == np.int64 and set(sampled) <= set(range(A))
  assert agent.collect_policy.variables() and len(agent.collect_policy.variables()) == len(
      agent.model.variables)


def _example():
  spec = importlib.util.spec_from_file_location("tf_agents_cartpole", EXAMPLE)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def test_the_examples_loop_trains_a_few_iterations():
  """examples/tf_agents_cartpole.py's loop (driver, replay buffer, train) on the in-process
  BatchedPyEnvironment, 3 driver runs."""
  result = _example().train(num_envs=4, t_max=5, batched=True, max_iterations=3,
                            log_seconds=0.0)
  assert result["updates"] == 3 and not result["reached"]
  # The first batched step, then 3 runs of at least n_e * t_max counted steps each.
  assert result["agent_steps"] >= 4 + 3 * 4 * 5
  assert np.isfinite(result["loss"])


@pytest.mark.system   # a whole run, ~2 minutes, with ParallelPyEnvironment's processes
def test_the_example_solves_cartpole_on_parallel_py_environment():
  """The example as a user runs it: 16 environment processes, until the last 100
  episodes average 475 (seed 0: 156,756 agent steps here)."""
  proc = subprocess.run([sys.executable, EXAMPLE], cwd=REPO, capture_output=True, text=True,
                        timeout=600, env=dict(os.environ, PYTHONPATH=REPO))
  assert proc.returncode == 0, proc.stderr[-3000:]
  result = json.loads(proc.stdout.strip().splitlines()[-1])
  assert result["environment"] == "ParallelPyEnvironment" and result["reached"]
  assert result["average_return"] >= 475.0 and result["agent_steps"] < 500_000
