r"""Evaluation of exported policies under the papers' protocol (30 no-op starts).

The policy is a SavedModel run through its `serving_default` signature
(`loading.LoadedPolicy`); the training code's model is not used.

Protocol:
- whole games (no episodic life), unclipped scores (`pop_finished_episodes()` reports
  raw returns), up to `noop_max` (30) random no-op actions at the start of each Atari
  game, no sticky actions, frameskip 4, at most `max_episode_frames` emulator frames per
  game (default: the run's setting, 108000 = 30 minutes);
- actions: the exported policy's own (PAAC: a sample of its policy, or the argmax if
  exported greedy; Ape-X: argmax), replaced by a uniformly random action with
  probability `epsilon`. Default epsilon: 0.001 for greedy Ape-X exports, 0 otherwise.
  0.001 is the evaluation epsilon of Dopamine's DQN and Rainbow agents (`epsilon_eval`;
  the Nature DQN used 0.05). The Ape-X paper evaluates with 30 no-op starts (this
  protocol) and with human starts (not available here); the project's reference material
  does not give the epsilon it evaluated with, so 0.001 is Dopamine's value, not the
  paper's (docs/apex.md, "Evaluation");
- `episodes` episodes run on n_e = min(episodes, num_envs) environments in parallel, and
  each environment slot plays a fixed share of them (its first episodes, chosen before
  any outcome is known). Taking the first N episodes to finish instead would bias the
  result toward short episodes.
Lengths are in agent steps (on Atari, one agent step = 4 frames). `seed` fixes the
environments and the epsilon draws; a sampling (PAAC) policy draws its actions inside
the SavedModel, unseeded, so its scores vary from run to run.

Seeds: evaluation environment i is seeded with EVAL_SEED + i (10**9 + i), disjoint from
every training seed: training seeds lie below 10**9 (PAAC: seed + i, and seed + the agent
steps done + i on resume; Ape-X actors: seed * 1000 + 7919 (actor + 1) + 104729 restarts + i),
so an evaluation never replays the no-op starts of training's games. Each game's no-ops are
a new draw from its env's generator (Atari vector backend: 0 to noop_max - 1, recorded per
episode in eval.json's "start_frames", with "episode_env_seeds"). A deterministic policy may
still replay few games whatever the no-ops (Breakout: only their number modulo 4 matters):
eval.json counts the distinct scores and episodes, and warns (`replays`).

Assists: what the environment does in the policy's stead, all recorded in eval.json
("assists"). By default the evaluation applies the assists the policy trained with and
that the papers' protocol allows: FIRE at game start and after a lost life for a policy
trained with `fire_reset` (in games that need FIRE to go on). `fire_reset=False`
evaluates the policy's own actions only (a game that waits for FIRE then runs to
`max_episode_frames` unless the policy presses it). Episodic life is never applied.

`evaluate` writes the results to `eval.json` (by default in `<policy_dir>-eval/` beside
the version directory; TF Serving ignores that non-integer name), and with `record` the
best episode as a GIF: the last frame of each observation stack, upscaled, on Atari; the
env's own renderer for classic-control envs whose observation is their state (CartPole,
MountainCar).
"""
import datetime
import json
import os
import time

from absl import logging
import numpy as np

from paac_tf import errors
from paac_tf.algorithms import registry
from paac_tf.envs import atari_vector
from paac_tf.envs import batched
from paac_tf.envs import environment
from paac_tf.envs import factory
from paac_tf.envs import names
from paac_tf.policies import episode_gif
from paac_tf.policies import loading
from paac_tf.policies import replays

EVAL_FILE = "eval.json"
EVAL_SEED = 10**9          # evaluation env i: EVAL_SEED + i; training seeds lie below
DEFAULT_NUM_ENVS = 16


def default_epsilon(metadata):
  """The evaluation epsilon of an export unless the user gives one: its algorithm's
  (`Algorithm.eval_epsilon`: 0.001 for greedy Ape-X policies; 0 for PAAC, which samples or
  was exported greedy), as its metadata records it (`eval_epsilon`), or for exports that
  predate that record, as its algorithm says; 0 for an unknown algorithm."""
  if "eval_epsilon" in metadata:
    return float(metadata["eval_epsilon"])
  try:
    algorithm = registry.get(metadata.get("algorithm"))
  except registry.UnknownAlgorithmError:
    return 0.0
  return float(algorithm.eval_epsilon(metadata.get("greedy", True)))


def slot_quotas(episodes, num_envs):
  """Episodes per environment slot: a fixed, near-equal share summing to `episodes`."""
  return [episodes // num_envs + (1 if i < episodes % num_envs else 0) for i in range(num_envs)]


def _is_atari(env_name):
  return names.resolve_atari(str(env_name)) is not None


def _default_workers(num_envs, atari):
  """In-process for cheap gymnasium envs; the cores (a divisor of n_e) for Atari."""
  if not atari:
    return 0
  cores = os.cpu_count() or 1
  return max(d for d in range(1, num_envs + 1) if num_envs % d == 0 and d <= cores)


def make_eval_env(env_name, num_envs, seed, noop_max, max_episode_frames, preprocessing,
                  num_workers=None, fire_reset=None):
  """The batched env, built as for training but with whole games and raw rewards.

  fire_reset: FIRE at game start and after a lost life; None: as the policy trained
  (`preprocessing`), False: the policy's own actions only.
  """
  atari = _is_atari(env_name)
  if num_workers is None:
    num_workers = _default_workers(num_envs, atari)
  kwargs = {"reward_clipping": False, "episodic_life": False}
  if fire_reset is None:
    fire_reset = bool(preprocessing.get("fire_reset", False))
  if atari:
    kwargs.update(noop_max=int(noop_max), max_episode_frames=int(max_episode_frames),
                  atari_backend=preprocessing.get("atari_backend", "vector"),
                  fire_reset=bool(fire_reset), num_threads=max(1, num_workers))
  try:
    return environment.make_environment(env_name, num_envs=num_envs, num_workers=num_workers,
                                        seed=seed, **kwargs)
  except errors.UserError:
    raise
  except ValueError as e:
    raise errors.UserError("Cannot build environment %r: %s" % (env_name, e)) from None


def _check_actions(env_name, action_spec, metadata):
  """A UserError unless the environment's actions are those the policy was trained with
  (its export metadata's num_actions, or action_shape for a continuous policy)."""
  if batched.is_discrete_spec(action_spec):
    if "action_shape" in metadata:
      raise errors.UserError("%s has %s; the policy was trained with continuous actions."
                             % (env_name, environment.describe_actions(action_spec)))
    actions = batched.num_actions(action_spec)
    if metadata.get("num_actions") and int(metadata["num_actions"]) != actions:
      raise errors.UserError("%s has %d actions; the policy was trained with %d."
                             % (env_name, actions, int(metadata["num_actions"])))
    return
  shape = [int(d) for d in action_spec.shape]
  if metadata.get("num_actions") or metadata.get("action_shape", shape) != shape:
    raise errors.UserError("%s has %s; the policy was trained with %s." % (
        env_name, environment.describe_actions(action_spec),
        "%d discrete actions" % int(metadata["num_actions"]) if metadata.get("num_actions")
        else "actions of shape %s" % (tuple(metadata["action_shape"]),)))


def _random_actions(action_spec, num_envs, rng):
  """A function that draws `num_envs` uniformly random actions of `action_spec` (integers
  between its bounds, or floats of its shape within them)."""
  low, high = action_spec.minimum, action_spec.maximum
  if batched.is_discrete_spec(action_spec):
    return lambda: rng.integers(int(low), int(high) + 1, num_envs)
  shape = (num_envs,) + tuple(action_spec.shape)
  return lambda: rng.uniform(low, high, shape).astype(np.float32)


def run_episodes(policy, env, episodes, epsilon, seed=0, recorder=None, progress=None,
                 sources=None, capped=None):
  """Plays `episodes` whole episodes, each slot its fixed share; returns [(return, length)].

  Episodes are listed round-robin over slots (slot 0's first, slot 1's first, ..., slot
  0's second, ...), roughly the order they started. `sources`: a list that receives, in
  the same order, each episode's (slot, frames played before its first observation: the
  no-ops, as the env's `start_frames` reports them; None for envs without it). `capped`: a
  list that receives, in the same order, whether each episode ended at the time cap (its
  LAST step truncated, discount 1: CartPole-v1's 500 steps, Atari's max_episode_frames)
  rather than by the game's end (discount 0).
  """
  num_envs = env.batch_size
  quotas = slot_quotas(episodes, num_envs)
  done = [[] for _ in range(num_envs)]
  rng = np.random.default_rng(seed + 7919)
  random_actions = _random_actions(env.action_spec(), num_envs, rng)
  time_step = env.reset()
  env.pop_finished_episodes()
  active = lambda: [i for i in range(num_envs) if len(done[i]) < quotas[i]]
  if recorder is not None:
    recorder.add(time_step.observation, active())
  while active():
    actions = policy.actions(time_step.observation)
    if epsilon > 0:
      explore = rng.random(num_envs) < epsilon
      explore = explore.reshape((num_envs,) + (1,) * (np.ndim(actions) - 1))
      actions = np.where(explore, random_actions(), actions)
    time_step = env.step(actions)
    finished = env.pop_finished_episodes()
    step_type = np.asarray(time_step.step_type)
    ended = np.flatnonzero(step_type == batched.LAST)
    truncated = np.asarray(time_step.discount) > 0
    if len(finished) != len(ended):
      raise RuntimeError("The environment reported %d finished episodes for %d LAST steps."
                         % (len(finished), len(ended)))
    slots = active()
    if recorder is not None:
      for i in np.flatnonzero(step_type == batched.FIRST):
        recorder.start(i)
      recorder.add(time_step.observation, slots)
    starts = getattr(env, "start_frames", None)     # still the ended games' here
    for i, (episode_return, length) in zip(ended, finished):   # both in slot order
      counted = len(done[i]) < quotas[i]
      if counted:
        done[i].append((float(episode_return), int(length),
                        None if starts is None else int(starts[i]), bool(truncated[i])))
        if progress is not None:
          progress(sum(len(d) for d in done), episodes, episode_return)
      if recorder is not None:
        recorder.finish(i, float(episode_return), counted)
  ordered = []
  for k in range(max(quotas)):
    for i in range(num_envs):
      if k < len(done[i]):
        ordered.append(done[i][k][:2])
        if sources is not None:
          sources.append((i, done[i][k][2]))
        if capped is not None:
          capped.append(done[i][k][3])
  return ordered


def trained_with_fire(env_name, preprocessing):
  """Whether training pressed FIRE in the policy's stead: `fire_reset` on, in a game whose
  action set `uses_fire` (a game without FIRE, e.g. MsPacman, trained without the assist,
  and its evaluation is the policy's own actions with or without `fire_reset`)."""
  game = names.resolve_atari(str(env_name))
  return game is not None and atari_vector.presses_fire(game.rom_id,
                                                        preprocessing.get("fire_reset"))


def assists(env, env_name, noop_max, max_episode_frames, epsilon, preprocessing):
  """What the evaluation environment did in the policy's stead (eval.json's "assists")."""
  atari = _is_atari(env_name)
  fire = bool(getattr(env, "presses_fire", False))
  return {"episodic_life": False, "reward_clipping": False,
          "fire_at_game_start": fire, "fire_after_life_loss": fire,
          "trained_with_fire_reset": trained_with_fire(env_name, preprocessing),
          "epsilon": float(epsilon),
          "noop_max": int(noop_max) if atari else None,
          "max_episode_frames": int(max_episode_frames) if atari else None,
          "sticky_actions": False if atari else None}


def assist_label(summary):
  """A short label of an evaluation's assists, for tables: 'FIRE at start and after a lost
  life', 'policy's actions only' (its own FIRE), or '' (nothing to say)."""
  applied = summary.get("assists") or {}
  if applied.get("fire_at_game_start"):
    return "FIRE at start and after a lost life"
  if applied.get("trained_with_fire_reset"):
    return "policy's actions only"
  return ""


def protocol_description(env_name, noop_max, max_episode_frames, epsilon, num_envs, episodes,
                         metadata, fire=False, seed=EVAL_SEED):
  """One line of eval.json saying how the episodes were played and chosen."""
  selection = metadata.get("action_selection")
  if metadata.get("greedy"):
    acting = "argmax of the exported policy"
  elif selection == "epsilon_greedy":
    acting = "exported epsilon-greedy policy (epsilon %g)" % float(metadata.get("epsilon", 0))
  elif selection == "sample":
    acting = "a sample of the exported policy"
  else:
    acting = "the SavedModel's action output"
  parts = []
  if _is_atari(env_name):
    parts.append("Atari: up to %d no-op starts, whole games (no episodic life), unclipped "
                 "score, frameskip %d, no sticky actions, at most %d frames per game"
                 % (noop_max, factory.ATARI_FRAMESKIP, max_episode_frames))
    parts.append("FIRE pressed by the environment at game start and after each lost life "
                 "(as in training)" if fire else "no FIRE assist (the policy's own actions)")
  else:
    parts.append("gymnasium: whole episodes as the env defines them, raw rewards")
  parts.append("actions: %s, uniformly random with probability %g" % (acting, epsilon))
  quotas = slot_quotas(episodes, num_envs)
  shares = ", ".join("the first %d of %d env%s" % (q, quotas.count(q),
                                                   "s" if quotas.count(q) > 1 else "")
                     for q in sorted(set(quotas), reverse=True))
  parts.append("%d episodes over %d parallel envs, each env a fixed share (%s)"
               % (episodes, num_envs, shares))
  parts.append("env seeds %d-%d" % (seed, seed + num_envs - 1))
  return "; ".join(parts)


def return_stats(returns):
  """mean, std (sample, ddof 1), standard error, min, max, episodes of a list of returns."""
  returns = np.asarray(returns, np.float64)
  n = len(returns)
  std = float(returns.std(ddof=1)) if n > 1 else 0.0
  return {"episodes": n, "mean": float(returns.mean()), "std": std, "std_ddof": 1,
          "standard_error": std / np.sqrt(n) if n > 1 else 0.0,
          "min": float(returns.min()), "max": float(returns.max())}


def evaluate(policy_dir, episodes=30, epsilon=None, env_name=None, noop_max=30,
             max_episode_frames=None, num_envs=DEFAULT_NUM_ENVS, seed=EVAL_SEED, output_dir=None,
             overwrite=False, record=None, num_workers=None, verbose=True, fire_reset=None,
             output_name=EVAL_FILE):
  """Evaluates a SavedModel policy; writes and returns the eval.json dict.

  fire_reset: None applies the FIRE assist the policy trained with; False evaluates its own
  actions only. output_name: the file written in `output_dir` (eval.json).
  """
  if int(episodes) < 1:
    raise errors.UserError("--episodes must be at least 1, got %d." % int(episodes))
  if epsilon is not None and not 0.0 <= float(epsilon) <= 1.0:
    raise errors.UserError("--epsilon must be in [0, 1], got %g." % float(epsilon))
  if int(num_envs) < 1:
    raise errors.UserError("--num_envs must be at least 1, got %d." % int(num_envs))
  policy_dir = loading.resolve_policy_dir(policy_dir)
  output_dir = os.path.abspath(os.path.expanduser(output_dir or policy_dir.rstrip("/") + "-eval"))
  if os.path.basename(output_name) != output_name or not output_name.endswith(".json"):
    raise errors.UserError("--output_name must be a file name ending in .json, got %r."
                           % output_name)
  seed = EVAL_SEED if seed is None else int(seed)
  if seed < 0 or seed + int(num_envs) >= 2**31:
    raise errors.UserError("--seed must be in [0, 2**31 - num_envs), got %d." % seed)
  eval_path = os.path.join(output_dir, output_name)
  record_path = None
  if record:
    record_path = record if os.path.isabs(record) else os.path.join(output_dir, record)
  for path in (eval_path, record_path):
    if path and os.path.exists(path) and not overwrite:
      raise errors.UserError("%s exists; pass --overwrite to replace it, or choose another "
                             "--output_dir." % path)

  policy = loading.LoadedPolicy(policy_dir)
  metadata = policy.metadata
  env_name = env_name or metadata.get("env_name")
  if not env_name:
    raise errors.UserError("%s has no paac_tf metadata naming its environment; pass "
                           "--env_name." % policy_dir)
  preprocessing = metadata.get("preprocessing") or {}
  protocol_epsilon = default_epsilon(metadata)
  epsilon = protocol_epsilon if epsilon is None else float(epsilon)
  if max_episode_frames is None:
    max_episode_frames = int(preprocessing.get("max_episode_frames") or 108000)
  num_envs = min(int(episodes), int(num_envs))
  atari = _is_atari(env_name)

  env = make_eval_env(env_name, num_envs, seed, noop_max, max_episode_frames, preprocessing,
                      num_workers, fire_reset=fire_reset)
  applied = assists(env, env_name, noop_max, max_episode_frames, epsilon, preprocessing)
  recorder = None
  try:
    obs_shape = tuple(env.observation_spec().shape)
    want = tuple(policy.observation_spec.shape[1:])
    if obs_shape != want:
      raise errors.UserError("%s gives observations of shape %s; the policy takes %s."
                             % (env_name, obs_shape, want))
    _check_actions(env_name, env.action_spec(), metadata)
    if record_path:
      recorder = episode_gif.Recorder(env_name, obs_shape, num_envs)

    def progress(count, total, episode_return):
      if verbose:
        logging.info("episode %d/%d: return %g", count, total, episode_return)

    start = time.monotonic()
    sources, capped = [], []
    results = run_episodes(policy, env, int(episodes), epsilon, seed=seed, recorder=recorder,
                           progress=progress, sources=sources, capped=capped)
    wall = time.monotonic() - start
    if recorder is not None:
      recorder.write(record_path)
  finally:
    if recorder is not None:
      recorder.close()
    env.close()

  returns = [float(r) for r, _ in results]
  lengths = [int(n) for _, n in results]
  start_frames = [frames for _, frames in sources]
  counts = replays.distinct_counts(returns, lengths, start_frames, capped)
  warning = replays.replay_warning(counts, len(returns))
  if warning and verbose:
    logging.warning("%s: %s.", env_name, warning)
  summary = {
      "env_name": env_name,
      **return_stats(returns),
      **counts,
      "replays": warning is not None,
      "replay_warning": warning,
      "returns": returns,
      "lengths": lengths,
      "capped": capped,
      "start_frames": start_frames if atari else None,
      "episode_env_seeds": [int(seed) + slot for slot, _ in sources],
      "length_unit": "agent steps" + (" (x%d frames)" % factory.ATARI_FRAMESKIP if atari else ""),
      "policy_dir": policy_dir,
      "train_step": metadata.get("train_step"),
      "train_step_unit": metadata.get("train_step_unit") or "agent_steps",
      "algorithm": metadata.get("algorithm"),
      "greedy": metadata.get("greedy"),
      "epsilon": epsilon,
      "default_epsilon": protocol_epsilon,   # the protocol's, for the tables
      "noop_max": int(noop_max) if atari else None,
      "max_episode_frames": int(max_episode_frames) if atari else None,
      "num_envs": num_envs,
      "seed": int(seed),
      "env_seeds": [int(seed), int(seed) + num_envs - 1],
      "seed_rule": "evaluation env i: seed + i; training seeds lie below %d" % EVAL_SEED,
      "assists": applied,
      "protocol": protocol_description(env_name, int(noop_max), int(max_episode_frames),
                                       epsilon, num_envs, int(episodes), metadata,
                                       fire=applied["fire_at_game_start"], seed=int(seed)),
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
  """What the command prints for an `evaluate` result: one line, and a warning line where
  the episodes replay few games (`replays`)."""
  label = assist_label(summary)
  line = ("%s: %d episodes, mean %.2f +- %.2f (std; standard error %.2f), min %g, max %g, "
          "%d distinct scores (train step %s, epsilon %g%s) -> %s" % (
              summary["env_name"], summary["episodes"], summary["mean"], summary["std"],
              summary["standard_error"], summary["min"], summary["max"],
              summary["distinct_scores"], summary["train_step"], summary["epsilon"],
              "; " + label if label else "", summary["eval_json"]))
  if summary.get("replay_warning"):
    line += "\nwarning: %s." % summary["replay_warning"]
  return line


