"""Synthetic Ape-X actors and a learner-like sampler, for measuring the replay at scale.

A synthetic actor has no emulator and no network: it replays a short recording of one
environment (real Pong frames for the Atari layout, random vectors for the MuJoCo one)
through the real actor's replay path: `n_step.NStepBuilder`, `replay_layout.TransitionWriter`
and its flush (the same calls as `actor._ActorLoop.run`), at a set rate of agent steps per
second, and pulls the learner's weights with `weights.WeightsSubscriber.refresh` every
`weights_period` agent steps (Ape-X: 400 frames = 100 agent steps). Its wait on the replay
after each write is the real actor's (`replay_flush.ReplayFlush`): a lost server is
waited for, the writer's unconfirmed items go to the server that answers next, and its
retention (`retention.py`, `retain_items`) writes again what a replay restarted from its
checkpoint lacks. Many of them run as
threads of one process (`run_actors`).

The sampler (`run_sampler`) is the learner without its network: the learner's dataset
(`sampling.replay_dataset`) at batch 512, a priority update per batch (`mutate_priorities`,
random priorities) and a weights publication (`weights.publish`, the Atari network's
variables) every `publish_interval` batches. Like the learner, it samples on a
`sampling.BackgroundSampler` and updates priorities on a `call_thread.CallThread`, so a
lost server is noticed; it then waits for it (`replay_client.wait_for_replay`), republishes
the weights and starts a new pipeline.

Roles, one process each (`python -m tools.apex.synthetic ROLE key=value ... json=PATH`):
  serve    a Reverb server with the Ape-X tables (`replay.start_server`) for a layout,
           restored from and checkpointed into `checkpoint_dir` every
           `checkpoint_interval_s` (`replay.keep_serving`, the real replay's), if given;
  actors   N synthetic actors as threads for S seconds; writes their statistics;
  sampler  the learner-like sampler for S seconds; writes its statistics.
"""
import collections
import json
import os
import sys
import threading
import time

from absl import logging
import numpy as np
import reverb
import tensorflow as tf

from paac_tf import errors
from paac_tf.networks import dueling_q
from paac_tf.runners.apex import call_thread
from paac_tf.runners.apex import n_step
from paac_tf.runners.apex import replay
from paac_tf.runners.apex import replay_client
from paac_tf.runners.apex import replay_flush
from paac_tf.runners.apex import replay_layout
from paac_tf.runners.apex import retention
from paac_tf.runners.apex import sampling
from paac_tf.runners.apex import weights
from tools.apex import audit as apex_audit
from tools.apex import measurements as apex_measurements
from tools.bench import precision_measurements

ATARI_GAME = "Pong"
MUJOCO_OBSERVATION, MUJOCO_ACTION = 17, 6    # HalfCheetah's vector sizes
NUM_ATARI_ACTIONS = 6
Recording = collections.namedtuple(
    "Recording", ["step_type", "reward", "discount", "observation", "action", "priority"])


def specs(layout_name):
  """(observation_spec, action_spec) of a layout: 'atari' (84x84x4 uint8 stacks, discrete
  actions) or 'mujoco' (float32 vectors, continuous actions)."""
  if layout_name == "atari":
    return tf.TensorSpec([84, 84, 4], tf.uint8), None
  if layout_name == "mujoco":
    return (tf.TensorSpec([MUJOCO_OBSERVATION], tf.float32),
            tf.TensorSpec([MUJOCO_ACTION], tf.float32))
  raise ValueError("Unknown layout %r: 'atari' or 'mujoco'." % (layout_name,))


def make_layout(layout_name):
  return replay_layout.ReplayLayout(*specs(layout_name))


def record(layout_name, steps=200, seed=0):
  """A `Recording` of one environment, [steps, 1, ...] each, that starts with FIRST and
  ends with LAST (replayed in a loop, each pass is an episode)."""
  rng = np.random.default_rng(seed)
  if layout_name == "atari":
    observation, reward, step_type, _ = precision_measurements.atari_frames(
        ATARI_GAME, 1, steps, warmup_steps=20, seed=seed)
    action = rng.integers(0, NUM_ATARI_ACTIONS, size=(steps, 1))
  else:
    observation = rng.normal(size=(steps, 1, MUJOCO_OBSERVATION)).astype(np.float32)
    reward = rng.normal(size=(steps, 1)).astype(np.float32)
    step_type = np.full((steps, 1), n_step.MID)
    action = rng.uniform(-1, 1, size=(steps, 1, MUJOCO_ACTION)).astype(np.float32)
  step_type = np.array(step_type)
  step_type[0], step_type[-1] = n_step.FIRST, n_step.LAST
  discount = np.where(step_type == n_step.LAST, 0.0, 1.0).astype(np.float32)
  priority = rng.uniform(0.1, 2.0, size=(steps, 1))
  return Recording(step_type, np.asarray(reward, np.float32), discount, observation, action,
                   priority)


class _Variables:
  """What `WeightsSubscriber` copies into: variables shaped as the published ones."""

  def __init__(self, variables):
    self.variables = variables


def atari_network():
  """The Atari Q network of apex_atari.gin (the weights the learner publishes)."""
  apex_measurements.parse_gin(["apex_atari.gin"], [])
  observation_spec, _ = specs("atari")
  return dueling_q.build_q_network(NUM_ATARI_ACTIONS, observation_spec)


class SyntheticActor:
  """One synthetic actor (see the module docstring); `run` until `stop` is set."""

  def __init__(self, client, address, layout, recording, rate, weights_target=None,
               weights_period=100, chunk_length=16, offset=0, gamma=0.99,
               server_timeout_s=300.0, retain_items=100_000, index=0, audit=False):
    """`index`: the actor's number in the run; with `audit`, each item carries its id
    (`apex_audit.item_id(index, sequence)`) into the replay's audit table."""
    self.layout, self.recording, self.rate = layout, recording, float(rate)
    self.index, self.audit = int(index), bool(audit)
    action_shape = () if layout.discrete_actions else layout.action_shape
    action_dtype = np.int64 if layout.discrete_actions else np.float32
    self.builder = n_step.NStepBuilder(1, n=layout.n_step, gamma=gamma,
                                       action_shape=action_shape, action_dtype=action_dtype)
    self.writer = replay_layout.TransitionWriter(
        client, layout, 1, chunk_length=chunk_length, retain=retain_items > 0,
        audit_table=apex_audit.AUDIT_TABLE if audit else None)
    self.subscriber = (None if weights_target is None
                       else weights.WeightsSubscriber(client, weights_target))
    self.flusher = replay_flush.ReplayFlush(
        self.writer, client, address, server_timeout_s, layout, self.subscriber,
        retention=retention.Retention(retain_items) if retain_items else None)
    self.weights_period = int(weights_period)
    self.offset = int(offset) % len(recording.step_type)
    self.steps = self.items = self.pulls = self.pulled = 0
    self.write_s = []      # per agent step: write + flush (the actor's wait on the replay)
    self.timeline = []     # (time.time(), items created by then), every 10 agent steps
    self.error = None

  def step(self, t, should_stop=lambda: False):
    r = self.recording
    ids = self.writer.observation_ids(r.step_type[t])
    completed = self.builder.step(r.step_type[t], r.reward[t], r.discount[t], r.action[t],
                                  ids=ids)
    start = time.monotonic()
    ids = ([apex_audit.item_id(self.index, self.items + j) for j in range(len(completed.env))]
           if self.audit else None)
    written = self.writer.write(r.step_type[t], r.observation[t], completed,
                                r.priority[t][completed.env], ids=ids)
    self.flusher.flush(should_stop)
    self.write_s.append(time.monotonic() - start)
    self.items += written.items
    self.steps += 1
    if self.audit and self.steps % 10 == 0:
      self.timeline.append((time.time(), int(self.items)))
    if self.subscriber is not None and self.steps % self.weights_period == 0:
      self.pulls += 1
      self.pulled += bool(self.subscriber.refresh(wait_s=1.0))

  def run(self, stop, deadline):
    """Steps at `rate` agent steps/s (a fixed schedule: late steps are not made up twice)
    until `stop` is set or time.monotonic() passes `deadline`."""
    length = len(self.recording.step_type)
    t = self.offset
    # Start where an episode starts: the builder and writer begin with FIRST.
    while self.recording.step_type[t][0] != n_step.FIRST:
      t = (t + 1) % length
    period = 1.0 / self.rate if self.rate > 0 else 0.0
    next_time = time.monotonic()
    try:
      while not stop.is_set() and time.monotonic() < deadline:
        self.step(t, stop.is_set)
        t = (t + 1) % length
        next_time = max(next_time + period, time.monotonic() - period)
        wait = next_time - time.monotonic()
        if wait > 0:
          stop.wait(wait)
    except Exception as e:  # pylint: disable=broad-except  (reported to the caller)
      self.error = "%s: %s" % (type(e).__name__, e)
      return
    try:   # what was written is confirmed (or counted lost by the caller)
      self.writer.flush(everything=True, timeout_ms=30_000)
    except Exception as e:  # pylint: disable=broad-except  (reported to the caller)
      self.error = "final flush: %s: %s" % (type(e).__name__, e)

  def close(self):
    self.flusher.close()
    self.writer.close()
    if self.subscriber is not None:
      self.subscriber.close()


def percentiles(values, qs=(50, 99)):
  """{'p50': .., 'p99': ..} of `values` (None where there are none)."""
  values = np.asarray(values, np.float64)
  return {"p%d" % q: (float(np.percentile(values, q)) if values.size else None) for q in qs}


def wait_for_go(ready_file, go_file, timeout_s=600.0):
  """Writes `ready_file`, then waits (at most `timeout_s`) for `go_file` to exist: the
  processes of a scale run start their timed phase together. No files: returns at once."""
  if ready_file:
    with open(ready_file, "w") as f:
      f.write("ready")
  deadline = time.monotonic() + float(timeout_s)
  while go_file and not os.path.exists(go_file):
    if time.monotonic() > deadline:
      raise TimeoutError("No go file %s within %.0f s." % (go_file, timeout_s))
    time.sleep(0.2)





def run_until(actors, stop, deadline, grace_s=60.0):
  """Runs each actor's loop (`SyntheticActor.run`) on a thread of its own until `deadline`
  (time.monotonic()) or `stop`; returns the threads once all have ended, or `grace_s`
  after the deadline (those still alive are stuck)."""
  threads = [threading.Thread(target=a.run, args=(stop, deadline), daemon=True)
             for a in actors]
  for thread in threads:
    thread.start()
  for thread in threads:
    thread.join(timeout=max(1.0, deadline - time.monotonic() + grace_s))
  return threads


def run_actors(address, layout_name, count, rate, seconds, weights_period=100,
               pull_weights=True, seed=0, ready_file=None, go_file=None,
               server_timeout_s=300.0, retain_items=100_000, first_index=0, audit=False):
  """`count` synthetic actors as threads of this process for `seconds` (after
  `wait_for_go`); their totals (`retention`: the retentions' counters summed; `items`
  counts each item once, resent or not). Actors are numbered from `first_index`; with
  `audit` their items carry ids (`apex_audit`), and `audit` gives {index: items} and
  {index: timeline}."""
  layout = make_layout(layout_name)
  recording = record(layout_name, seed=seed)
  target = _Variables(list(atari_network().variables)) if pull_weights else None
  client = reverb.Client(address)
  info = replay_client.check_replay(client, layout, address, timeout_s=120)
  if info is None:
    raise errors.UserError("No replay at %s." % address)
  if pull_weights:
    weights.WeightsSubscriber(client, target).wait(timeout_s=120)
  actors = [SyntheticActor(reverb.Client(address), address, layout, recording, rate, target,
                           weights_period, offset=37 * i, server_timeout_s=server_timeout_s,
                           retain_items=retain_items, index=int(first_index) + i,
                           audit=bool(audit))
            for i in range(int(count))]
  wait_for_go(ready_file, go_file)
  stop = threading.Event()
  start, cpu0 = time.monotonic(), apex_measurements.cpu_seconds([os.getpid()])
  deadline = start + float(seconds)
  threads = run_until(actors, stop, deadline)
  stop.set()
  elapsed = min(time.monotonic(), deadline) - start
  cpu = apex_measurements.cpu_seconds([os.getpid()]) - cpu0
  write_s = np.concatenate([a.write_s for a in actors]) if actors else np.zeros(0)
  result = {"actors": int(count), "rate": float(rate), "seconds": elapsed,
            "steps": int(sum(a.steps for a in actors)),
            "items": int(sum(a.items for a in actors)),
            "pulls": int(sum(a.pulls for a in actors)),
            "pulled": int(sum(a.pulled for a in actors)),
            "cpu_seconds": cpu, "write_s": dict(percentiles(write_s), max=float(
                write_s.max()) if write_s.size else None),
            "errors": [a.error for a in actors if a.error][:5],
            "reconnects": int(sum(a.flusher.reconnects for a in actors)),
            "retention": dict(sum((collections.Counter(a.flusher.counters()) for a in actors),
                                  collections.Counter())),
            "rss_bytes": apex_measurements.rss(os.getpid()), "pid": os.getpid(),
            "stuck_threads": sum(t.is_alive() for t in threads)}
  if audit:
    result["audit"] = {"items": {a.index: int(a.items) for a in actors},
                       "timelines": {a.index: a.timeline + [(time.time(), int(a.items))]
                                     for a in actors},
                       "left_to_writer": {a.index: int(a.flusher.counters().get(
                           "left_to_writer", 0)) for a in actors}}
  for a in actors:
    a.close()
  return result


def run_sampler(address, layout_name, seconds, batch_size=512, publish_interval=10,
                step_s=0.0, seed=0, ready_file=None, go_file=None, server_timeout_s=300.0):
  """The learner-like sampler for `seconds`: batches, sample waits (the learner's stall:
  the time a batch is waited for, a lost server's outage included), mutate_priorities
  times, publications, reconnects."""
  layout = make_layout(layout_name)
  client = reverb.Client(address)
  network = atari_network()
  weights.publish(client, network, 0)
  rng = np.random.default_rng(seed)
  state = {"sampler": None, "calls": None, "reconnects": [], "start": None}

  def fresh():
    state["calls"] = call_thread.CallThread(
        check=lambda: replay_client.probe(client, address, 2))
    state["sampler"] = sampling.BackgroundSampler(
        lambda: sampling.replay_dataset(address, layout, batch_size))

  def should_stop():
    return state["start"] is not None and time.monotonic() - state["start"] > float(seconds)

  def reconnect(error):
    """The learner's way (`learner.Learner._reconnect`): wait, republish, new pipeline."""
    print("sampler lost the replay (%s); waiting for it" % error, flush=True)
    state["sampler"].close(wait_s=0)
    state["calls"].close()
    if replay_client.wait_for_replay(client, address, server_timeout_s,
                                     should_stop=should_stop) is not None:
      weights.publish(client, network, 0, timeout_s=30, address=address)
      state["reconnects"].append(time.time())
    fresh()

  def batch():
    """The next batch (None once the time is up), reconnecting to a lost server."""
    while not should_stop():
      try:
        sample = state["sampler"].get(timeout_s=1.0)
        if sample is not None:
          return sample
        replay_client.probe(client, address, 2)
      except Exception as e:  # pylint: disable=broad-except  (gRPC errors vary)
        reconnect(errors.user_message(e))
    return None

  def update(sample):
    keys = sample.info.key.numpy().tolist()
    updates = dict(zip(keys, rng.uniform(0.1, 2.0, size=len(keys)).tolist()))
    try:
      state["calls"].submit(lambda: client.mutate_priorities(
          replay_layout.REPLAY_TABLE, updates=updates), 30, "Updating priorities")
    except replay_client.ReplayUnavailableError as e:
      reconnect(e)

  fresh()
  wait_for_go(ready_file, go_file)
  for _ in range(2):   # the pipeline's start, not timed
    update(batch())
  waits, updates, batches, published, times = [], [], 0, 1, []
  cpu0 = apex_measurements.cpu_seconds([os.getpid()])
  state["start"] = start = time.monotonic()
  while not should_stop():
    t0 = time.monotonic()
    sample = batch()
    if sample is None:
      break
    waits.append(time.monotonic() - t0)
    if step_s:
      time.sleep(step_s)    # the learner's step, if emulated
    t0 = time.monotonic()
    update(sample)
    updates.append(time.monotonic() - t0)
    batches += 1
    times.append(time.time())
    if batches % int(publish_interval) == 0:
      try:
        weights.publish(client, network, batches, timeout_s=30, address=address)
        published += 1
      except replay_client.ReplayUnavailableError as e:
        reconnect(e)
  elapsed = time.monotonic() - start
  return {"batch_size": int(batch_size), "seconds": elapsed, "batches": batches,
          "samples": batches * int(batch_size), "published": published,
          "cpu_seconds": apex_measurements.cpu_seconds([os.getpid()]) - cpu0,
          "wait_s": percentiles(waits), "wait_total_s": float(np.sum(waits)),
          "priority_update_s": percentiles(updates), "batch_times": times,
          "reconnect_times": state["reconnects"]}


def serve(port, layout_name, capacity, checkpoint_dir=None, checkpoint_interval_s=0.0,
          audit=False):
  """A Reverb server with the Ape-X tables (no rate limiting: learning_starts 1, an
  unbounded error buffer) on `port` until SIGTERM (`replay.keep_serving`): restored from
  `checkpoint_dir` and checkpointed there every `checkpoint_interval_s`, if given. With
  `audit`, also the audit table (`apex_audit.audit_table`)."""
  # INFO: the restored checkpoint's size and each checkpoint go to the log.
  logging.set_verbosity(logging.INFO)
  settings = replay.apex_replay(capacity=int(capacity), learning_starts=1, error_buffer=1e15)
  server = replay.start_server(make_layout(layout_name), port=int(port),
                               checkpoint_dir=checkpoint_dir or None, settings=settings,
                               checkpoint_interval_s=float(checkpoint_interval_s),
                               extra_tables=[apex_audit.audit_table()] if audit else ())
  print("serving on %d" % server.port, flush=True)
  replay.keep_serving(server, checkpoint_dir or None, float(checkpoint_interval_s))


def main(argv):
  """`python -m tools.apex.synthetic ROLE key=value ... [json=PATH]`."""
  if len(argv) < 2 or argv[1] not in ("serve", "actors", "sampler"):
    print("error: usage: python -m tools.apex.synthetic serve|actors|sampler key=value ...",
          file=sys.stderr)
    return 2
  kwargs = dict(a.split("=", 1) for a in argv[2:])
  out = kwargs.pop("json", None)
  numbers = {k: (float(v) if k in ("rate", "seconds", "step_s", "server_timeout_s",
                                    "checkpoint_interval_s") else
                 int(v) if v.lstrip("-").isdigit() else v) for k, v in kwargs.items()}
  for flag in ("pull_weights", "audit"):
    if flag in numbers:
      numbers[flag] = bool(numbers[flag])
  role = {"serve": serve, "actors": run_actors, "sampler": run_sampler}[argv[1]]
  result = role(**numbers)
  if out:
    with open(out, "w") as f:
      json.dump(result, f)
  sys.stdout.flush()
  sys.stderr.flush()
  # Without running the interpreter's teardown: weight samples still in flight on the
  # subscribers' threads (the server held them) would abort it ("terminate called").
  os._exit(0)


if __name__ == "__main__":
  sys.exit(main(sys.argv))
