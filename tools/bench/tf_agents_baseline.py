"""The TF-Agents baseline: PAAC's update fed the way a TensorFlow user would build it from
TF-Agents' own parts, measured beside this project's loop (the benchmark's part
'tf_agents').

The baseline, after TF-Agents' PPO example (`agents/ppo/examples/v2`):
  (a) environments: `ParallelPyEnvironment` of n_e `GymnasiumPyEnvironment`s (this
      project's gymnasium adapter) over gymnasium's `ALE/<Game>-v5` with the
      preprocessing the portable backend builds (`atari_portable.make_preprocessed_atari_env`:
      AtariPreprocessing, frame stack of 4, NHWC), one process per environment;
  (b) the PAAC update: `DynamicStepDriver` over `TFPyEnvironment(ParallelPyEnvironment)`
      with a TF policy around the training loop's compiled action selection (the value of
      each state in its policy info), its `run` compiled (`common.function`), n_e * t_max
      steps a run into a `TFUniformReplayBuffer` of t_max steps (the observer that
      accumulates the rollout); then `gather_all`, the value of the last state (the loop's
      bootstrap forward pass), the loop's train step (`update.train_step`), `clear`.
Both sides train the same PAAC parts, built as the training loop builds them
(`benchmark_parts.PaacCalls`: the model from `Paac.make_model`, the optimizer from
`make_optimizer`, `update.train_step` compiled). Measured in one process, in alternating
segments over several rounds, beside this project's environments (the vector env and the
portable worker pool, n_w workers) and its loop (Algorithm 1 on the vector env,
`benchmark_parts.Loop`): each round's ratios, and their medians.
The baseline's rate counts every agent step its environments took (a driver run takes
one batched step more when an environment's episode ended inside it).
"""
# TF-Agents and TensorFlow are imported where used: the benchmark imports this module
# only to run its part. pylint: disable=import-outside-toplevel
import functools
import time

import numpy as np

from tools.bench import benchmark_parts


def baseline_env_constructor(gymnasium_id, seed):
  """One environment of the baseline (a top-level function: its partials pickle)."""
  # Lazy: TF-Agents and TensorFlow load only in the 'tf_agents' part's process (see the note above
  # the imports).
  from paac_tf.envs import atari_portable
  from paac_tf.envs import gym_adapter
  return gym_adapter.GymnasiumPyEnvironment(
      atari_portable.make_preprocessed_atari_env(gymnasium_id), seed=seed)


def parallel_env(game, num_envs, seed=0):
  """TF-Agents' `ParallelPyEnvironment` over `num_envs` baseline environments of `game`,
  started in parallel (one process each)."""
  # Lazy: TF-Agents and TensorFlow load only in the 'tf_agents' part's process (see the note above
  # the imports).
  from tf_agents.environments import parallel_py_environment
  from tf_agents.system.default import multiprocessing_core
  from paac_tf.envs import names
  if not multiprocessing_core.initialized():   # what TF-Agents' `handle_main` would do
    multiprocessing_core.enable_interactive_mode()
  gymnasium_id = names.check_env_name(game).gymnasium_id
  constructors = [functools.partial(baseline_env_constructor, gymnasium_id, seed + i)
                  for i in range(int(num_envs))]
  return parallel_py_environment.ParallelPyEnvironment(constructors, start_serially=False)


class DriverLoop:
  """The PAAC update through TF-Agents' driver and replay buffer (see the module
  docstring), on `calls` (a `benchmark_parts.PaacCalls`). `update()` collects one rollout,
  trains on it, returns its agent steps."""

  def __init__(self, py_env, calls, t_max):
    # Lazy: TF-Agents and TensorFlow load only in the 'tf_agents' part's process (see the note above
    # the imports).
    import tensorflow as tf
    from tf_agents.drivers import dynamic_step_driver
    from tf_agents.environments import tf_py_environment
    from tf_agents.replay_buffers import tf_uniform_replay_buffer
    from tf_agents.utils import common
    self.env = tf_py_environment.TFPyEnvironment(py_env)
    self.calls = calls
    self.train_step = calls.train_step   # the training loop's compiled update
    self.t_max = int(t_max)
    self.num_envs = int(self.env.batch_size)
    self.policy = _paac_policy(self.env, calls.act)
    self.buffer = tf_uniform_replay_buffer.TFUniformReplayBuffer(
        self.policy.trajectory_spec, batch_size=self.num_envs, max_length=self.t_max)
    self.agent_steps = tf.Variable(0, dtype=tf.int64)
    count = lambda traj: self.agent_steps.assign_add(tf.size(traj.step_type, tf.int64))
    self.driver = dynamic_step_driver.DynamicStepDriver(
        self.env, self.policy, observers=[self.buffer.add_batch, count],
        num_steps=self.num_envs * self.t_max)
    self.driver.run = common.function(self.driver.run, autograph=False)
    self.train = common.function(self._train, autograph=False)
    self.time_step = None

  def _train(self, final_observation):
    """gather_all -> the train step's time-major arguments -> the loop's train step."""
    # Lazy: TF-Agents and TensorFlow load only in the 'tf_agents' part's process (see the note above
    # the imports).
    import tensorflow as tf
    from paac_tf.algorithms.paac import tf_agent
    # [B, T, ...] -> [T, B, ...]; T = t_max, the buffer's length (a run takes at least
    # t_max batched steps; the buffer keeps the last t_max), given as a static shape.
    traj = tf_agent.to_time_major(self.buffer.gather_all(), self.t_max)
    observations, actions, rollout = tf_agent.rollout_arrays(traj)
    bootstrap = self.calls.bootstrap_values(final_observation)
    values = tf.concat([traj.policy_info, bootstrap[None]], axis=0)
    return self.train_step(observations, tf.cast(actions, tf.int64), rollout, values)

  def restart(self):
    """Resets the environments: the next update starts new episodes."""
    self.time_step = self.env.reset()

  def update(self):
    if self.time_step is None:
      self.restart()
    before = int(self.agent_steps.numpy())
    self.time_step, _ = self.driver.run(self.time_step)
    self.train(self.time_step.observation).numpy()
    self.buffer.clear()
    return int(self.agent_steps.numpy()) - before


def _paac_policy(tf_env, act):
  """A TF-Agents TFPolicy that acts with `act` (observation -> (actions, values)) and
  emits V(s) as its policy info."""
  # Lazy: TF-Agents and TensorFlow load only in the 'tf_agents' part's process (see the note above
  # the imports).
  import tensorflow as tf
  from tf_agents.policies import tf_policy
  from tf_agents.trajectories import policy_step

  class PaacPolicy(tf_policy.TFPolicy):

    def _action(self, time_step, policy_state, seed):
      del seed
      actions, values = act(time_step.observation)
      return policy_step.PolicyStep(tf.cast(actions, self.action_spec.dtype), policy_state,
                                    values)

    def _distribution(self, time_step, policy_state):
      raise NotImplementedError("PaacPolicy only acts.")

  return PaacPolicy(tf_env.time_step_spec(), tf_env.action_spec(),
                    info_spec=tf.TensorSpec((), tf.float32, name="value"))


def part_tf_agents(game, num_envs, num_workers, t_max, num_rounds, seconds,
                   network="arch_nips"):
  """The baseline and this project's environments and loop, in alternating segments of
  `seconds` for `num_rounds` rounds (see the module docstring): each round's rates
  (agent steps/s) and ratios, and their medians."""
  # Lazy: TF-Agents and TensorFlow load only in the 'tf_agents' part's process (see the note above
  # the imports).
  from paac_tf.envs import environment
  started = time.monotonic()
  # The baseline's processes first, forked before TensorFlow runs anything.
  baseline_env = parallel_env(game, num_envs)
  envs = [baseline_env]
  try:
    startup_s = time.monotonic() - started
    vector = environment.make_environment(game, num_envs, num_workers, 0)
    envs.append(vector)
    portable = environment.make_environment(game, num_envs, num_workers, 0,
                                            atari_backend="portable")
    envs.append(portable)
    settings = benchmark_parts.paac_settings(network, num_envs=num_envs,
                                             num_workers=num_workers, t_max=t_max)
    calls = benchmark_parts.PaacCalls(settings, vector.observation_spec(),
                                      vector.action_spec())
    driver = DriverLoop(baseline_env, calls, t_max)
    loop = benchmark_parts.Loop(vector, calls, t_max)
    for env in envs:
      env.reset()
    # name: (what to do before its segment, the segment's callable)
    segments = {"baseline_env": (None, benchmark_parts.random_steps(baseline_env)),
                "vector_env": (None, benchmark_parts.random_steps(vector)),
                "portable_env": (None, benchmark_parts.random_steps(portable)),
                "baseline_loop": (driver.restart, driver.update),
                "loop": (loop.start, loop.update)}
    per_round = []
    for _ in range(int(num_rounds)):
      rates = {}
      for name, (before, segment) in segments.items():
        if before is not None:   # the env was stepped outside the loop: begin from a reset
          before()
        rates[name] = benchmark_parts.timed(segment, seconds, warmup=2)
      rates["loop_vs_baseline_loop"] = rates["loop"] / rates["baseline_loop"]
      rates["vector_env_vs_baseline_env"] = rates["vector_env"] / rates["baseline_env"]
      rates["portable_env_vs_baseline_env"] = rates["portable_env"] / rates["baseline_env"]
      per_round.append(rates)
  finally:
    for env in reversed(envs):
      env.close()
  median = {k: float(np.median([r[k] for r in per_round])) for k in per_round[0]}
  return {"rounds": per_round, "median": median, "baseline_startup_s": startup_s}
