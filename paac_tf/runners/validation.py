"""Checks of the user-settable training parameters, run before any work starts.

Each gin-settable parameter declares what it allows in its configurable's signature
(bookkeeping/checks.py); `checks()` maps each binding ('paac.gamma') to that Check.
`check_bindings()` reads the values the parsed configuration binds (unscoped bindings;
macros are followed, references to other configurables are left to the callee) and raises
a UserError on the first bad one, naming the binding and what it allows, e.g.

  paac.gamma = 1.5: must be a number in (0, 1].

It also checks that the required train_eval bindings are there, that the environment name
and the algorithm resolve, and the configured algorithm's checks across parameters
(`Algorithm.check_config`) and its runner's (`dispatch.check_config`, e.g. the worker
split, envs/worker_split.py). The entry points (training and the
Ape-X programs) call it right after parsing, before the run directory is made, so a bad
value writes nothing; `check_values` applies the same checks to arguments given in code
(`train_eval`'s), `check_flag` to the Ape-X programs' flags that stand in for bindings (the
error names the flag).
"""
import gin

from paac_tf import errors
from paac_tf.algorithms import registry
from paac_tf.envs import environment
from paac_tf.runners import dispatch
from paac_tf.bookkeeping import checks as checks_lib
from paac_tf.bookkeeping import config

REQUIRED = ("train_eval.env_name", "train_eval.total_steps")
_UNBOUND = object()


def checks():
  """{binding: Check} of every parameter that declares what it allows (the modules of the
  built-in algorithms and of the runners, and so their configurables, imported first)."""
  dispatch.load_configurables()
  return checks_lib.declared()


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
  """Checks `value` against the Check of `binding`; the error names `name` (default:
  binding). A value its check resolves (an environment, an algorithm) must name one: returns
  what it resolves to (None for a check that resolves nothing)."""
  check = checks()[binding]
  name = name or binding
  if not check.accepts(value):
    hint = ""
    if isinstance(value, float) and value.is_integer() and "integer" in check.allowed:
      hint = " (write %d, not %r)" % (value, value)
    raise errors.ConfigError("%s = %r: must be %s%s." % (name, value, check.allowed, hint))
  if check.resolve is None:
    return None
  try:
    return check.resolve(value)
  except errors.UserError as e:
    # The same kind of error (UnknownEnvironmentError for an environment), named.
    raise type(e)("%s = %r: %s" % (name, value, e)) from None


def check_values(configurable, **values):
  """Checks arguments given in code to `configurable` (e.g. 'train_eval') against their
  declared checks; raises ConfigError (UnknownEnvironmentError for an environment) on a bad
  one."""
  declared = checks()
  for parameter, value in values.items():
    binding = "%s.%s" % (configurable, parameter)
    if binding in declared:
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
  """Checks every value the parsed gin configuration binds to a parameter that declares a
  check, and that the `required` ones are bound (the Ape-X programs, which take the environment and
  the length of the run as flags too, require none); raises a ConfigError
  (UnknownEnvironmentError for an unknown environment) naming the first bad binding and
  what it allows. Returns the configured train_eval.env_name resolved (the
  `names.Environment` the run takes as `train_eval`'s `env`), or None if unbound."""
  declared = checks()
  for binding in required:
    if config.configured(binding, _UNBOUND) is _UNBOUND:
      raise errors.ConfigError(
          "%s is not set: bind it in a gin file or with --gin_bindings (it must be %s)."
          % (binding, declared[binding].allowed))
  resolved = {}
  for binding in declared:
    value = _bound_value(binding)
    if value is not _UNBOUND:
      resolved[binding] = _check(binding, value)
  algorithm = registry.get(_value("train_eval.algorithm", registry.DEFAULT))
  algorithm.check_config(_value)
  dispatch.check_config(algorithm, _value)
  env = resolved.get("train_eval.env_name")   # the names.Environment its check resolved
  if env is None:
    return None
  check_actions(algorithm, env)
  return env


def check_actions(algorithm, env):
  """Raises a UserError unless `algorithm` takes the actions of the `names.Environment` `env`
  (every Atari game's are discrete; a gymnasium environment's specs come from its spaces,
  once per process: `environment.specs`)."""
  if not env.is_atari:
    algorithm.check_actions(env, environment.specs(env)[1])


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

