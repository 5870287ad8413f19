r"""Evaluates an exported policy (a SavedModel) under the papers' protocol.

  python -m paac_tf.evaluate --policy_dir=runs/X/policies/pong/5000000 --episodes=30

The policy is loaded with `tf.saved_model.load` alone and run through its
`serving_default` signature; the training code's model is not used. `--policy_dir` may
also be a model directory (`.../policies/pong`): its highest version is evaluated.

Protocol:
- whole games (no episodic life), unclipped scores (`pop_finished_episodes()` reports
  raw returns), up to `--noop_max` (30) random no-op actions at the start of each Atari
  game, no sticky actions, frameskip 4, at most `--max_episode_frames` emulator frames
  per game (default: the run's setting, 108000 = 30 minutes);
- actions: the exported policy's own (PAAC: a sample of its policy, or the argmax if
  exported greedy; Ape-X: argmax), replaced by a uniformly random action with
  probability `--epsilon`. Default epsilon: 0.001 for greedy Ape-X exports (as in the
  Rainbow / Dopamine evaluations; the Nature DQN used 0.05), 0 otherwise;
- `--episodes` episodes run on n_e = min(episodes, --num_envs) environments in parallel,
  and each environment slot plays a fixed share of them (its first episodes, chosen
  before any outcome is known). Taking the first N episodes to finish instead would bias
  the result toward short episodes.
Lengths are in agent steps (on Atari, one agent step = 4 frames). `--seed` fixes the
environments and the epsilon draws; a sampling (PAAC) policy draws its actions inside
the SavedModel, unseeded, so its scores vary from run to run.

Results are printed and written to `eval.json` in `--output_dir` (default:
`<policy_dir>-eval/` beside the version directory; TF Serving ignores that non-integer
name). An existing eval.json is kept unless `--overwrite`. `--record=best.gif` writes
the best episode as a GIF (a relative path goes into the output directory): the last
frame of each observation stack, upscaled, on Atari; the env's own renderer for
classic-control envs whose observation is their state (CartPole, MountainCar).
"""
import datetime
import json
import os
import sys
import time
import zlib

from absl import logging
import numpy as np

from paac_tf import errors

EVAL_FILE = "eval.json"
DEFAULT_NUM_ENVS = 16
APEX_EVAL_EPSILON = 0.001
LAST = 2   # tf_agents StepType.LAST
FIRST = 0
_ATARI_FRAMESKIP = 4
_ATARI_GIF_SCALE = 3


# --- policy -------------------------------------------------------------------------------

def resolve_policy_dir(policy_dir):
  """The SavedModel version directory for `policy_dir` (a version or a model directory)."""
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  path = os.path.abspath(os.path.expanduser(policy_dir or ""))
  if not policy_dir or not tf.io.gfile.isdir(path):
    raise errors.UserError("--policy_dir %s does not exist." % (policy_dir or "''"))
  if _is_saved_model(path):
    return path
  versions = sorted(int(n.rstrip("/")) for n in tf.io.gfile.listdir(path)
                    if n.rstrip("/").isdigit() and _is_saved_model(os.path.join(path, n)))
  if versions:
    chosen = os.path.join(path, str(versions[-1]))
    logging.info("Evaluating the highest version of %s: %s", path, chosen)
    return chosen
  raise errors.UserError("--policy_dir %s is not a SavedModel (no saved_model.pb) nor a "
                         "model directory with integer versions." % path)


def _is_saved_model(path):
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  return (tf.io.gfile.exists(os.path.join(path, "saved_model.pb")) or
          tf.io.gfile.exists(os.path.join(path, "saved_model.pbtxt")))


class LoadedPolicy:
  """A SavedModel's serving_default: numpy observations in, int64 actions out."""

  def __init__(self, policy_dir):
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from paac_tf import export  # pylint: disable=import-outside-toplevel
    self.policy_dir = policy_dir
    try:
      self.saved_model = tf.saved_model.load(policy_dir)
    except Exception as e:  # pylint: disable=broad-except
      first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
      raise errors.UserError("Cannot load the SavedModel %s (%s)." % (policy_dir, first)) from None
    signatures = getattr(self.saved_model, "signatures", {})
    if "serving_default" not in signatures:
      raise errors.UserError("SavedModel %s has no serving_default signature." % policy_dir)
    self._serve = signatures["serving_default"]
    inputs = self._serve.structured_input_signature[1]
    if list(inputs) != ["observation"]:
      raise errors.UserError("serving_default of %s takes %s; expected one input named "
                             "'observation'." % (policy_dir, sorted(inputs)))
    self.observation_spec = inputs["observation"]
    if "action" not in self._serve.structured_outputs:
      raise errors.UserError("serving_default of %s has no 'action' output (outputs: %s)."
                             % (policy_dir, sorted(self._serve.structured_outputs)))
    self.metadata = export.read_metadata(policy_dir, self.saved_model)
    self._tf = tf

  def actions(self, observations):
    obs = np.asarray(observations, dtype=self.observation_spec.dtype.as_numpy_dtype)
    return self._serve(observation=self._tf.constant(obs))["action"].numpy().astype(np.int64)


# --- evaluation ---------------------------------------------------------------------------

def default_epsilon(metadata):
  """0.001 for greedy Ape-X policies; 0 for PAAC (it samples, or was exported greedy)."""
  if metadata.get("algorithm") == "apex" and metadata.get("greedy", True):
    return APEX_EVAL_EPSILON
  return 0.0


def slot_quotas(episodes, num_envs):
  """Episodes per environment slot: a fixed, near-equal share summing to `episodes`."""
  return [episodes // num_envs + (1 if i < episodes % num_envs else 0) for i in range(num_envs)]


def _is_atari(env_name):
  from paac_tf.envs import names  # pylint: disable=import-outside-toplevel
  return names.resolve_atari(str(env_name)) is not None


def _default_workers(num_envs, atari):
  """In-process for cheap gymnasium envs; the cores (a divisor of n_e) for Atari."""
  if not atari:
    return 0
  cores = os.cpu_count() or 1
  return max(d for d in range(1, num_envs + 1) if num_envs % d == 0 and d <= cores)


def make_eval_env(env_name, num_envs, seed, noop_max, max_episode_frames, preprocessing,
                  num_workers=None):
  """The batched env, built as for training but with whole games and raw rewards."""
  from paac_tf.envs import environment  # pylint: disable=import-outside-toplevel
  atari = _is_atari(env_name)
  if num_workers is None:
    num_workers = _default_workers(num_envs, atari)
  kwargs = {"reward_clipping": False, "episodic_life": False}
  if atari:
    kwargs.update(noop_max=int(noop_max), max_episode_frames=int(max_episode_frames),
                  atari_backend=preprocessing.get("atari_backend", "vector"),
                  num_threads=max(1, num_workers))
  try:
    return environment.make_environment(env_name, num_envs=num_envs, num_workers=num_workers,
                                        seed=seed, **kwargs)
  except errors.UserError:
    raise
  except ValueError as e:
    raise errors.UserError("Cannot build environment %r: %s" % (env_name, e)) from None


class _Recorder:
  """Keeps the frames of each slot's current episode and of the best counted one."""

  def __init__(self, env_name, observation_shape, num_envs):
    self.image = len(observation_shape) == 3
    self.renderer = None
    if not self.image:
      self.renderer = _state_renderer(env_name, observation_shape)
    self.frames = [[] for _ in range(num_envs)]
    self.best = None

  def add(self, observations, slots):
    for i in slots:
      obs = observations[i]
      if self.image:
        frame = np.ascontiguousarray(obs[..., -1])
        self.frames[i].append((frame.shape, frame.dtype.str,
                               zlib.compress(frame.tobytes(), 1)))
      else:
        self.frames[i].append(np.array(obs, copy=True))

  def start(self, i):
    self.frames[i] = []

  def finish(self, i, episode_return, counted):
    if counted and (self.best is None or episode_return > self.best[0]):
      self.best = (episode_return, self.frames[i])
    self.frames[i] = []

  def write(self, path):
    from PIL import Image  # pylint: disable=import-outside-toplevel
    if self.best is None:
      return None
    images = []
    if self.image:
      for shape, dtype, data in self.best[1]:
        frame = np.frombuffer(zlib.decompress(data), dtype=np.dtype(dtype)).reshape(shape)
        image = Image.fromarray(frame.astype(np.uint8))
        images.append(image.resize((shape[1] * _ATARI_GIF_SCALE, shape[0] * _ATARI_GIF_SCALE),
                                   Image.NEAREST))
      duration_ms = int(round(1000.0 * _ATARI_FRAMESKIP / 60.0))
    else:
      env, fps = self.renderer
      for obs in self.best[1]:
        env.unwrapped.state = np.array(obs, dtype=np.float64)
        images.append(Image.fromarray(env.render()))
      duration_ms = max(20, int(round(1000.0 / fps)))
    if not images:
      return None
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp.gif"
    images[0].save(tmp, save_all=True, append_images=images[1:], duration=duration_ms, loop=0)
    os.replace(tmp, path)
    return path

  def close(self):
    if self.renderer is not None:
      self.renderer[0].close()


def _state_renderer(env_name, observation_shape):
  """(gymnasium env in rgb_array mode, fps) for envs whose observation is their state."""
  import gymnasium as gym  # pylint: disable=import-outside-toplevel
  # Classic-control renderers use pygame, which would otherwise probe the sound card.
  os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
  try:
    env = gym.make(env_name, render_mode="rgb_array")
    env.reset(seed=0)
  except Exception as e:  # pylint: disable=broad-except
    raise errors.UserError("--record cannot render %s (%s)." % (env_name, e)) from None
  state = getattr(env.unwrapped, "state", None)
  if state is None or tuple(np.shape(state)) != tuple(observation_shape):
    env.close()
    raise errors.UserError(
        "--record needs image observations, or a classic-control env whose observation is "
        "its state (CartPole-v1, MountainCar-v0); %s is neither." % env_name)
  return env, float(env.metadata.get("render_fps") or 30)


def run_episodes(policy, env, episodes, epsilon, seed=0, recorder=None, progress=None):
  """Plays `episodes` whole episodes, each slot its fixed share; returns [(return, length)].

  Episodes are listed round-robin over slots (slot 0's first, slot 1's first, ..., slot
  0's second, ...), roughly the order they started.
  """
  num_envs = env.batch_size
  quotas = slot_quotas(episodes, num_envs)
  done = [[] for _ in range(num_envs)]
  rng = np.random.default_rng(seed + 7919)
  low, high = int(env.action_spec().minimum), int(env.action_spec().maximum)
  time_step = env.reset()
  env.pop_finished_episodes()
  active = lambda: [i for i in range(num_envs) if len(done[i]) < quotas[i]]
  if recorder is not None:
    recorder.add(time_step.observation, active())
  while active():
    actions = policy.actions(time_step.observation)
    if epsilon > 0:
      explore = rng.random(num_envs) < epsilon
      actions = np.where(explore, rng.integers(low, high + 1, num_envs), actions)
    time_step = env.step(actions)
    finished = env.pop_finished_episodes()
    step_type = np.asarray(time_step.step_type)
    ended = np.flatnonzero(step_type == LAST)
    if len(finished) != len(ended):
      raise RuntimeError("The environment reported %d finished episodes for %d LAST steps."
                         % (len(finished), len(ended)))
    slots = active()
    if recorder is not None:
      for i in np.flatnonzero(step_type == FIRST):
        recorder.start(i)
      recorder.add(time_step.observation, slots)
    for i, (episode_return, length) in zip(ended, finished):   # both in slot order
      counted = len(done[i]) < quotas[i]
      if counted:
        done[i].append((float(episode_return), int(length)))
        if progress is not None:
          progress(sum(len(d) for d in done), episodes, episode_return)
      if recorder is not None:
        recorder.finish(i, float(episode_return), counted)
  ordered = []
  for k in range(max(quotas)):
    ordered.extend(done[i][k] for i in range(num_envs) if k < len(done[i]))
  return ordered


def protocol_description(env_name, noop_max, max_episode_frames, epsilon, num_envs, episodes,
                         metadata):
  if metadata.get("greedy"):
    acting = "argmax of the exported policy"
  elif metadata.get("algorithm") == "apex":
    acting = "exported epsilon-greedy policy (epsilon %g)" % float(metadata.get("epsilon", 0))
  elif metadata.get("algorithm") == "paac":
    acting = "a sample of the exported policy"
  else:
    acting = "the SavedModel's action output"
  parts = []
  if _is_atari(env_name):
    parts.append("Atari: up to %d no-op starts, whole games (no episodic life), unclipped "
                 "score, frameskip 4, no sticky actions, at most %d frames per game"
                 % (noop_max, max_episode_frames))
  else:
    parts.append("gymnasium: whole episodes as the env defines them, raw rewards")
  parts.append("actions: %s, uniformly random with probability %g" % (acting, epsilon))
  quotas = slot_quotas(episodes, num_envs)
  shares = ", ".join("the first %d of %d env%s" % (q, quotas.count(q),
                                                   "s" if quotas.count(q) > 1 else "")
                     for q in sorted(set(quotas), reverse=True))
  parts.append("%d episodes over %d parallel envs, each env a fixed share (%s)"
               % (episodes, num_envs, shares))
  return "; ".join(parts)


def evaluate(policy_dir, episodes=30, epsilon=None, env_name=None, noop_max=30,
             max_episode_frames=None, num_envs=DEFAULT_NUM_ENVS, seed=0, output_dir=None,
             overwrite=False, record=None, num_workers=None, verbose=True):
  """Evaluates a SavedModel policy; writes and returns the eval.json dict."""
  if int(episodes) < 1:
    raise errors.UserError("--episodes must be at least 1, got %d." % int(episodes))
  if epsilon is not None and not 0.0 <= float(epsilon) <= 1.0:
    raise errors.UserError("--epsilon must be in [0, 1], got %g." % float(epsilon))
  if int(num_envs) < 1:
    raise errors.UserError("--num_envs must be at least 1, got %d." % int(num_envs))
  policy_dir = resolve_policy_dir(policy_dir)
  output_dir = os.path.abspath(os.path.expanduser(output_dir or policy_dir.rstrip("/") + "-eval"))
  eval_path = os.path.join(output_dir, EVAL_FILE)
  record_path = None
  if record:
    record_path = record if os.path.isabs(record) else os.path.join(output_dir, record)
  for path in (eval_path, record_path):
    if path and os.path.exists(path) and not overwrite:
      raise errors.UserError("%s exists; pass --overwrite to replace it, or choose another "
                             "--output_dir." % path)

  policy = LoadedPolicy(policy_dir)
  metadata = policy.metadata
  env_name = env_name or metadata.get("env_name")
  if not env_name:
    raise errors.UserError("%s has no paac_tf metadata naming its environment; pass "
                           "--env_name." % policy_dir)
  preprocessing = metadata.get("preprocessing") or {}
  epsilon = default_epsilon(metadata) if epsilon is None else float(epsilon)
  if max_episode_frames is None:
    max_episode_frames = int(preprocessing.get("max_episode_frames") or 108000)
  num_envs = min(int(episodes), int(num_envs))
  atari = _is_atari(env_name)

  env = make_eval_env(env_name, num_envs, seed, noop_max, max_episode_frames, preprocessing,
                      num_workers)
  recorder = None
  try:
    obs_shape = tuple(env.observation_spec().shape)
    want = tuple(policy.observation_spec.shape[1:])
    if obs_shape != want:
      raise errors.UserError("%s gives observations of shape %s; the policy takes %s."
                             % (env_name, obs_shape, want))
    env_actions = int(env.action_spec().maximum) - int(env.action_spec().minimum) + 1
    if metadata.get("num_actions") and int(metadata["num_actions"]) != env_actions:
      raise errors.UserError("%s has %d actions; the policy was trained with %d."
                             % (env_name, env_actions, int(metadata["num_actions"])))
    if record_path:
      recorder = _Recorder(env_name, obs_shape, num_envs)

    def progress(count, total, episode_return):
      if verbose:
        logging.info("episode %d/%d: return %g", count, total, episode_return)

    start = time.monotonic()
    results = run_episodes(policy, env, int(episodes), epsilon, seed=seed, recorder=recorder,
                           progress=progress)
    wall = time.monotonic() - start
    if recorder is not None:
      recorder.write(record_path)
  finally:
    if recorder is not None:
      recorder.close()
    env.close()

  returns = np.array([r for r, _ in results], np.float64)
  lengths = [int(n) for _, n in results]
  summary = {
      "env_name": env_name,
      "episodes": len(results),
      "returns": [float(r) for r in returns],
      "mean": float(returns.mean()),
      "std": float(returns.std()),
      "min": float(returns.min()),
      "max": float(returns.max()),
      "lengths": lengths,
      "length_unit": "agent steps" + (" (x%d frames)" % _ATARI_FRAMESKIP if atari else ""),
      "policy_dir": policy_dir,
      "train_step": metadata.get("train_step"),
      "train_step_unit": metadata.get("train_step_unit") or "agent_steps",
      "algorithm": metadata.get("algorithm"),
      "greedy": metadata.get("greedy"),
      "epsilon": epsilon,
      "noop_max": int(noop_max) if atari else None,
      "max_episode_frames": int(max_episode_frames) if atari else None,
      "num_envs": num_envs,
      "seed": int(seed),
      "protocol": protocol_description(env_name, int(noop_max), int(max_episode_frames),
                                       epsilon, num_envs, int(episodes), metadata),
      "record": record_path,
      "wall_time_s": round(wall, 3),
      "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
  }
  os.makedirs(output_dir, exist_ok=True)
  tmp = eval_path + ".tmp"
  with open(tmp, "w") as f:
    json.dump(summary, f, indent=2)
  os.replace(tmp, eval_path)
  summary["eval_json"] = eval_path
  return summary


def format_summary(summary):
  return ("%s: %d episodes, mean %.2f +- %.2f (std), min %g, max %g (train step %s, "
          "epsilon %g) -> %s" % (summary["env_name"], summary["episodes"], summary["mean"],
                                 summary["std"], summary["min"], summary["max"],
                                 summary["train_step"], summary["epsilon"],
                                 summary["eval_json"]))


# --- command line ---------------------------------------------------------------------------

def _define_flags():
  from absl import flags  # pylint: disable=import-outside-toplevel
  flags.DEFINE_string("policy_dir", None, "SavedModel version directory, or a model directory "
                      "(its highest version is used).")
  flags.DEFINE_integer("episodes", 30, "Number of whole episodes to evaluate.")
  flags.DEFINE_float("epsilon", None, "Probability of a uniformly random action (default: "
                     "0.001 for greedy Ape-X policies, 0 otherwise).")
  flags.DEFINE_string("env_name", None, "Environment (default: from the policy's metadata).")
  flags.DEFINE_integer("noop_max", 30, "Atari: up to this many no-op actions at each start.")
  flags.DEFINE_integer("max_episode_frames", None, "Atari: frame limit per game (default: "
                       "the run's, 108000 = 30 minutes).")
  flags.DEFINE_integer("num_envs", DEFAULT_NUM_ENVS, "Parallel environments (at most "
                       "--episodes).")
  flags.DEFINE_integer("num_workers", None, "Worker processes/threads (default: in-process for "
                       "gymnasium envs, the cores for Atari).")
  flags.DEFINE_integer("seed", 0, "Environment seed (env slot i gets seed + i).")
  flags.DEFINE_string("output_dir", None, "Where eval.json goes (default: <policy_dir>-eval).")
  flags.DEFINE_boolean("overwrite", False, "Replace an existing eval.json / GIF.")
  flags.DEFINE_string("record", None, "Write the best episode as this GIF (relative paths go "
                      "into the output directory).")
  flags.mark_flag_as_required("policy_dir")


def main(argv):
  from absl import flags  # pylint: disable=import-outside-toplevel
  FLAGS = flags.FLAGS  # pylint: disable=invalid-name
  if len(argv) > 1:
    raise errors.UserError("Unexpected arguments: %s" % " ".join(argv[1:]))
  summary = evaluate(FLAGS.policy_dir, episodes=FLAGS.episodes, epsilon=FLAGS.epsilon,
                     env_name=FLAGS.env_name, noop_max=FLAGS.noop_max,
                     max_episode_frames=FLAGS.max_episode_frames, num_envs=FLAGS.num_envs,
                     seed=FLAGS.seed, output_dir=FLAGS.output_dir, overwrite=FLAGS.overwrite,
                     record=FLAGS.record, num_workers=FLAGS.num_workers)
  print(format_summary(summary))
  if summary.get("record"):
    print("best episode: %s" % summary["record"])
  sys.stdout.flush()


if __name__ == "__main__":
  _define_flags()
  errors.run_cli(main)
