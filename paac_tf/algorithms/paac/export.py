"""The PAAC training loop's SavedModel exports (`training_exporter.greedy`)."""
import os

from absl import logging
import gin
import tensorflow as tf

from paac_tf import errors
from paac_tf.policies import run_settings
from paac_tf.policies import saved_model
from paac_tf.runtime import checks


@checks.configurable(denylist=["root_dir", "env_name"])
def training_exporter(root_dir, env_name, greedy: checks.Bool = False):
  """Returns exporter(agent, env, step) writing root_dir/policies/<model_name>/<step>/.

  A version that exists already (e.g. the final export of a resumed run that had
  finished) is skipped with a log line, returning None.
  """
  base = os.path.join(root_dir, "policies", saved_model.model_name(env_name))

  def export(agent, env, step):
    path = saved_model.version_dir(base, step)
    if tf.io.gfile.exists(path):
      logging.info("Export %s exists already; skipped.", path)
      return None
    run_config = {}
    try:
      run_config = run_settings.read_run_config(root_dir)
    except errors.UserError:
      pass
    metadata = {"env_name": env_name, "train_step": int(step), "run_config": run_config,
                "operative_config": gin.operative_config_str(),
                "network": getattr(agent.model, "torso_name", None)}
    return saved_model.save_paac_policy(agent.model, env.observation_spec(), base, step,
                                        metadata, greedy=greedy)

  return export
