"""Which runner trains an algorithm: the one its `runner` attribute names.

  'sync'    runners/sync/: n_e environments, t_max-step rollouts, one synchronous update
            of the algorithm's loss per rollout (PAAC and any on-policy algorithm)
  'replay'  runners/apex/: the Ape-X replay server, actors and learner (Ape-X DQN, DPG);
            needs dm-reverb, which only the reference stack has (paac_tf/stacks.py)

Each runner module has `run(algorithm, root_dir, env, total_steps, seed, launcher,
ray_address)`, `check_config(algorithm, bound)` (its checks across parameters) and
`LAUNCHERS`; train_eval calls the runner's `run` itself (`runner_of`). A runner's module is
imported when first asked for, so PAAC never imports Reverb; `load_configurables` imports
every runner that can load here.
"""
import importlib

from paac_tf import errors
from paac_tf import stacks
from paac_tf.algorithms import registry

# runner -> (its module, whether it needs dm-reverb).
RUNNERS = {"sync": ("paac_tf.runners.sync.train_loop", False),
           "replay": ("paac_tf.runners.apex.family", True)}
# The gin configurables that the replay runner's modules register (tests/test_stacks.py checks
# the list against gin's registry on the reference stack): where Reverb is absent, a config's
# bindings to them are skipped at parse time so that asking for Ape-X there ends in
# `runner_of`'s one-line error, not in gin's "No configurable matching 'apex_actor'".
REPLAY_CONFIGURABLES = ("apex_replay", "ReplayLayout", "ReplayRetry", "run_local", "run_ray",
                        "apex_actor", "apex_learner")


def _loadable(runner):
  return not RUNNERS[runner][1] or stacks.has_reverb()


def load_configurables():
  """Registers every gin configurable of the package that can load here: the runners'
  (the replay runner's only where dm-reverb is installed) and the built-in algorithms'."""
  registry.load_builtin()
  for runner, (module, _) in RUNNERS.items():
    if _loadable(runner):
      importlib.import_module(module)


def unavailable_configurables():
  """The configurables (as a gin file names them, bare or in their 'apex.' module) of the
  runners that cannot load here: what `bookkeeping.config.parse` may skip."""
  if _loadable("replay"):
    return ()
  return REPLAY_CONFIGURABLES + tuple("apex." + name for name in REPLAY_CONFIGURABLES)


def runner_of(algorithm):
  """The runner module that trains `algorithm`; a UserError naming the stack it needs where
  it cannot load (Ape-X without Reverb)."""
  if algorithm.runner not in RUNNERS:
    raise errors.UserError("%s names runner %r; the runners are %s." % (
        algorithm.display_name, algorithm.runner, ", ".join(repr(r) for r in RUNNERS)))
  if not _loadable(algorithm.runner):
    stacks.require_reverb("%s (train_eval.algorithm = %r)" % (algorithm.display_name,
                                                              algorithm.name))
  return importlib.import_module(RUNNERS[algorithm.runner][0])


def launchers(algorithm):
  """The train_eval.launcher values `algorithm` runs under."""
  return runner_of(algorithm).LAUNCHERS


def check_config(algorithm, bound):
  """The checks across parameters of the runner that trains `algorithm`."""
  runner_of(algorithm).check_config(algorithm, bound)
