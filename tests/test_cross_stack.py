"""Checkpoints and policies cross the two stacks (paac_tf/stacks.py): the small CartPole run
that the OTHER stack wrote (tests/data/cross_stack/<stack>/,
tools/codegen/cross_stack_data.py) resumes here, and its export, loaded here, takes the
actions and evaluates to the returns it did there (a greedy policy, the same environment
seeds)."""
import json
import logging
import os
import shutil

import numpy as np
import pytest

import paac_tf
from paac_tf import stacks
from paac_tf.bookkeeping import checkpointing
from tools.codegen import cross_stack_data as data

HERE = stacks.stack_for().name
OTHER = stacks.CURRENT.name if HERE == stacks.REFERENCE.name else stacks.REFERENCE.name


@pytest.fixture(scope="module")
def record():
  with open(os.path.join(data.DATA, OTHER, "record.json"), encoding="utf-8") as f:
    written = json.load(f)
  assert written["stack"] == OTHER and written["tensorflow"] != __import__(
      "tensorflow").__version__
  return written


class _Messages(logging.Handler):
  """The messages of the logger it is added to, from INFO on."""

  def __init__(self):
    super().__init__(logging.INFO)
    self.messages = []

  def emit(self, record):
    self.messages.append(record.getMessage())


def test_a_run_of_the_other_stack_resumes_here(tmp_path, record):
  run_dir = str(tmp_path / "run")
  shutil.copytree(os.path.join(data.DATA, OTHER), run_dir)
  assert checkpointing.latest_step(os.path.join(run_dir, "train")) == record["agent_steps"]
  # absl's logger itself, at INFO: what reaches the root logger (pytest's caplog) depends on
  # what earlier tests of this process did to logging.
  absl_logger, handler = logging.getLogger("absl"), _Messages()
  level = absl_logger.level
  absl_logger.addHandler(handler)
  absl_logger.setLevel(logging.INFO)
  try:
    result = paac_tf.train([data.GIN_FILE], root_dir=run_dir, bindings=data.BINDINGS | {
        "train_eval.total_steps": data.RESUME_STEPS})
  finally:
    absl_logger.removeHandler(handler)
    absl_logger.setLevel(level)
  assert result.reason == "done" and result.agent_steps == data.RESUME_STEPS
  # Resumed from the other stack's checkpoint (runners/sync/train_loop.py's line), not started
  # again; and both checkpoints are there.
  resumed = "Resuming at agent step %d " % record["agent_steps"]
  assert any(m.startswith(resumed) for m in handler.messages), handler.messages[-20:]
  assert checkpointing.latest_step(os.path.join(run_dir, "train")) == data.RESUME_STEPS
  assert os.path.exists(os.path.join(run_dir, "train", "ckpt-%d.index" % record["agent_steps"]))


def test_the_other_stacks_export_takes_its_actions_here(record):
  policy = paac_tf.load_policy(data.export_of(os.path.join(data.DATA, OTHER)))
  actions = np.asarray(policy.action(data.observations())).tolist()
  assert set(record["actions"]) == {0, 1}   # both actions: the comparison can fail
  assert actions == record["actions"]


def test_the_other_stacks_export_evaluates_to_its_returns_here(record):
  assert data.evaluate(data.export_of(os.path.join(data.DATA, OTHER))) == \
      record["eval_returns"]
