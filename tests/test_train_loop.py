"""The default loop is the original's Algorithm 1, in its order (runners/sync/train_loop.py),
one file a reader can follow: per rollout t_max forward passes that act, then the bootstrap
values' own forward pass, then the update; the next rollout acts with the updated weights.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from conftest import REPO

import paac_tf
from paac_tf.networks import actor_critic
from paac_tf.runners import harness
from paac_tf.runners.sync import train_loop

pytestmark = pytest.mark.timeout(600)

N_E, T_MAX, UPDATES = 4, 3, 4

# The paac_tf files on the stack from `python -m paac_tf.train --gin_file=atari.gin` to the
# optimizer's apply (tests/reader_path.py); docs/extending.md lists them.
READER_PATH = [
    "paac_tf/algorithms/paac/algorithm.py",
    "paac_tf/algorithms/paac/update.py",
    "paac_tf/api.py",
    "paac_tf/envs/atari_vector.py",
    "paac_tf/networks/actor_critic.py",
    "paac_tf/networks/optimizers.py",
    "paac_tf/runners/sync/train_loop.py",
    "paac_tf/runners/train_eval.py",
    "paac_tf/train.py",
]


def test_each_rollout_acts_with_the_weights_of_the_update_before_it(monkeypatch, tmp_path):
  """Every forward pass logs its batch size and a fingerprint of the weights it ran under.
  Per update: t_max acting passes (n_e rows), one bootstrap pass (n_e rows), the update's
  pass (n_e * t_max rows), all under the same weights; the next rollout's under the new
  ones. The loop before the original's order chose each rollout's first actions in the
  previous rollout's bootstrap pass, under the weights one update old: this fails there."""
  log = []
  original_call = actor_critic.ActorCritic.call

  def call(self, observation, training=False):
    logits, value = original_call(self, observation, training)
    fingerprint = tf.reduce_sum(self.policy_head.kernel) + tf.reduce_sum(
        self.value_head.kernel)

    def record(rows, weights):
      log.append((int(rows), float(weights)))
      return np.int64(0)
    done = tf.py_function(record, [tf.shape(observation)[0], fingerprint], tf.int64)
    with tf.control_dependencies([done]):
      return tf.identity(logits), tf.identity(value)

  monkeypatch.setattr(actor_critic.ActorCritic, "call", call)
  # No export: a SavedModel cannot hold the py_function above.
  monkeypatch.setattr(harness, "training_exporter", lambda *a, **k: lambda *b, **c: None)
  result = paac_tf.train("cartpole.gin", {
      "paac.num_envs": N_E, "paac.num_workers": 0, "paac.t_max": T_MAX,
      "train_eval.total_steps": N_E * T_MAX * UPDATES, "paac.summary_interval": 1,
      "paac.eval_interval": None},   # no evaluation while training: it acts as the exports
      root_dir=str(tmp_path / "run"))
  assert result.updates == UPDATES
  passes = [entry for entry in log if entry[0] in (N_E, N_E * T_MAX)]
  expected = ([N_E] * T_MAX + [N_E] + [N_E * T_MAX]) * UPDATES
  assert [rows for rows, _ in passes] == expected
  per_update = [passes[k * (T_MAX + 2):(k + 1) * (T_MAX + 2)] for k in range(UPDATES)]
  weights = []
  for rollout in per_update:
    assert len({w for _, w in rollout}) == 1, rollout   # acting, bootstrap, update: same
    weights.append(rollout[0][1])
  assert len(set(weights)) == UPDATES   # each update changed them; the next rollout saw it


def test_each_update_gets_a_consistent_rollout(monkeypatch, tmp_path):
  """The arrays the loop fills, as the update receives them (CartPole, n_e 4, t_max 5, 12
  updates: episodes end inside rollouts): the step type seen after step t is the one acted on
  at step t + 1; reward 1 for every real step and 0 for the auto-reset after a LAST; discount
  0 only where an episode ended; V(s_T) is the bootstrap pass's; each rollout starts from
  the observation the previous one bootstrapped from."""
  batches, bootstraps = [], []
  original = train_loop.compile_calls

  def compile_calls(*args, **kwargs):
    act, bootstrap_values, train_step = original(*args, **kwargs)

    def recorded_bootstrap(observation):
      value = bootstrap_values(observation)
      bootstraps.append((np.array(observation), value.numpy()))
      return value

    def recorded_train_step(observations, actions, rollout, values):
      batches.append((observations.copy(), actions.copy(), rollout.copy(), values.copy()))
      return train_step(observations, actions, rollout, values)
    return act, recorded_bootstrap, recorded_train_step

  monkeypatch.setattr(train_loop, "compile_calls", compile_calls)
  t_max, n_e, updates = 5, 4, 12
  result = paac_tf.train("cartpole.gin", {
      "paac.num_envs": n_e, "paac.num_workers": 0, "paac.t_max": t_max,
      "train_eval.total_steps": n_e * t_max * updates}, root_dir=str(tmp_path / "run"))
  assert result.updates == updates == len(batches) == len(bootstraps)
  for k, (observations, actions, rollout, values) in enumerate(batches):
    assert observations.shape == (t_max, n_e, 4) and actions.shape == (t_max, n_e)
    assert rollout.shape == (4, t_max, n_e) and rollout.dtype == np.float32
    assert values.shape == (t_max + 1, n_e)
    assert set(np.unique(actions)) <= {0, 1}
    rewards, discounts, next_is_last, is_last = rollout
    assert set(np.unique(next_is_last)) <= {0.0, 1.0} and set(np.unique(is_last)) <= {0.0, 1.0}
    next_is_last, is_last = next_is_last > 0.5, is_last > 0.5
    np.testing.assert_array_equal(is_last[1:], next_is_last[:-1])
    np.testing.assert_array_equal(rewards, np.where(is_last, 0.0, 1.0))
    assert np.all(discounts[~next_is_last] == 1.0)
    np.testing.assert_array_equal(values[t_max], bootstraps[k][1])
    if k + 1 < updates:
      np.testing.assert_array_equal(batches[k + 1][0][0], bootstraps[k][0])
  assert any(np.any(b[2][2]) for b in batches), "no episode ended inside a rollout"


def _reader_path(tmp_path):
  proc = subprocess.run(
      [sys.executable, os.path.join(REPO, "tests", "reader_path.py"), "--gin_file=atari.gin",
       "--gin_bindings=train_eval.total_steps=640", "--root_dir=%s" % (tmp_path / "run")],
      cwd=str(tmp_path), capture_output=True, text=True, timeout=500)
  assert proc.returncode == 0, proc.stderr[-3000:]
  return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_reader_follows_atari_gin_to_the_update_in_at_most_9_files(tmp_path):
  found = _reader_path(tmp_path)
  assert sorted(found["events"]) == ["apply", "backward", "env_step", "forward", "loss",
                                     "returns"]
  assert found["files"] == READER_PATH
  assert len(found["files"]) <= 9
  with open(os.path.join(REPO, "docs", "extending.md"), encoding="utf-8") as f:
    docs = f.read()
  assert [path for path in READER_PATH if "`%s`" % path not in docs] == []
  # The environment name is resolved once, into the value passed down; one environment.
  assert found["env_name_resolutions"] == 1
  assert found["env_builds"] == 1
