"""Evaluation while training in the Ape-X learner (`apex_learner.eval_interval`), for both
replay algorithms: the harness's evaluator on a real learner step (Ape-X DQN on CartPole,
Ape-X DPG on Pendulum) leaves the step's state as it was and plays its own seeds; and
short whole runs through `paac_tf.train` (the one-machine launcher, the learner in this
process) write Eval/* to TensorBoard and summaries.csv, tell the callbacks and end with
the last evaluation in the result and its summary. On Ray: tests/test_apex_ray.py's
two-node run (`make test-cluster`)."""
import csv
import os

import gin
import numpy as np
import pytest
import tensorflow as tf

import paac_tf
from paac_tf.algorithms import registry
from paac_tf.envs import environment
from paac_tf.runners import harness
from paac_tf.runners import train_eval
from paac_tf.runners.apex import replay_layout

train_eval.load_configurables()

# (algorithm, environment, small-network bindings, its test config).
CASES = {
    "apex": ("CartPole-v1", ["apex_network.network = 'mlp'", "apex_network.mlp_units = (16,)"],
             "apex_cartpole.gin"),
    "apex_dpg": ("Pendulum-v1", ["dpg_networks.actor_units = (16,)",
                                 "dpg_networks.critic_units = (16,)"],
                 "apex_dpg_pendulum.gin"),
}


@pytest.fixture(autouse=True)
def clean_gin():
  gin.clear_config()
  yield
  gin.clear_config()


def _state(step):
  """Every value the learner step's checkpoint holds (networks, targets, optimizers' slots,
  step counter), as numpy copies."""
  variables = []
  for trackable in step.checkpoint_trackables().values():
    if isinstance(trackable, tf.Variable):
      variables.append(trackable)
      continue
    found = trackable.variables   # a Keras model's list, a legacy optimizer's method
    variables.extend(found() if callable(found) else found)
  return [np.array(v.numpy(), copy=True) for v in variables]


@pytest.mark.timeout(240)
@pytest.mark.parametrize("name", sorted(CASES))
def test_an_evaluation_leaves_the_learner_step_as_it_was(tmp_path, name):
  env_name, bindings, _ = CASES[name]
  gin.parse_config(bindings)
  algorithm = registry.get(name)
  observation_spec, action_spec = environment.specs(env_name)
  step = algorithm.make_learner_step(action_spec, observation_spec,
                                     replay_layout.ReplayLayout(observation_spec, action_spec),
                                     seed=3)
  spec = algorithm.network_spec(action_spec, observation_spec, **algorithm.network_settings())
  books = harness.Harness(str(tmp_path), env_name, algorithm, **step.checkpoint_trackables())
  evaluate = books.evaluator(step.policy_network, lambda: algorithm.build_network(spec),
                             observation_spec, 3)
  before = _state(step)
  first = evaluate(1000)
  after = _state(step)
  assert len(after) == len(before) > 4
  for a, b in zip(after, before):
    np.testing.assert_array_equal(a, b)
  assert first["agent_steps"] == 1000 and first["episodes"] == 3 and len(first["returns"]) == 3
  assert first["epsilon"] == algorithm.eval_epsilon(True)   # as the greedy exports
  # The same weights play the same seeded games: the evaluation's random streams are its own.
  second = evaluate(2000)
  assert (second["returns"], second["lengths"]) == (first["returns"], first["lengths"])


def _csv_rows(root_dir, prefix):
  with open(os.path.join(root_dir, "train", "summaries.csv"), newline="") as f:
    return [r for r in csv.DictReader(f) if r["tag"].startswith(prefix)]


def _event_scalars(root_dir, tag):
  """[(step, value)] of `tag` in root_dir/train's event files."""
  out = []
  train = os.path.join(root_dir, "train")
  for name in sorted(os.listdir(train)):
    if name.startswith("events.out.tfevents"):
      for event in tf.compat.v1.train.summary_iterator(os.path.join(train, name)):
        out.extend((event.step, float(tf.make_ndarray(v.tensor)))
                   for v in event.summary.value if v.tag == tag)
  return sorted(out)


class Evaluations:
  def __init__(self):
    self.results = []

  def on_evaluation(self, result):
    self.results.append(result)


# Ape-X DQN's run stays in the default suite (~25 s on 2 loaded cores), DPG's is
# `make test-system`'s: the learner's wiring is the same for both.
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", ["apex", pytest.param("apex_dpg", marks=pytest.mark.system)])
def test_a_short_run_evaluates_while_training_and_ends_with_the_last_evaluation(tmp_path,
                                                                               name):
  _, _, gin_file = CASES[name]
  heard = Evaluations()
  # The replay's rate limiter ties the actor to the learner: each transition is sampled 32
  # times (one batch), and the actor may run only error_buffer / 32 = 2 transitions (and
  # its unsent chunks) ahead, so the budget takes thousands of learner steps, seconds on any
  # machine, over which actor and learner report and drain 5 times a second. (At the
  # config's 2 samples per insert, a fast machine's actor can play the whole budget before
  # the learner's first drain, which leaves only the final evaluation.)
  result = paac_tf.train(gin_file, {
      "train_eval.total_steps": 3000, "run_local.num_actors": 1,
      "apex_replay.learning_starts": 200, "apex_replay.capacity": 10000,
      "apex_replay.samples_per_insert": 32.0, "apex_replay.error_buffer": 64.0,
      "apex_actor.report_interval_s": 0.2, "apex_learner.report_interval_s": 0.2,
      "apex_learner.batch_size": 32, "apex_learner.stop_at_average_return": None,
      "apex_learner.eval_interval": 1000, "apex_learner.eval_episodes": 2},
      root_dir=str(tmp_path / "run"), callbacks=[heard])
  assert result.reason == "done" and result.updates > 1000, result
  steps = [e["agent_steps"] for e in heard.results]
  # One evaluation when a multiple of 1,000 agent steps is passed (at a drain of the actors'
  # reports, so 1,000 to 1,000 + what a fifth of a second adds), and one at the end.
  assert len(steps) >= 3 and steps == sorted(set(steps)) and steps[0] >= 1000, steps
  assert steps[-2] < 3000 <= steps[-1], steps
  assert steps[-1] == result.agent_steps and result.evaluation == heard.results[-1]
  assert all(e["episodes"] == 2 for e in heard.results)
  assert result.eval_seconds == pytest.approx(sum(e["wall_time_s"] for e in heard.results),
                                              abs=0.01)
  assert result.eval_setting == "apex_learner.eval_interval"
  means = [e["mean"] for e in heard.results]
  rows = _csv_rows(result.root_dir, "Eval/AverageReturn")
  assert [int(r["step"]) for r in rows] == steps
  assert [float(r["value"]) for r in rows] == pytest.approx(means)
  events = _event_scalars(result.root_dir, "Eval/AverageReturn")
  assert [s for s, _ in events] == steps and [v for _, v in events] == pytest.approx(means)
  assert ("  Evaluation at agent step %d: mean return %.2f +- %.2f (std) over 2 episodes "
          "(the evaluation protocol)." % (result.agent_steps, result.evaluation["mean"],
                                          result.evaluation["std"])) in result.summary()
