"""The single measurements of the Ape-X benchmark (`apex_benchmark.py` runs them and says
what each one means): the actors' emulator alone; the actor's action selection and its
replay writes alone, each in a process of its own; the learner's loop on a real replay and
its compiled step alone; the compiled step for several torsos, precisions and batch sizes
with given TF threads (`learner_step_rates`, a process of its own). Also the process
statistics they read (CPU seconds, resident memory) and the configuration's actor and
learner settings.
"""
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np
import psutil

from paac_tf import errors
from paac_tf.bookkeeping import config


def parse_gin(gin_files, gin_bindings):
  """Registers the project's configurables (as every entry point does), then parses."""
  # Lazy: the configurables' modules load TensorFlow; only the measurements need it.
  from paac_tf.runners import train_eval  # pylint: disable=import-outside-toplevel
  train_eval.load_configurables()
  return config.parse(gin_files, gin_bindings)


def actor_setting(parameter):
  """`apex_actor`'s `parameter` under the parsed config: bound, else its default."""
  # Lazy: the configurables' modules load TensorFlow; only the measurements need it.
  from paac_tf.runners.apex import actor  # pylint: disable=import-outside-toplevel
  return config.configured_or_default(actor.apex_actor, parameter)


def learner_setting(parameter):
  """`apex_learner`'s `parameter` under the parsed config: bound, else its default."""
  # Lazy: the configurables' modules load TensorFlow; only the measurements need it.
  from paac_tf.runners.apex import learner  # pylint: disable=import-outside-toplevel
  return config.configured_or_default(learner.apex_learner, parameter)


def grouped(x, digits=0):
  """A table cell: `x` with thousands separators and `digits` decimals; '-' for None."""
  return "-" if x is None else ("{:,.%df}" % digits).format(x)


def rss(pid):
  """Resident memory of a live process, bytes."""
  return psutil.Process(pid).memory_info().rss


def peak_rss(pid):
  """Peak resident memory (VmHWM) of a live process, bytes; its current RSS if unknown."""
  try:
    with open("/proc/%d/status" % pid) as f:
      for line in f:
        if line.startswith("VmHWM:"):
          return int(line.split()[1]) * 1024
  except OSError:
    pass
  return rss(pid)


def cpu_seconds(pids):
  """User + system CPU seconds of these processes and their children so far."""
  total = 0.0
  for pid in pids:
    try:
      proc = psutil.Process(pid)
      for p in [proc] + proc.children(recursive=True):
        times = p.cpu_times()
        total += times.user + times.system
    except psutil.Error:
      pass
  return total


def own_peak_rss():
  """Peak resident memory of this process, bytes."""
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def tail(path, lines=5):
  """The last `lines` non-empty lines of a log file, on one line."""
  try:
    with open(path, "rb") as f:
      text = f.read()[-4000:].decode("utf-8", "replace")
  except OSError:
    return "(no log %s)" % path
  return " | ".join(line.strip() for line in text.splitlines()[-lines:] if line.strip())


def emulator(env_name, seconds):
  """The actors' batched environment alone, random actions: agent steps/s on one core."""
  # Lazy: this runs in the measurement's own process, which sets TensorFlow's threads first; the
  # benchmark's driver does not load TensorFlow.
  from paac_tf.envs import environment  # pylint: disable=import-outside-toplevel
  num_envs = int(actor_setting("num_envs"))
  num_workers = int(actor_setting("num_workers"))
  env = environment.make_environment(env_name, num_envs=num_envs, num_workers=num_workers,
                                     seed=0)
  rng = np.random.default_rng(0)
  try:
    env.reset()
    for _ in range(5):
      env.step(rng.integers(0, env.num_actions, size=num_envs))
    pids = [os.getpid()]
    steps, cpu0, t0 = 0, cpu_seconds(pids), time.monotonic()
    while time.monotonic() - t0 < seconds:
      env.step(rng.integers(0, env.num_actions, size=num_envs))
      steps += num_envs
    dt, cpu = time.monotonic() - t0, cpu_seconds(pids) - cpu0
  finally:
    env.close()
  return {"emulator_num_envs": num_envs, "emulator_num_workers": num_workers,
          "emulator_agent_steps_per_second": steps / dt,
          "emulator_agent_steps_per_cpu_second": steps / max(cpu, 1e-9)}


def act(config_file, seconds, work_dir):
  """The actor's action selection alone (its network's compiled forward pass on a batch of
  `apex_actor.num_envs` observations, with the actor's TF threads), in a process of its
  own as the thread setting must come before TF starts: observations/s and per CPU
  second."""
  return _in_subprocess("act_worker", [config_file, str(seconds)], work_dir, "act",
                        "the actor's action selection")


def write(config_file, address, seconds, work_dir):
  """The actor's replay writes alone, in a process of its own: agent steps (one frame and
  about one transition each) per CPU second (process CPU, so Reverb's compression and
  gRPC threads count)."""
  return _in_subprocess("write_worker", [config_file, address, str(seconds)], work_dir,
                        "write", "the actor's replay writes")


def _in_subprocess(worker, args, work_dir, name, what):
  """Runs `<worker>(*args, out)` of this module in a fresh Python; returns the JSON it
  wrote."""
  out = os.path.join(work_dir, name + ".json")
  code = ("import sys; from tools.apex import measurements as apex_measurements; "
          "apex_measurements.%s(*sys.argv[1:])" % worker)
  log_path = os.path.join(work_dir, name + ".log")
  with open(log_path, "wb") as log:
    proc = subprocess.run([sys.executable, "-c", code] + list(args) + [out],
                          stdout=log, stderr=subprocess.STDOUT, check=False,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  if proc.returncode != 0:
    raise errors.UserError("Measuring %s failed: %s" % (what, tail(log_path)))
  with open(out) as f:
    return json.load(f)


def act_worker(config_file, seconds, out):
  seconds = float(seconds)
  # Lazy: this runs in the measurement's own process, which sets TensorFlow's threads first; the
  # benchmark's driver does not load TensorFlow.
  from paac_tf.networks import dueling_q  # pylint: disable=import-outside-toplevel
  from paac_tf.envs import batched  # pylint: disable=import-outside-toplevel
  from paac_tf.envs import environment  # pylint: disable=import-outside-toplevel
  from paac_tf.bookkeeping import threads  # pylint: disable=import-outside-toplevel
  parse_gin([config_file], [])
  threads.set_tf_threads(int(actor_setting("tf_threads")))
  # Lazy: TensorFlow after its threads are set (above).
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  num_envs = int(actor_setting("num_envs"))
  observation_spec, action_spec = environment.specs(config.env_name_or_configured(None))
  num_actions = batched.num_actions(action_spec)
  network = dueling_q.build_q_network(num_actions, observation_spec)
  q_function = tf.function(network).get_concrete_function(
      tf.TensorSpec([num_envs, *observation_spec.shape], observation_spec.dtype))
  rng = np.random.default_rng(0)
  dtype = np.dtype(getattr(observation_spec.dtype, "as_numpy_dtype", observation_spec.dtype))
  high = 256 if dtype == np.uint8 else 2
  batch = rng.integers(0, high, size=(num_envs, *observation_spec.shape)).astype(dtype)
  for _ in range(5):
    q_function(batch).numpy()
  count, t0, cpu0 = 0, time.monotonic(), time.process_time()
  while time.monotonic() - t0 < seconds or count < 2:
    q_function(batch).numpy()
    count += num_envs
  dt, cpu = time.monotonic() - t0, time.process_time() - cpu0
  with open(out, "w") as f:
    json.dump({"act_batch_size": num_envs, "act_observations_per_second": count / dt,
               "act_observations_per_cpu_second": count / max(cpu, 1e-9)}, f)


def write_worker(config_file, address, seconds, out, recorded_steps=200):
  """What the actor does per batched step besides stepping and acting (n-step transitions,
  initial priorities, `TransitionWriter.write` and its flush), on `recorded_steps` of the
  actor's environments recorded beforehand with random actions and replayed in passes,
  each pass a fresh episode (new writer and n-step builder)."""
  seconds = float(seconds)
  # Lazy: this runs in the measurement's own process, which sets TensorFlow's threads first; the
  # benchmark's driver does not load TensorFlow.
  import reverb  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import n_step  # pylint: disable=import-outside-toplevel
  from paac_tf.algorithms.apex import priorities  # pylint: disable=import-outside-toplevel
  from paac_tf.envs import batched  # pylint: disable=import-outside-toplevel
  from paac_tf.envs import environment  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import replay_layout  # pylint: disable=import-outside-toplevel
  parse_gin([config_file], [])
  env_name = config.env_name_or_configured(None)
  observation_spec, action_spec = environment.specs(env_name)
  num_actions = batched.num_actions(action_spec)
  layout = replay_layout.ReplayLayout(observation_spec)
  num_envs = int(actor_setting("num_envs"))
  chunk_length = int(actor_setting("chunk_length"))
  discount = float(actor_setting("discount"))
  num_workers = int(actor_setting("num_workers"))
  env = environment.make_environment(env_name, num_envs=num_envs, num_workers=num_workers,
                                     seed=0)
  rng = np.random.default_rng(0)
  recorded = []
  try:
    time_step = env.reset()
    for _ in range(int(recorded_steps)):
      action = rng.integers(0, num_actions, size=num_envs)
      recorded.append((np.array(time_step.step_type), np.array(time_step.reward),
                       np.array(time_step.discount), np.array(time_step.observation), action,
                       rng.normal(size=(num_envs, num_actions)).astype(np.float32)))
      time_step = env.step(action)
  finally:
    env.close()
  client = reverb.Client(address)
  rows = np.arange(num_envs)
  agent_steps = 0
  t0, cpu0 = time.monotonic(), time.process_time()
  while time.monotonic() - t0 < seconds or agent_steps == 0:
    builder = n_step.NStepBuilder(num_envs, n=layout.n_step, gamma=discount)
    writer = replay_layout.TransitionWriter(client, layout, num_envs,
                                            chunk_length=chunk_length)
    for step_type, reward, step_discount, observation, action, q_values in recorded:
      ids = writer.observation_ids(step_type)
      completed = builder.step(step_type, reward, step_discount, action,
                               q_taken=q_values[rows, action], ids=ids)
      initial = priorities.initial_priorities(completed.q_taken, completed.reward,
                                              completed.discount, q_values[completed.env])
      writer.write(step_type, observation, completed, initial)
      writer.flush(timeout_ms=60_000)
    writer.flush(everything=True, timeout_ms=60_000)
    writer.close()
    agent_steps += len(recorded) * num_envs
  dt, cpu = time.monotonic() - t0, time.process_time() - cpu0
  with open(out, "w") as f:
    json.dump({"write_agent_steps_per_second": agent_steps / dt,
               "write_agent_steps_per_cpu_second": agent_steps / max(cpu, 1e-9)}, f)


def learner(address, layout, network, num_actions, observation_spec, seconds,
            train_seconds):
  """Batches/s of the compiled step sampling from Reverb, then of the step alone; samples
  per CPU second of this process (TF's pools, the sampling pipeline's and the priority
  writes' threads; not the replay server's)."""
  # Lazy: this runs in the measurement's own process, which sets TensorFlow's threads first; the
  # benchmark's driver does not load TensorFlow.
  import reverb  # pylint: disable=import-outside-toplevel
  from paac_tf.algorithms.apex import learner_step  # pylint: disable=import-outside-toplevel
  from paac_tf.networks import dueling_q  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import replay_layout  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import sampling  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import weights  # pylint: disable=import-outside-toplevel
  batch_size = int(learner_setting("batch_size"))
  publish_interval = int(learner_setting("publish_interval"))
  target = dueling_q.build_q_network(num_actions, observation_spec)
  step = learner_step.ApexLearnerStep(network, target, layout)
  step.build()
  client = reverb.Client(address)
  dataset = sampling.replay_dataset(
      address, layout, batch_size, prefetch=int(learner_setting("prefetch")),
      num_workers=int(learner_setting("dataset_workers")))
  iterator = iter(dataset)

  def one_step():   # as the learner's loop (learner.py): step, priorities back, publish
    keys, new_priorities, _ = step.train(next(iterator))
    client.mutate_priorities(replay_layout.REPLAY_TABLE, updates=dict(zip(
        keys.numpy().tolist(), new_priorities.numpy().tolist())))
    if int(step.steps.numpy()) % publish_interval == 0:
      weights.publish(client, network, int(step.steps.numpy()))

  def sampled():
    info = client.server_info(timeout=30)[replay_layout.REPLAY_TABLE]
    return info.rate_limiter_info.sample_stats.completed

  for _ in range(3):   # tracing and pipeline warm-up
    one_step()
  results = {"learner_batch_size": batch_size}
  if seconds > 0:
    count, samples0 = 0, sampled()
    t0, cpu0 = time.monotonic(), time.process_time()
    while time.monotonic() - t0 < seconds or count < 2:
      one_step()
      count += 1
    dt, cpu = time.monotonic() - t0, time.process_time() - cpu0
    results.update({"learner_batches_per_second": count / dt,
                    "learner_samples_per_second": count * batch_size / dt,
                    "learner_samples_per_cpu_second": count * batch_size / max(cpu, 1e-9),
                    "learner_cpu_cores_used": cpu / dt,
                    "replay_samples_per_second": (sampled() - samples0) / dt})
  if train_seconds > 0:
    batch = next(iterator)   # one batch in memory: the step without sampling or write-back
    step.train(batch)[1].numpy()
    count, t0, cpu0 = 0, time.monotonic(), time.process_time()
    while time.monotonic() - t0 < train_seconds or count < 2:
      step.train(batch)[1].numpy()
      count += 1
    dt, cpu = time.monotonic() - t0, time.process_time() - cpu0
    results.update({"train_step_batches_per_second": count / dt,
                    "train_step_samples_per_second": count * batch_size / dt,
                    "train_step_samples_per_cpu_second": count * batch_size / max(cpu, 1e-9)})
  iterator = dataset = None   # the pipeline ends here, before the caller goes on
  return results


def learner_step_rates(config_file, work_dir, batch_sizes, networks, precisions,
                       intra_op_threads, inter_op_threads=None, seconds=2.0, rounds=2,
                       game=None):
  """The learner's compiled step alone (`ApexLearnerStep.train`, the run's optimizer and
  loss) for each torso x precision x batch size, in a process of its own with these TF
  threads (they must be set before TF starts): batches/s, samples/s and samples per CPU
  second of that process.

  The batches are replay items as the replay stores them, built from real Atari frames
  (`precision_measurements.replay_sample`: the vector env played with random actions).
  Each combination is timed for `seconds` in each of `rounds` rounds, the order reversed
  every other round so that a shared machine's drift affects all alike; the medians are
  returned, one dict per combination.
  """
  spec = {"batch_sizes": [int(b) for b in batch_sizes], "networks": list(networks),
          "precisions": list(precisions), "intra": int(intra_op_threads or 0),
          "inter": None if inter_op_threads is None else int(inter_op_threads),
          "seconds": float(seconds), "rounds": int(rounds), "game": game}
  name = "learner_step_%d_%s" % (spec["intra"], spec["inter"])
  return _in_subprocess("learner_step_worker", [config_file, json.dumps(spec)], work_dir, name,
                        "the learner step")["rows"]


def learner_step_worker(config_file, spec, out):
  spec = json.loads(spec)
  # Lazy: this runs in the measurement's own process, which sets TensorFlow's threads first; the
  # benchmark's driver does not load TensorFlow.
  from paac_tf.bookkeeping import threads  # pylint: disable=import-outside-toplevel
  parse_gin([config_file], [])
  pools = threads.set_tf_threads(spec["intra"], spec["inter"])
  # Lazy: TensorFlow after its threads are set (above).
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  from paac_tf.algorithms.apex import learner_step  # pylint: disable=import-outside-toplevel
  from paac_tf.networks import dueling_q  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import replay_layout  # pylint: disable=import-outside-toplevel
  from tools.bench import precision_measurements  # pylint: disable=import-outside-toplevel
  env_name = spec["game"] or config.env_name_or_configured(None)
  batch_sizes = spec["batch_sizes"]
  num_envs = 16
  steps = -(-max(batch_sizes) // num_envs) + precision_measurements.N_STEP + 8
  observations, rewards, step_types, num_actions = precision_measurements.atari_frames(
      env_name, num_envs, steps)
  observation_spec = tf.TensorSpec(observations.shape[2:], tf.uint8)
  layout = replay_layout.ReplayLayout(observation_spec)
  if layout.n_step != precision_measurements.N_STEP or not layout.single_frames:
    raise errors.UserError("The learner step measurement builds 3-step single-frame items; "
                           "the config has %r." % layout)
  samples = {b: precision_measurements.replay_sample(observations, rewards, step_types,
                                                     num_actions, b) for b in batch_sizes}
  settings = dueling_q.apex_network()
  calls = []
  for network in spec["networks"]:
    for precision in spec["precisions"]:
      online, target = (dueling_q.build_q_network(num_actions, observation_spec,
                                                  dict(settings, network=network),
                                                  precision=precision) for _ in range(2))
      step = learner_step.ApexLearnerStep(online, target, layout)
      step.build()
      for b in batch_sizes:
        call = (lambda s=step, x=samples[b]: s.train(x)[1].numpy())
        call()   # tracing
        call()
        calls.append(((network, precision, b), call))
  rates = {key: [] for key, _ in calls}
  for r in range(spec["rounds"]):
    for key, call in (calls if r % 2 == 0 else calls[::-1]):
      count, t0, cpu0 = 0, time.monotonic(), time.process_time()
      while time.monotonic() - t0 < spec["seconds"] or count < 2:
        call()
        count += 1
      rates[key].append((count / (time.monotonic() - t0),
                         count / max(time.process_time() - cpu0, 1e-9)))
  rows = []
  for (network, precision, b), per_round in rates.items():
    batches, batches_cpu = (float(np.median([x[i] for x in per_round])) for i in range(2))
    rows.append({"network": network, "precision": precision, "batch_size": b,
                 "intra_op_threads": pools[0] if pools else None,
                 "inter_op_threads": pools[1] if pools else None,
                 "batches_per_second": batches, "samples_per_second": batches * b,
                 "samples_per_cpu_second": batches_cpu * b,
                 "cpu_cores_used": batches / batches_cpu})
  with open(out, "w") as f:
    json.dump({"rows": rows}, f)
