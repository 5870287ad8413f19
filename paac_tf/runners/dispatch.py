"""Which runner trains an algorithm: the one its `runner` attribute names.

  'sync'    runners/sync/: n_e environments, t_max-step rollouts, one synchronous update
            of the algorithm's loss per rollout (PAAC and any on-policy algorithm)
  'replay'  runners/apex/: the Ape-X replay server, actors and learner (Ape-X DQN, DPG)

Each runner module has `run(algorithm, root_dir, env, total_steps, seed, launcher,
ray_address)`, `check_config(algorithm, bound)` (its checks across parameters) and
`LAUNCHERS`; train_eval calls the runner's `run` itself (`runner_of`).
Importing this module registers every runner's gin configurables.
"""
from paac_tf import errors
from paac_tf.algorithms import registry
from paac_tf.runners.apex import family as replay_runner
from paac_tf.runners.sync import train_loop as sync_runner

RUNNERS = {"sync": sync_runner, "replay": replay_runner}


def load_configurables():
  """Registers every gin configurable of the package: the runners' (imported with this
  module) and the built-in algorithms'."""
  registry.load_builtin()


def runner_of(algorithm):
  """The runner module that trains `algorithm`."""
  runner = RUNNERS.get(algorithm.runner)
  if runner is None:
    raise errors.UserError("%s names runner %r; the runners are %s." % (
        algorithm.display_name, algorithm.runner, ", ".join(repr(r) for r in RUNNERS)))
  return runner


def launchers(algorithm):
  """The train_eval.launcher values `algorithm` runs under."""
  return runner_of(algorithm).LAUNCHERS


def check_config(algorithm, bound):
  """The checks across parameters of the runner that trains `algorithm`."""
  runner_of(algorithm).check_config(algorithm, bound)

