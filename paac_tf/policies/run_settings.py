"""What a training run recorded about its settings, as exports read them.

- `train/run_config.json`: algorithm, environment and, since it was recorded, the
  network's full spec (`network_spec`, see `paac_tf/networks/specs.py`);
- `operative_config.gin`: the gin values the run used. Read with gin's own parser, without
  touching gin's state, for the environment settings an exported policy's user must
  reproduce (`preprocessing_metadata`), and for the network of runs recorded before their
  run_config.json held its spec (`_spec_from_operative_config`).
"""
import inspect
import json
import os
import tokenize

import gin
from gin import config_parser
import tensorflow as tf

from paac_tf import errors
from paac_tf.algorithms import registry
from paac_tf.envs import atari_vector
from paac_tf.envs import environment
from paac_tf.envs import factory
from paac_tf.envs import names
from paac_tf.bookkeeping import checkpointing

# The configurable whose arguments change what the agent sees, and those arguments (not
# speed settings).
MAKE_ENVIRONMENT = "paac_tf.envs.make_environment"
ENV_SETTINGS = ("atari_backend", "reward_clipping", "episodic_life", "fire_reset", "noop_max",
                "max_episode_frames")


RUN_CONFIG_NAME = "train/" + checkpointing.RUN_CONFIG


def read_run_config(root_dir):
  """The run's train/run_config.json; a UserError unless it names an exportable run."""
  path = os.path.join(root_dir, "train", checkpointing.RUN_CONFIG)
  if not tf.io.gfile.exists(path):
    raise errors.UserError("%s not found: --root_dir must be a training run directory "
                           "(python -m paac_tf.train --root_dir=...)." % path)
  with tf.io.gfile.GFile(path) as f:
    try:
      run_config = json.load(f)
    except ValueError as e:
      raise errors.UserError("%s is not valid JSON (%s)." % (path, e)) from None
  for key in ("algorithm", "env_name"):
    if key not in run_config:
      raise errors.UserError("%s lacks %r." % (path, key))
  run_algorithm(run_config, path)
  return run_config


def run_algorithm(run_config, path=RUN_CONFIG_NAME):
  """The algorithm (`paac_tf.algorithms.base.Algorithm`) that a run_config.json names; a
  UserError naming `path` unless it is registered (or its recorded module registers it)."""
  name = run_config["algorithm"]
  module = run_config.get("algorithm_module")
  try:
    return registry.get("%s:%s" % (module, name) if module else name)
  except registry.UnknownAlgorithmError as e:
    if module:
      raise errors.UserError("%s names algorithm %r: %s" % (path, name, e)) from None
    raise errors.UserError("%s names algorithm %r; exportable: %s."
                           % (path, name, ", ".join(registry.names()))) from None


def read_operative_config(root_dir):
  """The text of the run's operative_config.gin ('' if there is none)."""
  path = os.path.join(root_dir, "operative_config.gin")
  if not tf.io.gfile.exists(path):
    return ""
  with tf.io.gfile.GFile(path) as f:
    return f.read()


def operative_bindings(config_text, configurable):
  """{parameter: value} that a gin config text binds for `configurable`.

  Read with gin's own parser and delegate, without touching gin's configuration. As in
  gin, a selector names the configurable when it is its complete name (such as
  'paac_tf.envs.make_environment') or a dotted suffix of it ('make_environment'); scoped
  bindings are skipped.

  Raises:
    errors.ConfigError: the text does not parse.
  """
  bindings = {}
  if not config_text:
    return bindings
  try:
    parser = config_parser.ConfigParser(config_text,
                                        gin.config.ParserDelegate(skip_unknown=True))
    for statement in parser:
      if (isinstance(statement, config_parser.BindingStatement) and not statement.scope and
          ("." + configurable).endswith("." + statement.selector)):
        bindings[statement.arg_name] = statement.value
  except (SyntaxError, ValueError, tokenize.TokenError) as e:
    raise errors.ConfigError("Cannot parse the operative gin config: %s" % e) from None
  return bindings


def environment_settings(config_text):
  """make_environment's effective ENV_SETTINGS: its defaults, then the config's values."""
  params = inspect.signature(environment.make_environment).parameters
  settings = {name: params[name].default for name in ENV_SETTINGS if name in params}
  for name, value in operative_bindings(config_text, MAKE_ENVIRONMENT).items():
    if name in settings:
      settings[name] = value
  return settings


def preprocessing_metadata(env_name, operative_config=""):
  """What a user must reproduce to feed the policy: the env settings of the run."""
  try:
    game = names.resolve_atari(str(env_name))
  except Exception:  # pylint: disable=broad-except
    game = None   # ale-py missing
  if game is None:
    return {"gymnasium_id": str(env_name),
            "observations": "as the gymnasium env gives them (float64 Boxes as float32)"}
  settings = environment_settings(operative_config)
  settings["atari_game"] = game.name
  settings["gymnasium_id"] = game.gymnasium_id
  # The factory's fixed Atari settings where it names them, else the vector env's defaults.
  params = inspect.signature(atari_vector.AtariVectorPyEnvironment.__init__).parameters
  for name in ("frameskip", "frame_stack", "repeat_action_probability", "full_action_space"):
    value = getattr(factory, "ATARI_" + name.upper(), None)
    if value is None and name in params:
      value = params[name].default
    if value is not None:
      settings[name] = value
  settings["frames"] = "84x84 grayscale, max of the last two frames, uint8 NHWC stack"
  return settings


def network_spec(run_config, operative_config):
  """The spec of a run's network: recorded in its run_config.json, else (runs recorded
  before it was) `_spec_from_operative_config`.

  Raises:
    errors.ConfigError: an older run's operative config does not parse.
  """
  return run_config.get("network_spec") or _spec_from_operative_config(run_config,
                                                                       operative_config)


def _spec_from_operative_config(run_config, operative_config):
  """A run's network spec from what it recorded before its spec: each network setting from
  run_config.json, else from the operative config, else the builder's default; the
  observation spec and number of actions of an environment built as the run's."""
  algorithm = run_algorithm(run_config)
  settings = algorithm.network_parameters
  bindings = operative_bindings(operative_config, algorithm.network_configurable)
  values = {name: run_config.get(name, bindings.get(name)) for name in settings}
  env = environment.make_environment(run_config["env_name"], num_envs=1, num_workers=0,
                                     seed=0, **environment_settings(operative_config))
  try:
    return algorithm.network_spec(
        env.action_spec(), env.observation_spec(),
        **{name: value for name, value in values.items() if value is not None})
  finally:
    env.close()
