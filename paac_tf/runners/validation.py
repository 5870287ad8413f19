"""Checks of the user-settable training parameters, run before any work starts.

CHECKS maps each gin-settable parameter of the configurables that the shipped configs
set, by its binding name ('PaacAgent.gamma'), to a `Check`: what values it allows, in
words and as a predicate. `check_bindings()` reads the values the parsed configuration
binds (unscoped bindings; macros are followed, references to other configurables are
left to the callee) and raises a UserError on the first bad one, naming the binding and
what it allows, e.g.

  PaacAgent.gamma = 1.5: must be a number in (0, 1].

It also checks that the required train_eval bindings are there and that the environment
name resolves. The entry points (training and the Ape-X programs) call it right after
parsing, before the run directory is made, so a bad value writes nothing; `check_values`
applies the same checks to arguments given in code (`train_eval`'s), `check_flag` to the Ape-X
programs' flags that stand in for bindings (the error names the flag).
"""
import math

import gin

from paac_tf import errors
from paac_tf.agents.apex import learner_step
from paac_tf.algorithms import registry
from paac_tf.envs import factory
from paac_tf.envs import names
from paac_tf.networks import precision
from paac_tf.networks import torsos
from paac_tf.runtime import config

REQUIRED = ("train_eval.env_name", "train_eval.total_steps")
_UNBOUND = object()


class Check:
  """A predicate on a value and the words that say what it allows ('an integer >= 1')."""

  def __init__(self, allowed, accepts):
    self.allowed = allowed
    self.accepts = accepts


def _is_int(value):
  return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
  return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)


def integer(low, high=None):
  """An int (not a bool) in [low, high] (high None: no upper bound)."""
  allowed = ("an integer >= %d" % low if high is None else
             "an integer in [%d, %d]" % (low, high))
  return Check(allowed, lambda v: _is_int(v) and v >= low and (high is None or v <= high))


def number(low=None, high=None, low_open=False, high_open=False):
  """A finite int or float in the interval from low to high, each end open or closed."""
  def inside(v):
    return _is_number(v) and (low is None or (v > low if low_open else v >= low)) and (
        high is None or (v < high if high_open else v <= high))
  if high is None:
    allowed = ("a number" if low is None else
               "a number %s %g" % (">" if low_open else ">=", low))
  else:
    allowed = "a number in %s%g, %g%s" % ("(" if low_open else "[", low,
                                          high, ")" if high_open else "]")
  return Check(allowed, inside)


def choice(options):
  return Check("one of %s" % ", ".join(repr(o) for o in options), lambda v: v in options)


def optional(check):
  return Check("None or " + check.allowed, lambda v: v is None or check.accepts(v))


BOOL = Check("True or False", lambda v: isinstance(v, bool))
POSITIVE = number(0, low_open=True)
NON_NEGATIVE = number(0)
FRACTION = number(0, 1, low_open=True)            # discounts: (0, 1]
DECAY = number(0, 1, high_open=True)               # moving-average decays: [0, 1)
COUNT = integer(1)
SEED = integer(0, 2 ** 31 - 1)
UNITS = Check("a tuple of integers >= 1, e.g. (64, 64)", lambda v: isinstance(
    v, (tuple, list)) and all(_is_int(u) and u >= 1 for u in v))
class _AlgorithmName(Check):
  """A registered algorithm's name, or 'module:name' of one a module registers."""

  def __init__(self):
    super().__init__(None, lambda v: isinstance(v, str) and (v in registry.names() or
                                                             ":" in v))

  @property
  def allowed(self):
    return "one of %s" % ", ".join(repr(n) for n in registry.names())

  @allowed.setter
  def allowed(self, value):
    del value


ALGORITHM = _AlgorithmName()
ENV_NAME = Check("an Atari game or a gymnasium id, e.g. 'Pong' or 'CartPole-v1'",
                 lambda v: isinstance(v, str) and bool(v))

CHECKS = {
    "train_eval.env_name": ENV_NAME,
    "train_eval.total_steps": COUNT,
    "train_eval.algorithm": ALGORITHM,
    "train_eval.seed": SEED,
    "train_eval.deterministic": BOOL,
    # PAAC
    "paac_train.num_envs": COUNT,
    "paac_train.num_workers": integer(0),
    "paac_train.t_max": COUNT,
    "paac_train.network": choice(torsos.TORSOS),
    "paac_train.mlp_units": UNITS,
    "paac_train.initializer": choice(torsos.INITIALIZERS),
    "paac_train.checkpoint_interval": COUNT,
    "paac_train.keep_checkpoints": COUNT,
    "paac_train.summary_interval": COUNT,
    "paac_train.export_interval": optional(COUNT),
    "paac_train.stop_at_average_return": optional(number()),
    "paac_train.overlap_learner": BOOL,
    "paac_train.precision": choice(precision.PRECISIONS),
    "PaacAgent.learning_rate": POSITIVE,
    "PaacAgent.lr_anneal_steps": optional(COUNT),
    "PaacAgent.rmsprop_decay": DECAY,
    "PaacAgent.rmsprop_epsilon": POSITIVE,
    "PaacAgent.entropy_coef": NON_NEGATIVE,
    "PaacAgent.value_coef": NON_NEGATIVE,
    "PaacAgent.loss_scale": POSITIVE,
    "PaacAgent.max_grad_norm": POSITIVE,
    "PaacAgent.gamma": FRACTION,
    "PaacAgent.jit_compile": BOOL,
    "training_exporter.greedy": BOOL,
    # Environments (both algorithms)
    "make_environment.atari_backend": choice(factory.ATARI_BACKENDS),
    "make_environment.num_threads": optional(COUNT),
    "make_environment.num_groups": COUNT,
    "make_environment.reward_clipping": BOOL,
    "make_environment.episodic_life": BOOL,
    "make_environment.noop_max": integer(0),
    "make_environment.max_episode_frames": COUNT,
    "make_environment.fire_reset": BOOL,
    # Ape-X
    "run_local.num_actors": COUNT,
    "run_local.port": optional(integer(1, 65535)),
    "run_local.checkpoint_replay": BOOL,
    "run_local.max_actor_restarts": integer(0),
    "run_local.shutdown_grace_s": NON_NEGATIVE,
    "apex_network.network": choice(torsos.TORSOS),
    "apex_network.mlp_units": UNITS,
    "apex_network.head_units": optional(COUNT),
    "apex_precision.precision": choice(precision.PRECISIONS),
    "ReplayLayout.n_step": COUNT,
    "ReplayLayout.single_frames": BOOL,
    "apex_replay.capacity": COUNT,
    "apex_replay.priority_exponent": NON_NEGATIVE,
    "apex_replay.learning_starts": integer(0),
    "apex_replay.samples_per_insert": POSITIVE,
    "apex_replay.samples_per_insert_tolerance": NON_NEGATIVE,
    "apex_replay.error_buffer": optional(POSITIVE),
    "apex_actor.num_envs": COUNT,
    "apex_actor.num_workers": integer(0),
    "apex_actor.discount": FRACTION,
    "apex_actor.epsilon_base": number(0, 1),
    "apex_actor.epsilon_alpha": NON_NEGATIVE,
    "apex_actor.weights_refresh_interval": COUNT,
    "apex_actor.chunk_length": COUNT,
    "apex_actor.report_interval_s": POSITIVE,
    "apex_actor.log_interval_s": POSITIVE,
    "apex_actor.tf_threads": optional(integer(0)),
    "apex_actor.tf_inter_op_threads": optional(integer(0)),
    "apex_actor.max_steps": optional(COUNT),
    "apex_actor.server_timeout_s": POSITIVE,
    "apex_learner.batch_size": COUNT,
    "apex_learner.publish_interval": COUNT,
    "apex_learner.summary_interval": COUNT,
    "apex_learner.checkpoint_interval": COUNT,
    "apex_learner.keep_checkpoints": COUNT,
    "apex_learner.export_interval": optional(COUNT),
    "apex_learner.stop_at_average_return": optional(number()),
    "apex_learner.prefetch": integer(0),
    "apex_learner.dataset_workers": COUNT,
    "apex_learner.report_interval_s": POSITIVE,
    "apex_learner.tf_threads": optional(integer(0)),
    "apex_learner.tf_inter_op_threads": optional(integer(0)),
    "apex_learner.server_timeout_s": POSITIVE,
    "ReplayRetry.initial_s": POSITIVE,
    "ReplayRetry.max_s": POSITIVE,
    "ReplayRetry.probe_timeout_s": POSITIVE,
    "ApexLearnerStep.optimizer": choice(learner_step.OPTIMIZERS),
    "ApexLearnerStep.learning_rate": POSITIVE,
    "ApexLearnerStep.rmsprop_decay": DECAY,
    "ApexLearnerStep.rmsprop_epsilon": POSITIVE,
    "ApexLearnerStep.adam_epsilon": POSITIVE,
    "ApexLearnerStep.max_grad_norm": POSITIVE,
    "ApexLearnerStep.target_update_period": COUNT,
    "ApexLearnerStep.importance_beta": number(0, 1),
    "ApexLearnerStep.huber_delta": POSITIVE,
    "ApexLearnerStep.jit_compile": BOOL,
}


def _bound_value(binding):
  """The value the configuration binds to `binding` (macros followed), or _UNBOUND; a
  reference to a configurable (`@fn`, `@fn()`) is _UNBOUND too (only its callee knows)."""
  value = config.configured(binding, _UNBOUND)
  for _ in range(100):   # a chain of macros, %A -> %B -> value
    if not isinstance(value, gin.config.ConfigurableReference):
      return value
    if value.selector != "gin.macro":
      return _UNBOUND
    value = config.configured("%" + "/".join(value.scopes), _UNBOUND)
  return _UNBOUND


def _check(binding, value, name=None):
  """Checks `value` against CHECKS[binding]; the error names `name` (default: binding)."""
  check = CHECKS[binding]
  name = name or binding
  if not check.accepts(value):
    hint = ""
    if isinstance(value, float) and value.is_integer() and "integer" in check.allowed:
      hint = " (write %d, not %r)" % (value, value)
    raise errors.ConfigError("%s = %r: must be %s%s." % (name, value, check.allowed, hint))
  if check is ALGORITHM:
    try:
      registry.get(value)
    except registry.UnknownAlgorithmError as e:
      raise errors.ConfigError("%s = %r: %s" % (name, value, e)) from None
  if check is ENV_NAME:
    try:
      names.check_env_name(value)
    except names.UnknownEnvironmentError as e:
      raise names.UnknownEnvironmentError("%s = %r: %s" % (name, value, e)) from None


def check_values(configurable, **values):
  """Checks arguments given in code to `configurable` (e.g. 'train_eval') against CHECKS;
  raises ConfigError (UnknownEnvironmentError for an environment) on a bad one."""
  for parameter, value in values.items():
    binding = "%s.%s" % (configurable, parameter)
    if binding in CHECKS:
      _check(binding, value)


def check_flag(flag, binding, value):
  """Checks the value of a program's flag that stands in for `binding` (e.g. the Ape-X
  learner's --total_steps for train_eval.total_steps) as `binding` is checked; the
  ConfigError names the flag."""
  _check(binding, value, name="--" + flag)


def flag_or_configured(flag, binding, value, default=None):
  """A program's --flag `value` checked as `binding` (`check_flag`) when given (not None),
  else the configured `binding` (checked by `check_bindings`), else `default`."""
  if value is None:
    return config.configured(binding, default)
  check_flag(flag, binding, value)
  return value


def check_bindings(required=REQUIRED):
  """Checks every value the parsed gin configuration binds to a parameter in CHECKS, and
  that the `required` ones are bound (the Ape-X programs, which take the environment and
  the length of the run as flags too, require none); raises a ConfigError
  (UnknownEnvironmentError for an unknown environment) naming the first bad binding and
  what it allows."""
  for binding in required:
    if config.configured(binding, _UNBOUND) is _UNBOUND:
      raise errors.ConfigError(
          "%s is not set: bind it in a gin file or with --gin_bindings (it must be %s)."
          % (binding, CHECKS[binding].allowed))
  for binding in CHECKS:
    value = _bound_value(binding)
    if value is not _UNBOUND:
      _check(binding, value)
  registry.get(_value("train_eval.algorithm", registry.DEFAULT)).check_config(_value)


def checked_env_name(env_name=None):
  """For the programs that take the environment as a flag besides the configuration (the
  Ape-X programs, which require no binding): checks the parsed configuration's bindings,
  then returns `env_name`, else the configured train_eval.env_name, once it resolves;
  raises as `check_bindings` does (naming --env_name for the flag's value), or a UserError
  when neither names an environment."""
  check_bindings(required=())
  if env_name:
    check_flag("env_name", "train_eval.env_name", env_name)
  return config.env_name_or_configured(env_name)


def _value(binding, default):
  value = _bound_value(binding)
  return default if value is _UNBOUND else value


def check_worker_split(configurable, bound=_value):
  """n_e environments are stepped by n_w worker processes, each the same number of them,
  on the paths that use worker processes (gymnasium ids and the portable Atari backend;
  the C++ vector backend takes n_w as its thread count): `configurable`'s num_envs must be
  a multiple of its num_workers (bound, else its defaults). `bound(binding, default)`
  reads the configuration."""
  env_name = bound("train_eval.env_name", None)
  if env_name is None:
    return
  atari = names.resolve_atari(str(env_name)) is not None
  if atari and bound("make_environment.atari_backend", "vector") == "vector":
    return
  name = configurable.__name__
  n_e = bound(name + ".num_envs", config.signature_default(configurable, "num_envs"))
  n_w = bound(name + ".num_workers", config.signature_default(configurable, "num_workers"))
  if n_w and n_e % n_w:
    raise errors.ConfigError(
        "%s.num_envs = %d is not a multiple of %s.num_workers = %d: each worker process "
        "steps the same number of environments; choose num_workers among the divisors of "
        "num_envs (or 0 to step them in this process)." % (name, n_e, name, n_w))
