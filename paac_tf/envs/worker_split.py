"""The split of a run's environments among worker processes, checked before a run starts."""
from paac_tf import errors
from paac_tf.envs import names


def check_worker_split(namespace, n_e, n_w, bound):
  """n_e environments are stepped by n_w worker processes, each the same number of them,
  on the paths that use worker processes (gymnasium ids and the portable Atari backend;
  the C++ vector backend takes n_w as its thread count): n_e (`namespace`.num_envs) must be
  a multiple of n_w (`namespace`.num_workers). `bound(binding, default)` reads the
  configuration."""
  env_name = bound("train_eval.env_name", None)
  if env_name is None:
    return
  if names.is_atari(env_name) and bound("make_environment.atari_backend", "vector") == "vector":
    return
  if n_w and n_e % n_w:
    raise errors.ConfigError(
        "%s.num_envs = %d is not a multiple of %s.num_workers = %d: each worker process "
        "steps the same number of environments; choose num_workers among the divisors of "
        "num_envs (or 0 to step them in this process)." % (namespace, n_e, namespace, n_w))
