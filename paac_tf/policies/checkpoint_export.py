"""Exports of training runs: a run's checkpoint as a SavedModel.

`export_checkpoint` (behind `python -m paac_tf.export`) finds a checkpoint in a run
directory, rebuilds the run's network from its recorded spec (`run_settings.network_spec`),
restores the weights and saves the policy (`saved_model`).
"""
import contextlib
import os
import re

import tensorflow as tf

from paac_tf import errors
from paac_tf.networks import specs
from paac_tf.policies import run_settings
from paac_tf.policies import saved_model
from paac_tf.bookkeeping import run_lock

_CHECKPOINT_RE = re.compile(r"^ckpt-(\d+)\.index$")


def find_checkpoint(train_dir, step=None):
  """(checkpoint prefix, step): the given step's checkpoint, or the newest one."""
  steps = sorted(int(m.group(1)) for m in (_CHECKPOINT_RE.match(n) for n in (
      tf.io.gfile.listdir(train_dir) if tf.io.gfile.isdir(train_dir) else [])) if m)
  if not steps:
    raise errors.UserError("No checkpoint in %s yet (training writes train/ckpt-<step>)."
                           % train_dir)
  if step is None:
    step = steps[-1]
  elif int(step) not in steps:
    raise errors.UserError("No checkpoint for step %d in %s; available: %s."
                           % (int(step), train_dir, ", ".join(map(str, steps))))
  return os.path.join(train_dir, "ckpt-%d" % int(step)), int(step)


def export_checkpoint(root_dir, checkpoint=None, export_dir=None, greedy=None, epsilon=None,
                      version=None, name=None):
  """Exports a run's checkpoint as a SavedModel; returns the version directory.

  Args:
    root_dir: the training run directory (train/run_config.json, train/ckpt-*).
    checkpoint: agent step of the checkpoint (None: the newest).
    export_dir: base directory (None: root_dir/policies); the policy goes to
      export_dir/<name>/<version>.
    greedy: argmax actions (None: the algorithm's `export_greedy`: False for PAAC, True for
      Ape-X).
    epsilon: the epsilon of a non-greedy export of an epsilon-greedy policy (Ape-X).
    version: integer version (None: the checkpoint's step).
    name: TF Serving model name (None: from the environment, e.g. `pong`).
  """
  root_dir = os.path.abspath(os.path.expanduser(root_dir))
  if not tf.io.gfile.isdir(root_dir):
    raise errors.UserError("--root_dir %s does not exist." % root_dir)
  export_base = (os.path.abspath(os.path.expanduser(export_dir)) if export_dir else
                 os.path.join(root_dir, "policies"))
  # An export into the run directory waits for no one: it is refused while training (or
  # another export) runs there. One elsewhere only reads the run, as evaluation does.
  into_run = os.path.commonpath([export_base, root_dir]) == root_dir
  with run_lock.acquire(root_dir, what="an export") if into_run else contextlib.nullcontext():
    return _export(root_dir, export_base, checkpoint, greedy, epsilon, version, name)


def _export(root_dir, export_base, checkpoint, greedy, epsilon, version, name):
  run_config = run_settings.read_run_config(root_dir)
  algorithm = run_settings.run_algorithm(run_config)
  env_name = run_config["env_name"]
  if greedy is None:
    greedy = algorithm.export_greedy
  epsilon_greedy = algorithm.exploration == "epsilon_greedy"
  if epsilon is not None and (not epsilon_greedy or greedy):
    raise errors.UserError("--epsilon applies to non-greedy exports of epsilon-greedy "
                           "policies only (--nogreedy on an Ape-X run).")
  if epsilon_greedy and not greedy and epsilon is None:
    raise errors.UserError("A non-greedy %s export needs --epsilon (e.g. 0.01)."
                           % algorithm.display_name)
  checkpoint_path, step = find_checkpoint(os.path.join(root_dir, "train"), checkpoint)
  base_dir = os.path.join(export_base, name or saved_model.model_name(env_name))
  version = step if version is None else int(version)
  saved_model.refuse_existing(saved_model.version_dir(base_dir, version))

  operative_config = run_settings.read_operative_config(root_dir)
  try:
    spec = run_settings.network_spec(run_config, operative_config)
    model = algorithm.build_network(spec)
  except ValueError as e:
    raise errors.UserError("Cannot rebuild the network of %s: %s" % (root_dir, e)) from None
  key = algorithm.checkpoint_model_key
  try:
    status = tf.train.Checkpoint(**{key: model}).restore(checkpoint_path).expect_partial()
    status.assert_existing_objects_matched()
  except (AssertionError, ValueError, tf.errors.OpError) as e:
    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    raise errors.CheckpointMismatchError(
        "Checkpoint %s does not hold a %r network matching %s/train/run_config.json and "
        "operative_config.gin (%s)." % (checkpoint_path, key, root_dir, msg)) from None

  metadata = {
      "env_name": env_name, "train_step": step, "checkpoint": checkpoint_path,
      "run_config": run_config, "operative_config": operative_config,
      "preprocessing": run_settings.preprocessing_metadata(env_name, operative_config),
      "network": spec.get("network", run_config.get("network")),
  }
  if epsilon is not None:
    metadata["epsilon"] = float(epsilon)
  return saved_model.save_policy(algorithm, model, specs.observation_spec(spec), base_dir,
                                 version, metadata, greedy=greedy)
