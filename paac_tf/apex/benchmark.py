r"""Measures Ape-X's moving parts on this machine: actors writing to Reverb, replay memory
per stored transition, and the learner's batches per second.

  python -m paac_tf.apex.benchmark --gin_file=apex_atari.gin \
      [--num_actors=2] [--actor_seconds=60] [--learner_seconds=60] [--gin_bindings=...]

1. A replay server runs as its own process (`python -m paac_tf.apex.replay`) with the
   run's tables, except that its rate limiter never blocks (actors and learner are
   measured at full speed).
2. `--num_actors` actor processes (`python -m paac_tf.apex.actor`) write for
   `--actor_seconds`: agent steps/s (from their reports), inserts/s and the replay server's
   resident memory per stored transition (RSS growth / items added; no item is evicted
   while the table is below capacity), and the serialized size per transition (a Reverb
   checkpoint of the table: compressed chunks plus item records, / items).
3. The actors stop; the learner's compiled step then runs on prioritized batches from
   that replay, over gRPC as on a separate host, priorities written back, for
   `--learner_seconds`: batches/s.
Prints one summary line per measurement (and JSON with --json_out).
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

if __name__ == "__main__":
  # Hand over to the package's copy of this module (gin registers configurables once).
  from paac_tf.apex import benchmark as _package_module  # pylint: disable=import-self
  _package_module.cli()
  raise SystemExit(0)

from absl import flags
from absl import logging
import gin
import numpy as np

from paac_tf import errors
from paac_tf.apex import common

FLAGS = flags.FLAGS


def _define_flags():
  flags.DEFINE_multi_string("gin_file", [], "The run's gin config(s), e.g. apex_atari.gin.")
  flags.DEFINE_multi_string("gin_bindings", [], "Extra gin bindings.")
  flags.DEFINE_integer("num_actors", 2, "Actor processes.")
  flags.DEFINE_float("actor_seconds", 60.0, "Seconds of actor measurement.")
  flags.DEFINE_float("learner_seconds", 60.0, "Seconds of learner measurement (0: skip).")
  flags.DEFINE_string("json_out", None, "Also write the results as JSON here.")


def _free_port():
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
    sock.bind(("127.0.0.1", 0))
    return sock.getsockname()[1]


def _tree_bytes(path):
  if os.path.isfile(path):
    return os.path.getsize(path)
  return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def _rss(pid):
  import psutil  # pylint: disable=import-outside-toplevel
  return psutil.Process(pid).memory_info().rss


class _Observer:
  """Reads the server's insert count and drains the actors' reports."""

  def __init__(self, client):
    from paac_tf.apex import learner  # pylint: disable=import-outside-toplevel
    from paac_tf.apex import transport  # pylint: disable=import-outside-toplevel
    self.client = client
    self.reports = learner.ActorReports()
    self.table = transport.REPLAY_TABLE

  def read(self):
    self.reports.drain(self.client)
    info = self.client.server_info(timeout=30)[self.table]
    return (time.monotonic(), self.reports.env_steps,
            info.rate_limiter_info.insert_stats.completed, info.current_size)


def run(num_actors, actor_seconds, learner_seconds, gin_files, gin_bindings):
  """Runs the three measurements; returns a dict of results."""
  import reverb  # pylint: disable=import-outside-toplevel
  from paac_tf.apex import launcher  # pylint: disable=import-outside-toplevel
  from paac_tf.apex import transport  # pylint: disable=import-outside-toplevel
  from paac_tf.apex import weights  # pylint: disable=import-outside-toplevel
  env_name = common.env_name_or_configured(None)
  observation_spec, num_actions = common.environment_specs(env_name)
  layout = transport.ReplayLayout(observation_spec)
  results = {"env_name": env_name, "num_actors": num_actors, "layout": repr(layout),
             "cpu_count": os.cpu_count()}
  work_dir = tempfile.mkdtemp(prefix="apex_benchmark_")
  config_file = os.path.join(work_dir, "config.gin")
  with open(config_file, "w") as f:
    f.write(gin.config_str())
  port = _free_port()
  address = "127.0.0.1:%d" % port
  no_limit = ["apex_replay.learning_starts = 1", "apex_replay.error_buffer = 1e15"]
  server = subprocess.Popen(
      [sys.executable, "-m", "paac_tf.apex.replay", "--port=%d" % port,
       "--gin_file=%s" % config_file, "--checkpoint_dir=%s" % os.path.join(work_dir, "ckpt")]
      + ["--gin_bindings=%s" % b for b in no_limit],
      stdout=open(os.path.join(work_dir, "replay.log"), "wb"), stderr=subprocess.STDOUT,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  actors = None
  try:
    client = reverb.Client(address)
    deadline = time.monotonic() + 180
    while True:
      try:
        client.server_info(timeout=2)
        break
      except Exception:  # pylint: disable=broad-except
        if server.poll() is not None or time.monotonic() > deadline:
          raise errors.UserError("The replay server did not start; see %s/replay.log."
                                 % work_dir) from None
        time.sleep(0.5)
    network = weights.build_q_network(num_actions, observation_spec)
    weights.publish(client, network, learner_step=0)
    base_rss = _rss(server.pid)

    actors = launcher.ActorProcesses(work_dir, address, num_actors, config_file, seed=0,
                                     max_restarts=0)
    actors.start()
    observer = _Observer(client)
    # Warm-up: every actor reports (TF started, first weights fetched, writing).
    deadline = time.monotonic() + 300
    while True:
      inserted = observer.read()[2]
      if len(observer.reports.epsilons) >= num_actors and inserted >= 1000:
        break
      actors.check()
      if time.monotonic() > deadline:
        raise errors.UserError("Actors did not start writing; see %s/actors/." % work_dir)
      time.sleep(1.0)
    t0, steps0, inserts0, size0 = observer.read()
    rss0 = _rss(server.pid)
    time.sleep(actor_seconds)
    t1, steps1, inserts1, size1 = observer.read()
    rss1 = _rss(server.pid)
    actors.check()
    dt = t1 - t0
    frameskip = 4 if len(layout.observation_shape) == 3 else 1   # Atari: 4 frames a step
    results.update({
        "actor_agent_steps_per_second": (steps1 - steps0) / dt,
        "actor_frames_per_second": (steps1 - steps0) / dt * frameskip,
        "inserts_per_second": (inserts1 - inserts0) / dt,
        "replay_items": size1,
        "replay_bytes_per_item": (rss1 - rss0) / max(size1 - size0, 1),
        "replay_rss_bytes": rss1, "replay_rss_bytes_before_actors": base_rss,
        "raw_frame_bytes": layout.frame_bytes(),
    })
    actors.stop()
    actors = None
    checkpoint = client.checkpoint()
    size = client.server_info(timeout=30)[transport.REPLAY_TABLE].current_size
    results["replay_checkpoint_bytes_per_item"] = _tree_bytes(checkpoint) / max(size, 1)
    if learner_seconds > 0:
      results.update(_measure_learner(address, layout, network, num_actions, observation_spec,
                                      learner_seconds))
    return results
  finally:
    if actors is not None:
      actors.stop()
    server.kill()   # no shutdown checkpoint: this replay is throw-away
    try:
      server.wait(timeout=30)
    except subprocess.TimeoutExpired:
      server.kill()
      server.wait()


def _measure_learner(address, layout, network, num_actions, observation_spec, seconds):
  import reverb  # pylint: disable=import-outside-toplevel
  from paac_tf.agents.apex import learner_step  # pylint: disable=import-outside-toplevel
  from paac_tf.apex import transport  # pylint: disable=import-outside-toplevel
  from paac_tf.apex import weights  # pylint: disable=import-outside-toplevel
  batch_size = int(common.configured("apex_learner.batch_size", 512))
  target = weights.build_q_network(num_actions, observation_spec)
  step = learner_step.ApexLearnerStep(network, target, layout)
  step.build()
  client = reverb.Client(address)
  dataset = transport.replay_dataset(address, layout, batch_size,
                                     prefetch=int(common.configured("apex_learner.prefetch", 2)))
  iterator = iter(dataset)

  def one_step():
    keys, new_priorities, _ = step.train(next(iterator))
    client.mutate_priorities(transport.REPLAY_TABLE, updates=dict(zip(
        keys.numpy().tolist(), new_priorities.numpy().tolist())))

  for _ in range(3):   # tracing and pipeline warm-up
    one_step()
  count, t0 = 0, time.monotonic()
  while time.monotonic() - t0 < seconds:
    one_step()
    count += 1
  dt = time.monotonic() - t0
  return {"learner_batch_size": batch_size, "learner_batches_per_second": count / dt,
          "learner_samples_per_second": count * batch_size / dt}


def main(argv):
  if len(argv) > 1:
    raise errors.UserError("Unexpected arguments: %s" % " ".join(argv[1:]))
  common.parse_gin(FLAGS.gin_file, FLAGS.gin_bindings)
  results = run(FLAGS.num_actors, FLAGS.actor_seconds, FLAGS.learner_seconds, FLAGS.gin_file,
                FLAGS.gin_bindings)
  for key, value in results.items():
    print("%-34s %s" % (key, "%.1f" % value if isinstance(value, float) else value))
  if FLAGS.json_out:
    with open(FLAGS.json_out, "w") as f:
      json.dump(results, f, indent=2)
  logging.info("Done.")


def cli():
  _define_flags()
  common.run_main(main)
