"""bfloat16 against float32 (the benchmark's part 'precision'): the networks' speed in both
precisions, and what bfloat16 Q-values do to Ape-X's priorities.

Speed, each step as the training code calls it and at the training loops' batch sizes,
float32 and `mixed_bfloat16` (paac_tf/networks/precision.py) measured in one process in
alternating segments, the order swapped every round, so that a drift of a shared
machine's speed affects both alike; each round gives the ratio bf16 / float32
(of wall-clock rates, and of rates per CPU second of this process), the table their medians:
  PAAC act     one rollout's forward passes on n_e observations (arch_nips and
               arch_nature), as the loop makes them (benchmark_parts.act_calls);
  PAAC train   the loop's update, `update.train_step`, on a rollout of t_max x n_e
               (benchmark_parts.train_calls);
  Ape-X act    the actor's dueling network on its batch of observations (`apex_network`'s
               default, arch_nature);
  Ape-X learn  `ApexLearnerStep.train` on a batch of replay items.
The observations are real Atari frames: the vector env played with random actions, and
the Ape-X batch is built from them as the replay stores items (frames t-3 .. t+3, 3-step
rewards and discounts).

Priorities: the learner step's new priorities |TD error| + epsilon for that batch
(double-Q targets with the target network a copy of the online one, so also the actors'
initial priorities), computed by a float32 and a bfloat16 learner step holding the same
(freshly initialised) weights, before either applies its update: their Spearman rank
correlation, the overlap of their top 10% (which items prioritized sampling prefers), and
their mean absolute difference relative to the mean priority.
"""
import time

import numpy as np

from tools.bench import benchmark_parts

PRECISIONS = ("float32", "mixed_bfloat16")
N_STEP, GAMMA = 3, 0.99


def rank_agreement(a, b, top_fraction=0.1):
  """{spearman, top_overlap}: the Spearman rank correlation of two score vectors (ranks by
  sorting, ties broken by position) and the fraction of `a`'s top `top_fraction` items
  that are also in `b`'s."""
  a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
  ranks_a, ranks_b = np.empty(len(a)), np.empty(len(b))
  ranks_a[np.argsort(a, kind="stable")] = np.arange(len(a))
  ranks_b[np.argsort(b, kind="stable")] = np.arange(len(b))
  spearman = float(np.corrcoef(ranks_a, ranks_b)[0, 1])
  top = max(1, int(round(top_fraction * len(a))))
  top_a = set(np.argsort(-a, kind="stable")[:top].tolist())
  top_b = set(np.argsort(-b, kind="stable")[:top].tolist())
  return {"spearman": spearman, "top_overlap": len(top_a & top_b) / top}


def atari_frames(game, num_envs, steps, warmup_steps=100, seed=0):
  """Observations [steps, num_envs, 84, 84, 4], clipped rewards and step types
  [steps, num_envs] of the vector env played with random actions, after `warmup_steps`
  (the frames of a game's first moments look alike)."""
  # Lazy: in the 'precision' part's own process; benchmark.py's process does not load TensorFlow.
  from paac_tf.envs import environment  # pylint: disable=import-outside-toplevel
  env = environment.make_environment(game, num_envs, 0, seed)
  rng = np.random.default_rng(seed)
  try:
    env.reset()
    for _ in range(warmup_steps):
      env.step(rng.integers(0, env.num_actions, size=num_envs))
    observations, rewards, step_types = [], [], []
    for _ in range(steps):
      time_step = env.step(rng.integers(0, env.num_actions, size=num_envs))
      observations.append(time_step.observation)
      rewards.append(time_step.reward)
      step_types.append(time_step.step_type)
  finally:
    env.close()
  return np.stack(observations), np.stack(rewards), np.stack(step_types), env.num_actions


def replay_sample(observations, rewards, step_types, num_actions, batch_size, seed=0):
  """A reverb.ReplaySample of `batch_size` 3-step items as the replay stores them
  (replay_layout: frames t-3 .. t+3, transition (a, R, D, 3)), from windows of the
  observations that stay inside one episode; uniform sampling probabilities."""
  # Lazy: in the 'precision' part's own process; benchmark.py's process does not load TensorFlow.
  import reverb  # pylint: disable=import-outside-toplevel
  steps, num_envs = rewards.shape
  rng = np.random.default_rng(seed)
  windows = [(t, e) for t in range(steps - N_STEP) for e in range(num_envs)
             if np.all(step_types[t + 1:t + N_STEP + 1, e] == 1)]   # MID steps only
  if len(windows) < batch_size:
    raise ValueError("%d windows for a batch of %d: record more steps."
                     % (len(windows), batch_size))
  chosen = [windows[i] for i in rng.choice(len(windows), batch_size, replace=False)]
  frames = np.stack([np.concatenate([np.moveaxis(observations[t, e], -1, 0)] + [
      observations[t + k, e][None, ..., -1] for k in range(1, N_STEP + 1)]) for t, e in chosen])
  reward = [sum(GAMMA ** k * rewards[t + k, e] for k in range(N_STEP)) for t, e in chosen]
  transition = np.stack([rng.integers(0, num_actions, batch_size), reward,
                         np.full(batch_size, GAMMA ** N_STEP), np.full(batch_size, N_STEP)],
                        axis=1).astype(np.float32)
  table_size = 100_000
  info = reverb.SampleInfo(
      key=np.arange(batch_size, dtype=np.uint64),
      probability=np.full(batch_size, 1.0 / table_size),
      table_size=np.full(batch_size, table_size, np.int64),
      priority=np.ones(batch_size), times_sampled=np.ones(batch_size, np.int32))
  return reverb.ReplaySample(info=info, data={"frames": frames, "transition": transition})


def _learner_step(num_actions, observation_spec, precision, weights=None):
  # Lazy: in the 'precision' part's own process; benchmark.py's process does not load TensorFlow.
  from paac_tf.algorithms.apex import learner_step  # pylint: disable=import-outside-toplevel
  from paac_tf.networks import dueling_q  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import replay_layout  # pylint: disable=import-outside-toplevel
  online, target = (dueling_q.build_q_network(num_actions, observation_spec,
                                              precision=precision) for _ in range(2))
  if weights is not None:
    online.set_weights(weights)
  step = learner_step.ApexLearnerStep(online, target, replay_layout.ReplayLayout(
      observation_spec, n_step=N_STEP))
  step.build()   # the target network copies the online one
  return step


def _segment(fn, seconds, min_calls=2):
  """(items per second, items per CPU second) of fn() (returning items) over `seconds`."""
  count, calls = 0, 0
  t0, cpu0 = time.perf_counter(), time.process_time()
  while time.perf_counter() - t0 < seconds or calls < min_calls:
    count += fn()
    calls += 1
  return count / (time.perf_counter() - t0), count / max(time.process_time() - cpu0, 1e-9)


def _alternating(pairs, num_rounds, seconds):
  """{name: {precision: callable}} measured in alternating segments; per name the median
  rates of each precision and the median, min and max of the per-round ratios."""
  rounds = {name: [] for name in pairs}
  for r in range(int(num_rounds)):
    for name, fns in pairs.items():
      order = PRECISIONS if r % 2 == 0 else PRECISIONS[::-1]
      rates = {p: _segment(fns[p], seconds) for p in order}
      rounds[name].append({
          "float32": rates["float32"][0], "mixed_bfloat16": rates["mixed_bfloat16"][0],
          "ratio": rates["mixed_bfloat16"][0] / rates["float32"][0],
          "cpu_ratio": rates["mixed_bfloat16"][1] / rates["float32"][1]})
  out = {}
  for name, per_round in rounds.items():
    ratios = [x["ratio"] for x in per_round]
    out[name] = {k: float(np.median([x[k] for x in per_round]))
                 for k in ("float32", "mixed_bfloat16", "ratio", "cpu_ratio")}
    out[name].update(ratio_min=min(ratios), ratio_max=max(ratios))
  return out


def part_precision(game, num_envs, t_max, apex_batch_size, apex_act_batch_size, num_rounds,
                   seconds, networks=("arch_nips", "arch_nature")):
  """The speed ratios and the priorities' agreement (see the module docstring)."""
  # Lazy: in the 'precision' part's own process; benchmark.py's process does not load TensorFlow.
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  from paac_tf.networks import precision as precision_lib  # pylint: disable=import-outside-toplevel
  from paac_tf.networks import dueling_q  # pylint: disable=import-outside-toplevel
  steps = max(t_max, -(-apex_batch_size // num_envs) + N_STEP + 2)
  observations, rewards, step_types, num_actions = atari_frames(game, num_envs, steps)
  spec = tf.TensorSpec(observations.shape[2:], tf.uint8)
  sample = replay_sample(observations, rewards, step_types, num_actions, apex_batch_size)
  steps_f32 = _learner_step(num_actions, spec, "float32")
  steps_bf16 = _learner_step(num_actions, spec, "mixed_bfloat16",
                             steps_f32.q_network.get_weights())
  learners = {"float32": steps_f32, "mixed_bfloat16": steps_bf16}
  # The priorities first, before either step has changed its weights.
  priorities = {p: s.train(sample)[1].numpy() for p, s in learners.items()}
  agreement = rank_agreement(priorities["float32"], priorities["mixed_bfloat16"])
  agreement["mean_abs_difference_vs_mean"] = float(
      np.mean(np.abs(priorities["mixed_bfloat16"] - priorities["float32"])) /
      np.mean(priorities["float32"]))
  agreement["batch_size"] = apex_batch_size

  pairs = {}
  act_obs = observations[0]
  train_obs = observations[:t_max]
  for network in networks:
    paac = {p: benchmark_parts.paac_calls(network, precision=p, num_actions=num_actions)
            for p in PRECISIONS}
    pairs["paac_act " + network] = {p: _act(c, act_obs, t_max) for p, c in paac.items()}
    pairs["paac_train " + network] = {p: _train(c, train_obs, rewards[:t_max])
                                      for p, c in paac.items()}
  apex_obs = np.concatenate(observations)[:apex_act_batch_size]
  q_functions = {}
  for p in PRECISIONS:
    network = dueling_q.build_q_network(num_actions, spec, precision=p)
    q_functions[p] = tf.function(network).get_concrete_function(
        tf.TensorSpec(apex_obs.shape, apex_obs.dtype))
  pairs["apex_act"] = {p: _calls(lambda f=f: f(apex_obs).numpy(), len(apex_obs))
                       for p, f in q_functions.items()}
  pairs["apex_learner"] = {p: _calls(lambda s=s: s.train(sample)[1].numpy(), apex_batch_size)
                           for p, s in learners.items()}
  for fns in pairs.values():   # tracing and warm-up, outside the timed segments
    for fn in fns.values():
      fn()
      fn()
  return {"rates": _alternating(pairs, num_rounds, seconds), "priorities": agreement,
          "auto": precision_lib.resolve("auto"), "cpu_has_bf16": precision_lib.cpu_has_bf16()}


def _calls(fn, items):
  def call():
    fn()
    return items
  return call


def _act(calls, observations, t_max):
  """One rollout's forward passes on `observations`, as the training loop makes them."""
  num_envs = len(observations)
  return benchmark_parts.act_calls(calls, num_envs, t_max, observations=observations)


def _train(calls, observations, rewards):
  """The loop's update on the real rollout [T, B, ...] (random actions, its rewards), as
  the training loop calls it."""
  num_steps, batch = rewards.shape
  return benchmark_parts.train_calls(calls, batch, num_steps, observations, rewards)
