"""The synchronous runner's SavedModel exports (`training_exporter.greedy`)."""
import os

import gin

from paac_tf import errors
from paac_tf.policies import run_settings
from paac_tf.policies import saved_model
from paac_tf.runtime import checks


def export_dir(root_dir, env_name):
  """root_dir/policies/<model_name>: where a run's exports go, one version per agent step."""
  return os.path.join(root_dir, "policies", saved_model.model_name(env_name))


@checks.configurable(denylist=["root_dir", "env_name", "algorithm"])
def training_exporter(root_dir, env_name, algorithm, greedy: checks.Bool = False):
  """Returns exporter(agent, env, step) writing `algorithm`'s policy to
  `export_dir(root_dir, env_name)`/<step>/ (the training loop's cadence skips a version
  that exists already)."""
  base = export_dir(root_dir, env_name)

  def export(agent, env, step):
    run_config = {}
    try:
      run_config = run_settings.read_run_config(root_dir)
    except errors.UserError:
      pass
    metadata = {"env_name": str(env_name), "train_step": int(step), "run_config": run_config,
                "operative_config": gin.operative_config_str(),
                "network": getattr(agent.model, "torso_name", None)}
    return saved_model.save_policy(algorithm, agent.model, env.observation_spec(), base,
                                   step, metadata, greedy=greedy)

  return export
