"""Divergence checks shared by both learners: never train on, or save, non-finite numbers."""
import numpy as np
import tensorflow as tf

from paac_tf import errors


def check_finite_metrics(values, keys, step, step_name="update"):
  """Raises TrainingDivergedError if any of `values[k]` for k in `keys` is not finite.

  values: {name: float} of the last update; step: its number, named `step_name` in the error.
  """
  if all(np.isfinite(values[k]) for k in keys):
    return values
  raise errors.TrainingDivergedError(
      "Loss or gradient norm is not finite at %s %d (%s). Training stopped; the last good "
      "checkpoint is kept untouched. Lower the learning rate or check the rewards."
      % (step_name, step, ", ".join("%s=%g" % kv for kv in values.items())))


def check_finite_weights(model, step, step_name="update"):
  """Never checkpoint non-finite weights: the last good checkpoint stays the newest."""
  if not all(bool(tf.reduce_all(tf.math.is_finite(v))) for v in model.variables):
    raise errors.TrainingDivergedError(
        "Weights are not finite after %s %d. Training stopped; the last good checkpoint is "
        "kept untouched. Lower the learning rate." % (step_name, step))
