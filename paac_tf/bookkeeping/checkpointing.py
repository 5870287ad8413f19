"""Checkpoints shared by PAAC and Ape-X: atomic, last K kept, resumable, verified.

TF's V2 checkpoint format writes the data under a temporary name and renames it, and
`CheckpointManager` rewrites its index file atomically, so a crash while saving leaves
the previous checkpoint in place. A save that fails (disk full, quota, file-size limit, I/O
error) removes what it left half-written (TF's `<prefix>_temp/` folder, unreferenced
`<prefix>.*` files, temporary index files) and raises a `UserError` naming the previous
checkpoint, which stays the latest and intact (its index is read back to check). On
resume the newest checkpoint that restores cleanly is used; a truncated or corrupt one is
reported and skipped (never deleted).
A `run_config.json` beside the checkpoints records what the run was made with (algorithm,
environment, network and its full spec); resuming with another configuration is refused
before anything is touched.
"""
import glob
import json
import os
import re
import shutil

from absl import logging
import tensorflow as tf

from paac_tf import errors
from paac_tf.bookkeeping import memory

RUN_CONFIG = "run_config.json"

# Trackables renamed since runs were checkpointed: {name now: name in older checkpoints}. A
# checkpoint that holds the old name and not the new one restores under the old name.
RENAMED_KEYS = {"agent_steps": "env_steps"}
# Trackables added since runs were checkpointed: a checkpoint without one restores the others
# and leaves it as it was made (`episode_window`: the window starts empty, as it did before).
ADDED_KEYS = ("episode_window",)


def check_run_config(directory, run_config):
  """Writes run_config.json on a new run; on an existing run, refuses a different one.

  Only the keys that both the file and `run_config` hold are compared, so that a run
  recorded before a key was (e.g. `network_spec`) still resumes; once they match, the keys
  the file lacks are added to it.
  """
  path = os.path.join(directory, RUN_CONFIG)
  if tf.io.gfile.exists(path):
    with tf.io.gfile.GFile(path) as f:
      saved = json.load(f)
    diffs = {k: (saved[k], v) for k, v in run_config.items() if k in saved and saved[k] != v}
    if diffs:
      raise errors.CheckpointMismatchError(
          "%s holds a run made with a different configuration (%s). Nothing was changed. "
          "Use a new --root_dir, or the original settings to resume." % (
              os.path.dirname(directory.rstrip("/")) or directory,
              "; ".join("%s: saved %r, now %r" % (k, a, b) for k, (a, b) in diffs.items())))
    missing = {k: v for k, v in run_config.items() if k not in saved}
    if not missing:
      return
    run_config = {**saved, **missing}
  tf.io.gfile.makedirs(directory)
  tmp = path + ".tmp"
  with tf.io.gfile.GFile(tmp, "w") as f:
    json.dump(run_config, f, indent=2, sort_keys=True)
  tf.io.gfile.rename(tmp, path, overwrite=True)


def latest_checkpoint(directory):
  """The latest checkpoint in `directory` (its index's `ckpt-<agent step>` path), or None."""
  return tf.train.latest_checkpoint(directory)


def latest_step(directory):
  """The agent step of the latest checkpoint in `directory` (0 if there is none)."""
  path = latest_checkpoint(directory)
  return int(path.rsplit("-", 1)[1]) if path else 0


class Checkpointer:
  """A tf.train.Checkpoint of `trackables` in `directory`, keeping the last `max_to_keep`."""

  def __init__(self, directory, max_to_keep=3, **trackables):
    self.directory = directory
    self.trackables = trackables
    self.checkpoint = tf.train.Checkpoint(**trackables)
    self.manager = tf.train.CheckpointManager(self.checkpoint, directory, max_to_keep=max_to_keep)

  def save(self, step):
    """Saves checkpoint `step`; on a failed write cleans up and raises a one-line UserError."""
    prefix = os.path.abspath(os.path.join(self.directory, "ckpt-%d" % int(step)))
    try:
      path = self.manager.save(checkpoint_number=int(step))
    except (OSError, tf.errors.OpError) as e:
      raise self._save_failed(prefix, e) from None
    logging.info("Saved checkpoint %s", path)
    memory.release()   # the save's buffers, back to the OS (see memory.py)
    return path

  def _save_failed(self, prefix, error):
    """Removes the partial files of a failed save of `prefix`; returns the error to raise."""
    state = tf.train.get_checkpoint_state(self.directory)
    on_disk = [] if state is None else list(state.all_model_checkpoint_paths)
    on_disk = [os.path.abspath(os.path.join(self.directory, p)) for p in on_disk]
    removed = []
    leftovers = glob.glob(glob.escape(prefix) + "_temp*") + glob.glob(
        os.path.join(glob.escape(self.directory), "checkpoint.tmp*"))
    if prefix not in on_disk:  # never referenced: half-written, or complete but unrecorded
      leftovers += glob.glob(glob.escape(prefix) + ".index") + glob.glob(
          glob.escape(prefix) + ".data-*")
    for leftover in leftovers:
      try:
        if os.path.isdir(leftover):
          shutil.rmtree(leftover)
        else:
          os.remove(leftover)
        removed.append(os.path.basename(leftover))
      except OSError as e:
        logging.warning("Could not remove %s after the failed save: %s", leftover, e)
    if removed:
      logging.info("Removed after the failed save: %s", ", ".join(sorted(removed)))
    reason = _short_reason(error)
    space = re.search(r"no space|too large|quota|ENOSPC|EFBIG|EDQUOT", reason, re.I)
    what = "%s%s" % ("disk full? " if space else "", reason)
    if on_disk and on_disk[-1] == prefix:
      kept = "checkpoint %s was written completely and is the latest" % prefix
    elif on_disk:
      try:
        tf.train.load_checkpoint(on_disk[-1])
        kept = "the previous checkpoint %s is intact and still the latest" % on_disk[-1]
      except Exception as e:  # pylint: disable=broad-except
        kept = "the previous checkpoint %s could not be read back either (%s)" % (
            on_disk[-1], _short_reason(e))
    else:
      kept = "no earlier checkpoint exists in %s" % self.directory
    return errors.UserError(
        "Could not write checkpoint %s (%s); %s. %s, then rerun with the same --root_dir to "
        "resume." % (prefix, what, kept, "Free disk space" if space else "Fix the cause"))

  def restore_latest(self):
    """Restores the newest checkpoint that loads; returns its path or None if none exists."""
    candidates = list(reversed(self.manager.checkpoints))
    if not candidates:
      return None
    failures = []
    for path in candidates:
      try:
        status = self._reader(path).restore(path)
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

  def _reader(self, path):
    """The tf.train.Checkpoint that restores `path`: this one, or for a checkpoint saved
    before a trackable was renamed (`RENAMED_KEYS`), one holding it under its old name and
    without those added since (`ADDED_KEYS`)."""
    saved = {name.split("/", 1)[0] for name, _ in tf.train.list_variables(path)}
    renamed = {RENAMED_KEYS.get(key, key) if key not in saved else key: trackable
               for key, trackable in self.trackables.items()
               if key in saved or key not in ADDED_KEYS}
    if renamed.keys() == self.trackables.keys():
      return self.checkpoint
    return tf.train.Checkpoint(**renamed)


def _short_reason(error):
  """The cause alone: `File too large` from TF's
  `{{function_node ...}} /path/x.tempstate123; File too large [Op:SaveV2]`."""
  if isinstance(error, OSError) and error.strerror:
    return error.strerror
  text = (getattr(error, "message", None) or str(error) or type(error).__name__).strip()
  text = text.splitlines()[0] if text else type(error).__name__
  text = re.sub(r"^\{\{[^}]*\}\}\s*", "", text)
  text = re.sub(r"\s*\[Op:[^\]]*\]$", "", text)
  return text.rsplit("; ", 1)[-1].strip() or type(error).__name__
