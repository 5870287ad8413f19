"""The benchmark's PAAC parts and the timing helpers its other parts share.

Each `part_*` runs in a fresh subprocess of `python -m tools.bench.benchmark --part=NAME`
and returns a JSON-able dict (see benchmark.py for what each one means). PAAC is built and
called as the training loop (paac_tf/runners/sync/train_loop.py) builds and calls it:
the model and the optimizer from the algorithm object (`Paac.make_model`,
`make_optimizer`), action selection, the bootstrap values and `update.train_step` each one
`tf.function` (XLA with `jit_compile`) called on the loop's numpy arrays (`PaacCalls`), and
one update per rollout of t_max batched steps (`Loop`: the loop's steps without its
bookkeeping).
"""
import time

import numpy as np

ATARI_SHAPE = (84, 84, 4)


def timed(fn, seconds, warmup=3):
  """Calls fn() (returning a count of items) for `seconds`; returns items per second."""
  for _ in range(warmup):
    fn()
  count, start = 0, time.perf_counter()
  while time.perf_counter() - start < seconds:
    count += fn()
  return count / (time.perf_counter() - start)


def random_steps(env, seed=0):
  """A callable stepping all of `env`'s environments (a batched PyEnvironment) with random
  actions; returns the number of agent steps taken."""
  rng = np.random.default_rng(seed)
  num_envs = int(env.batch_size)
  spec = env.action_spec()
  low, high = int(spec.minimum), int(spec.maximum) + 1

  def step():
    env.step(rng.integers(low, high, size=num_envs))
    return num_envs
  return step


class PaacCalls:
  """PAAC's model, optimizer and compiled calls, as runners/sync/train_loop.py's `run`
  builds them (`train_loop.compile_calls`):

    act(observation [B, ...])         -> (actions int64 [B], values [B]): one forward
                                         pass, a sample of each row's policy
    bootstrap_values(observation)     -> V(s_T) [B]
    train_step(observations, actions, rollout, values) -> the metrics vector
                                         (algorithms/paac/update.py's layout)

  `settings`: a `PaacSettings` (its network, precision, jit_compile and optimizer's)."""

  def __init__(self, settings, observation_spec, action_spec, seed=0,
               total_updates=10 ** 6):
    # Lazy: TensorFlow loads only in a part's subprocess: benchmark.py, whose process never
    # loads it, imports this module.
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from paac_tf.algorithms import paac  # pylint: disable=import-outside-toplevel
    from paac_tf.envs import batched  # pylint: disable=import-outside-toplevel
    from paac_tf.runners.sync import train_loop  # pylint: disable=import-outside-toplevel
    algorithm = paac.ALGORITHM
    self.settings = settings
    self.num_actions = batched.num_actions(action_spec)
    self.model = model = algorithm.make_model(action_spec, observation_spec, settings,
                                              seed=seed)
    self.optimizer = algorithm.make_optimizer(model, settings, total_updates)
    self.metric_names = algorithm.metric_names
    rng = tf.random.Generator.from_seed(seed)
    self.act, self.bootstrap_values, self.train_step = train_loop.compile_calls(
        algorithm, model, self.optimizer, rng, settings)


def paac_settings(network="arch_nips", jit=False, precision="float32", **fields):
  """A `PaacSettings` of these fields (the others: their defaults, atari.gin's)."""
  # Lazy: TensorFlow loads only in a part's subprocess (see PaacCalls).
  from paac_tf.algorithms.paac import settings as settings_lib  # pylint: disable=import-outside-toplevel
  return settings_lib.PaacSettings(network=network, jit_compile=bool(jit),
                                   precision=precision, **fields)


def atari_specs(num_actions=6):
  """(observation spec, action spec) of an Atari game's batched env: (84, 84, 4) uint8
  frames, `num_actions` discrete actions."""
  # Lazy: TensorFlow loads only in a part's subprocess (see PaacCalls).
  from tf_agents.specs import array_spec  # pylint: disable=import-outside-toplevel
  return (array_spec.BoundedArraySpec(ATARI_SHAPE, np.uint8, 0, 255),
          array_spec.BoundedArraySpec((), np.int64, 0, num_actions - 1))


def paac_calls(network, jit=False, precision="float32", num_actions=6):
  """`PaacCalls` for Atari observations (84, 84, 4) with `network` in `precision`."""
  return PaacCalls(paac_settings(network, jit, precision), *atari_specs(num_actions))


def _frames(shape, observations=None):
  """uint8 frames of `shape`: `observations`, or random ones."""
  if observations is not None:
    return np.ascontiguousarray(observations, np.uint8)
  return np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8)


def act_calls(calls, num_envs, t_max=5, observations=None):
  """A callable making one rollout's forward passes on a batch (`observations`
  [num_envs, 84, 84, 4], else random) as the loop makes them: `act` t_max times, each
  output read as numpy, then `bootstrap_values` once. Returns the rollout's agent steps,
  t_max * num_envs (so that its rate is per agent step, as the loop's)."""
  obs = _frames((num_envs,) + ATARI_SHAPE, observations)

  def rollout():
    for _ in range(t_max):
      actions, values = calls.act(obs)
      actions.numpy(), values.numpy()
    calls.bootstrap_values(obs).numpy()
    return t_max * num_envs
  return rollout


def train_calls(calls, num_envs, t_max, observations=None, rewards=None):
  """A callable running the loop's update (`train_step`) on a rollout of t_max steps from
  num_envs envs (`observations` [t_max, num_envs, 84, 84, 4] and `rewards`, else random)
  as the loop calls it (numpy arrays in, the metrics read as numpy); returns the number of
  samples."""
  rng = np.random.default_rng(0)
  shape = (t_max, num_envs)
  rewards = rng.choice([-1.0, 0.0, 1.0], shape) if rewards is None else rewards
  rollout = np.stack([rewards, np.ones(shape), np.zeros(shape),
                      np.zeros(shape)]).astype(np.float32)
  obs = _frames(shape + ATARI_SHAPE, observations)
  actions = rng.integers(0, calls.num_actions, shape).astype(np.int64)
  values = np.zeros((t_max + 1, num_envs), np.float32)

  def call():
    calls.train_step(obs, actions, rollout, values).numpy()
    return t_max * num_envs
  return call


class Loop:
  """Algorithm 1 on `env` (a batched env of n_e environments), each rollout and update
  made as runners/sync/train_loop.py's `_train` makes them: t_max times one `act` on the
  n_e observations and one step of all n_e environments, the bootstrap values, one
  `train_step`, the finished episodes collected. Left out: the loop's bookkeeping
  (summaries every summary_interval updates, checkpoints, exports, the progress line).
  `update()` runs one rollout and its update and returns its agent steps; `start()` resets
  the environments (call it after stepping `env` outside the loop)."""

  def __init__(self, env, calls, t_max):
    self.env, self.calls, self.t_max = env, calls, int(t_max)
    n_e, spec = int(env.batch_size), env.observation_spec()
    self.steps_per_update = n_e * self.t_max
    self.observations = np.zeros((self.t_max, n_e) + tuple(spec.shape), spec.dtype)
    self.actions = np.zeros((self.t_max, n_e), np.int64)
    self.values = np.zeros((self.t_max + 1, n_e), np.float32)
    self.rollout = np.zeros((4, self.t_max, n_e), np.float32)
    self.time_step = None

  def start(self):
    self.time_step = self.env.reset()

  def update(self):
    """One rollout and its update, as the training loop; its agent steps."""
    # Lazy: TensorFlow loads only in a part's subprocess (see PaacCalls).
    from paac_tf.envs import batched  # pylint: disable=import-outside-toplevel
    if self.time_step is None:
      self.start()
    calls, time_step = self.calls, self.time_step
    observations, actions, values = self.observations, self.actions, self.values
    rewards, discounts, next_is_last, is_last = self.rollout
    for t in range(self.t_max):
      observations[t] = time_step.observation
      is_last[t] = time_step.step_type == batched.LAST
      chosen, value = calls.act(time_step.observation)
      actions[t], values[t] = chosen.numpy(), value.numpy()
      time_step = self.env.step(actions[t])
      rewards[t], discounts[t] = time_step.reward, time_step.discount
      next_is_last[t] = time_step.step_type == batched.LAST
    values[self.t_max] = calls.bootstrap_values(time_step.observation).numpy()
    dict(zip(calls.metric_names, calls.train_step(observations, actions, self.rollout,
                                                  values).numpy()))
    self.env.pop_finished_episodes()
    self.time_step = time_step
    return self.steps_per_update


def _loop(game, num_envs, num_workers, t_max, network, jit=False):
  """(env, calls, loop): the training loop on fresh PAAC calls, the environments built as
  the loop builds them (`make_environment`, seed 0)."""
  # Lazy: TensorFlow loads only in a part's subprocess (see PaacCalls).
  from paac_tf.envs import environment  # pylint: disable=import-outside-toplevel
  env = environment.make_environment(game, num_envs, num_workers, 0)
  try:
    settings = paac_settings(network, jit, num_envs=num_envs, num_workers=num_workers,
                             t_max=t_max)
    calls = PaacCalls(settings, env.observation_spec(), env.action_spec())
    loop = Loop(env, calls, t_max)
  except BaseException:
    env.close()
    raise
  return env, calls, loop


# --- parts (each runs in a fresh subprocess) -------------------------------------------
def part_env(game, backend, num_envs, num_workers, seconds):
  # Lazy: TensorFlow loads only in a part's subprocess (see PaacCalls).
  from paac_tf.envs import environment  # pylint: disable=import-outside-toplevel
  env = environment.make_environment(game, num_envs, num_workers, 0, atari_backend=backend)
  env.reset()
  try:
    return {"steps_per_s": timed(random_steps(env), seconds)}
  finally:
    env.close()


def part_act(game, network, jit, num_envs, seconds, t_max=5):
  del game
  return {"obs_per_s": timed(act_calls(paac_calls(network, jit), num_envs, t_max), seconds)}


def part_train(game, network, jit, num_envs, t_max, seconds):
  del game
  return {"samples_per_s": timed(train_calls(paac_calls(network, jit), num_envs, t_max),
                                 seconds)}


def part_loop(game, num_envs, num_workers, t_max, seconds, network="arch_nips", jit=False):
  env, _, loop = _loop(game, num_envs, num_workers, t_max, network, jit)
  try:
    return {"steps_per_s": timed(loop.update, seconds, warmup=5)}
  finally:
    env.close()


def part_interleaved(game, num_envs, num_workers, t_max, num_rounds, seconds,
                     network="arch_nips"):
  """The PAAC loop and the three parts of its serial bound, measured in one process in
  alternating segments (env alone, act alone, train alone, loop; `num_rounds` times,
  `seconds` each) on the same env and model, through the loop's calls: a machine whose
  speed drifts affects each round's four rates alike. Returns each round's rates, bound
  and ratio, and their medians."""
  env, calls, loop = _loop(game, num_envs, num_workers, t_max, network)
  try:
    step_envs = random_steps(env)
    act = act_calls(calls, num_envs, t_max)
    train = train_calls(calls, num_envs, t_max)
    per_round = []
    for _ in range(int(num_rounds)):
      env.reset()
      rates = {"env": timed(step_envs, seconds), "act": timed(act, seconds),
               "train": timed(train, seconds)}
      loop.start()     # the env was stepped outside the loop: begin from a reset
      rates["loop"] = timed(loop.update, seconds, warmup=2)
      rates["bound"] = 1.0 / (1.0 / rates["env"] + 1.0 / rates["act"] + 1.0 / rates["train"])
      rates["ratio"] = rates["loop"] / rates["bound"]
      per_round.append(rates)
  finally:
    env.close()
  median = {k: float(np.median([r[k] for r in per_round])) for k in per_round[0]}
  return {"rounds": per_round, "median": median,
          "ratio_min": min(r["ratio"] for r in per_round),
          "ratio_max": max(r["ratio"] for r in per_round)}
