"""Exports trained policies as SavedModels in TF Serving's layout (first version).

DIR/<model_name>/<version>/ with integer, increasing versions; an existing version is never
overwritten. `serving_default` takes `observation` exactly as the environment gives it.
"""
import json
import os

from absl import logging
import tensorflow as tf

from paac_tf import errors


class _PaacServing(tf.Module):

  def __init__(self, model, observation_spec, greedy, metadata):
    super().__init__()
    self.model = model
    self.metadata_json = tf.Variable(json.dumps(metadata), trainable=False, name="metadata")
    spec = tf.TensorSpec([None] + list(observation_spec.shape),
                         tf.as_dtype(observation_spec.dtype), name="observation")

    @tf.function(input_signature=[spec])
    def serve(observation):
      logits, value = self.model(observation)
      probabilities = tf.nn.softmax(logits)
      if greedy:
        action = tf.argmax(logits, axis=-1)
      else:
        action = tf.random.categorical(logits, 1, dtype=tf.int64)[:, 0]
      return {"action": action, "probabilities": probabilities, "value": value}

    self.serve = serve


def model_name(env_name):
  return "".join(c if c.isalnum() else "_" for c in str(env_name)).strip("_").lower() or "policy"


def save_paac_policy(model, observation_spec, base_dir, version, metadata, greedy=False):
  path = os.path.join(base_dir, str(int(version)))
  if tf.io.gfile.exists(path):
    raise errors.UserError("Export version %s already exists; refusing to overwrite it." % path)
  module = _PaacServing(model, observation_spec, greedy, metadata)
  tmp = path + ".tmp"
  if tf.io.gfile.exists(tmp):
    tf.io.gfile.rmtree(tmp)
  tf.saved_model.save(module, tmp, signatures={"serving_default": module.serve})
  tf.io.gfile.rename(tmp, path)
  logging.info("Exported SavedModel %s", path)
  return path


def training_exporter(root_dir, env_name):
  """Returns exporter(agent, env, step) writing root_dir/policies/<model_name>/<step>/."""
  base = os.path.join(root_dir, "policies", model_name(env_name))

  def export(agent, env, step):
    if tf.io.gfile.exists(os.path.join(base, str(int(step)))):
      return None
    metadata = {"env_name": env_name, "train_step": int(step), "algorithm": "paac"}
    return save_paac_policy(agent.model, env.observation_spec(), base, step, metadata)

  return export
