r"""Measures environment throughput of both Atari paths with random actions.

  .venv/bin/python tools/env_speed.py --num_envs=32 --steps=500 [--num_workers=8]
      [--num_threads=0] [--game=Pong] [--backends=vector,portable]

Prints agent steps per second (one agent step = 4 emulator frames) of the fast path
(ale-py's C++ AtariVectorEnv, `--num_threads` threads) and of the portable path (gymnasium
envs over `--num_workers` processes) at batch size `--num_envs`, after a short warmup.
Environment stepping only: no network, no learner. Also prints the CPU time spent per
1000 agent steps (this process and its workers), which depends less on other load on
the machine than wall-clock rates do.
"""
import os
import sys
import time

from absl import app
from absl import flags
import psutil

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from paac_tf.envs import factory  # noqa: E402  pylint: disable=wrong-import-position

FLAGS = flags.FLAGS
flags.DEFINE_string("game", "Pong", "Atari game.")
flags.DEFINE_integer("num_envs", 32, "n_e: environments in the batch.")
flags.DEFINE_integer("num_workers", 8, "n_w: worker processes of the portable path.")
flags.DEFINE_integer("num_threads", 0, "C++ threads of the vector path (0: ale-py's default).")
flags.DEFINE_integer("steps", 500, "Timed batched steps per backend.")
flags.DEFINE_integer("warmup", 50, "Untimed batched steps before timing.")
flags.DEFINE_list("backends", ["vector", "portable"], "Atari backends to measure.")
flags.DEFINE_integer("seed", 0, "Seed of the environments and the random actions.")


def _cpu_seconds(pids):
  """User + system CPU seconds used so far by this process (all threads) and `pids`."""
  total = 0.0
  for pid in [os.getpid()] + list(pids):
    times = psutil.Process(pid).cpu_times()
    total += times.user + times.system
  return total


def measure(backend):
  """Returns (agent steps/s, CPU ms per 1000 agent steps, setup seconds) for a backend."""
  import numpy as np  # pylint: disable=import-outside-toplevel
  started = time.perf_counter()
  env = factory.make_batched_env(
      FLAGS.game, FLAGS.num_envs, num_workers=FLAGS.num_workers, seed=FLAGS.seed,
      atari_backend=backend, num_threads=FLAGS.num_threads)
  try:
    env.reset()
    setup_s = time.perf_counter() - started
    rng = np.random.default_rng(FLAGS.seed)
    actions = rng.integers(0, env.num_actions, (FLAGS.warmup + FLAGS.steps, FLAGS.num_envs))
    for i in range(FLAGS.warmup):
      env.step(actions[i])
    pids = getattr(env, "worker_pids", [])
    cpu_started, started = _cpu_seconds(pids), time.perf_counter()
    for i in range(FLAGS.warmup, FLAGS.warmup + FLAGS.steps):
      env.step(actions[i])
    elapsed = time.perf_counter() - started
    cpu = _cpu_seconds(pids) - cpu_started
  finally:
    env.close()
  agent_steps = FLAGS.num_envs * FLAGS.steps
  return agent_steps / elapsed, 1e6 * cpu / agent_steps, setup_s


def main(argv):
  del argv
  print("%s, n_e=%d, %d timed steps after %d warmup steps, %d CPU cores" % (
      FLAGS.game, FLAGS.num_envs, FLAGS.steps, FLAGS.warmup, os.cpu_count() or 0))
  for backend in FLAGS.backends:
    if backend == "vector":
      layout = "num_threads=%s" % (FLAGS.num_threads or "default")
    else:
      layout = "n_w=%d" % FLAGS.num_workers
    rate, cpu_ms, setup_s = measure(backend)
    print("%-8s (%s): %7.0f agent steps/s (%7.0f frames/s), %6.0f CPU ms per 1000 agent "
          "steps; setup %.1f s" % (backend, layout, rate, rate * factory.ATARI_FRAMESKIP,
                                    cpu_ms, setup_s))
    sys.stdout.flush()


if __name__ == "__main__":
  app.run(main)
