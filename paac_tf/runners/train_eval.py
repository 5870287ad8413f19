"""`train_eval`: the one gin-configured function behind `python -m paac_tf.train`."""
import gin
import tensorflow as tf

from paac_tf import errors
from paac_tf.algorithms import registry
from paac_tf.envs import names
from paac_tf.runners import dispatch
from paac_tf.runners import validation
from paac_tf.bookkeeping import checks
from paac_tf.bookkeeping import config
from paac_tf.bookkeeping import last_stop
from paac_tf.bookkeeping import reference_curve

LAUNCHERS = ("local", "ray")


def load_configurables():
  """Registers every gin configurable of the package: train_eval's (this module's), the
  runners' and the built-in algorithms' (runners/dispatch.py)."""
  dispatch.load_configurables()


ENV_NAME = checks.Check("an Atari game or a gymnasium id, e.g. 'Pong' or 'CartPole-v1'",
                        lambda v: isinstance(v, str) and bool(v), resolve=names.resolve)
ALGORITHM = checks.Check(
    lambda: "one of %s" % ", ".join(repr(n) for n in registry.names()),
    lambda v: isinstance(v, str) and (v in registry.names() or ":" in v), resolve=registry.get)


@checks.configurable(denylist=["config_files", "env"])
def train_eval(root_dir, env_name: checks.allows(ENV_NAME, str) = gin.REQUIRED,
               total_steps: checks.Count = gin.REQUIRED,
               algorithm: checks.allows(ALGORITHM, str) = registry.DEFAULT,
               seed: checks.Seed = 0, deterministic: checks.Bool = False, launcher="local",
               ray_address=None, config_files=(), env=None):
  """Trains `algorithm` on `env_name` for `total_steps` agent steps in `root_dir`; returns
  the run's `bookkeeping.run_result.RunResult`.

  Args:
    root_dir: the run directory (a run there is resumed).
    env_name: the environment: an Atari game ('Pong') or a gymnasium id ('CartPole-v1').
    total_steps: agent steps to train for (one agent step is 4 frames on Atari).
    algorithm: a registered algorithm's name (paac_tf/algorithms/registry.py), or
      'module:name' for one registered outside the package.
    seed: seeds the initial weights, the action sampling and the environments.
    deterministic: TensorFlow's ops deterministic too (`enable_op_determinism`, slower on
      some ops), so that a PAAC run with `num_workers` = 0 repeats bit for bit.
    launcher: 'local' runs on this machine; 'ray' on a Ray cluster, for the algorithms whose
      runner has such a run (Ape-X: runners/apex/ray_launcher.py).
    ray_address: the Ray cluster of launcher 'ray' ('auto', 'HOST:6379'); None: a Ray
      started on this machine for the run.
    config_files: the gin files parsed (not a binding); when the last is a shipped config
      with a reference run in results/, that run's curve goes to root_dir/reference
      (`bookkeeping/reference_curve.py`).
    env: (not a binding) `env_name` resolved, where the caller checked the configuration
      already (`validation.check_bindings` returns it, as `api.train` does); None: the
      values given here are checked and `env_name` resolved.
  """
  if env is None:
    validation.check_values("train_eval", env_name=env_name, total_steps=total_steps,
                            algorithm=algorithm, seed=seed, deterministic=deterministic)
    env = names.resolve(env_name)   # the typed value goes down: nothing below resolves it
    validation.check_actions(registry.get(algorithm), env)
  elif env.name != env_name:
    raise ValueError("train_eval: env %r is not the resolution of env_name %r." % (
        env.name, env_name))
  chosen = registry.get(algorithm)
  if launcher not in LAUNCHERS or launcher not in dispatch.launchers(chosen):
    on_ray = [a.display_name for a in registry.algorithms()
              if "ray" in dispatch.launchers(a)]
    raise errors.UserError("train_eval.launcher = %r: choose 'local', or 'ray' for %s%s." % (
        launcher, " or ".join(on_ray), "" if "ray" in dispatch.launchers(chosen) else
        " (%s runs on one machine)" % chosen.display_name))
  if ray_address is not None and launcher != "ray":
    raise errors.UserError("train_eval.ray_address is for train_eval.launcher = 'ray'.")
  started = last_stop.now()
  if deterministic:
    tf.config.experimental.enable_op_determinism()
    tf.random.set_seed(seed)
  reference_curve.write(root_dir, config_files, env)   # once: a resumed run finds it written
  # Writes operative_config.gin once the run's configuration is accepted.
  result = dispatch.runner_of(chosen).run(chosen, root_dir, env, int(total_steps), seed=seed,
                                         launcher=launcher, ray_address=ray_address)
  # Every process's bindings: the Ape-X actors' (and on Ray the learner's and replay's).
  processes = config.read_process_operative_configs(root_dir)
  processes.update(result.extras.pop("process_operative_configs", None) or {})
  config.write_operative_config(root_dir, processes)
  last_stop.write(root_dir, result, started)   # why it stopped, for tools (the campaign)
  return result
