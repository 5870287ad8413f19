r"""The small runs of tests/data/cross_stack/ that tests/test_cross_stack.py moves between the
two stacks (paac_tf/stacks.py): on each stack,

    python -m tools.codegen.cross_stack_data

writes tests/data/cross_stack/<its stack>/: a run of cartpole.gin (TRAIN_STEPS agent steps, a
16-unit network: its checkpoint and greedy export, under 300 KB; kept if already there) and
record.json: the stack's versions, the export's actions for OBSERVATIONS and the returns of
`python -m paac_tf.evaluate EVAL_FLAGS` on it. The other stack's test resumes that run to
RESUME_STEPS and asks its export for the same actions and returns.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from absl import app

import paac_tf
from paac_tf import errors
from paac_tf import stacks
from tools import REPO

DATA = os.path.join(REPO, "tests", "data", "cross_stack")
GIN_FILE = "cartpole.gin"
BINDINGS = {"paac.mlp_units": (16,)}
TRAIN_STEPS = 1600
RESUME_STEPS = 2400
EVAL_FLAGS = ("--episodes=4", "--num_envs=2", "--seed=1000000000")


def observations():
  """64 CartPole observations (position, velocity, angle, angular velocity), seed 0."""
  scale = np.array([1.0, 1.0, 0.1, 1.0])
  return (np.random.default_rng(0).normal(size=(64, 4)) * scale).astype(np.float32)


def export_of(run_dir):
  """The run's one greedy export (policies/<model>/<version>)."""
  found = glob.glob(os.path.join(run_dir, "policies", "*", "*", "saved_model.pb"))
  if len(found) != 1:
    raise errors.UserError("%s holds %d exports, not 1." % (run_dir, len(found)))
  return os.path.dirname(found[0])


def evaluate(policy_dir, python=None):
  """The returns of `python -m paac_tf.evaluate EVAL_FLAGS` on `policy_dir`, in order."""
  with tempfile.TemporaryDirectory() as out:
    subprocess.run([python or sys.executable, "-m", "paac_tf.evaluate",
                    "--policy_dir=" + policy_dir, "--output_dir=" + out, *EVAL_FLAGS],
                   cwd=REPO, check=True, capture_output=True)
    with open(os.path.join(out, "eval.json"), encoding="utf-8") as f:
      return json.load(f)["returns"]


def main(argv):
  errors.refuse_arguments(argv)
  import tensorflow as tf  # pylint: disable=import-outside-toplevel  (after paac_tf: Keras 2)
  stack = stacks.stack_for().name
  run_dir = os.path.join(DATA, stack)
  if not glob.glob(os.path.join(run_dir, "train", "ckpt-%d.index" % TRAIN_STEPS)):
    paac_tf.train([GIN_FILE], bindings=BINDINGS | {"train_eval.total_steps": TRAIN_STEPS},
                  root_dir=run_dir)
  for leftover in ["run.lock"] + glob.glob(os.path.join(run_dir, "train", "events.*")):
    path = os.path.join(run_dir, leftover)
    if os.path.exists(path):
      os.remove(path)
  policy_dir = export_of(run_dir)
  actions = paac_tf.load_policy(policy_dir).action(observations())
  record = {"stack": stack, "python": "%d.%d.%d" % sys.version_info[:3],
            "tensorflow": tf.__version__, "agent_steps": TRAIN_STEPS,
            "actions": np.asarray(actions).tolist(),
            "eval_flags": list(EVAL_FLAGS), "eval_returns": evaluate(policy_dir)}
  with open(os.path.join(run_dir, "record.json"), "w", encoding="utf-8") as f:
    json.dump(record, f, indent=1)
  print(json.dumps(record))


if __name__ == "__main__":
  app.run(main, flags_parser=errors.parse_flags)
