"""Gin configuration: locating files, parsing with clear errors, reading bound values,
saving the operative config.

Parsing only knows the configurables that are registered: entry points call
`runners.train_eval.load_configurables()` first. `import gin.tf` would pull in
tf.estimator, so this project registers what gin needs itself and only imports plain `gin`.
"""
import collections.abc
import difflib
import inspect
import logging
import math
import numbers
import os

import gin
from gin import config_parser

from paac_tf import errors
from paac_tf.bookkeeping import stop_target

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _configs_dir():
  """The shipped configs: the top-level configs/ of a checkout (and of an editable install),
  which a wheel installs as the package data configs/ (setup.py)."""
  installed = os.path.join(PACKAGE_DIR, "configs")
  return installed if os.path.exists(os.path.join(installed, "atari.gin")) else os.path.join(
      os.path.dirname(PACKAGE_DIR), "configs")


CONFIGS_DIR = _configs_dir()


def available_configs():
  """The names of the shipped configs, e.g. ['apex_atari.gin', ..., 'cartpole.gin']."""
  if not os.path.isdir(CONFIGS_DIR):
    return []
  return sorted(f for f in os.listdir(CONFIGS_DIR) if f.endswith(".gin"))


def resolve_gin_file(name):
  """A path as given if it exists; else a bare name (`.gin` optional) among the shipped
  configs in the package's configs/ folder; else a ConfigError naming close matches."""
  if os.path.isfile(name):
    return os.path.abspath(name)
  candidate = os.path.join(CONFIGS_DIR, name)
  if os.path.isfile(candidate):
    return candidate
  if not name.endswith(".gin") and os.path.isfile(candidate + ".gin"):
    return candidate + ".gin"
  known = available_configs()
  close = difflib.get_close_matches(os.path.basename(name), known, n=3, cutoff=0.4)
  raise errors.ConfigError(
      "Gin file %r not found (looked in the current directory and in %s).%s Available: %s." % (
          name, CONFIGS_DIR, (" Did you mean %s?" % ", ".join(close)) if close else "",
          ", ".join(known) or "none"))


_SEARCH_DIRS = set()


def _add_include_dirs(paths):
  """Lets gin find a file's `include 'x.gin'` beside that file and among the shipped
  configs (gin itself looks in the current directory first, then in its search paths)."""
  for d in [os.path.dirname(p) for p in paths] + [CONFIGS_DIR]:
    if d not in _SEARCH_DIRS:
      gin.add_config_file_search_path(d)
      _SEARCH_DIRS.add(d)


def _drop_gin_resource_reader(record):
  """Gin's package-resource reader logs each search path it tries for an include (and an
  ERROR 'Path not found' for each it is not in) on the root logger: dropped while parsing."""
  return record.module != "resource_reader"


# Configurables that are gone: {old name: the namespace that holds their settings now};
# settings that are gone: {(configurable, parameter): why}. Each module that moved or
# removed a setting declares it beside its configurable (`moved`, `removed`).
_MOVED = {}
_REMOVED = {}


def moved(old_configurables, namespace):
  """Declares that the settings of `old_configurables` (e.g. 'paac_train') are `namespace`'s
  now: a binding of an old one is refused with one line naming the new binding."""
  for name in old_configurables:
    _MOVED[name] = namespace


def removed(configurables, parameter, why):
  """Declares that `parameter` of each of `configurables` is gone, and `why`."""
  for name in configurables:
    _REMOVED[(name, parameter)] = why


def check_renamed(text, where):
  """Raises a ConfigError on the first binding of `text` (a gin file's or the bindings',
  `where`) to a configurable or setting that is gone (`moved`, `removed`), naming what
  replaced it or why it went."""
  try:
    statements = list(config_parser.ConfigParser(
        text, gin.config.ParserDelegate(skip_unknown=True)))
  except (SyntaxError, ValueError):
    return   # gin's own parse reports it
  for statement in statements:
    if not isinstance(statement, config_parser.BindingStatement):
      continue
    old = "%s.%s" % (statement.selector, statement.arg_name)
    configurable = statement.selector.rpartition(".")[2]
    why = _REMOVED.get((configurable, statement.arg_name))
    if why:
      raise errors.ConfigError("%s (%s): this setting was removed: %s." % (old, where, why))
    if configurable in _MOVED:
      new = "%s.%s" % (_MOVED[configurable], statement.arg_name)
      if new not in settings():
        raise errors.ConfigError("%s (%s): %s's settings are %s's now, which has no setting "
                                 "%s; %s" % (old, where, configurable, _MOVED[configurable],
                                             statement.arg_name, closest_settings(new)))
      raise errors.ConfigError("%s (%s) is now %s: the settings are one namespace now "
                               "(configs/atari.gin shows them)." % (old, where, new))


PACKAGE = "paac_tf"
LIST_SETTINGS = ("every setting: `python -m paac_tf.train --gin_file=... --list_settings`, "
                 "docs/configuration.md")


def _read(path):
  with open(path, encoding="utf-8") as f:
    return f.read()


def package_configurables():
  """gin's records of the registered configurables whose function or class is the
  package's (gin has no public listing of its registry)."""
  registry = gin.config._REGISTRY   # pylint: disable=protected-access
  return [c for _, c in registry.items()
          if str(getattr(c.wrapped, "__module__", "")).startswith(PACKAGE + ".")]


def settable_parameters(record):
  """The parameters (`inspect.Parameter`) of a configurable's function, or of its class's
  constructor, that gin binds: named ones its denylist (or allowlist) leaves to gin and
  that have a default (`gin.REQUIRED`: it must be bound)."""
  fn = record.wrapped
  if inspect.isclass(fn):
    parameters = list(inspect.signature(fn.__init__).parameters.values())[1:]
  else:
    parameters = list(inspect.signature(fn).parameters.values())
  return [p for p in parameters
          if p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
          and p.default is not inspect.Parameter.empty
          and not (record.denylist and p.name in record.denylist)
          and not (record.allowlist and p.name not in record.allowlist)]


def settings():
  """Every binding of the registered configurables of the package: ['train_eval.env_name',
  ..., 'paac.num_envs', ...]."""
  return ["%s.%s" % (c.name, p.name) for c in package_configurables()
          for p in settable_parameters(c)]


def closest_settings(name):
  """'did you mean paac.num_envs?' (up to 3 settings, the closest first, `difflib`) or
  'no setting is close', then where every setting is listed."""
  close = difflib.get_close_matches(name, settings(), n=3, cutoff=0.6)
  return "%s (%s)." % ("did you mean %s?" % " or ".join(close) if close
                       else "no setting has a close name", LIST_SETTINGS)


def unknown_binding(text, where):
  """The ConfigError for the first binding of `text` (a gin file's or the bindings', `where`)
  of a configurable that is not registered or of a parameter its configurable has not,
  naming the closest settings (`closest_settings`); None if every binding names one. Gin's
  own messages name neither."""
  try:
    statements = list(config_parser.ConfigParser(
        text, gin.config.ParserDelegate(skip_unknown=True)))
  except (SyntaxError, ValueError):
    return None   # gin's own parse reports it
  registry = gin.config._REGISTRY   # pylint: disable=protected-access
  for statement in statements:
    if not isinstance(statement, config_parser.BindingStatement) or not statement.arg_name:
      continue   # a macro's definition (`NAME = value`)
    try:   # gin's own test of a binding (registered, a parameter, not denied)
      gin.config.ParsedBindingKey.parse(
          (statement.scope, statement.selector, statement.arg_name))
      continue
    except ValueError:
      pass
    name = "%s.%s" % (statement.selector, statement.arg_name)
    record = registry.get_match(statement.selector)
    if record is None:
      return errors.ConfigError("%s (%s): no configurable is named %s; %s" % (
          name, where, statement.selector, closest_settings(name)))
    return errors.ConfigError("%s (%s): %s has no setting %s; %s" % (
        name, where, record.name, statement.arg_name,
        closest_settings("%s.%s" % (record.name, statement.arg_name))))
  return None


def parse(gin_files, gin_bindings, skip_unknown=()):
  """Parses files then bindings (`binding_lines`' forms); any gin error becomes a ConfigError
  naming the line, a binding of a setting that moved one naming where it is now
  (`check_renamed`). Bindings to the configurables named in `skip_unknown` are skipped where
  those are not registered (runners/dispatch.py: the Ape-X runner's, without Reverb)."""
  paths = [resolve_gin_file(f) for f in (gin_files or [])]
  _add_include_dirs(paths)
  bindings = binding_lines(gin_bindings)
  for path in paths:
    check_renamed(_read(path), path)
  check_renamed("\n".join(bindings), "--gin_bindings")
  logging.getLogger().addFilter(_drop_gin_resource_reader)
  try:
    skip = list(skip_unknown) or False
    gin.parse_config_files_and_bindings(paths, [], finalize_config=False, skip_unknown=skip)
    _record_target_envs(gin.config_str(), "train_eval.env_name")
    gin.parse_config_files_and_bindings([], bindings, finalize_config=False,
                                        skip_unknown=skip)
    _record_target_envs("\n".join(bindings), None)
  except (ValueError, SyntaxError, TypeError, KeyError, ImportError, OSError) as e:
    texts = [(_read(path), path) for path in paths] + [("\n".join(bindings), "--gin_bindings")]
    unknown = next((u for u in (unknown_binding(text, where) for text, where in texts) if u),
                   None)
    raise unknown or errors.ConfigError("Bad gin configuration: %s" % str(e).strip()) from None
  finally:
    logging.getLogger().removeFilter(_drop_gin_resource_reader)
  return paths


def gin_literal(value, name="value"):
  """`value` written as gin reads it back: a str quoted, a bool, int (numpy's too), finite
  float or None as Python writes them, a list, tuple or dict of such values; else a
  ConfigError (`name`: what the message calls the value, e.g. the binding's parameter)."""
  if isinstance(value, (list, tuple)):
    items = [gin_literal(v, name) for v in value]
    if isinstance(value, tuple):
      return "(%s)" % "".join(item + ", " for item in items).rstrip(" ")
    return "[%s]" % ", ".join(items)
  if isinstance(value, dict):
    return "{%s}" % ", ".join("%s: %s" % (gin_literal(k, name), gin_literal(v, name))
                              for k, v in value.items())
  if value is None or isinstance(value, bool):
    return repr(value)
  if isinstance(value, str):
    return repr(str(value))
  if isinstance(value, numbers.Integral):     # numpy's too, written as Python's
    return repr(int(value))
  if isinstance(value, numbers.Real):
    if not math.isfinite(value):
      raise errors.ConfigError("%s = %r: gin has no literal for a float that is not finite."
                               % (name, value))
    return repr(float(value))
  raise errors.ConfigError(
      "%s = %r: a binding's value must be a str, bool, int, float, None, or a list, tuple or "
      "dict of them (a gin reference such as @name or %%macro goes in a binding string, "
      "'x.y = @name')." % (name, value))


def binding_lines(bindings):
  """Gin binding lines from `bindings`: one line (a str), lines, or a mapping {parameter:
  Python value}, e.g. {'train_eval.total_steps': 20000} -> ['train_eval.total_steps = 20000']
  (values as `gin_literal` writes them)."""
  if isinstance(bindings, str):
    return [bindings]
  if isinstance(bindings, collections.abc.Mapping):
    return ["%s = %s" % (name, gin_literal(value, name)) for name, value in bindings.items()]
  return list(bindings or [])


def _bound(text, parameter):
  """The configurables (the last part of a selector, e.g. 'paac_train') whose `parameter` the
  gin statements of `text` bind outside any scope."""
  statements = config_parser.ConfigParser(text, gin.config.ParserDelegate(skip_unknown=True))
  found = set()
  for statement in statements:
    if isinstance(statement, config_parser.BindingStatement) and not statement.scope and (
        statement.arg_name == parameter):
      found.add(statement.selector.rpartition(".")[2])
  return found


def _record_target_envs(text, env_parameter):
  """Records which environment each stop-at-return target that the gin statements of `text`
  bind is for (`bookkeeping/stop_target.py`), unless they bind its `target_env_name` too: the
  environment `env_parameter` is bound to (the gin files' 'train_eval.env_name'), or None
  (the bindings': the run's own environment)."""
  env_name = configured(env_parameter) if env_parameter else None
  with_env = _bound(text, stop_target.ENV_PARAMETER)
  for selector in _bound(text, stop_target.PARAMETER) - with_env:
    gin.bind_parameter("%s.%s" % (selector, stop_target.ENV_PARAMETER), env_name)


def configured(name, default=None):
  """The value gin binds to `name` (e.g. 'train_eval.env_name'), or `default`."""
  try:
    return gin.query_parameter(name)
  except ValueError:
    return default


def signature_default(fn, parameter):
  """The default that `fn` declares for `parameter` (None if it declares none)."""
  default = inspect.signature(fn).parameters[parameter].default
  return None if default is inspect.Parameter.empty else default


def configured_or_default(fn, parameter):
  """The value of `fn`'s `parameter` under the parsed configuration: the value gin binds to
  '<fn name>.<parameter>', else the default `fn` declares. `fn`: a configurable function
  registered under its own name (e.g. `apex_actor`)."""
  return configured("%s.%s" % (fn.__name__, parameter), signature_default(fn, parameter))


def env_name_or_configured(env_name):
  """`env_name` if given, else the configuration's train_eval.env_name; a UserError if
  neither names an environment."""
  env_name = env_name or configured("train_eval.env_name")
  if not env_name:
    raise errors.UserError("No environment: give --env_name or a gin file that binds "
                           "train_eval.env_name (the run's config, e.g. apex_atari.gin).")
  return env_name


OPERATIVE_CONFIG = "operative_config.gin"
PROCESS_CONFIGS_DIR = "operative_configs"     # root_dir/operative_configs/<process>.gin


def write_operative_config(root_dir, processes=None):
  """Writes the operative config (values actually used) to root_dir/operative_config.gin:
  this process's, then one section per other process of the run that used other values
  (`processes`: {name: its operative config text}, e.g. Ape-X actors and a Ray replay;
  processes with the same text share a section)."""
  path = os.path.join(root_dir, OPERATIVE_CONFIG)
  text = gin.operative_config_str()
  by_text = {}
  for name, other in sorted((processes or {}).items()):
    by_text.setdefault(other, []).append(name)
  for other, names in by_text.items():
    text += ("\n# ---- The operative configuration of %s (a process of its own): every "
             "binding it used. ----\n%s" % (", ".join(names), other))
  tmp = path + ".tmp"
  with open(tmp, "w") as f:
    f.write(text)
  os.replace(tmp, path)
  return path


def write_process_operative_config(root_dir, name):
  """Writes this process's operative config to root_dir/operative_configs/<name>.gin (a
  process of a run whose main process writes operative_config.gin: an Ape-X actor)."""
  directory = os.path.join(root_dir, PROCESS_CONFIGS_DIR)
  os.makedirs(directory, exist_ok=True)
  path = os.path.join(directory, name + ".gin")
  with open(path + ".tmp", "w") as f:
    f.write(gin.operative_config_str())
  os.replace(path + ".tmp", path)
  return path


def read_process_operative_configs(root_dir):
  """{name: text} of what write_process_operative_config wrote under root_dir."""
  directory = os.path.join(root_dir, PROCESS_CONFIGS_DIR)
  found = {}
  for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
    if name.endswith(".gin"):
      with open(os.path.join(directory, name)) as f:
        found[name[:-len(".gin")]] = f.read()
  return found
