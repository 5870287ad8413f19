"""`train_eval`: the one gin-configured function behind `python -m paac_tf.train`."""
import gin

from paac_tf.runtime import config
from paac_tf import errors

ALGORITHMS = ("paac", "apex")


@gin.configurable
def train_eval(root_dir, env_name=gin.REQUIRED, total_steps=gin.REQUIRED, algorithm="paac",
               seed=0):
  """Trains `algorithm` on `env_name` for `total_steps` agent steps in `root_dir`."""
  from paac_tf.envs import names  # pylint: disable=import-outside-toplevel
  names.check_env_name(env_name)
  if int(total_steps) <= 0:
    raise errors.UserError("train_eval.total_steps must be positive, got %r." % (total_steps,))
  if algorithm == "paac":
    from paac_tf.runners.paac import train_loop  # pylint: disable=import-outside-toplevel
    from paac_tf.policies import checkpoint_export  # pylint: disable=import-outside-toplevel
    exporter = checkpoint_export.training_exporter(root_dir, env_name)
    run = lambda: train_loop.paac_train(root_dir, env_name, int(total_steps), seed=seed,
                                        exporter=exporter)
  elif algorithm == "apex":
    from paac_tf.runners.apex import launcher  # pylint: disable=import-outside-toplevel
    run = lambda: launcher.run_local(root_dir, env_name, int(total_steps), seed=seed)
  else:
    raise errors.UserError("Unknown train_eval.algorithm %r; choose one of %s."
                           % (algorithm, ", ".join(ALGORITHMS)))
  result = run()  # writes operative_config.gin once the run's configuration is accepted
  config.write_operative_config(root_dir)
  return result
