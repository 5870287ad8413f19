r"""Measures environment throughput of both Atari paths with random actions.

  .venv/bin/python tools/env_speed.py --num_envs=32 --steps=500 [--num_workers=8]
      [--num_threads=0] [--game=Pong] [--backends=vector,portable]

Prints agent steps per second (one agent step = 4 emulator frames) of the fast path
(ale-py's C++ AtariVectorEnv, `--num_threads` threads) and of the portable path (gymnasium
envs over `--num_workers` processes) at batch size `--num_envs`, after a short warmup.
Environment stepping only: no network, no learner.
"""
import os
import sys
import time

from absl import app
from absl import flags

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


def measure(backend):
  """Returns (agent steps/s, seconds to build and reset) for one backend."""
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
    started = time.perf_counter()
    for i in range(FLAGS.warmup, FLAGS.warmup + FLAGS.steps):
      env.step(actions[i])
    elapsed = time.perf_counter() - started
  finally:
    env.close()
  return FLAGS.num_envs * FLAGS.steps / elapsed, setup_s


def main(argv):
  del argv
  print("%s, n_e=%d, %d timed steps after %d warmup steps, %d CPU cores" % (
      FLAGS.game, FLAGS.num_envs, FLAGS.steps, FLAGS.warmup, os.cpu_count() or 0))
  for backend in FLAGS.backends:
    if backend == "vector":
      layout = "num_threads=%s" % (FLAGS.num_threads or "default")
    else:
      layout = "n_w=%d" % FLAGS.num_workers
    rate, setup_s = measure(backend)
    print("%-8s (%s): %8.0f agent steps/s  (%8.0f frames/s; setup %.1f s)" % (
        backend, layout, rate, rate * factory.ATARI_FRAMESKIP, setup_s))
    sys.stdout.flush()


if __name__ == "__main__":
  app.run(main)
