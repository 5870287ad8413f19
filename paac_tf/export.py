r"""Exports trained policies as SavedModels that TF Serving and plain TensorFlow can run.

  python -m paac_tf.export --root_dir=RUN [--checkpoint=STEP] [--export_dir=DIR] [--greedy]

Layout (TF Serving's): `DIR/<model_name>/<version>/`, integer versions (by default the
agent step of the checkpoint), written under a hidden temporary name and renamed into
place, so TF Serving never sees a half-written version. An existing version is never
overwritten.

Signatures of every export (PAAC and Ape-X share this code):
  serving_default(observation) -> action int64 [B] and
      probabilities float32 [B, A], value float32 [B]     (PAAC), or
      q_values float32 [B, A]                             (Ape-X).
    `observation` is a batch exactly as the environment gives it: uint8 [B, 84, 84, 4]
    frame stacks on Atari (scaled inside the model), float32 vectors for gymnasium envs.
  action, get_initial_state, get_train_step, get_metadata: as TF-Agents' `PolicySaver`
    writes them (with `policy_specs.pbtxt`), so that
    `tf_agents.policies.py_tf_eager_policy.SavedModelPyTFEagerPolicy(path,
    load_specs_from_pbtxt=True)` loads and runs the policy.
Metadata (algorithm, env_name, greedy, epsilon, train_step, preprocessing, operative gin
config, ...) is in `get_metadata()` and, as one JSON document, in
`assets/paac_tf_metadata.json`. `train_step` counts agent steps (`train_step_unit`), as do
the version directories of training exports.

Actions: a PAAC export samples from its policy unless exported `greedy` (argmax). An
Ape-X export is greedy by default; with greedy=False it acts epsilon-greedily with the
`epsilon` given in its metadata.
"""
import contextlib
import datetime
import inspect
import json
import logging as logging_lib
import os
import re
import sys
import tempfile

from absl import logging
import gin
import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp
from tf_agents.policies import policy_saver
from tf_agents.policies import tf_policy
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import policy_step
from tf_agents.trajectories import time_step as ts

from paac_tf import errors
from paac_tf.runtime import memory

METADATA_FILE = "paac_tf_metadata.json"
FORMAT_VERSION = 1
ALGORITHMS = ("paac", "apex")
# Checkpoint keys of the model in each algorithm's training checkpoints.
CHECKPOINT_MODEL_KEY = {"paac": "model", "apex": "q_network"}
_CHECKPOINT_RE = re.compile(r"^ckpt-(\d+)\.index$")


# --- the policy -------------------------------------------------------------------------

class KerasModelPolicy(tf_policy.TFPolicy):
  """A TF-Agents policy around one of this project's Keras models.

  algorithm 'paac': model(obs) -> (logits [B, A], value [B]); samples from
  softmax(logits), or takes the argmax if `greedy`.
  algorithm 'apex': model(obs) -> q_values [B, A]; argmax if `greedy`, else
  epsilon-greedy.
  """

  def __init__(self, model, observation_spec, algorithm, greedy, epsilon=0.0):
    if algorithm not in ALGORITHMS:
      raise ValueError("Unknown algorithm %r; choose one of %s." % (algorithm, ALGORITHMS))
    self._model = model
    self._algorithm = algorithm
    self._greedy = bool(greedy)
    self._epsilon = float(epsilon or 0.0)
    self._observation_spec = _named_observation_spec(observation_spec)
    self._num_actions = _num_actions(model, self._observation_spec, algorithm)
    action_spec = tensor_spec.BoundedTensorSpec(
        (), tf.int64, 0, self._num_actions - 1, name="action")
    super().__init__(ts.time_step_spec(self._observation_spec), action_spec,
                     name="%s_policy" % algorithm)

  @property
  def observation_spec(self):
    return self._observation_spec

  @property
  def model(self):
    return self._model

  def outputs(self, observation):
    """The named outputs of `serving_default` for a batch of observations."""
    if self._algorithm == "paac":
      logits, value = self._model(observation, training=False)
      return {"action": self._select_actions(logits),
              "probabilities": tf.nn.softmax(logits, axis=-1),
              "value": tf.cast(value, tf.float32)}
    q_values = self._model(observation, training=False)
    return {"action": self._select_actions(q_values), "q_values": q_values}

  def _scores(self, observation):
    """Logits (PAAC) or Q-values (Ape-X), [B, A]."""
    if self._algorithm == "paac":
      logits, _ = self._model(observation, training=False)
      return logits
    return self._model(observation, training=False)

  def _select_actions(self, scores, seed=None):
    """int64 [B] actions: argmax, a sample of softmax(logits), or epsilon-greedy."""
    greedy = tf.argmax(scores, axis=-1, output_type=tf.int64)
    if self._greedy:
      return greedy
    seeds = tfp.util.SeedStream(seed, salt="paac_tf_policy") if seed is not None else None
    if self._algorithm == "paac":
      return tf.random.categorical(scores, 1, dtype=tf.int64,
                                   seed=seeds() if seeds else None)[:, 0]
    batch = tf.shape(scores)[0]
    explore = tf.random.uniform([batch], seed=seeds() if seeds else None) < self._epsilon
    random = tf.random.uniform([batch], 0, self._num_actions, dtype=tf.int64,
                               seed=seeds() if seeds else None)
    return tf.where(explore, random, greedy)

  def _action(self, time_step, policy_state, seed=None):
    actions = self._select_actions(self._scores(time_step.observation), seed=seed)
    return policy_step.PolicyStep(actions, policy_state, ())

  def _distribution(self, time_step, policy_state):
    # Not exported: a tfp distribution in a SavedModel could only be loaded with
    # tensorflow_probability imported, and these policies must load with TensorFlow alone.
    raise NotImplementedError(
        "distribution() is not exported (the SavedModel must load with TensorFlow alone); "
        "use the action or serving_default signatures.")


def _num_actions(model, observation_spec, algorithm):
  """The model's `num_actions`, else the width of its output on a zero observation."""
  if getattr(model, "num_actions", None):
    return int(model.num_actions)
  out = model(tf.zeros([1] + observation_spec.shape.as_list(), observation_spec.dtype))
  return int((out[0] if algorithm == "paac" else out).shape[-1])


def _named_observation_spec(spec):
  """A TensorSpec named 'observation' (bounds kept) from an ArraySpec or TensorSpec."""
  spec = tensor_spec.from_spec(spec)
  if isinstance(spec, tensor_spec.BoundedTensorSpec):
    return tensor_spec.BoundedTensorSpec(spec.shape, spec.dtype, spec.minimum, spec.maximum,
                                         name="observation")
  return tf.TensorSpec(spec.shape, spec.dtype, name="observation")


# --- saving -------------------------------------------------------------------------------

def model_name(env_name):
  """TF Serving model name for an environment: `pong`, `space_invaders`, `cartpole_v1`."""
  from paac_tf.envs import names  # pylint: disable=import-outside-toplevel
  try:
    game = names.resolve_atari(str(env_name))
  except Exception:  # pylint: disable=broad-except
    game = None   # ale-py missing: fall back to the plain name
  if game is not None:
    return game.rom_id
  return re.sub(r"[^a-z0-9]+", "_", str(env_name).lower()).strip("_") or "policy"


def version_dir(base_dir, version):
  version = int(version)
  if version < 0:
    raise errors.UserError("Export versions are non-negative integers, got %d." % version)
  return os.path.join(base_dir, str(version))


def existing_versions(base_dir):
  """Sorted integer versions present under a model directory."""
  if not tf.io.gfile.isdir(base_dir):
    return []
  return sorted(int(n.rstrip("/")) for n in tf.io.gfile.listdir(base_dir)
                if n.rstrip("/").isdigit())


def _refuse_existing(path):
  if tf.io.gfile.exists(path):
    raise errors.UserError(
        "Export version %s already exists; refusing to overwrite it (nothing was changed). "
        "Choose another --version or --export_dir." % path)


def save_paac_policy(model, observation_spec, base_dir, version, metadata, greedy=False):
  """Exports a PAAC actor-critic to base_dir/<version>/; returns the path.

  Args:
    model: Keras model, observation batch -> (logits [B, A], value [B]); has `num_actions`.
    observation_spec: the environment's observation spec (ArraySpec or TensorSpec).
    base_dir: the model directory (`.../policies/<model_name>`).
    version: integer version (usually the agent step).
    metadata: JSON-serialisable dict; should hold env_name and train_step, may hold
      operative_config (text), preprocessing (dict), run_config (dict), ...
    greedy: argmax actions instead of sampling from the policy.
  Raises:
    errors.UserError: the version exists already (nothing is written).
  """
  return _save_policy("paac", model, observation_spec, base_dir, version, metadata,
                      greedy=greedy, epsilon=0.0)


def save_apex_policy(q_network, observation_spec, base_dir, version, metadata, greedy=True):
  """Exports an Ape-X dueling Q-network to base_dir/<version>/; returns the path.

  Like `save_paac_policy`; `q_network(obs)` -> q_values [B, A]. Greedy (argmax) by
  default; with greedy=False the exported policy is epsilon-greedy with
  `metadata['epsilon']` (required then). With greedy=True an `epsilon` in the metadata
  (e.g. the actor's exploration epsilon) is recorded as `training_epsilon`, and the
  metadata's `epsilon` is 0.
  """
  epsilon = (metadata or {}).get("epsilon")
  if not greedy:
    if epsilon is None or not 0.0 <= float(epsilon) <= 1.0:
      raise ValueError("A non-greedy Ape-X export needs metadata['epsilon'] in [0, 1], got %r."
                       % (epsilon,))
  return _save_policy("apex", q_network, observation_spec, base_dir, version, metadata,
                      greedy=greedy, epsilon=0.0 if greedy else float(epsilon))


class _DropKnownWarnings(logging_lib.Filter):
  """Drops PolicySaver's expected warnings for these policies (see `_distribution`)."""

  PATTERNS = ("Could not serialize policy.distribution()",
              "is not a valid tf.function parameter name")

  def filter(self, record):
    message = record.getMessage()
    return not any(p in message for p in self.PATTERNS)


@contextlib.contextmanager
def _known_warnings_dropped():
  logger = logging.get_absl_logger()
  drop = _DropKnownWarnings()
  logger.addFilter(drop)
  try:
    yield
  finally:
    logger.removeFilter(drop)


def _save_policy(algorithm, model, observation_spec, base_dir, version, metadata, greedy,
                 epsilon):
  try:
    return _trace_and_save(algorithm, model, observation_spec, base_dir, version, metadata,
                           greedy, epsilon)
  finally:
    # Saving traces the policy's functions; the traced graphs sit in reference cycles that
    # Python's collector frees only now and then, and the C heap keeps what was freed. A
    # training run exports every 1M steps: without this, each export kept 10-25 MB in the
    # trainer's RSS (see paac_tf/runtime/memory.py).
    memory.release()


def _trace_and_save(algorithm, model, observation_spec, base_dir, version, metadata, greedy,
                    epsilon):
  path = version_dir(base_dir, version)
  _refuse_existing(path)
  policy = KerasModelPolicy(model, observation_spec, algorithm, greedy, epsilon)
  meta = _complete_metadata(algorithm, policy, base_dir, version, metadata, greedy, epsilon)

  train_step = tf.Variable(int(meta["train_step"]), dtype=tf.int64, trainable=False,
                           name="train_step")
  meta_vars = _metadata_variables(meta)
  with _known_warnings_dropped():
    saver = policy_saver.PolicySaver(policy, batch_size=None, train_step=train_step,
                                     metadata=meta_vars)
  batched_obs = tf.TensorSpec([None] + list(policy.observation_spec.shape),
                              policy.observation_spec.dtype, name="observation")
  serve = tf.function(lambda observation: policy.outputs(observation),
                      input_signature=[batched_obs])
  module = saver.policy
  module.serve = serve
  signatures = dict(saver.signatures)
  signatures["serving_default"] = serve.get_concrete_function()
  # PolicySaver names the get_metadata signature's outputs by dtype ('string', 'bool'),
  # so several variables of one dtype collide; name them by key instead.
  get_metadata = tf.function(lambda: {k: tf.identity(v) for k, v in meta_vars.items()},
                             input_signature=[])
  signatures["get_metadata"] = get_metadata.get_concrete_function()

  tf.io.gfile.makedirs(base_dir)
  staging = tempfile.mkdtemp(prefix="paac_tf_export_")
  tmp = os.path.join(base_dir, ".tmp-%d-%d-%s" % (int(version), os.getpid(),
                                                   os.path.basename(staging)))
  try:
    metadata_path = os.path.join(staging, METADATA_FILE)
    with open(metadata_path, "w") as f:
      json.dump(meta, f, indent=2, sort_keys=True)
    module.metadata_file = tf.saved_model.Asset(metadata_path)
    with _known_warnings_dropped():
      tf.saved_model.save(module, tmp, signatures=signatures)
    # As PolicySaver.save(): the specs SavedModelPyTFEagerPolicy reads.
    tensor_spec.to_pbtxt_file(
        os.path.join(tmp, policy_saver.POLICY_SPECS_PBTXT),
        {"collect_data_spec": module.collect_data_spec,
         "policy_state_spec": module.policy_state_spec})
    try:
      tf.io.gfile.rename(tmp, path, overwrite=False)
    except (tf.errors.AlreadyExistsError, tf.errors.FailedPreconditionError, OSError):
      _refuse_existing(path)   # someone else wrote it meanwhile
      raise
  finally:
    if tf.io.gfile.exists(tmp):
      tf.io.gfile.rmtree(tmp)
    tf.io.gfile.rmtree(staging)
  logging.info("Exported %s policy (%s) to %s", algorithm,
               "greedy" if greedy else ("epsilon %g" % epsilon if algorithm == "apex"
                                        else "sampling"), path)
  return path


def _complete_metadata(algorithm, policy, base_dir, version, metadata, greedy, epsilon):
  meta = dict(metadata or {})
  for key in ("env_name", "train_step"):
    if key not in meta:
      raise ValueError("Export metadata needs %r (got keys %s)." % (key, sorted(meta)))
  obs = policy.observation_spec
  if greedy and meta.get("epsilon") is not None:
    # An Ape-X actor's exploration epsilon, kept for the record; this policy is greedy.
    meta["training_epsilon"] = float(meta["epsilon"])
  meta.update({
      "format_version": FORMAT_VERSION,
      "algorithm": algorithm,
      "greedy": bool(greedy),
      "epsilon": 0.0 if greedy else float(epsilon),   # the exported policy's own epsilon
      "action_selection": ("argmax" if greedy else
                           "sample" if algorithm == "paac" else "epsilon_greedy"),
      "train_step": int(meta["train_step"]),
      "train_step_unit": "agent_steps",   # one agent step = frameskip frames on Atari
      "version": int(version),
      "model_name": os.path.basename(os.path.normpath(base_dir)),
      "num_actions": int(policy.action_spec.maximum) + 1,
      "observation": {"shape": [int(d) for d in obs.shape], "dtype": obs.dtype.name},
      "outputs": (["action", "probabilities", "value"] if algorithm == "paac"
                  else ["action", "q_values"]),
      "network": meta.get("network") or getattr(policy.model, "torso_name", None),
      "exported_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
      "tensorflow_version": tf.__version__,
  })
  meta.setdefault("operative_config", "")
  if not meta.get("preprocessing"):
    try:
      meta["preprocessing"] = preprocessing_metadata(
          meta["env_name"], config_bindings(str(meta["operative_config"])))
    except errors.ConfigError as e:
      logging.warning("Export metadata without preprocessing settings: %s", e)
      meta["preprocessing"] = {}
  return _jsonable(meta)   # numpy scalars -> numbers; anything else unknown -> its str()


def _metadata_variables(meta):
  """The get_metadata() signature's outputs: a few scalars and the whole JSON."""
  def string(value):
    return tf.Variable(value, dtype=tf.string, trainable=False)
  return {
      "algorithm": string(meta["algorithm"]),
      "env_name": string(str(meta["env_name"])),
      "greedy": tf.Variable(bool(meta["greedy"]), trainable=False),
      "epsilon": tf.Variable(float(meta["epsilon"]), dtype=tf.float32, trainable=False),
      "train_step": tf.Variable(int(meta["train_step"]), dtype=tf.int64, trainable=False),
      "preprocessing": string(json.dumps(meta["preprocessing"], sort_keys=True)),
      "operative_config": string(str(meta["operative_config"])),
      "metadata_json": string(json.dumps(meta, sort_keys=True)),
  }


def read_metadata(policy_dir, loaded=None):
  """The export metadata of a SavedModel dir: the assets JSON, else get_metadata(); or {}."""
  path = os.path.join(policy_dir, "assets", METADATA_FILE)
  if tf.io.gfile.exists(path):
    with tf.io.gfile.GFile(path) as f:
      return json.load(f)
  if loaded is not None and hasattr(loaded, "get_metadata"):
    values = loaded.get_metadata()
    if "metadata_json" in values:
      return json.loads(values["metadata_json"].numpy().decode("utf-8"))
  return {}


# --- configuration of a run ---------------------------------------------------------------

class _LiteralDelegate:
  """Gin parser delegate: keeps `@refs` and `%macros` as strings."""

  def configurable_reference(self, scoped_configurable_name, evaluate):
    return "@%s%s" % (scoped_configurable_name, "()" if evaluate else "")

  def macro(self, macro_name):
    return "%" + macro_name


def config_bindings(config_text):
  """{(selector, param): value} of a gin config text, without touching gin's global state.

  Selectors are shortened to their last component (`paac_tf.envs.make_environment` ->
  `make_environment`); scoped bindings (`scope/name.param`) are skipped.
  """
  from gin import config_parser  # pylint: disable=import-outside-toplevel
  bindings = {}
  if not config_text:
    return bindings
  try:
    parser = config_parser.ConfigParser(config_text, _LiteralDelegate())
    for statement in parser:
      if isinstance(statement, config_parser.BindingStatement) and not statement.scope:
        bindings[(statement.selector.split(".")[-1], statement.arg_name)] = statement.value
  except SyntaxError as e:
    raise errors.ConfigError("Cannot parse the operative gin config: %s" % e) from None
  return bindings


# make_environment's arguments that change what the agent sees (not speed settings).
ENV_SETTINGS = ("atari_backend", "reward_clipping", "episodic_life", "noop_max",
                "max_episode_frames")


def _environment_settings(bindings):
  """make_environment's effective ENV_SETTINGS (its defaults, then the bindings)."""
  from paac_tf.envs import environment  # pylint: disable=import-outside-toplevel
  params = inspect.signature(environment.make_environment).parameters
  settings = {name: params[name].default for name in ENV_SETTINGS if name in params}
  for (selector, name), value in bindings.items():
    if selector == "make_environment" and name in settings:
      settings[name] = value
  return settings


def preprocessing_metadata(env_name, bindings):
  """What a user must reproduce to feed the policy: the env settings of the run."""
  from paac_tf.envs import names  # pylint: disable=import-outside-toplevel
  try:
    game = names.resolve_atari(str(env_name))
  except Exception:  # pylint: disable=broad-except
    game = None
  if game is None:
    return {"gymnasium_id": str(env_name),
            "observations": "as the gymnasium env gives them (float64 Boxes as float32)"}
  settings = _environment_settings(bindings)
  settings["atari_game"] = game.name
  settings["gymnasium_id"] = game.gymnasium_id
  # The factory's fixed Atari settings where it names them, else the vector env's defaults.
  from paac_tf.envs import atari_vector  # pylint: disable=import-outside-toplevel
  from paac_tf.envs import factory  # pylint: disable=import-outside-toplevel
  params = inspect.signature(atari_vector.AtariVectorPyEnvironment.__init__).parameters
  for name in ("frameskip", "frame_stack", "repeat_action_probability", "full_action_space"):
    value = getattr(factory, "ATARI_" + name.upper(), None)
    if value is None and name in params:
      value = params[name].default
    if value is not None:
      settings[name] = value
  settings["frames"] = "84x84 grayscale, max of the last two frames, uint8 NHWC stack"
  return _jsonable(settings)


def _jsonable(value):
  if isinstance(value, dict):
    return {str(k): _jsonable(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [_jsonable(v) for v in value]
  if isinstance(value, (np.integer, np.floating, np.bool_)):
    return value.item()
  if value is None or isinstance(value, (bool, int, float, str)):
    return value
  return str(value)


def _read_run_config(root_dir):
  from paac_tf.runtime import checkpointing  # pylint: disable=import-outside-toplevel
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
  if run_config["algorithm"] not in ALGORITHMS:
    raise errors.UserError("%s names algorithm %r; exportable: %s."
                           % (path, run_config["algorithm"], ", ".join(ALGORITHMS)))
  return run_config


def _read_operative_config(root_dir):
  path = os.path.join(root_dir, "operative_config.gin")
  if not tf.io.gfile.exists(path):
    return ""
  with tf.io.gfile.GFile(path) as f:
    return f.read()


def find_checkpoint(train_dir, step=None):
  """(checkpoint prefix, step): the given step's checkpoint, or the newest one."""
  steps = sorted(int(m.group(1)) for m in (_CHECKPOINT_RE.match(n) for n in (
      tf.io.gfile.listdir(train_dir) if tf.io.gfile.isdir(train_dir) else [])) if m)
  if not steps:
    raise errors.UserError("No checkpoint in %s yet (training writes train/ckpt-<step>)."
                           % train_dir)
  if step is None:
    step = steps[-1]
  elif int(step) not in steps:
    raise errors.UserError("No checkpoint for step %d in %s; available: %s."
                           % (int(step), train_dir, ", ".join(map(str, steps))))
  return os.path.join(train_dir, "ckpt-%d" % int(step)), int(step)


def _binding(bindings, selector_names, param, default):
  for selector in selector_names:
    if (selector, param) in bindings:
      return bindings[(selector, param)]
  return default


def _build_model(algorithm, run_config, bindings, num_actions, observation_spec):
  """The run's network with fresh variables (restored from the checkpoint afterwards)."""
  if algorithm == "paac":
    from paac_tf.networks import actor_critic  # pylint: disable=import-outside-toplevel
    network = run_config.get("network") or _binding(bindings, ["paac_train"], "network",
                                                    "arch_nips")
    mlp_units = run_config.get("mlp_units") or _binding(bindings, ["paac_train"], "mlp_units",
                                                        (64, 64))
    return actor_critic.build_actor_critic(num_actions, observation_spec, torso=network,
                                           mlp_units=tuple(mlp_units))
  from paac_tf.networks import dueling_q  # pylint: disable=import-outside-toplevel
  selectors = sorted({s for s, _ in bindings if "apex" in s.lower() or "dueling" in s.lower()})
  network = run_config.get("network") or _binding(bindings, selectors, "network", "arch_nature")
  mlp_units = run_config.get("mlp_units") or _binding(bindings, selectors, "mlp_units", (64, 64))
  head_units = run_config.get("head_units", _binding(bindings, selectors, "head_units", None))
  return dueling_q.build_dueling_q(num_actions, observation_spec, torso=network,
                                   mlp_units=tuple(mlp_units), head_units=head_units)


def _environment_specs(env_name, bindings):
  """(observation spec, number of actions) from one environment built like the run's."""
  from paac_tf.envs import environment  # pylint: disable=import-outside-toplevel
  settings = _environment_settings(bindings)
  env = environment.make_environment(env_name, num_envs=1, num_workers=0, seed=0, **settings)
  try:
    spec = env.action_spec()
    return env.observation_spec(), int(spec.maximum) - int(spec.minimum) + 1
  finally:
    env.close()


def export_checkpoint(root_dir, checkpoint=None, export_dir=None, greedy=None, epsilon=None,
                      version=None, name=None):
  """Exports a run's checkpoint as a SavedModel; returns the version directory.

  Args:
    root_dir: the training run directory (train/run_config.json, train/ckpt-*).
    checkpoint: agent step of the checkpoint (None: the newest).
    export_dir: base directory (None: root_dir/policies); the policy goes to
      export_dir/<name>/<version>.
    greedy: argmax actions (None: False for PAAC, True for Ape-X).
    epsilon: Ape-X only, the epsilon of a non-greedy export.
    version: integer version (None: the checkpoint's step).
    name: TF Serving model name (None: from the environment, e.g. `pong`).
  """
  root_dir = os.path.abspath(os.path.expanduser(root_dir))
  if not tf.io.gfile.isdir(root_dir):
    raise errors.UserError("--root_dir %s does not exist." % root_dir)
  run_config = _read_run_config(root_dir)
  algorithm, env_name = run_config["algorithm"], run_config["env_name"]
  if greedy is None:
    greedy = algorithm == "apex"
  if epsilon is not None and (algorithm != "apex" or greedy):
    raise errors.UserError("--epsilon applies to non-greedy Ape-X exports only "
                           "(--nogreedy on an Ape-X run).")
  if algorithm == "apex" and not greedy and epsilon is None:
    raise errors.UserError("A non-greedy Ape-X export needs --epsilon (e.g. 0.01).")
  checkpoint_path, step = find_checkpoint(os.path.join(root_dir, "train"), checkpoint)
  base_dir = os.path.join(os.path.abspath(os.path.expanduser(export_dir)) if export_dir else
                          os.path.join(root_dir, "policies"), name or model_name(env_name))
  version = step if version is None else int(version)
  _refuse_existing(version_dir(base_dir, version))

  operative_config = _read_operative_config(root_dir)
  bindings = config_bindings(operative_config)
  observation_spec, num_actions = _environment_specs(env_name, bindings)
  try:
    model = _build_model(algorithm, run_config, bindings, num_actions, observation_spec)
  except ValueError as e:
    raise errors.UserError("Cannot rebuild the network of %s: %s" % (root_dir, e)) from None
  key = CHECKPOINT_MODEL_KEY[algorithm]
  try:
    status = tf.train.Checkpoint(**{key: model}).restore(checkpoint_path).expect_partial()
    status.assert_existing_objects_matched()
  except (AssertionError, ValueError, tf.errors.OpError) as e:
    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    raise errors.CheckpointMismatchError(
        "Checkpoint %s does not hold a %r network matching %s/train/run_config.json and "
        "operative_config.gin (%s)." % (checkpoint_path, key, root_dir, msg)) from None

  metadata = {
      "env_name": env_name, "train_step": step, "checkpoint": checkpoint_path,
      "run_config": run_config, "operative_config": operative_config,
      "preprocessing": preprocessing_metadata(env_name, bindings),
      "network": getattr(model, "torso_name", None),
  }
  if algorithm == "apex":
    if epsilon is not None:
      metadata["epsilon"] = float(epsilon)
    return save_apex_policy(model, observation_spec, base_dir, version, metadata, greedy=greedy)
  return save_paac_policy(model, observation_spec, base_dir, version, metadata, greedy=greedy)


@gin.configurable(denylist=["root_dir", "env_name"])
def training_exporter(root_dir, env_name, greedy=False):
  """Returns exporter(agent, env, step) writing root_dir/policies/<model_name>/<step>/.

  A version that exists already (e.g. the final export of a resumed run that had
  finished) is skipped with a log line, returning None.
  """
  base = os.path.join(root_dir, "policies", model_name(env_name))

  def export(agent, env, step):
    path = version_dir(base, step)
    if tf.io.gfile.exists(path):
      logging.info("Export %s exists already; skipped.", path)
      return None
    operative_config = gin.operative_config_str()
    run_config = {}
    try:
      run_config = _read_run_config(root_dir)
    except errors.UserError:
      pass
    metadata = {"env_name": env_name, "train_step": int(step), "run_config": run_config,
                "operative_config": operative_config,
                "network": getattr(agent.model, "torso_name", None)}
    return save_paac_policy(agent.model, env.observation_spec(), base, step, metadata,
                            greedy=greedy)

  return export


# --- command line ---------------------------------------------------------------------------

def _define_flags():
  from absl import flags  # pylint: disable=import-outside-toplevel
  flags.DEFINE_string("root_dir", None, "Training run directory.")
  flags.DEFINE_integer("checkpoint", None, "Agent step of the checkpoint (default: newest).")
  flags.DEFINE_string("export_dir", None, "Base directory (default: ROOT_DIR/policies); the "
                      "SavedModel goes to EXPORT_DIR/<model_name>/<version>/.")
  flags.DEFINE_boolean("greedy", None, "Argmax actions (default: PAAC samples from its policy, "
                       "Ape-X is greedy).")
  flags.DEFINE_float("epsilon", None, "Ape-X with --nogreedy: epsilon of the exported policy.")
  flags.DEFINE_integer("version", None, "Integer version (default: the checkpoint's step).")
  flags.DEFINE_string("model_name", None, "TF Serving model name (default: from the env, e.g. "
                      "pong, cartpole_v1).")
  flags.mark_flag_as_required("root_dir")
  return flags.FLAGS


def main(argv):
  from absl import flags  # pylint: disable=import-outside-toplevel
  FLAGS = flags.FLAGS  # pylint: disable=invalid-name
  if len(argv) > 1:
    raise errors.UserError("Unexpected arguments: %s" % " ".join(argv[1:]))
  path = export_checkpoint(FLAGS.root_dir, checkpoint=FLAGS.checkpoint,
                           export_dir=FLAGS.export_dir, greedy=FLAGS.greedy,
                           epsilon=FLAGS.epsilon, version=FLAGS.version, name=FLAGS.model_name)
  print(path)
  sys.stdout.flush()


if __name__ == "__main__":
  _define_flags()
  errors.run_cli(main)
