"""Exported policies: SavedModels of trained networks, and their evaluation.

  saved_model        the TF-Agents policy around a Keras model; saving it (TF Serving layout,
                     signatures, metadata)
  run_settings       what a training run recorded (run_config.json, operative gin config):
                     its network spec and environment settings
  checkpoint_export  a run's checkpoint as a SavedModel; the exporter training calls
  loading            SavedModels loaded with TensorFlow alone: metadata, actions
  evaluation         the 30 no-op evaluation protocol, eval.json, GIFs of the best episode
"""
from paac_tf.bookkeeping import startup as _startup

_startup.import_old_gym_quietly()   # before this package's modules import tf-agents
