"""`train_eval`: the one gin-configured function behind `python -m paac_tf.train`."""
import gin

from paac_tf.runtime import config
from paac_tf import errors

ALGORITHMS = ("paac", "apex")
LAUNCHERS = ("local", "ray")


@gin.configurable
def train_eval(root_dir, env_name=gin.REQUIRED, total_steps=gin.REQUIRED, algorithm="paac",
               seed=0, deterministic=False, launcher="local", ray_address=None):
  """Trains `algorithm` on `env_name` for `total_steps` agent steps in `root_dir`.

  `seed` seeds the initial weights, the action sampling and the environments; with
  `deterministic` TensorFlow's ops are deterministic too (`enable_op_determinism`, slower
  on some ops), so that a PAAC run with `num_workers` = 0 repeats bit for bit.
  Ape-X runs on this machine (`launcher` 'local') or on a Ray cluster ('ray': at
  `ray_address`, or a Ray started for the run if None; `runners/apex/ray_launcher.py`).
  """
  from paac_tf.runners import validation  # pylint: disable=import-outside-toplevel
  validation.check_values("train_eval", env_name=env_name, total_steps=total_steps,
                          algorithm=algorithm, seed=seed, deterministic=deterministic)
  if launcher not in LAUNCHERS or (launcher == "ray" and algorithm != "apex"):
    raise errors.UserError("train_eval.launcher = %r: choose 'local', or 'ray' for Ape-X (PAAC "
                           "runs on one machine)." % (launcher,))
  if ray_address is not None and launcher != "ray":
    raise errors.UserError("train_eval.ray_address is for train_eval.launcher = 'ray'.")
  if deterministic:
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    tf.config.experimental.enable_op_determinism()
    tf.random.set_seed(seed)
  if algorithm == "paac":
    from paac_tf.runners.paac import train_loop  # pylint: disable=import-outside-toplevel
    from paac_tf.policies import checkpoint_export  # pylint: disable=import-outside-toplevel
    exporter = checkpoint_export.training_exporter(root_dir, env_name)
    run = lambda: train_loop.paac_train(root_dir, env_name, int(total_steps), seed=seed,
                                        exporter=exporter)
  elif algorithm == "apex" and launcher == "ray":
    from paac_tf.runners.apex import ray_launcher  # pylint: disable=import-outside-toplevel
    run = lambda: ray_launcher.run_ray(root_dir, env_name, int(total_steps), seed=seed,
                                       address=ray_address)
  elif algorithm == "apex":
    from paac_tf.runners.apex import launcher as local  # pylint: disable=import-outside-toplevel
    run = lambda: local.run_local(root_dir, env_name, int(total_steps), seed=seed)
  else:
    raise errors.UserError("Unknown train_eval.algorithm %r; choose one of %s."
                           % (algorithm, ", ".join(ALGORITHMS)))
  result = run()  # writes operative_config.gin once the run's configuration is accepted
  # Every process's bindings: the Ape-X actors' (and on Ray the learner's and replay's).
  processes = config.read_process_operative_configs(root_dir)
  processes.update(result.pop("process_operative_configs", None) or {})
  config.write_operative_config(root_dir, processes)
  return result
