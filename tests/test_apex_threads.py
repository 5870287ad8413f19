"""TensorFlow thread settings of the Ape-X processes, the learner step measurement behind
apex_atari_small.gin, and that config's relations to the references it cites."""
import json
import os
import subprocess
import sys

import gin
import pytest

from conftest import REPO

from paac_tf.runners import train_eval
from paac_tf.bookkeeping import config
from tools.apex import measurements as apex_measurements

train_eval.load_configurables()   # the configurables the configs name

_THREADS = r"""
import json
import tensorflow as tf
from paac_tf.bookkeeping import threads
first = threads.set_tf_threads(2, 1)
tf.constant(1.0) + 1.0   # TF starts
later = threads.set_tf_threads(1)
print(json.dumps({"first": first, "later": later,
                  "now": [tf.config.threading.get_intra_op_parallelism_threads(),
                          tf.config.threading.get_inter_op_parallelism_threads()]}))
"""


def test_intra_and_inter_op_threads_are_set_before_tf_starts_and_kept_after():
  proc = subprocess.run([sys.executable, "-c", _THREADS], capture_output=True, text=True,
                        cwd=REPO, timeout=120,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO))
  assert proc.returncode == 0, proc.stderr[-3000:]
  result = json.loads(proc.stdout.strip().splitlines()[-1])
  assert result == {"first": [2, 1], "later": None, "now": [2, 1]}
  assert "already running: its thread pools stay at (2, 1)" in proc.stderr


def test_unset_threads_leave_tf_alone():
  from paac_tf.bookkeeping import threads  # pylint: disable=import-outside-toplevel
  assert threads.set_tf_threads(None) == (0, 0)
  assert threads.set_tf_threads(0, None) == (0, 0)


def _configured(gin_file):
  gin.clear_config()
  config.parse([gin_file], [])
  try:
    return {k: config.configured(k) for k in (
        "apex_learner.batch_size", "apex_replay.samples_per_insert",
        "ApexLearnerStep.target_update_period", "apex_replay.capacity",
        "apex_replay.learning_starts", "ApexLearnerStep.optimizer",
        "ApexLearnerStep.learning_rate", "run_local.num_actors")}
  finally:
    gin.clear_config()


def test_apex_atari_keeps_the_papers_settings():
  assert _configured("apex_atari.gin") == {
      "apex_learner.batch_size": 512, "apex_replay.samples_per_insert": 1.0,
      "ApexLearnerStep.target_update_period": 2500, "apex_replay.capacity": 2000000,
      "apex_replay.learning_starts": 50000, "ApexLearnerStep.optimizer": "rmsprop",
      "ApexLearnerStep.learning_rate": 0.0000625, "run_local.num_actors": 2}


def test_apex_atari_small_replays_as_the_small_scale_references():
  small = _configured("apex_atari_small.gin")
  assert small["apex_replay.samples_per_insert"] == 8.0          # Dopamine, Acme
  # Dopamine DQN: a target update every 8,000 agent steps of 8 samples each.
  assert small["ApexLearnerStep.target_update_period"] * small["apex_learner.batch_size"] == (
      8000 * 8)
  assert small["apex_replay.learning_starts"] == 20000
  assert small["apex_replay.capacity"] == 1000000
  assert small["ApexLearnerStep.optimizer"] == "adam"


@pytest.mark.timeout(300)
@pytest.mark.system   # a whole run: `make test-system` (.ci/run's second step)
def test_learner_step_rates_measures_each_combination_with_its_threads(tmp_path):
  config_file = tmp_path / "config.gin"
  config_file.write_text("include '%s'\n" % config.resolve_gin_file("apex_atari_small.gin"))
  rows = apex_measurements.learner_step_rates(
      str(config_file), str(tmp_path), batch_sizes=[8, 16], networks=["arch_nips"],
      precisions=["float32"], intra_op_threads=2, inter_op_threads=1, seconds=0.05,
      rounds=1)
  assert [(r["network"], r["precision"], r["batch_size"]) for r in rows] == [
      ("arch_nips", "float32", 8), ("arch_nips", "float32", 16)]
  for row in rows:
    assert (row["intra_op_threads"], row["inter_op_threads"]) == (2, 1)
    assert row["samples_per_second"] == pytest.approx(
        row["batches_per_second"] * row["batch_size"])
    assert row["samples_per_cpu_second"] > 0 and row["cpu_cores_used"] > 0
