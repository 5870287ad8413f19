"""Loading exported policies with TensorFlow alone: SavedModel directories, metadata, actions.

`LoadedPolicy` runs a SavedModel through its `serving_default` signature; nothing of the
training code (models, TF-Agents) is needed, only what the export wrote.
"""
import json
import os

from absl import logging
import numpy as np
import tensorflow as tf

from paac_tf import errors
from paac_tf.bookkeeping import root_dirs

# The export metadata, as one JSON document in the SavedModel's assets.
METADATA_FILE = "paac_tf_metadata.json"


def resolve_policy_dir(policy_dir):
  """The SavedModel version directory for `policy_dir`: a version directory, a model
  directory (its highest version) or a run directory (its newest export,
  `root_dirs.newest_export`), as `paac_tf.load_policy` and `python -m paac_tf.evaluate`
  take them."""
  path = os.path.abspath(os.path.expanduser(policy_dir or ""))
  if not policy_dir or not tf.io.gfile.isdir(path):
    raise errors.UserError("--policy_dir %s does not exist." % (policy_dir or "''"))
  if _is_saved_model(path):
    return path
  run_export = root_dirs.newest_export(path)
  if run_export:
    logging.info("The newest export of the run %s: %s", path, run_export)
    return run_export
  versions = sorted(int(n.rstrip("/")) for n in tf.io.gfile.listdir(path)
                    if n.rstrip("/").isdigit() and _is_saved_model(os.path.join(path, n)))
  if versions:
    chosen = os.path.join(path, str(versions[-1]))
    logging.info("Evaluating the highest version of %s: %s", path, chosen)
    return chosen
  raise errors.UserError("--policy_dir %s is not a SavedModel (no saved_model.pb), a model "
                         "directory with integer versions nor a run directory with an "
                         "export in policies/." % path)


def _is_saved_model(path):
  return (tf.io.gfile.exists(os.path.join(path, "saved_model.pb")) or
          tf.io.gfile.exists(os.path.join(path, "saved_model.pbtxt")))


def read_metadata(policy_dir, loaded=None):
  """The export metadata of a SavedModel dir: the assets JSON, else get_metadata(); or {}."""
  path = os.path.join(policy_dir, "assets", METADATA_FILE)
  if tf.io.gfile.exists(path):
    with tf.io.gfile.GFile(path) as f:
      return json.load(f)
  if loaded is not None and hasattr(loaded, "get_metadata"):
    values = loaded.get_metadata()
    if "metadata_json" in values:
      return json.loads(values["metadata_json"].numpy().decode("utf-8"))
  return {}


class LoadedPolicy:
  """A SavedModel's serving_default: numpy observations in, actions out (int64 [B] for a
  discrete policy, float32 [B, ...] for a continuous one, as its `action` output).

  Attributes:
    policy_dir: the SavedModel directory.
    saved_model: the loaded SavedModel.
    observation_spec: the TensorSpec of serving_default's `observation` batch.
    metadata: the export metadata (`read_metadata`; {} for foreign SavedModels).
  """

  def __init__(self, policy_dir):
    self.policy_dir = policy_dir
    try:
      self.saved_model = tf.saved_model.load(policy_dir)
    except Exception as e:  # pylint: disable=broad-except
      first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
      raise errors.UserError("Cannot load the SavedModel %s (%s)." % (policy_dir, first)) from None
    signatures = getattr(self.saved_model, "signatures", {})
    if "serving_default" not in signatures:
      raise errors.UserError("SavedModel %s has no serving_default signature." % policy_dir)
    self._serve = signatures["serving_default"]
    inputs = self._serve.structured_input_signature[1]
    if list(inputs) != ["observation"]:
      raise errors.UserError("serving_default of %s takes %s; expected one input named "
                             "'observation'." % (policy_dir, sorted(inputs)))
    self.observation_spec = inputs["observation"]
    if "action" not in self._serve.structured_outputs:
      raise errors.UserError("serving_default of %s has no 'action' output (outputs: %s)."
                             % (policy_dir, sorted(self._serve.structured_outputs)))
    self.metadata = read_metadata(policy_dir, self.saved_model)

  @property
  def continuous(self):
    """Whether the policy's actions are floats (a continuous action space)."""
    return self._serve.structured_outputs["action"].dtype.is_floating

  def actions(self, observations):
    """Actions for a batch of observations (cast to the signature's dtype): int64 [B], or
    float32 [B, ...] for a continuous policy."""
    obs = np.asarray(observations, dtype=self.observation_spec.dtype.as_numpy_dtype)
    actions = self._serve(observation=tf.constant(obs))["action"].numpy()
    return actions.astype(np.float32 if self.continuous else np.int64)
