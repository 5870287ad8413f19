"""A third algorithm is one loss and a registration: tests/reinforce_algorithm.py (REINFORCE
with a baseline) registers itself through the seam and is trained by the synchronous runner,
exported, evaluated and loaded through the package's own commands and API, with no change to
any module of the package."""
import glob
import json
import os

import gin
import numpy as np
import pytest
import tensorflow as tf

from conftest import REPO, run_module

import paac_tf
from paac_tf.algorithms import registry

pytestmark = pytest.mark.timeout(600)
TESTS = os.path.join(REPO, "tests")
ENV = {"PYTHONPATH": os.pathsep.join([TESTS, REPO])}


def _config(tmp_path, *lines):
  path = tmp_path / "reinforce.gin"
  path.write_text("\n".join(["import reinforce_algorithm",
                             "train_eval.algorithm = 'reinforce'",
                             "train_eval.env_name = 'CartPole-v1'",
                             "train_eval.total_steps = 1024",
                             "paac.num_envs = 8", "paac.num_workers = 0",
                             "paac.t_max = 64", "paac.network = 'mlp'",
                             "paac.mlp_units = (32,)", "paac.summary_interval = 1",
                             "paac.checkpoint_interval = 512"] + list(lines)) + "\n")
  return str(path)


def test_it_trains_exports_evaluates_and_loads_through_the_cli(tmp_path):
  gin_file, root = _config(tmp_path), str(tmp_path / "run")
  proc = run_module("paac_tf.train", "--gin_file=" + gin_file, "--root_dir=" + root,
                    cwd=str(tmp_path), env=ENV)
  assert proc.returncode == 0, proc.stderr[-3000:]
  with open(os.path.join(root, "train", "run_config.json")) as f:
    assert json.load(f)["algorithm_module"] == "reinforce_algorithm"
  assert sorted(os.listdir(os.path.join(root, "policies", "cartpole_v1"))) == ["1024"]

  proc = run_module("paac_tf.export", "--root_dir=" + root, "--checkpoint=512",
                    "--export_dir=" + str(tmp_path / "exports"), cwd=str(tmp_path), env=ENV)
  assert proc.returncode == 0, proc.stderr[-3000:]
  exported = proc.stdout.strip().splitlines()[-1]
  assert exported == str(tmp_path / "exports" / "cartpole_v1" / "512")

  proc = run_module("paac_tf.evaluate", "--policy_dir=" + exported, "--episodes=4",
                    "--num_envs=2", cwd=str(tmp_path), env=ENV)
  assert proc.returncode == 0, proc.stderr[-3000:]
  with open(exported + "-eval/eval.json") as f:
    summary = json.load(f)
  assert summary["algorithm"] == "reinforce" and summary["episodes"] == 4
  assert summary["epsilon"] == 0.0 and "a sample of the exported policy" in summary["protocol"]

  policy = paac_tf.load_policy(root)       # the run's newest export, TensorFlow alone
  assert policy.metadata["algorithm"] == "reinforce"
  assert policy.metadata["outputs"] == ["action", "probabilities"]
  actions = policy.action(np.zeros((3, 4), np.float32))
  assert actions.shape == (3,) and set(actions.tolist()) <= {0, 1}


def _summary_tags(root):
  """The scalar tags of the run's training summaries."""
  tags = set()
  for path in glob.glob(os.path.join(root, "train", "events.out.tfevents*")):
    for event in tf.compat.v1.train.summary_iterator(path):
      tags.update(value.tag for value in event.summary.value)
  return tags


def test_it_trains_through_the_api_and_its_parameters_are_checked(tmp_path):
  gin.clear_config()
  try:
    result = paac_tf.train([_config(tmp_path)], root_dir=str(tmp_path / "run"))
    assert registry.get("reinforce").display_name == "REINFORCE"
    assert result.reason == "done" and result.agent_steps == 1024 and result.updates == 2
    assert result.policy_dir == str(tmp_path / "run" / "policies" / "cartpole_v1" / "1024")
    assert glob.glob(os.path.join(result.root_dir, "train", "ckpt-1024.index"))
    # The runner trained REINFORCE's loss: its metrics, not PAAC's.
    tags = _summary_tags(result.root_dir)
    assert set(registry.get("reinforce").metric_names) <= tags, tags
    assert "Losses/policy" not in tags and "Losses/entropy" not in tags
  finally:
    gin.clear_config()
  bad = _config(tmp_path, "paac.t_max = 0")
  proc = run_module("paac_tf.train", "--gin_file=" + bad, "--root_dir=" + str(tmp_path / "bad"),
                    cwd=str(tmp_path), env=ENV)
  assert proc.returncode == 2, proc.stderr[-3000:]
  assert proc.stderr.strip().splitlines()[-1] == (
      "error: paac.t_max = 0: must be an integer >= 1.")
  assert not (tmp_path / "bad").exists()
