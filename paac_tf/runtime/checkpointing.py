"""Checkpoints shared by PAAC and Ape-X: atomic, last K kept, resumable, verified.

TF's V2 checkpoint format writes the data under a temporary name and renames it, and
`CheckpointManager` rewrites its index file atomically, so a crash while saving leaves
the previous checkpoint in place. On resume the newest checkpoint that restores cleanly
is used; a truncated or corrupt one is reported and skipped (never deleted).
A `run_config.json` beside the checkpoints records what the run was made with (algorithm,
environment, network); resuming with another configuration is refused before anything is
touched.
"""
import json
import os

from absl import logging
import tensorflow as tf

from paac_tf import errors

RUN_CONFIG = "run_config.json"


def check_run_config(directory, run_config):
  """Writes run_config.json on a new run; on an existing run, refuses a different one."""
  path = os.path.join(directory, RUN_CONFIG)
  if tf.io.gfile.exists(path):
    with tf.io.gfile.GFile(path) as f:
      saved = json.load(f)
    diffs = {k: (saved.get(k), v) for k, v in run_config.items() if saved.get(k) != v}
    if diffs:
      raise errors.CheckpointMismatchError(
          "%s holds a run made with a different configuration (%s). Nothing was changed. "
          "Use a new --root_dir, or the original settings to resume." % (
              os.path.dirname(directory.rstrip("/")) or directory,
              "; ".join("%s: saved %r, now %r" % (k, a, b) for k, (a, b) in diffs.items())))
    return
  tf.io.gfile.makedirs(directory)
  tmp = path + ".tmp"
  with tf.io.gfile.GFile(tmp, "w") as f:
    json.dump(run_config, f, indent=2, sort_keys=True)
  tf.io.gfile.rename(tmp, path, overwrite=True)


class Checkpointer:
  """A tf.train.Checkpoint of `trackables` in `directory`, keeping the last `max_to_keep`."""

  def __init__(self, directory, max_to_keep=3, **trackables):
    self.directory = directory
    self.checkpoint = tf.train.Checkpoint(**trackables)
    self.manager = tf.train.CheckpointManager(self.checkpoint, directory, max_to_keep=max_to_keep)

  def save(self, step):
    path = self.manager.save(checkpoint_number=int(step))
    logging.info("Saved checkpoint %s", path)
    return path

  def restore_latest(self):
    """Restores the newest checkpoint that loads; returns its path or None if none exists."""
    candidates = list(reversed(self.manager.checkpoints))
    if not candidates:
      return None
    failures = []
    for path in candidates:
      try:
        status = self.checkpoint.restore(path)
        status.assert_existing_objects_matched()
        logging.info("Restored checkpoint %s", path)
        if failures:
          logging.warning("Skipped unreadable newer checkpoint(s): %s", "; ".join(failures))
        return path
      except Exception as e:  # pylint: disable=broad-except  (corrupt files raise many types)
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        if isinstance(e, AssertionError) or "not found in checkpoint" in str(e) or (
            "Shapes" in str(e) or "shape" in str(e)):
          raise errors.CheckpointMismatchError(
              "Checkpoint %s does not fit this configuration (%s). Nothing was changed. Use a "
              "new --root_dir, or the original settings to resume." % (path, msg)) from None
        logging.error("Checkpoint %s is unreadable (%s); trying the previous one.", path, msg)
        failures.append(path)
    raise errors.UserError(
        "No checkpoint in %s could be read (%s). Move the directory aside and start a new run."
        % (self.directory, ", ".join(failures)))
