"""The public Python API, for scripts and notebooks: `paac_tf.train`, `paac_tf.load_policy`,
`paac_tf.make_env` (exported lazily by `paac_tf/__init__.py`).

`train` runs exactly what `python -m paac_tf.train` runs (the command is a call of it);
`load_policy` loads what training exports; `make_env` builds the batched environment that
training steps. TensorFlow is imported by the first call, not by `import paac_tf`.
"""
import ast
import dataclasses
import datetime
import difflib
import inspect
import os
import time
from typing import Any, Mapping, Optional, Sequence, Union

from absl import logging

from paac_tf import errors
from paac_tf.bookkeeping import callbacks as callbacks_lib
from paac_tf.bookkeeping import root_dirs
from paac_tf.bookkeeping import run_lock
from paac_tf.bookkeeping import run_result
from paac_tf.bookkeeping import signals
from paac_tf.bookkeeping import startup


# What `train` returns: the run's result (`bookkeeping/run_result.py`: agent_steps, updates,
# episodes, average_return, reason, policy_dir, evaluation, metrics; `summary()`) with its
# root_dir, checkpoint and wall time.
# A stop (SIGINT/SIGTERM) before the training began (imports, configuration) ends the call at
# once with reason 'signal', zero updates and episodes, and the agent step of the latest
# checkpoint, if any.
TrainResult = run_result.RunResult


def default_root_dir(gin_files: Sequence[str]) -> str:
  """runs/<last config's name>-<timestamp>, e.g. runs/cartpole-20261201-120000."""
  stem = os.path.splitext(os.path.basename(gin_files[-1]))[0] if gin_files else "run"
  stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
  return os.path.join("runs", "%s-%s" % (stem, stamp))


def newest_export(root_dir: str) -> Optional[str]:
  """The SavedModel version directory of `root_dir/policies` with the highest version (the
  newest export of a run), or None: for a call stopped before its run began (a run's result
  carries its own `policy_dir`)."""
  return root_dirs.newest_export(root_dir)


def _train_eval_parameters():
  """The gin parameters of `runners.train_eval.train_eval` (env_name, total_steps, ...): its
  parameters but root_dir and those its decorator's `denylist` keeps out of gin (e.g. `env`,
  `config_files`: no binding sets them), read from its source: importing it would load
  TensorFlow (seconds) to word an error."""
  path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runners", "train_eval.py")
  with open(path, encoding="utf-8") as f:
    tree = ast.parse(f.read())
  found = [node for node in tree.body
           if isinstance(node, ast.FunctionDef) and node.name == "train_eval"]
  if not found:
    return []
  denied = {"root_dir"}
  for decorator in found[0].decorator_list:
    for keyword in getattr(decorator, "keywords", []):
      if keyword.arg == "denylist":
        denied.update(ast.literal_eval(keyword.value))
  return [a.arg for a in found[0].args.args if a.arg not in denied]


def unknown_keywords(function, unknown, accepted):
  """The UserError for the keyword arguments `unknown` ({name: value}) that `function` (e.g.
  'paac_tf.train') does not take, on one line: it names the `accepted` keywords and, for each
  unknown one, the closest accepted keyword or, for a name close to one of train_eval's
  parameters, the binding that sets it."""
  parameters = _train_eval_parameters()
  hints = []
  for name, value in sorted(unknown.items()):
    keyword = difflib.get_close_matches(name, accepted, n=1, cutoff=0.5)
    binding = difflib.get_close_matches(name, parameters, n=1, cutoff=0.5)
    if keyword:
      hint = "did you mean %s=%r?" % (keyword[0], value)
    elif binding:
      hint = "did you mean bindings={'train_eval.%s': %r}?" % (binding[0], value)
    else:
      hint = "configuration values go in bindings, e.g. {'train_eval.total_steps': 20000}"
    hints.append("%r (%s)" % (name, hint))
  return errors.UserError("%s() takes %s; unknown keyword argument%s %s." % (
      function, ", ".join(accepted), "s" if len(unknown) > 1 else "", ", ".join(hints)))


def train(gin_files: Union[str, Sequence[str]],
          bindings: Union[str, Sequence[str], Mapping[str, Any]] = (),
          root_dir: Optional[str] = None, callbacks: Sequence[Any] = (),
          **unknown: Any) -> TrainResult:
  """Trains as `python -m paac_tf.train --gin_file=... --gin_bindings=... --root_dir=...`.

  Args:
    gin_files: config files, in order; a bare name (`'cartpole.gin'`) is one of the
      shipped configs (configs/).
    bindings: gin bindings applied after the files: binding lines, e.g.
      `['train_eval.total_steps=20000']`, or a dict of parameters and Python values, e.g.
      `{'train_eval.total_steps': 20000, 'train_eval.env_name': 'Acrobot-v1'}` (each value
      written as a gin literal: `bookkeeping/config.py`'s `gin_literal`).
    root_dir: run directory (default: runs/<config>-<timestamp>); an existing run there
      is resumed from its latest checkpoint.
    callbacks: objects with any of `on_update(metrics)`, `on_evaluation(result)`,
      `on_end(result)` (bookkeeping/callbacks.py); `on_update` or `on_evaluation`
      returning False stops the run as a signal does, with a checkpoint (reason
      'callback').

  Returns:
    A TrainResult. Each call starts from a clear gin configuration, so calls in one
    process (a notebook) do not see each other's bindings. SIGINT/SIGTERM during the call
    stop the run cleanly (`paac_tf/bookkeeping/signals.py`): after a checkpoint once the model
    exists, the call returns with reason 'signal'.

  Raises:
    paac_tf.errors.UserError: a bad config, binding, environment or root_dir, or a keyword
      argument `train` does not take (`unknown`: one line naming the ones it takes).
  """
  if unknown:
    raise unknown_keywords("paac_tf.train", unknown,
                           ["gin_files", "bindings", "root_dir", "callbacks"])
  gin_files = [gin_files] if isinstance(gin_files, str) else list(gin_files)
  if not gin_files:
    raise errors.UserError("Give a config, e.g. paac_tf.train(['cartpole.gin']).")
  try:
    callbacks = callbacks_lib.check(callbacks)
  except TypeError as e:
    raise errors.UserError(str(e)) from None
  startup.quiet_tensorflow()
  root_dir = root_dirs.absolute(root_dir or default_root_dir(gin_files))
  started = time.monotonic()
  with signals.stop_on_signals() as stop, callbacks_lib.installed(callbacks):
    result = dataclasses.replace(_train(gin_files, bindings, root_dir, stop),
                                 wall_time_s=round(time.monotonic() - started, 3))
    callbacks_lib.call("on_end", result)
  return result


def _train(gin_files, bindings, root_dir, stop):
  # A run directory in use is refused at once, before TensorFlow loads; one without
  # run.lock yet is locked once it is prepared, below (nothing is written before that).
  lock = run_lock.acquire(root_dir, create=False, what="paac_tf.train") \
      if os.path.isdir(root_dir) else None
  try:
    # Lazy: TensorFlow is imported by the first call, not by `import paac_tf`.
    # pylint: disable=import-outside-toplevel
    import gin
    from paac_tf.runners import dispatch
    from paac_tf.runners import train_eval as train_eval_lib
    from paac_tf.runners import validation
    from paac_tf.bookkeeping import checkpointing
    from paac_tf.bookkeeping import config
    # pylint: enable=import-outside-toplevel
    train_eval_lib.load_configurables()
    gin.clear_config()
    config_files = config.parse(gin_files, bindings,
                                skip_unknown=dispatch.unavailable_configurables())
    # Bad values stop here, before the run directory is made; the environment is resolved
    # (and its actions checked) once, here, and goes down as train_eval's `env`.
    env = validation.check_bindings()
    train_dir = os.path.join(root_dir, "train")
    stop.begin_run()
    if stop.requested:   # during the imports or the configuration: nothing made, nothing lost
      return TrainResult(root_dir=root_dir, policy_dir=newest_export(root_dir),
                         agent_steps=checkpointing.latest_step(train_dir), updates=0,
                         episodes=0, average_return=float("nan"), reason="signal",
                         checkpoint=checkpointing.latest_checkpoint(train_dir))
    root_dir = root_dirs.prepare_root_dir(root_dir)
    lock = lock or run_lock.acquire(root_dir, what="paac_tf.train")
    logging.info("Run directory: %s", root_dir)
    result = train_eval_lib.train_eval(root_dir=root_dir, config_files=config_files, env=env)
  finally:
    if lock:
      lock.release()
  logging.info("Result: %s", result.as_dict())
  # The run's result carries its newest export (`policy_dir`); the call adds where it ran.
  return dataclasses.replace(
      result, root_dir=root_dir, average_return=float(result.average_return),
      checkpoint=checkpointing.latest_checkpoint(os.path.join(root_dir, "train")))


class Policy:
  """An exported policy loaded with TensorFlow alone (policies/loading.py's LoadedPolicy).

  Attributes:
    policy_dir: the SavedModel version directory.
    observation_spec: the TensorSpec of one batch of observations.
    metadata: the export's metadata (algorithm, environment, preprocessing, agent step...).
  """

  def __init__(self, loaded):
    self._loaded = loaded
    self.policy_dir = loaded.policy_dir
    self.observation_spec = loaded.observation_spec
    self.metadata = loaded.metadata

  def action(self, observations):
    """Actions for a batch of observations [B, ...] as the environment gives them (cast to
    the policy's dtype), or for a batched TimeStep (its observation): int64 [B] for a
    discrete policy, float32 [B, *action_shape] within the bounds for a continuous one."""
    return self._loaded.actions(getattr(observations, "observation", observations))

  def __repr__(self):
    return "Policy(%r)" % self.policy_dir


def load_policy(path: str) -> Policy:
  """Loads an exported policy: a SavedModel version directory, a model directory (its
  highest version) or a run directory (its newest export).

  Raises:
    paac_tf.errors.UserError: nothing loadable at `path`.
  """
  startup.quiet_tensorflow()
  # Lazy: TensorFlow is imported by the first call, not by `import paac_tf`.
  from paac_tf.policies import loading  # pylint: disable=import-outside-toplevel
  return Policy(loading.LoadedPolicy(loading.resolve_policy_dir(path)))


def make_env(name: str, num_envs: int = 1, num_workers: int = 0, seed: int = 0,
             **options: Any):
  """The batched environment training uses: `num_envs` copies of `name` (an Atari game,
  e.g. 'Pong', or a gymnasium id, e.g. 'CartPole-v1') behind one TF-Agents
  PyEnvironment (`reset()`, `step(actions)` with [num_envs] actions, `close()`; a usable
  `with` block). Atari gets the papers' preprocessing with training's defaults (reward
  clipping on, no episodic life, up to 30 no-ops); `options` override them, by the
  parameter names of `paac_tf.envs.environment.make_environment` (e.g.
  `reward_clipping=False`). Values bound in a gin config do not apply here.
  """
  startup.quiet_tensorflow()
  # Lazy: TensorFlow is imported by the first call, not by `import paac_tf`.
  from paac_tf.envs import environment  # pylint: disable=import-outside-toplevel
  params = inspect.signature(environment.make_environment).parameters
  settings = {k: p.default for k, p in params.items() if p.default is not inspect.Parameter.empty}
  unknown = sorted(set(options) - set(settings))
  if unknown:
    raise errors.UserError("make_env has no option %s; options: %s." % (
        ", ".join(unknown), ", ".join(sorted(settings))))
  settings.update(options)
  return environment.make_environment(name, num_envs=int(num_envs),
                                      num_workers=int(num_workers), seed=int(seed), **settings)
