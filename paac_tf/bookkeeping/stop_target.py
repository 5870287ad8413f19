"""The stop-at-return target of a run: which one applies, why, and when it is reached.

A config's target (`paac.stop_at_average_return`, `apex_learner.stop_at_average_return`)
is for the environment the config was written for, `target_env_name` beside it. `config.parse`
records that environment: a target bound in a gin file is for the files' `train_eval.env_name`
(unless the files bind `target_env_name` themselves); a target bound by a binding (the command
line's `--gin_bindings`) without a `target_env_name` is for the run's own environment (None).
A run on another environment stops at that environment's gymnasium `reward_threshold`
instead, or not at all if it registers none: CartPole's 490 says nothing about Acrobot.

Both training loops (PAAC's and the Ape-X learner's) use `for_run` at their start, which
logs the one line that says which target applies and why, and `StopTarget.reached`. A target
counts only once the episode window is full (100 episodes); if it is met at the first check
with a full window, the stop line says so (a target reached by the first 100 episodes,
before any learning could show, usually is one meant for another environment).
"""
from typing import Optional

from absl import logging

from paac_tf.envs import names
from paac_tf.bookkeeping import checks

PARAMETER = "stop_at_average_return"     # the gin parameter of the target, in each loop
ENV_PARAMETER = "target_env_name"         # the gin parameter of the environment it is for
# The annotation of ENV_PARAMETER (the name is resolved by `for_run`, at the loop's start).
TargetEnvName = checks.allows(checks.optional(checks.Check(
    "an Atari game or a gymnasium id, e.g. 'CartPole-v1'",
    lambda v: isinstance(v, str) and bool(v))), Optional[str])


def _number(value):
  return "%s" % float(value)


def decide(configured, target_env, run_env, run_threshold):
  """The target that applies to a run, and why, as (target or None, reason text).

  Args:
    configured: the configured target (stop_at_average_return), or None.
    target_env: the `names.Environment` the target is for, or None (the run's own).
    run_env: the run's `names.Environment`.
    run_threshold: the run environment's gymnasium reward_threshold, or None.
  """
  if configured is None:
    return None, "none configured"
  if target_env is None:
    return float(configured), "bound for this run's environment, %s" % run_env
  if names.same_environment(target_env, run_env):
    return float(configured), "the config's, for %s" % target_env
  foreign = "the config's %s is for %s" % (_number(configured), target_env)
  if run_threshold is None:
    return None, "%s has no reward_threshold; %s" % (run_env, foreign)
  return float(run_threshold), "%s's reward_threshold; %s" % (run_env, foreign)


class StopTarget:
  """The target a loop stops at (`value`, None: none) and why (`reason`, from `decide`).

  `reached(window)` is the one check: the `summaries.EpisodeWindow` is full and its average
  return is at least the target; `stop_line(window)` then says so, and whether it was met at
  the first check with a full window.
  """

  def __init__(self, value, reason):
    self.value = value
    self.reason = reason
    self.checks = 0       # checks with a full window so far (in this process)

  @property
  def start_line(self):
    """The line a run logs at its start: which target applies and why."""
    if self.value is None:
      return "No stop target (%s)" % self.reason
    return "Stop target: %s (%s)" % (_number(self.value), self.reason)

  def reached(self, window):
    if self.value is None or len(window.returns) < window.returns.maxlen:
      return False
    self.checks += 1
    return window.average_return >= self.value

  def stop_line(self, window):
    """The line that says why the run stopped on its target (after `reached` said so)."""
    line = "Reached the stop target: the last %d episodes average %.2f >= %s (%s)" % (
        len(window.returns), window.average_return, _number(self.value), self.reason)
    if self.checks == 1:
      line += ("; met at the first check, as soon as %d episodes had finished: a target "
               "met before any learning shows may be meant for another environment" %
               len(window.returns))
    return line


def for_run(configured, target_env_name, run_env):
  """The run's StopTarget (`decide` with the environments resolved and the run environment's
  reward_threshold looked up); logs the line that says which target applies and why.
  `run_env`: an Environment or a name."""
  run_env = names.resolve(run_env)
  if not target_env_name:
    target_env = None
  elif target_env_name == run_env.name:
    target_env = run_env   # resolved once, by the caller
  else:
    target_env = names.resolve(target_env_name)
  threshold = None
  if configured is not None and target_env is not None and not names.same_environment(
      target_env, run_env):
    threshold = names.reward_threshold(run_env)
  target = StopTarget(*decide(configured, target_env, run_env, threshold))
  logging.info("%s.", target.start_line)
  return target
