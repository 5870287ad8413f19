r"""Measures Ape-X's moving parts on this machine, each beside its own limit.

  python -m tools.apex.benchmark --gin_file=apex_atari.gin [--quick] \
      [--num_actors=2] [--actor_seconds=60] [--learner_seconds=60] [--gin_bindings=...] \
      [--learner_with_actors]
  python -m tools.apex.benchmark --gin_file=apex_atari_small.gin --learner_sweep \
      [--sweep_batch_sizes=32,64,...] [--sweep_networks=arch_nips,arch_nature] \
      [--sweep_precisions=float32,mixed_bfloat16] [--sweep_threads=1,2,2:1]
  python -m tools.bench.benchmark --quick     # runs `measure` as its part 'apex'

--learner_sweep measures only the learner's compiled step alone (`sweep`), on replay items
built from real Atari frames, for every torso x precision x batch size, in one process per
TF thread setting (INTRA or INTRA:INTER threads): batches/s, samples/s and samples per CPU
second (the steadier figure on a shared machine). It chose apex_atari_small.gin's torso,
precision and batch size. Otherwise, in order:

1. Emulator alone: the actors' batched environment (`apex_actor.num_envs`,
   `apex_actor.num_workers`) stepped with random actions in this process: agent steps/s
   on one core (wall clock, and per CPU second). The actor's limit per core.
   The actor's action selection alone: its network's compiled forward pass on a batch
   of `apex_actor.num_envs` observations with the actor's TF threads, in a process of its
   own: observations per CPU second. With the emulator's per CPU second, the actor's
   serial bound 1 / (1/emulator + 1/act): what an actor could do per CPU second if it
   wrote nothing to the replay.
2. A replay server runs as its own process (`python -m paac_tf.commands.apex_replay`) with the
   run's tables, except that its rate limiter never blocks (actors and learner are
   measured at full speed).
   The actor's replay writes alone (n-step transitions, initial priorities,
   `TransitionWriter.write` and its flush), on the actor's environments recorded
   beforehand, in a process of its own writing to that server: agent steps per CPU
   second. With the two above, the actor's full serial bound
   1 / (1/emulator + 1/act + 1/write): the most an actor doing these three in series
   could do per CPU second.
3. `num_actors` actor processes (`python -m paac_tf.commands.apex_actor`) write for
   `actor_seconds`: agent steps/s and frames/s (from their reports; 4 frames a step on
   Atari), inserts/s (the server's count), agent steps per actor CPU second, the replay
   server's resident memory per stored transition (RSS growth / items added; nothing is
   evicted below capacity) and the serialized size per transition (a Reverb checkpoint
   of the table: compressed chunks plus item records, / items), beside what an item would
   take if it copied its frames (window x frame bytes): each frame is stored once.
4. The actors stop (with --learner_with_actors they keep writing, at full speed: this
   replay never blocks them); the learner's loop (its compiled step on prioritized batches
   sampled from that replay over gRPC, as from another host; priorities written back;
   weights published every `apex_learner.publish_interval` steps) runs in this process,
   with the TF threads of `apex_learner.tf_threads` and `tf_inter_op_threads`, for
   `learner_seconds`: batches/s, samples/s (the server's count) and samples per CPU
   second of this process.
5. The same compiled step alone, on one batch kept in memory, for `train_seconds`:
   batches/s and samples per CPU second, the learner's limit.
Ratios: actor / emulator per core (per actor process) and per CPU second, actor / its
serial bound and / its full serial bound per CPU second, learner / train step alone.
Peak RSS (VmHWM) of the replay server, of the largest actor and of this process (learner).
Prints one line per result (and JSON with --json_out). The measurements themselves are in
`apex_measurements.py`; this module runs them in order and derives the ratios.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from absl import app
from absl import flags
from absl import logging
import gin
import numpy as np

from paac_tf import errors
from paac_tf.bookkeeping import config
from tools.apex import measurements as measurements

FLAGS = flags.FLAGS


def _define_flags():
  flags.DEFINE_multi_string("gin_file", [], "The run's gin config(s), e.g. apex_atari.gin.")
  flags.DEFINE_multi_string("gin_bindings", [], "Extra gin bindings.")
  flags.DEFINE_bool("quick", False, "Short timings (about a minute and a half in all).")
  flags.DEFINE_integer("num_actors", None, "Actor processes (default: run_local.num_actors).")
  flags.DEFINE_float("actor_seconds", None, "Seconds of actor measurement.")
  flags.DEFINE_float("learner_seconds", None, "Seconds of learner measurement (0: skip).")
  flags.DEFINE_bool("learner_with_actors", False, "Measure the learner's loop while the "
                    "actors keep writing (at full speed: the benchmark's replay never blocks).")
  flags.DEFINE_bool("learner_sweep", False, "Only the learner's step alone, for each of "
                    "--sweep_networks x --sweep_precisions x --sweep_batch_sizes, once per "
                    "--sweep_threads setting.")
  flags.DEFINE_list("sweep_batch_sizes", ["32", "64", "128", "256", "512"], "Batch sizes.")
  flags.DEFINE_list("sweep_networks", ["arch_nips", "arch_nature"], "Torsos.")
  flags.DEFINE_list("sweep_precisions", ["float32", "mixed_bfloat16"], "Precisions.")
  flags.DEFINE_list("sweep_threads", ["1"], "TF threads of the learner, INTRA or INTRA:INTER "
                    "(intra-op, inter-op), one process each.")
  flags.DEFINE_float("sweep_seconds", 2.0, "Seconds per combination and round.")
  flags.DEFINE_integer("sweep_rounds", 2, "Rounds (medians are reported).")
  flags.DEFINE_string("json_out", None, "Also write the results as JSON here.")


def _free_port():
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
    sock.bind(("127.0.0.1", 0))
    return sock.getsockname()[1]


def _tree_bytes(path):
  if os.path.isfile(path):
    return os.path.getsize(path)
  return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


# Seconds of each measurement: quick (the tools benchmark's --quick) and full.
QUICK = {"emulator_seconds": 5.0, "act_seconds": 5.0, "write_seconds": 5.0,
         "actor_seconds": 15.0, "learner_seconds": 15.0, "train_seconds": 8.0}
FULL = {"emulator_seconds": 20.0, "act_seconds": 20.0, "write_seconds": 20.0,
        "actor_seconds": 60.0, "learner_seconds": 60.0, "train_seconds": 30.0}


def measure(quick=True, game=None, gin_file="apex_atari.gin", gin_bindings=(),
            num_actors=None, learner_with_actors=False, **seconds):
  """Parses the run's gin config, runs every measurement; returns a flat dict of results.

  Args:
    quick: QUICK timings (~1.5 minutes with start-up on 2 cores) rather than FULL.
    game: environment (overrides train_eval.env_name of `gin_file`).
    gin_file, gin_bindings: the Ape-X config measured: a file or a list of files (a bare
      name is looked up in configs/), and extra bindings.
    num_actors: actor processes (default: run_local.num_actors of the config, else
      run_local's default).
    learner_with_actors: measure the learner's loop (4.) while the actors keep writing.
    **seconds: overrides of QUICK / FULL (emulator_seconds, actor_seconds, ...).
  """
  bindings = list(gin_bindings)
  if game:
    bindings.append("train_eval.env_name = %s" % json.dumps(str(game)))
  gin_files = [gin_file] if isinstance(gin_file, str) else list(gin_file)
  measurements.parse_gin(gin_files, bindings)
  durations = dict(QUICK if quick else FULL)
  unknown = set(seconds) - set(durations)
  if unknown:
    raise TypeError("Unknown measurement durations: %s" % ", ".join(sorted(unknown)))
  durations.update({k: float(v) for k, v in seconds.items()})
  if num_actors is None:
    # Lazy: TensorFlow and the Ape-X modules load only when a measurement runs (--help and flag
    # errors stay fast).
    from paac_tf.runners.apex import launcher  # pylint: disable=import-outside-toplevel
    num_actors = int(config.configured_or_default(launcher.run_local, "num_actors"))
  results = run(int(num_actors), learner_with_actors=learner_with_actors, **durations)
  results.update({"quick": bool(quick), "gin_files": gin_files})
  return results


def _thread_setting(text):
  """'2' -> (2, None); '2:1' -> (2, 1)."""
  intra, _, inter = str(text).partition(":")
  return int(intra), (int(inter) if inter else None)


def sweep(gin_file="apex_atari.gin", gin_bindings=(), batch_sizes=(32, 64, 128, 256, 512),
          networks=("arch_nips", "arch_nature"), precisions=("float32", "mixed_bfloat16"),
          thread_settings=("1",), seconds=2.0, rounds=2, game=None):
  """The learner's step alone (apex_measurements.learner_step_rates) for every torso x
  precision x batch size, in one process per TF thread setting ('INTRA' or 'INTRA:INTER');
  returns a list of result rows."""
  gin_files = [gin_file] if isinstance(gin_file, str) else list(gin_file)
  measurements.parse_gin(gin_files, list(gin_bindings))
  work_dir = tempfile.mkdtemp(prefix="apex_sweep_")
  try:
    config_file = os.path.join(work_dir, "config.gin")
    with open(config_file, "w") as f:
      f.write(gin.config_str())
    rows = []
    for setting in thread_settings:
      intra, inter = _thread_setting(setting)
      rows.extend(measurements.learner_step_rates(
          config_file, work_dir, batch_sizes, networks, precisions, intra, inter,
          seconds=seconds, rounds=rounds, game=game))
    return rows
  finally:
    shutil.rmtree(work_dir, ignore_errors=True)


def _ratios(results):
  """The measured loops over their limits (added to `results`)."""
  ratios = {}
  emulator = results.get("emulator_agent_steps_per_second")
  actors = results.get("actor_agent_steps_per_second")
  if emulator and actors:
    ratios["actor_vs_emulator_per_core"] = actors / results["num_actors"] / emulator
  if results.get("emulator_agent_steps_per_cpu_second") and results.get(
      "actor_agent_steps_per_cpu_second"):
    ratios["actor_vs_emulator_per_cpu_second"] = (
        results["actor_agent_steps_per_cpu_second"] /
        results["emulator_agent_steps_per_cpu_second"])
  act = results.get("act_observations_per_cpu_second")
  emulator_cpu = results.get("emulator_agent_steps_per_cpu_second")
  if act and emulator_cpu:
    # What an actor could do per CPU second if it only stepped its environments and
    # selected actions, one after the other (no replay writes, priorities or n-step work).
    bound = 1.0 / (1.0 / emulator_cpu + 1.0 / act)
    ratios["actor_serial_bound_per_cpu_second"] = bound
    ratios["actor_serial_bound_vs_emulator"] = bound / emulator_cpu
    if results.get("actor_agent_steps_per_cpu_second"):
      ratios["actor_vs_serial_bound_per_cpu_second"] = (
          results["actor_agent_steps_per_cpu_second"] / bound)
    write = results.get("write_agent_steps_per_cpu_second")
    if write:
      # ... and if it also wrote its transitions (n-step, priorities, Reverb) in series.
      full = 1.0 / (1.0 / emulator_cpu + 1.0 / act + 1.0 / write)
      ratios["actor_full_bound_per_cpu_second"] = full
      ratios["actor_full_bound_vs_emulator"] = full / emulator_cpu
      if results.get("actor_agent_steps_per_cpu_second"):
        ratios["actor_vs_full_bound_per_cpu_second"] = (
            results["actor_agent_steps_per_cpu_second"] / full)
  if results.get("learner_batches_per_second") and results.get(
      "train_step_batches_per_second"):
    ratios["learner_vs_train_step"] = (results["learner_batches_per_second"] /
                                       results["train_step_batches_per_second"])
  return ratios


class _Observer:
  """Reads the server's insert count and drains the actors' reports."""

  def __init__(self, client):
    # Lazy: TensorFlow and the Ape-X modules load only when a measurement runs (--help and flag
    # errors stay fast).
    from paac_tf.runners.apex import actor_reports  # pylint: disable=import-outside-toplevel
    from paac_tf.runners.apex import replay_layout  # pylint: disable=import-outside-toplevel
    self.client = client
    self.reports = actor_reports.ActorReports()
    self.table = replay_layout.REPLAY_TABLE

  def read(self):
    self.reports.drain(self.client)
    info = self.client.server_info(timeout=30)[self.table]
    return (time.monotonic(), self.reports.agent_steps,
            info.rate_limiter_info.insert_stats.completed, info.current_size)


def run(num_actors, actor_seconds, learner_seconds, train_seconds=30.0, emulator_seconds=20.0,
        act_seconds=20.0, write_seconds=20.0, learner_with_actors=False):
  """Runs the measurements under the parsed gin config; returns a dict of results."""
  # Lazy: TensorFlow and the Ape-X modules load only when a measurement runs (--help and flag errors
  # stay fast).
  from paac_tf.bookkeeping import threads  # pylint: disable=import-outside-toplevel
  # The learner runs in this process: its TF threads as the config sets them (before TF
  # starts; in a process where TF already runs they stay as they are, reported as None).
  pools = threads.set_tf_threads(measurements.learner_setting("tf_threads"),
                                 measurements.learner_setting("tf_inter_op_threads"))
  # Lazy: (as above) TensorFlow's modules, after the learner's TF threads are set.
  import reverb  # pylint: disable=import-outside-toplevel
  from paac_tf.networks import dueling_q  # pylint: disable=import-outside-toplevel
  from paac_tf.envs import batched  # pylint: disable=import-outside-toplevel
  from paac_tf.envs import environment  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import family  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import launcher  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import replay_layout  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import weights  # pylint: disable=import-outside-toplevel
  env_name = config.env_name_or_configured(None)
  observation_spec, action_spec = environment.specs(env_name)
  num_actions = batched.num_actions(action_spec)
  layout = replay_layout.ReplayLayout(observation_spec)
  frameskip = 4 if len(layout.observation_shape) == 3 else 1   # Atari: 4 frames a step
  item_bytes = {k: int(np.prod(v.shape)) * v.dtype.size
                for k, v in layout.item_signature().items()}
  results = {"env_name": env_name, "num_actors": num_actors, "layout": repr(layout),
             "cpu_count": os.cpu_count(), "frames_per_agent_step": frameskip,
             "raw_frame_bytes": layout.frame_bytes(),
             "item_bytes_if_frames_copied": sum(item_bytes.values()),
             "learner_tf_threads": list(pools) if pools else None,
             "actor_tf_threads": measurements.actor_setting("tf_threads"),
             "learner_with_actors": bool(learner_with_actors)}
  if emulator_seconds > 0:
    results.update(measurements.emulator(env_name, emulator_seconds))
  work_dir = tempfile.mkdtemp(prefix="apex_benchmark_")
  config_file = os.path.join(work_dir, "config.gin")
  with open(config_file, "w") as f:
    f.write(gin.config_str())
  if act_seconds > 0:
    results.update(measurements.act(config_file, act_seconds, work_dir))
  port = _free_port()
  address = "127.0.0.1:%d" % port
  no_limit = ["apex_replay.learning_starts = 1", "apex_replay.error_buffer = 1e15"]
  server = subprocess.Popen(
      [sys.executable, "-m", "paac_tf.commands.apex_replay", "--port=%d" % port,
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
          raise errors.UserError("The replay server did not start: %s" % measurements.tail(
              os.path.join(work_dir, "replay.log"))) from None
        time.sleep(0.5)
    if write_seconds > 0:
      results.update(measurements.write(config_file, address, write_seconds, work_dir))
    network = dueling_q.build_q_network(num_actions, observation_spec)
    results["precision"] = network.precision   # apex_precision, resolved
    weights.publish(client, network, learner_step=0)
    base_rss = measurements.rss(server.pid)

    actors = launcher.ActorProcesses(work_dir, address, num_actors, config_file, seed=0,
                                     algorithm=family.configured(), max_restarts=0)
    actors.start()
    observer = _Observer(client)
    # Warm-up: every actor reports (TF started, first weights fetched, writing).
    deadline = time.monotonic() + 300
    while True:
      inserted = observer.read()[2]
      if len(observer.reports.epsilons) >= num_actors and inserted >= 1000:
        break
      actors.check()
      if time.monotonic() > deadline or any(p.poll() is not None for p in actors.processes):
        raise errors.UserError("Actors did not start writing: %s"
                               % measurements.tail(actors.log_path(0)))
      time.sleep(1.0)
    t0, steps0, inserts0, size0 = observer.read()
    rss0, cpu0 = measurements.rss(server.pid), measurements.cpu_seconds(actors.pids())
    time.sleep(actor_seconds)
    t1, steps1, inserts1, size1 = observer.read()
    rss1, cpu1 = measurements.rss(server.pid), measurements.cpu_seconds(actors.pids())
    actor_peak = max(measurements.peak_rss(pid) for pid in actors.pids())
    actors.check()
    dt = t1 - t0
    results.update({
        "actor_agent_steps_per_second": (steps1 - steps0) / dt,
        "actor_frames_per_second": (steps1 - steps0) / dt * frameskip,
        "actor_agent_steps_per_cpu_second": (steps1 - steps0) / max(cpu1 - cpu0, 1e-9),
        "actor_cpu_cores_used": (cpu1 - cpu0) / dt,
        "inserts_per_second": (inserts1 - inserts0) / dt,
        "replay_items": size1,
        "replay_rss_bytes_per_item": (rss1 - rss0) / max(size1 - size0, 1),
        "replay_rss_bytes": rss1, "replay_rss_bytes_before_actors": base_rss,
        "actor_peak_rss_bytes": actor_peak,
    })
    if learner_with_actors and (learner_seconds > 0 or train_seconds > 0):
      cpu0, steps0 = measurements.cpu_seconds(actors.pids()), observer.read()[1]
      t0 = time.monotonic()
      results.update(measurements.learner(address, layout, network, num_actions,
                                          observation_spec, learner_seconds, train_seconds))
      dt = time.monotonic() - t0
      results["learner_phase_actor_cpu_cores_used"] = (
          measurements.cpu_seconds(actors.pids()) - cpu0) / dt
      results["learner_phase_actor_agent_steps_per_second"] = (
          observer.read()[1] - steps0) / dt
      actors.check()
    actors.stop()
    actors = None
    checkpoint = client.checkpoint()
    size = client.server_info(timeout=30)[replay_layout.REPLAY_TABLE].current_size
    results["replay_checkpoint_bytes_per_item"] = _tree_bytes(checkpoint) / max(size, 1)
    if not learner_with_actors and (learner_seconds > 0 or train_seconds > 0):
      results.update(measurements.learner(address, layout, network, num_actions,
                                          observation_spec, learner_seconds, train_seconds))
    results["replay_peak_rss_bytes"] = measurements.peak_rss(server.pid)
    results["learner_peak_rss_bytes"] = measurements.own_peak_rss()
    results.update(_ratios(results))
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
    shutil.rmtree(work_dir, ignore_errors=True)


def main(argv):
  errors.refuse_arguments(argv)
  if not FLAGS.gin_file:
    raise errors.UserError("Give the run's config, e.g. --gin_file=apex_atari.gin.")
  if FLAGS.learner_sweep:
    rows = sweep(FLAGS.gin_file, FLAGS.gin_bindings,
                 batch_sizes=[int(b) for b in FLAGS.sweep_batch_sizes],
                 networks=FLAGS.sweep_networks, precisions=FLAGS.sweep_precisions,
                 thread_settings=FLAGS.sweep_threads, seconds=FLAGS.sweep_seconds,
                 rounds=FLAGS.sweep_rounds)
    print("%-11s %-14s %6s %7s %9s %10s %14s %9s" % (
        "network", "precision", "batch", "threads", "batches/s", "samples/s",
        "samples/CPU s", "CPU cores"))
    for row in rows:
      print("%-11s %-14s %6d %3s:%-3s %9.2f %10.0f %14.0f %9.2f" % (
          row["network"], row["precision"], row["batch_size"], row["intra_op_threads"],
          row["inter_op_threads"], row["batches_per_second"], row["samples_per_second"],
          row["samples_per_cpu_second"], row["cpu_cores_used"]))
    if FLAGS.json_out:
      with open(FLAGS.json_out, "w") as f:
        json.dump(rows, f, indent=2)
    return
  overrides = {k: getattr(FLAGS, k) for k in ("actor_seconds", "learner_seconds")
               if getattr(FLAGS, k) is not None}
  results = measure(FLAGS.quick, gin_file=FLAGS.gin_file, gin_bindings=FLAGS.gin_bindings,
                    num_actors=FLAGS.num_actors, learner_with_actors=FLAGS.learner_with_actors,
                    **overrides)
  for key, value in results.items():
    print("%-38s %s" % (key, "%.2f" % value if isinstance(value, float) else value))
  if FLAGS.json_out:
    with open(FLAGS.json_out, "w") as f:
      json.dump(results, f, indent=2)
  logging.info("Done.")


def cli():
  _define_flags()
  app.run(main, flags_parser=errors.parse_flags)


if __name__ == "__main__":
  cli()
