"""SavedModels of trained policies: the TF-Agents policy around a Keras model, and saving it.

Layout (TF Serving's): `<base_dir>/<version>/` with `base_dir` = `.../<model_name>`,
integer versions, written under a hidden temporary name and renamed into place, so TF
Serving never sees a half-written version. An existing version is never overwritten.

Signatures of every export (every algorithm shares this code; what differs, the
algorithm object says: `Algorithm.policy_scores`, `output_names`, `exploration`):
  serving_default(observation) -> action int64 [B] and the algorithm's other outputs, e.g.
      probabilities float32 [B, A], value float32 [B]     (PAAC), or
      q_values float32 [B, A]                             (Ape-X DQN);
    or, for a continuous-action algorithm, action float32 [B, *action_shape] within the
      action bounds (Ape-X DPG).
    `observation` is a batch exactly as the environment gives it: uint8 [B, 84, 84, 4]
    frame stacks on Atari (scaled inside the model), float32 vectors for gymnasium envs.
  action, get_initial_state, get_train_step, get_metadata: as TF-Agents' `PolicySaver`
    writes them (with `policy_specs.pbtxt`), so that
    `tf_agents.policies.py_tf_eager_policy.SavedModelPyTFEagerPolicy(path,
    load_specs_from_pbtxt=True)` loads and runs the policy.
Metadata (algorithm, env_name, greedy, epsilon, train_step, preprocessing, operative gin
config, ...) is in `get_metadata()` and, as one JSON document, in
`assets/paac_tf_metadata.json` (read by `loading.read_metadata`). `train_step` counts
agent steps (`train_step_unit`), as do the version directories of training exports.

Actions: argmax if exported `greedy` (the algorithm's `export_greedy` by default), else as
the algorithm explores: a sample of softmax(scores) (PAAC), or epsilon-greedy with the
`epsilon` given in its metadata (Ape-X DQN). A 'deterministic' algorithm's scores are its
actions (Ape-X DPG's bounded continuous actions: `Algorithm.policy_action_spec`). The
metadata's `eval_epsilon` is the algorithm's default evaluation epsilon for the export
(`Algorithm.eval_epsilon`).
"""
import contextlib
import datetime
import json
import logging as logging_lib
import os
import re
import tempfile

from absl import logging
import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp
from tf_agents.policies import policy_saver
from tf_agents.policies import tf_policy
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import policy_step
from tf_agents.trajectories import time_step as ts

from paac_tf import errors
from paac_tf.envs import names
from paac_tf.policies import loading
from paac_tf.policies import run_settings
from paac_tf.bookkeeping import memory
from paac_tf.bookkeeping import startup

FORMAT_VERSION = 1
EXPLORATIONS = ("sample", "epsilon_greedy", "deterministic")


# --- the policy -------------------------------------------------------------------------

class KerasModelPolicy(tf_policy.TFPolicy):
  """A TF-Agents policy around one of this project's Keras models.

  `algorithm` (a `paac_tf.algorithms.base.Algorithm`) gives the scores actions are chosen
  from and the other outputs (`policy_scores`), and how a non-greedy policy acts
  (`exploration`): a sample of softmax(scores), or epsilon-greedy. Greedy: the argmax.
  A 'deterministic' algorithm's scores are the actions, in its `policy_action_spec`.
  """

  def __init__(self, model, observation_spec, algorithm, greedy, epsilon=0.0):
    if algorithm.exploration not in EXPLORATIONS:
      raise ValueError("%r explores by %r; exported policies explore by one of %s."
                       % (algorithm, algorithm.exploration, ", ".join(EXPLORATIONS)))
    self._model = model
    self._algorithm = algorithm
    self._greedy = bool(greedy)
    self._epsilon = float(epsilon or 0.0)
    self._observation_spec = _named_observation_spec(observation_spec)
    if algorithm.exploration == "deterministic":
      self._num_actions = None
      action_spec = algorithm.policy_action_spec(model)
    else:
      self._num_actions = _num_actions(model, self._observation_spec, algorithm)
      action_spec = tensor_spec.BoundedTensorSpec(
          (), tf.int64, 0, self._num_actions - 1, name="action")
    super().__init__(ts.time_step_spec(self._observation_spec), action_spec,
                     name="%s_policy" % algorithm.name)

  @property
  def observation_spec(self):
    return self._observation_spec

  @property
  def model(self):
    return self._model

  def outputs(self, observation):
    """The named outputs of `serving_default` for a batch of observations."""
    scores, others = self._algorithm.policy_scores(self._model, observation)
    return {"action": self._select_actions(scores), **others}

  def _select_actions(self, scores, seed=None):
    """int64 [B] actions: argmax, a sample of softmax(scores), or epsilon-greedy; or the
    scores themselves (float32 [B, ...]) for a deterministic policy."""
    if self._algorithm.exploration == "deterministic":
      return tf.cast(scores, tf.float32)
    greedy = tf.argmax(scores, axis=-1, output_type=tf.int64)
    if self._greedy:
      return greedy
    seeds = tfp.util.SeedStream(seed, salt="paac_tf_policy") if seed is not None else None
    if self._algorithm.exploration == "sample":
      return tf.random.categorical(scores, 1, dtype=tf.int64,
                                   seed=seeds() if seeds else None)[:, 0]
    batch = tf.shape(scores)[0]
    explore = tf.random.uniform([batch], seed=seeds() if seeds else None) < self._epsilon
    random = tf.random.uniform([batch], 0, self._num_actions, dtype=tf.int64,
                               seed=seeds() if seeds else None)
    return tf.where(explore, random, greedy)

  def _action(self, time_step, policy_state, seed=None):
    scores, _ = self._algorithm.policy_scores(self._model, time_step.observation)
    actions = self._select_actions(scores, seed=seed)
    return policy_step.PolicyStep(actions, policy_state, ())

  def _distribution(self, time_step, policy_state):
    # Not exported: a tfp distribution in a SavedModel could only be loaded with
    # tensorflow_probability imported, and these policies must load with TensorFlow alone.
    raise NotImplementedError(
        "distribution() is not exported (the SavedModel must load with TensorFlow alone); "
        "use the action or serving_default signatures.")


def _num_actions(model, observation_spec, algorithm):
  """The model's `num_actions`, else the width of its scores on a zero observation."""
  if getattr(model, "num_actions", None):
    return int(model.num_actions)
  zeros = tf.zeros([1] + observation_spec.shape.as_list(), observation_spec.dtype)
  return int(algorithm.policy_scores(model, zeros)[0].shape[-1])


def _named_observation_spec(spec):
  """A TensorSpec named 'observation' (bounds kept) from an ArraySpec or TensorSpec."""
  spec = tensor_spec.from_spec(spec)
  if isinstance(spec, tensor_spec.BoundedTensorSpec):
    return tensor_spec.BoundedTensorSpec(spec.shape, spec.dtype, spec.minimum, spec.maximum,
                                         name="observation")
  return tf.TensorSpec(spec.shape, spec.dtype, name="observation")


# --- saving -------------------------------------------------------------------------------

def model_name(env_name):
  """TF Serving model name for an environment (a `names.Environment` or a name): `pong`,
  `space_invaders`, `cartpole_v1`."""
  try:
    game = env_name.game if isinstance(env_name, names.Environment) else (
        names.resolve_atari(str(env_name)))
  except Exception:  # pylint: disable=broad-except
    game = None   # ale-py missing: fall back to the plain name
  if game is not None:
    return game.rom_id
  return re.sub(r"[^a-z0-9]+", "_", str(env_name).lower()).strip("_") or "policy"


def version_dir(base_dir, version):
  """The directory of integer `version` under a model directory."""
  version = int(version)
  if version < 0:
    raise errors.UserError("Export versions are non-negative integers, got %d." % version)
  return os.path.join(base_dir, str(version))


def refuse_existing(path):
  """Raises a UserError if the export version directory `path` exists."""
  if tf.io.gfile.exists(path):
    raise errors.UserError(
        "Export version %s already exists; refusing to overwrite it (nothing was changed). "
        "Choose another --version or --export_dir." % path)


def save_policy(algorithm, model, observation_spec, base_dir, version, metadata, greedy=None):
  """Exports a trained network of `algorithm` to base_dir/<version>/; returns the path.

  Args:
    algorithm: the `paac_tf.algorithms.base.Algorithm` that trained `model`.
    model: its Keras network (with `num_actions`, or scores whose width is the actions).
    observation_spec: the environment's observation spec (ArraySpec or TensorSpec).
    base_dir: the model directory (`.../policies/<model_name>`).
    version: integer version (usually the agent step).
    metadata: JSON-serialisable dict; should hold env_name and train_step, may hold
      operative_config (text), preprocessing (dict), run_config (dict), epsilon, ...
    greedy: argmax actions (None: `algorithm.export_greedy`). A non-greedy export of an
      epsilon-greedy algorithm acts with `metadata['epsilon']` (required then); a greedy one
      records a given `epsilon` (e.g. the actor's exploration) as `training_epsilon`.
  Raises:
    errors.UserError: the version exists already (nothing is written).
  """
  greedy = algorithm.export_greedy if greedy is None else bool(greedy)
  epsilon = (metadata or {}).get("epsilon")
  if greedy or algorithm.exploration != "epsilon_greedy":
    epsilon = 0.0
  elif epsilon is None or not 0.0 <= float(epsilon) <= 1.0:
    raise ValueError("A non-greedy %s export needs metadata['epsilon'] in [0, 1], got %r."
                     % (algorithm.display_name, epsilon))
  return _save_policy(algorithm, model, observation_spec, base_dir, version, metadata,
                      greedy=greedy, epsilon=float(epsilon))


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


class _DropLibraryInfo(logging_lib.Filter):
  """Drops the INFO lines that TensorFlow, Keras and TF-Agents log through absl while
  saving (Keras's "Found untraced functions ..." notice too)."""

  SOURCES = ("/tensorflow/", "/keras/", "/tf_keras/", "/tf_agents/")

  def filter(self, record):
    from_library = any(s in record.pathname for s in self.SOURCES)
    return not from_library or (record.levelno >= logging_lib.WARNING and
                                "Found untraced functions" not in record.getMessage())


@contextlib.contextmanager
def _tensorflow_info_dropped():
  """While an export is written: TensorFlow's INFO lines ("Assets written to", "Writing
  fingerprint to", "Function ... contains input name(s) ... will be renamed", "Found
  untraced functions") stay off the terminal and the logs, unless PAAC_TF_VERBOSE_TF=1.
  Warnings and errors still show."""
  if startup.verbose_tensorflow():
    yield
    return
  tf_logger = logging_lib.getLogger("tensorflow")
  level = tf_logger.level
  tf_logger.setLevel(max(logging_lib.WARNING, level))
  drop = _DropLibraryInfo()
  absl_logger = logging.get_absl_logger()
  absl_logger.addFilter(drop)
  try:
    yield
  finally:
    absl_logger.removeFilter(drop)
    tf_logger.setLevel(level)


def _save_policy(algorithm, model, observation_spec, base_dir, version, metadata, greedy,
                 epsilon):
  try:
    with _tensorflow_info_dropped():
      return _trace_and_save(algorithm, model, observation_spec, base_dir, version, metadata,
                             greedy, epsilon)
  finally:
    # Saving traces the policy's functions; the traced graphs sit in reference cycles that
    # Python's collector frees only now and then, and the C heap keeps what was freed. A
    # training run exports every 1M steps: without this, each export kept 10-25 MB in the
    # trainer's RSS (see paac_tf/bookkeeping/memory.py).
    memory.release()


def _trace_and_save(algorithm, model, observation_spec, base_dir, version, metadata, greedy,
                    epsilon):
  path = version_dir(base_dir, version)
  refuse_existing(path)
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
    metadata_path = os.path.join(staging, loading.METADATA_FILE)
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
      refuse_existing(path)   # someone else wrote it meanwhile
      raise
  finally:
    if tf.io.gfile.exists(tmp):
      tf.io.gfile.rmtree(tmp)
    tf.io.gfile.rmtree(staging)
  acting = {"epsilon_greedy": "epsilon %g" % epsilon, "sample": "sampling",
            "deterministic": "deterministic"}[algorithm.exploration]
  logging.info("Exported %s policy (%s) to %s", algorithm.name,
               "greedy" if greedy and algorithm.exploration != "deterministic" else acting,
               path)
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
      "algorithm": algorithm.name,
      "greedy": bool(greedy),
      "epsilon": 0.0 if greedy else float(epsilon),   # the exported policy's own epsilon
      "action_selection": ("argmax" if greedy and algorithm.exploration != "deterministic"
                           else algorithm.exploration),
      "eval_epsilon": float(algorithm.eval_epsilon(greedy)),
      "train_step": int(meta["train_step"]),
      "train_step_unit": "agent_steps",   # one agent step = frameskip frames on Atari
      "version": int(version),
      "model_name": os.path.basename(os.path.normpath(base_dir)),
      **_action_metadata(policy.action_spec),
      "observation": {"shape": [int(d) for d in obs.shape], "dtype": obs.dtype.name},
      "outputs": list(algorithm.output_names),
      "network": meta.get("network") or getattr(policy.model, "torso_name", None),
      "exported_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
      "tensorflow_version": tf.__version__,
  })
  meta.setdefault("operative_config", "")
  if not meta.get("preprocessing"):
    try:
      meta["preprocessing"] = run_settings.preprocessing_metadata(
          meta["env_name"], str(meta["operative_config"]))
    except errors.ConfigError as e:
      logging.warning("Export metadata without preprocessing settings: %s", e)
      meta["preprocessing"] = {}
  return _jsonable(meta)   # numpy scalars -> numbers; anything else unknown -> its str()


def _action_metadata(action_spec):
  """What an export's metadata says of its actions: their number if discrete, else their
  shape and bounds."""
  if action_spec.dtype.is_integer:
    return {"num_actions": int(action_spec.maximum) + 1}
  shape = [int(d) for d in action_spec.shape]
  bound = lambda b: np.broadcast_to(np.asarray(b, np.float32), shape).tolist()
  return {"action_shape": shape, "action_low": bound(action_spec.minimum),
          "action_high": bound(action_spec.maximum)}


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


