"""The replay runner: the Ape-X machinery (the replay server, the actors and the learner of
this package) training a `ReplayAlgorithm` (algorithms/replay/algorithm.py, what it asks
the algorithm for), on one machine (`launcher.run_local`) or on Ray
(`ray_launcher.run_ray`).
"""
from paac_tf import errors
from paac_tf.algorithms import registry
from paac_tf.algorithms.replay import algorithm as replay_algorithm
from paac_tf.envs import worker_split
from paac_tf.runners.apex import actor
from paac_tf.runners.apex import launcher as local_launcher
from paac_tf.runners.apex import ray_launcher
from paac_tf.bookkeeping import config

LAUNCHERS = ("local", "ray")


def run(algorithm, root_dir, env, total_steps, seed, launcher="local", ray_address=None):
  """Trains `algorithm` in `root_dir` on `env` for `total_steps` agent steps (the actors'
  sum); returns a `bookkeeping.run_result.RunResult`."""
  if launcher == "ray":
    return ray_launcher.run_ray(root_dir, env, int(total_steps), seed=seed,
                                address=ray_address, algorithm=algorithm)
  return local_launcher.run_local(root_dir, env, int(total_steps), seed=seed,
                                  algorithm=algorithm)


def check_config(algorithm, bound):
  """The runner's checks across parameters: each actor's environments split evenly among
  its worker processes."""
  del algorithm   # the actors' settings are apex_actor's, whichever replay algorithm
  name = actor.apex_actor.__name__
  worker_split.check_worker_split(
      name, bound(name + ".num_envs", config.signature_default(actor.apex_actor, "num_envs")),
      bound(name + ".num_workers", config.signature_default(actor.apex_actor, "num_workers")),
      bound)


def configured(name=None):
  """The ReplayAlgorithm a program of the machinery runs: `name` (its --algorithm flag) if
  given, else the parsed configuration's train_eval.algorithm; a UserError if that is not
  an algorithm of this family."""
  name = name or config.configured("train_eval.algorithm", registry.DEFAULT)
  algorithm = registry.get(name)
  if not isinstance(algorithm, replay_algorithm.ReplayAlgorithm):
    family = [a.name for a in registry.algorithms()
              if isinstance(a, replay_algorithm.ReplayAlgorithm)]
    raise errors.UserError(
        "train_eval.algorithm = %r: %s does not train on the replay, actors and learner of "
        "the Ape-X programs; choose one of %s." % (name, algorithm.display_name,
                                                   ", ".join(repr(n) for n in family)))
  return algorithm
