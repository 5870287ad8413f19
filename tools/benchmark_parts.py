"""The benchmark's PAAC parts and the timing helpers its other parts share.

Each `part_*` runs in a fresh subprocess of `python -m tools.benchmark --part=NAME`
and returns a JSON-able dict (see benchmark.py for what each one means). Action selection
and the train step are called as the training loop calls them: through their concrete
functions (`rollout.concrete_function`), with no per-call argument matching.
"""
import time

import numpy as np


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


def paac_agent(network, jit=False, precision="float32", num_actions=6):
  """A PaacAgent for Atari observations (84, 84, 4) with `network` in `precision`."""
  # Lazy: TensorFlow loads only in a part's subprocess: benchmark.py, whose process never loads it,
  # imports this module.
  from tf_agents.specs import array_spec  # pylint: disable=import-outside-toplevel
  from paac_tf.algorithms.paac import agent as agent_lib  # pylint: disable=import-outside-toplevel
  from paac_tf.networks import actor_critic  # pylint: disable=import-outside-toplevel
  spec = array_spec.BoundedArraySpec((84, 84, 4), np.uint8, 0, 255)
  model = actor_critic.build_actor_critic(num_actions, spec, torso=network,
                                          precision=precision)
  return agent_lib.PaacAgent(model, total_updates=10 ** 6, jit_compile=jit)


def _aligned(shape, observations=None):
  """An aligned uint8 array of `shape` (the loop's, shared with tensors): `observations`,
  or random frames."""
  # Lazy: TensorFlow loads only in a part's subprocess: benchmark.py, whose process never loads it,
  # imports this module.
  from paac_tf.runners.sync import tensor_views  # pylint: disable=import-outside-toplevel
  obs = tensor_views.aligned_empty(shape, np.uint8)
  obs[...] = (np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8)
              if observations is None else observations)
  return obs


def act_calls(agent, num_envs, t_max=5, observations=None):
  """A callable running one rollout's action selections on a batch (`observations`
  [num_envs, 84, 84, 4], else random) as the loop calls them (concrete functions, the
  observations in an aligned array shared with the tensor, each output read through
  `tensor_views.numpy_view`): where the agent stores activations, `act_packed` at step 0 and
  `act_stored` at steps 1..t_max-1, whose outputs are kept for the update; else `act_packed`
  t_max times. Returns the number of observations."""
  # Lazy: TensorFlow loads only in a part's subprocess: benchmark.py, whose process never loads it,
  # imports this module.
  from paac_tf.runners.sync import rollout  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.sync import tensor_views  # pylint: disable=import-outside-toplevel
  obs = _aligned((num_envs, 84, 84, 4), observations)
  compiled = rollout.CompiledCalls(agent)
  act = rollout.concrete_function(compiled.act_packed, obs)
  stores = compiled.stores_activations and t_max > 1
  act_stored = rollout.concrete_function(compiled.act_stored, obs) if stores else act
  acted = [None] * (t_max - 1)

  def calls():
    packed = tensor_views.numpy_view(act(tensor_views.as_tensor(obs)))
    packed[:, 0].astype(np.int64)
    for t in range(t_max - 1):
      acted[t] = act_stored(tensor_views.as_tensor(obs))
      tensor_views.numpy_view(acted[t])[:, 0].astype(np.int64)
    return t_max * num_envs
  return calls


def train_calls(agent, num_envs, t_max, observations=None, rewards=None):
  """A callable running the loop's update (`train_stored` where the agent stores
  activations, else `train_packed`) on a rollout of t_max steps from num_envs envs
  (`observations` [t_max, num_envs, 84, 84, 4] and `rewards`, else random), as the loop
  calls it (the observations shared, as `act_calls`); returns the number of samples."""
  # Lazy: TensorFlow loads only in a part's subprocess: benchmark.py, whose process never loads it,
  # imports this module.
  from paac_tf.runners.sync import rollout  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.sync import tensor_views  # pylint: disable=import-outside-toplevel
  rng = np.random.default_rng(0)
  shape = (t_max, num_envs)
  rewards = rng.choice([-1.0, 0.0, 1.0], shape) if rewards is None else rewards
  step_data = np.stack([rewards, np.ones(shape), np.zeros(shape),
                        np.zeros(shape)]).astype(np.float32)
  obs = _aligned(shape + (84, 84, 4), observations)
  rest = (rng.integers(0, 6, shape), step_data, np.zeros((t_max + 1, num_envs), np.float32))
  compiled = rollout.CompiledCalls(agent)
  if compiled.stores_activations and t_max > 1:
    acted = tuple(compiled.act_stored(obs[t]) for t in range(1, t_max))
    train = rollout.concrete_function(compiled.train_stored, obs, *rest, *acted)
    arguments = lambda: (tensor_views.as_tensor(obs),) + rest + acted
  else:
    train = rollout.concrete_function(compiled.train_packed, obs, *rest)
    arguments = lambda: (tensor_views.as_tensor(obs),) + rest

  def call():
    train(*arguments()).numpy()
    return t_max * num_envs
  return call


def loop_on(env, agent, t_max, overlap_learner=False):
  """(runner, update): the training loop's `RolloutRunner` on `env`; `update()` runs one
  update and returns its agent steps. Call `runner.start()` after stepping `env` outside
  the runner."""
  # Lazy: TensorFlow loads only in a part's subprocess: benchmark.py, whose process never loads it,
  # imports this module.
  from paac_tf.runners.sync import rollout  # pylint: disable=import-outside-toplevel
  runner = rollout.RolloutRunner(env, agent, t_max, overlap_learner=overlap_learner)

  def update():
    float(runner.run_update()["Losses/total"])
    return runner.steps_per_update
  return runner, update


def _loop(game, num_envs, num_workers, t_max, network, num_groups=1, overlap_learner=False):
  """(env, agent, runner, update): the training loop on a fresh agent."""
  # Lazy: TensorFlow loads only in a part's subprocess: benchmark.py, whose process never loads it,
  # imports this module.
  from paac_tf.algorithms.paac import agent as agent_lib  # pylint: disable=import-outside-toplevel
  from paac_tf.envs import environment  # pylint: disable=import-outside-toplevel
  from paac_tf.networks import actor_critic  # pylint: disable=import-outside-toplevel
  env = environment.make_environment(game, num_envs, num_workers, 0, num_groups=num_groups)
  try:
    model = actor_critic.build_actor_critic(env.num_actions, env.observation_spec(), network)
    agent = agent_lib.PaacAgent(model, total_updates=10 ** 6)
    runner, update = loop_on(env, agent, t_max, overlap_learner)
  except BaseException:
    env.close()
    raise
  return env, agent, runner, update


# --- parts (each runs in a fresh subprocess) -------------------------------------------
def part_env(game, backend, num_envs, num_workers, seconds):
  # Lazy: TensorFlow loads only in a part's subprocess: benchmark.py, whose process never loads it,
  # imports this module.
  from paac_tf.envs import environment  # pylint: disable=import-outside-toplevel
  env = environment.make_environment(game, num_envs, num_workers, 0, atari_backend=backend)
  env.reset()
  try:
    return {"steps_per_s": timed(random_steps(env), seconds)}
  finally:
    env.close()


def part_act(game, network, jit, num_envs, seconds, t_max=5):
  del game
  return {"obs_per_s": timed(act_calls(paac_agent(network, jit), num_envs, t_max), seconds)}


def part_train(game, network, jit, num_envs, t_max, seconds):
  del game
  agent = paac_agent(network, jit)
  return {"samples_per_s": timed(train_calls(agent, num_envs, t_max), seconds)}


def part_loop(game, num_envs, num_workers, t_max, num_groups, overlap_learner, seconds,
              network="arch_nips"):
  env, _, _, update = _loop(game, num_envs, num_workers, t_max, network, num_groups,
                            overlap_learner)
  try:
    return {"steps_per_s": timed(update, seconds, warmup=5)}
  finally:
    env.close()


def part_interleaved(game, num_envs, num_workers, t_max, num_rounds, seconds,
                     network="arch_nips"):
  """The PAAC loop and the three parts of its serial bound, measured in one process in
  alternating segments (env alone, act alone, train alone, loop; `num_rounds` times,
  `seconds` each) on the same env and agent, through the loop's call paths: a machine
  whose speed drifts affects each round's four rates alike. Returns each round's rates,
  bound and ratio, and their medians."""
  env, agent, runner, update = _loop(game, num_envs, num_workers, t_max, network)
  try:
    step_envs = random_steps(env)
    act = act_calls(agent, num_envs, t_max)
    train = train_calls(agent, num_envs, t_max)
    per_round = []
    for _ in range(int(num_rounds)):
      env.reset()
      rates = {"env": timed(step_envs, seconds), "act": timed(act, seconds),
               "train": timed(train, seconds)}
      runner.start()     # the env was stepped outside the runner: begin from a reset
      rates["loop"] = timed(update, seconds, warmup=2)
      rates["bound"] = 1.0 / (1.0 / rates["env"] + 1.0 / rates["act"] + 1.0 / rates["train"])
      rates["ratio"] = rates["loop"] / rates["bound"]
      per_round.append(rates)
  finally:
    env.close()
  median = {k: float(np.median([r[k] for r in per_round])) for k in per_round[0]}
  return {"rounds": per_round, "median": median,
          "ratio_min": min(r["ratio"] for r in per_round),
          "ratio_max": max(r["ratio"] for r in per_round)}
