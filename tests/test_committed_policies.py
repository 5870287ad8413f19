"""The policies committed under results/<run>/policy/ (issue 27.5): each under 10 MB, loads
with TensorFlow alone and is the policy of its run (its environment and agent step); and one,
evaluated again by its recorded protocol, scores every game as recorded, on either stack
(paac_tf/stacks.py)."""
import glob
import json
import os

import numpy as np
import pytest

from conftest import REPO, run_module

import paac_tf

POLICIES = sorted(glob.glob(os.path.join(REPO, "results", "*", "policy", "*", "*",
                                         "saved_model.pb")))


def test_the_shipped_pretrained_policies_are_there():
  runs = {os.path.relpath(p, os.path.join(REPO, "results")).split(os.sep)[0] for p in POLICIES}
  assert {"pong_paac_fast", "breakout_paac_fast", "pong_apex_small_2"} <= runs, runs


@pytest.mark.parametrize("saved_model", POLICIES,
                         ids=[os.path.relpath(p, REPO) for p in POLICIES])
def test_a_committed_policy_is_small_loads_and_is_its_runs(saved_model):
  version_dir = os.path.dirname(saved_model)
  run_folder = version_dir.split(os.sep + "policy" + os.sep)[0]
  size = sum(os.path.getsize(os.path.join(d, f))
             for d, _, files in os.walk(version_dir) for f in files)
  assert size < 10 * 2**20, size
  policy = paac_tf.load_policy(version_dir)
  # A run published at stages names each evaluation by its step (eval_at_<step>.json).
  staged = os.path.join(run_folder, "eval_at_%s.json" % os.path.basename(version_dir))
  with open(staged if os.path.exists(staged) else os.path.join(run_folder, "eval.json")) as f:
    evaluation = json.load(f)
  assert policy.metadata["env_name"] == evaluation["env_name"]
  assert int(os.path.basename(version_dir)) == evaluation["train_step"]
  spec = policy.observation_spec
  actions = np.asarray(policy.action(np.zeros([2] + list(spec.shape[1:]),
                                              spec.dtype.as_numpy_dtype)))
  assert actions.shape[0] == 2 and np.all(np.isfinite(actions))


def test_a_committed_policy_evaluates_to_its_recorded_returns(tmp_path):
  # pong_paac_reference: written on the reference stack; on the current one (Python 3.12.1,
  # TF 2.21.0) too, its 30 games scored as recorded, mean 17.97 (2026-12-07); eval.json: 34.5 s.
  run = os.path.join(REPO, "results", "pong_paac_reference")
  with open(os.path.join(run, "eval.json")) as f:
    recorded = json.load(f)
  proc = run_module("paac_tf.evaluate", "--policy_dir=" + os.path.join(run, "policy", "pong"),
                    "--output_dir=%s" % tmp_path, "--episodes=%d" % recorded["episodes"],
                    "--num_envs=%d" % recorded["num_envs"], "--seed=%d" % recorded["seed"],
                    "--noop_max=%d" % recorded["noop_max"])
  assert proc.returncode == 0, proc.stderr[-2000:]
  with open(os.path.join(tmp_path, "eval.json")) as f:
    assert json.load(f)["returns"] == recorded["returns"]
