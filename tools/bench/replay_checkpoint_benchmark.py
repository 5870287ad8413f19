r"""Measures an Ape-X config's replay checkpoint: its size on disk and the seconds to write
and to restore it, with the replay filled to the config's capacity (or to --max_items).

  python -m tools.bench.replay_checkpoint_benchmark --gin_file=apex_atari_small.gin \
      [--max_items=200000] [--json_out=out.json]

The replay server is the launcher's (`replay.start_server`, the config's tables) with a rate
limiter that never blocks. It is filled with real-shaped transitions: `recorded_steps`
batched steps of the config's environment under random actions, recorded once, then
written again and again in passes (each a fresh episode stream: new n-step builder and
`TransitionWriter`, as an actor writes) until the table holds min(capacity, max_items)
items. Then the checkpoint is written (`Client.checkpoint`, timed), its folder measured,
the server stopped and a new one started on that folder (`start_server` restores it; timed
until it answers with the restored size). Below capacity the figures are also given
extrapolated linearly to capacity (bytes, write and restore seconds all grow with the number
of items): `*_at_capacity`. On a loaded machine the seconds are wall clock and vary.
"""
import json
import os
import tempfile
import time

from absl import app
from absl import flags
import numpy as np

from paac_tf import errors
from paac_tf.bookkeeping import config
from tools.apex import benchmark as apex_benchmark
from tools.apex import measurements as apex_measurements

FLAGS = flags.FLAGS


def _define_flags():
  flags.DEFINE_multi_string("gin_file", [], "The Ape-X config(s), e.g. apex_atari_small.gin.")
  flags.DEFINE_multi_string("gin_bindings", [], "Gin bindings applied after the files.")
  flags.DEFINE_integer("max_items", None, "Fill at most this many items (default: capacity).")
  flags.DEFINE_integer("recorded_steps", 200, "Batched environment steps recorded to write.")
  flags.DEFINE_string("json_out", None, "Also write the figures as JSON here.")
  flags.DEFINE_string("work_dir", None, "Checkpoint folder's parent (default: a temporary one).")


def extrapolate(measured, items, capacity):
  """`measured` (a figure that grows linearly with the items) scaled from `items` to
  `capacity`."""
  return measured * float(capacity) / float(items) if items else float("nan")


def _record(env_name, num_envs, num_workers, steps, seed=0):
  """`steps` batched time steps of the env under random actions: [(step_type, reward,
  discount, observation, action)]."""
  # Lazy: the measurement's modules load TensorFlow.
  from paac_tf.envs import environment  # pylint: disable=import-outside-toplevel
  env = environment.make_environment(env_name, num_envs=num_envs, num_workers=num_workers,
                                     seed=seed)
  action_spec = env.action_spec()
  rng = np.random.default_rng(seed)
  recorded = []
  try:
    time_step = env.reset()
    for _ in range(int(steps)):
      if np.issubdtype(np.dtype(action_spec.dtype), np.integer):
        action = rng.integers(int(action_spec.minimum), int(action_spec.maximum) + 1,
                              size=num_envs).astype(action_spec.dtype)
      else:
        action = rng.uniform(action_spec.minimum, action_spec.maximum,
                             size=(num_envs,) + tuple(action_spec.shape)).astype(
                                 action_spec.dtype)
      recorded.append((np.array(time_step.step_type), np.array(time_step.reward),
                       np.array(time_step.discount), np.array(time_step.observation), action))
      time_step = env.step(action)
  finally:
    env.close()
  return recorded, action_spec


def fill(client, layout, recorded, action_spec, items, chunk_length, discount):
  """Writes the recorded steps in passes until the replay table holds `items` items (or
  stops growing: capacity); returns the table's size."""
  # Lazy: the measurement's modules load TensorFlow.
  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import n_step
  from paac_tf.runners.apex import replay_layout
  # pylint: enable=import-outside-toplevel
  num_envs = len(recorded[0][0])
  size = 0
  while size < items:
    builder = n_step.NStepBuilder(num_envs, n=layout.n_step, gamma=discount,
                                  action_shape=action_spec.shape, action_dtype=action_spec.dtype)
    writer = replay_layout.TransitionWriter(client, layout, num_envs, chunk_length=chunk_length)
    for step_type, reward, step_discount, observation, action in recorded:
      ids = writer.observation_ids(step_type)
      completed = builder.step(step_type, reward, step_discount, action, ids=ids)
      writer.write(step_type, observation, completed,
                   np.ones(len(completed.env), np.float64))
      writer.flush(timeout_ms=60_000)
    writer.flush(everything=True, timeout_ms=60_000)
    writer.close()
    before, size = size, client.server_info()[replay_layout.REPLAY_TABLE].current_size
    if size == before:
      break
  return size


def measure(gin_files, gin_bindings=(), max_items=None, recorded_steps=200, work_dir=None):
  """The checkpoint figures of the config (see the module docstring), as a dict."""
  no_limit = ["apex_replay.learning_starts = 1", "apex_replay.error_buffer = 1e15"]
  paths = apex_measurements.parse_gin(gin_files, list(gin_bindings) + no_limit)
  # Lazy: the measurement's modules load TensorFlow.
  # pylint: disable=import-outside-toplevel
  import reverb
  from paac_tf.runners.apex import replay
  from paac_tf.runners.apex import replay_layout
  # pylint: enable=import-outside-toplevel
  env_name = config.env_name_or_configured(None)
  capacity = int(config.configured_or_default(replay.apex_replay, "capacity"))
  items = min(capacity, int(max_items)) if max_items else capacity
  layout = replay.layout_for(env_name)
  recorded, action_spec = _record(env_name, int(apex_measurements.actor_setting("num_envs")),
                                  int(apex_measurements.actor_setting("num_workers")),
                                  recorded_steps)
  work = work_dir or tempfile.mkdtemp(prefix="replay_checkpoint_")
  checkpoint_dir = os.path.join(work, "replay_checkpoint")
  server = replay.start_server(layout, checkpoint_dir=checkpoint_dir)
  try:
    client = reverb.Client("127.0.0.1:%d" % server.port)
    t0 = time.monotonic()
    filled = fill(client, layout, recorded, action_spec, items,
                  int(apex_measurements.actor_setting("chunk_length")),
                  float(apex_measurements.actor_setting("discount")))
    fill_s = time.monotonic() - t0
    t0 = time.monotonic()
    client.checkpoint()
    write_s = time.monotonic() - t0
  finally:
    server.stop()
  size_bytes = apex_benchmark._tree_bytes(checkpoint_dir)  # pylint: disable=protected-access
  t0 = time.monotonic()
  server = replay.start_server(layout, checkpoint_dir=checkpoint_dir)
  try:
    restored = reverb.Client("127.0.0.1:%d" % server.port).server_info(timeout=600)[
        replay_layout.REPLAY_TABLE].current_size
    restore_s = time.monotonic() - t0
  finally:
    server.stop()
  out = {"config": os.path.basename(paths[-1]), "env_name": str(env_name),
         "capacity": capacity, "items": int(filled), "restored_items": int(restored),
         "fill_s": fill_s, "bytes": int(size_bytes),
         "bytes_per_item": size_bytes / filled if filled else float("nan"),
         "write_s": write_s, "restore_s": restore_s}
  if filled < capacity:
    for key in ("bytes", "write_s", "restore_s"):
      out[key + "_at_capacity"] = extrapolate(out[key], filled, capacity)
  return out


def main(argv):
  errors.refuse_arguments(argv)
  if not FLAGS.gin_file:
    raise errors.UserError("Give an Ape-X config with --gin_file, e.g. apex_atari_small.gin.")
  if FLAGS.max_items is not None and FLAGS.max_items < 1:
    raise errors.UserError("--max_items must be >= 1, got %d." % FLAGS.max_items)
  result = measure(FLAGS.gin_file, FLAGS.gin_bindings, FLAGS.max_items, FLAGS.recorded_steps,
                   FLAGS.work_dir)
  for key, value in result.items():
    print("%s: %s" % (key, value))
  if FLAGS.json_out:
    with open(FLAGS.json_out, "w", encoding="utf-8") as f:
      json.dump(result, f, indent=1)


def cli():
  _define_flags()
  app.run(main, flags_parser=errors.parse_flags)


if __name__ == "__main__":
  cli()
