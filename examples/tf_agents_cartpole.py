"""PAAC on CartPole-v1 with TF-Agents' own parts, as a TF-Agents user would train it.

  TF-Agents' `ParallelPyEnvironment` (one process per environment; `--batched`: its
  `BatchedPyEnvironment`, all in this process) of n_e gymnasium CartPole-v1 environments,
  wrapped in a `TFPyEnvironment`; a `DynamicStepDriver` running `PaacTFAgent`'s collect
  policy for n_e * t_max agent steps a run into a `TFUniformReplayBuffer` of t_max + 1
  steps, and TF-Agents' return metrics; after each run, `agent.train(buffer.gather_all())`
  on the last t_max + 1 steps of every environment ([n_e, t_max + 1]: t_max transitions
  and the bootstrap observation). The buffer is not cleared: each rollout's last step is
  the next one's first, so every transition is trained on once (a run takes one batched
  step more when an episode ended inside it, as the driver does not count the reset step;
  the buffer then drops that run's oldest step).

Hyperparameters are configs/cartpole.gin's (n_e 16, t_max 5, the MLP (64, 64),
learning rate 0.03 annealed to 0 over 500,000 agent steps, entropy 0.01). Stops when the
last 100 episodes average 475 or more, and prints the steps, updates, wall time and
final average return (its last line: JSON).

  PYTHONPATH=. python examples/tf_agents_cartpole.py [--batched] [--max_iterations N]
"""
import functools
import json
import time

from absl import flags

from paac_tf.bookkeeping import startup

# Before TensorFlow and tf-agents load: no C++ start-up lines (cuDNN/cuFFT/cuBLAS
# registration errors, CPU features, TensorRT) unless TF_CPP_MIN_LOG_LEVEL or
# PAAC_TF_VERBOSE_TF says otherwise, and no notice of the old gym package tf-agents imports.
startup.quiet_tensorflow()
startup.import_old_gym_quietly()

# pylint: disable=wrong-import-position
from tf_agents.drivers import dynamic_step_driver  # noqa: E402
from tf_agents.environments import batched_py_environment  # noqa: E402
from tf_agents.environments import parallel_py_environment  # noqa: E402
from tf_agents.environments import tf_py_environment  # noqa: E402
from tf_agents.metrics import tf_metrics  # noqa: E402
from tf_agents.replay_buffers import tf_uniform_replay_buffer  # noqa: E402
from tf_agents.system import system_multiprocessing  # noqa: E402
from tf_agents.utils import common  # noqa: E402

from paac_tf.algorithms.paac import PaacTFAgent  # noqa: E402
from paac_tf.envs import gym_adapter  # noqa: E402

# configs/cartpole.gin's paac.* settings of the optimizer and the loss.
PAAC_SETTINGS = dict(learning_rate=0.03, rmsprop_decay=0.99, rmsprop_epsilon=0.1,
                     entropy_coef=0.01, value_coef=0.25, loss_scale=5.0, max_grad_norm=3.0,
                     gamma=0.99)


def make_cartpole(seed):
  """One CartPole-v1 PyEnvironment (a top-level function: ParallelPyEnvironment pickles
  its constructors)."""
  return gym_adapter.GymnasiumPyEnvironment("CartPole-v1", seed=seed)


def make_env(num_envs, seed, batched):
  constructors = [functools.partial(make_cartpole, seed + i) for i in range(num_envs)]
  if batched:
    py_env = batched_py_environment.BatchedPyEnvironment([c() for c in constructors])
  else:
    py_env = parallel_py_environment.ParallelPyEnvironment(constructors)
  return tf_py_environment.TFPyEnvironment(py_env)


def train(num_envs=16, t_max=5, total_steps=500_000, target=475.0, batched=False, seed=0,
          max_iterations=None, log_seconds=10.0):
  """Trains until the last 100 episodes average `target` (or `total_steps` agent steps, or
  `max_iterations` driver runs); a dict of what it did."""
  started = time.monotonic()
  env = make_env(num_envs, seed, batched)
  try:
    agent = PaacTFAgent(env.time_step_spec(), env.action_spec(),
                        total_updates=total_steps // (num_envs * t_max), t_max=t_max,
                        network="mlp", mlp_units=(64, 64), seed=seed, **PAAC_SETTINGS)
    agent.initialize()
    buffer = tf_uniform_replay_buffer.TFUniformReplayBuffer(
        agent.collect_data_spec, batch_size=num_envs, max_length=t_max + 1)
    average_return = tf_metrics.AverageReturnMetric(batch_size=num_envs, buffer_size=100)
    episodes = tf_metrics.NumberOfEpisodes()
    agent_steps = tf_metrics.EnvironmentSteps()
    observers = [buffer.add_batch, average_return, episodes, agent_steps]
    driver = dynamic_step_driver.DynamicStepDriver(
        env, agent.collect_policy, observers, num_steps=num_envs * t_max)
    # One batched step first: the buffer then holds t_max + 1 steps after the first run.
    first_step = dynamic_step_driver.DynamicStepDriver(
        env, agent.collect_policy, observers, num_steps=num_envs)
    driver.run = common.function(driver.run)
    agent.train = common.function(agent.train)

    time_step, _ = first_step.run(env.reset())
    iterations, last_log, loss = 0, time.monotonic(), float("nan")
    reached = False
    while int(agent_steps.result()) < total_steps:
      time_step, _ = driver.run(time_step)
      loss = float(agent.train(buffer.gather_all()).loss)
      iterations += 1
      reached = (int(episodes.result()) >= 100 and
                 float(average_return.result()) >= target)
      if reached or (max_iterations and iterations >= max_iterations):
        break
      if time.monotonic() - last_log >= log_seconds:
        last_log = time.monotonic()
        print("steps %8d  updates %5d  episodes %5d  average return %6.1f  loss %7.3f  "
              "%4.0f s" % (int(agent_steps.result()), iterations, int(episodes.result()),
                           float(average_return.result()), loss, last_log - started),
              flush=True)
  finally:
    env.close()
  return {"agent_steps": int(agent_steps.result()), "updates": iterations,
          "episodes": int(episodes.result()),
          "average_return": float(average_return.result()), "reached": bool(reached),
          "wall_s": round(time.monotonic() - started, 1), "loss": loss,
          "environment": "BatchedPyEnvironment" if batched else "ParallelPyEnvironment"}


FLAGS = flags.FLAGS


def define_flags():
  """The command line's flags (defined by the command only: importing this file for its
  `train` defines none)."""
  flags.DEFINE_integer("num_envs", 16, "n_e, the environments")
  flags.DEFINE_integer("t_max", 5, "the rollout length")
  flags.DEFINE_integer("total_steps", 500_000, "agent steps at most (the learning rate's "
                       "annealing horizon)")
  flags.DEFINE_float("target", 475.0, "stop once the last 100 episodes average this")
  flags.DEFINE_bool("batched", False, "BatchedPyEnvironment (one process) instead of "
                    "ParallelPyEnvironment (one process per environment)")
  flags.DEFINE_integer("seed", 0, "initial weights; environment i: seed + i")
  flags.DEFINE_integer("max_iterations", None, "stop after this many driver runs")


def main(argv):
  del argv
  result = train(FLAGS.num_envs, FLAGS.t_max, FLAGS.total_steps, FLAGS.target, FLAGS.batched,
                 FLAGS.seed, FLAGS.max_iterations)
  print("%s after %d agent steps (%d updates, %d episodes) in %.1f s: average return of "
        "the last 100 episodes %.1f" % ("Solved" if result["reached"] else "Stopped",
                                        result["agent_steps"], result["updates"],
                                        result["episodes"], result["wall_s"],
                                        result["average_return"]))
  print(json.dumps(result))


if __name__ == "__main__":
  define_flags()
  # TF-Agents' multiprocessing set-up (ParallelPyEnvironment's processes), then absl's
  # app.run(main).
  system_multiprocessing.handle_main(main)
