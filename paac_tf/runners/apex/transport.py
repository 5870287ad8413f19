"""What travels through Reverb in Ape-X: table names, the replay item layout, the writer.

Tables of the one Reverb server (built in `replay.py`):
  REPLAY_TABLE   prioritized n-step transitions (actors insert, the learner samples and
                 rewrites priorities);
  WEIGHTS_TABLE  the learner's latest network weights, one item (learner inserts, actors
                 sample without consuming);
  STATS_TABLE    actors' progress reports: agent steps and finished episodes since their
                 previous report (actors insert, the learner drains it).

Replay layout: each environment of each actor is one stream of *frames* written once by a
Reverb `TrajectoryWriter`; an item only references frames of that stream, so no
observation is copied per transition. With `single_frames` (default) and Atari's stacked
observations (H, W, S) a frame is the newest image of the stack, (H, W): observation t
is frames [t-S+1 .. t] (the env shifts its stack by one image per step, which the writer
checks). Otherwise (vector observations, or single_frames=False) a frame is the whole
observation and S = 1.

An item (one n-step transition s_t -> s_{t+k}, see `paac_tf/agents/apex/n_step.py`) is
  frames      [S + n, *frame_shape]  frames t-S+1 .. t+n of its stream
  transition  float32 [4]            (a_t, R, D, k), unpacked by `ReplayLayout.unpack`:
                a_t  the action,
                R    the discounted n-step reward,
                D    the multiplier of the bootstrap value (0: no bootstrap),
                k    s_t is frames[0:S], s_{t+k} is frames[k:k+S].
The four scalars share one float32 column (a_t and k are small integers, exact in float32)
because Reverb's in-memory cost per item grows with its number of columns: with one column
instead of four an item costs ~1 KB less (measured: ~1.1 KB vs ~2.0 KB per item besides
the frame data), i.e. ~2 GB less for 2M transitions.
Stream rules that keep every window inside one episode's valid frames: at FIRST the S-1
older images of the reset stack are written before its newest image; after LAST, n-1
copies of the final frame pad the stream, so transitions that end early (k < n) still
have a full window. The transition column is sparse: one stream step per completed
transition carries it.

Connection faults (used by actor and learner): `wait_for_replay` retries an unreachable
server with backoff (`ReplayRetry`), logging each retry, and gives up with
ReplayUnreachableError after a timeout. Reverb's writers reconnect by themselves after the
server is restarted and resend what was not confirmed; calls without a deadline of their
own (sample, mutate_priorities, the dataset iterator) wait for the server to come back, so
they run on helper threads (`CallThread`, `BackgroundSampler`) that the caller waits for
only as long as it chooses. `Client.insert` is not used: its writer spins a core while
the server is down (`insert_one` uses a TrajectoryWriter instead).
"""
import collections
import concurrent.futures
import queue
import socket
import threading
import time

from absl import logging
import gin
import numpy as np
import reverb
import tensorflow as tf
import tree
from tf_agents.trajectories import time_step as ts

from paac_tf import errors

REPLAY_TABLE = "replay"
WEIGHTS_TABLE = "weights"
STATS_TABLE = "actor_stats"

FIRST, LAST = int(ts.StepType.FIRST), int(ts.StepType.LAST)
TRANSITION_FIELDS = ("action", "reward", "discount", "next_offset")


class FrameStackError(RuntimeError):
  """An environment's observation stacks do not shift by one image per step."""


@gin.configurable(module="apex", denylist=["observation_spec"])
class ReplayLayout:
  """How transitions of an environment with `observation_spec` are stored in replay.

  Args:
    observation_spec: the batched env's observation spec (ArraySpec or TensorSpec).
    n_step: n of the n-step transitions (Ape-X: 3).
    single_frames: store each image of stacked (H, W, S) observations once (S = 4 on
      Atari), rather than each observation once; no effect on vector observations.
  """

  def __init__(self, observation_spec, n_step=3, single_frames=True):
    self.observation_shape = tuple(int(d) for d in observation_spec.shape)
    self.dtype = tf.as_dtype(observation_spec.dtype)
    self.n_step = int(n_step)
    if self.n_step < 1:
      raise ValueError("ReplayLayout.n_step must be >= 1, got %d." % self.n_step)
    stacked = len(self.observation_shape) == 3 and self.observation_shape[-1] > 1
    self.single_frames = bool(single_frames) and stacked
    if self.single_frames:
      self.stack = self.observation_shape[-1]
      self.frame_shape = self.observation_shape[:-1]
    else:
      self.stack = 1
      self.frame_shape = self.observation_shape
    self.window = self.stack + self.n_step

  def __repr__(self):
    return "ReplayLayout(observation %s %s, frames %s x %d, n=%d)" % (
        self.observation_shape, self.dtype.name, self.frame_shape, self.window, self.n_step)

  # --- what an item holds ---------------------------------------------------------------
  def item_signature(self):
    return {
        "frames": tf.TensorSpec([self.window, *self.frame_shape], self.dtype),
        "transition": tf.TensorSpec([len(TRANSITION_FIELDS)], tf.float32),
    }

  @staticmethod
  def unpack(data):
    """TF: an item batch {frames, transition} -> frames, action (int32), reward, discount,
    next_offset (int32), each [B, ...]."""
    transition = data["transition"]
    return {"frames": data["frames"],
            "action": tf.cast(tf.round(transition[..., 0]), tf.int32),
            "reward": transition[..., 1],
            "discount": transition[..., 2],
            "next_offset": tf.cast(tf.round(transition[..., 3]), tf.int32)}

  @staticmethod
  def unpack_np(data):
    """numpy twin of `unpack` for one item."""
    transition = np.asarray(data["transition"], np.float32)
    return {"frames": np.asarray(data["frames"]), "action": int(round(transition[0])),
            "reward": float(transition[1]), "discount": float(transition[2]),
            "next_offset": int(round(transition[3]))}

  def frame_bytes(self):
    return int(np.prod(self.frame_shape)) * self.dtype.size

  # --- numpy, in the actor ------------------------------------------------------------
  def newest_frames(self, observations):
    """[B, *obs_shape] -> [B, *frame_shape]: what each time step adds to its stream."""
    observations = np.asarray(observations)
    return observations[..., -1] if self.single_frames else observations

  def older_frames(self, observation):
    """The S-1 images of one observation before its newest one (written at FIRST)."""
    if not self.single_frames:
      return []
    return [observation[..., j] for j in range(self.stack - 1)]

  # --- rebuilding observations from items -----------------------------------------------
  def observations(self, frames, next_offset):
    """TF: item frames [B, W, *frame_shape] and k [B] -> (s_t, s_{t+k}), [B, *obs_shape]."""
    offsets = tf.range(self.stack, dtype=tf.int32)
    first = tf.broadcast_to(offsets, [tf.shape(frames)[0], self.stack])
    following = tf.cast(next_offset, tf.int32)[:, None] + offsets[None, :]
    obs = tf.gather(frames, first, batch_dims=1)
    next_obs = tf.gather(frames, following, batch_dims=1)
    if self.single_frames:   # [B, S, H, W] -> [B, H, W, S]
      obs = tf.transpose(obs, [0, 2, 3, 1])
      next_obs = tf.transpose(next_obs, [0, 2, 3, 1])
    else:                    # [B, 1, ...] -> [B, ...]
      obs, next_obs = obs[:, 0], next_obs[:, 0]
    return obs, next_obs

  def observations_np(self, frames, next_offset):
    """numpy twin of `observations` for one item: frames [W, ...], k -> (s_t, s_{t+k})."""
    frames = np.asarray(frames)
    k = int(next_offset)
    if self.single_frames:
      return (np.moveaxis(frames[:self.stack], 0, -1),
              np.moveaxis(frames[k:k + self.stack], 0, -1))
    return frames[0], frames[k]


# --- the actor's writer ---------------------------------------------------------------------

WriteStats = collections.namedtuple("WriteStats", ["items", "frames"])


class TransitionWriter:
  """Writes the frame streams of `num_envs` environments and their transition items.

  Per batched step, the actor calls `observation_ids(step_type)` (the stream positions the
  new observations will take; give them to `NStepBuilder.step` as `ids`), then
  `write(...)` with the transitions completed at this step and their priorities.
  """

  def __init__(self, client, layout, num_envs, table=REPLAY_TABLE, chunk_length=16,
               check_frame_shift=True):
    self.layout = layout
    self.num_envs = int(num_envs)
    self.table = table
    self.chunk_length = int(chunk_length)
    self.check_frame_shift = bool(check_frame_shift)
    n, s = layout.n_step, layout.stack
    # Largest look-back of an item when created (after LAST and its padding), and room
    # for one open chunk: references older than this are released by the writer.
    self.keep_alive = max(self.chunk_length, 2 * n + s + 1) + self.chunk_length
    # Items may wait for their chunks to fill; beyond this many unconfirmed items per
    # stream, `flush` blocks (this is how the replay rate limiter slows actors down).
    self.max_unconfirmed = 2 * (self.chunk_length + s + n)
    self._writers = []
    for _ in range(self.num_envs):
      writer = client.trajectory_writer(num_keep_alive_refs=self.keep_alive)
      for column in ("frame", "transition"):
        writer.configure((column,), num_keep_alive_refs=self.keep_alive,
                         max_chunk_length=self.chunk_length)
      self._writers.append(writer)
    self._histories = [None] * self.num_envs
    self._positions = np.zeros(self.num_envs, np.int64)   # steps written per stream
    self._previous_newest = None                            # last frame per stream
    self._has_previous = np.zeros(self.num_envs, bool)
    self.items_written = 0
    self.frames_written = 0

  def observation_ids(self, step_type):
    """Stream positions that this step's observations (their newest frames) will take."""
    step_type = np.asarray(step_type)
    return self._positions + np.where(step_type == FIRST, self.layout.stack - 1, 0)

  def write(self, step_type, observations, transitions, priorities):
    """Appends this step's frames, then creates one item per completed transition.

    step_type [B]; observations [B, *obs_shape]; transitions: `n_step.Transitions`
    completed at this step (their `start_id`/`next_id` are stream positions from
    `observation_ids`); priorities [M] (float).
    """
    step_type = np.asarray(step_type)
    newest = self.layout.newest_frames(observations)
    if self.check_frame_shift:
      self._check_shift(step_type, observations, newest)
    priorities = np.asarray(priorities, np.float64)
    per_env = np.searchsorted(transitions.env, np.arange(self.num_envs + 1))
    items = frames = 0
    for e in range(self.num_envs):
      writer = self._writers[e]
      obs = observations[e]
      steps = []
      if step_type[e] == FIRST:
        steps += [{"frame": f} for f in self.layout.older_frames(obs)]
      steps.append({"frame": newest[e]})
      if step_type[e] == LAST:
        steps += [{"frame": newest[e]} for _ in range(self.layout.n_step - 1)]
      # The transitions completed here (their scalars) ride on the steps from this
      # observation's frame on: at most one on a MID step, at most n on a LAST (the frame
      # and its n-1 padding copies), none on a FIRST.
      lo, hi = per_env[e], per_env[e + 1]
      first_carrier = len(steps) - (1 if step_type[e] != LAST else self.layout.n_step)
      if hi - lo > len(steps) - first_carrier:
        raise AssertionError("More transitions than stream steps; this is a bug.")
      for j, i in enumerate(range(lo, hi)):
        steps[first_carrier + j]["transition"] = np.array(
            [transitions.action[i], transitions.reward[i], transitions.discount[i],
             transitions.length[i]], np.float32)
      for step in steps:
        writer.append(step)
      base = int(self._positions[e])
      self._positions[e] += len(steps)
      frames += len(steps)
      if hi > lo:
        self._create_items(writer, base, first_carrier, transitions, priorities, lo, hi)
        items += hi - lo
    self.items_written += items
    self.frames_written += frames
    return WriteStats(items, frames)

  def _check_shift(self, step_type, observations, newest):
    """Single frames are only right if each observation's stack is the previous one
    shifted by one image: its second-newest image must be the previous newest (one image
    compared per environment, for the whole batch at once)."""
    if not self.layout.single_frames or self.layout.stack < 2:
      return
    if self._previous_newest is not None:
      follows = (step_type != FIRST) & self._has_previous
      if follows.any():
        same = np.all((np.asarray(observations)[..., -2] == self._previous_newest)
                      .reshape(self.num_envs, -1), axis=1)
        bad = np.flatnonzero(follows & ~same)
        if bad.size:
          raise FrameStackError(
              "Environment %d's observation stack did not shift by one image; storing "
              "single frames would corrupt replay. Set ReplayLayout.single_frames = False."
              % bad[0])
      self._previous_newest[...] = newest    # a copy: batched envs may reuse their buffers
    else:
      self._previous_newest = np.array(newest)
    self._has_previous[:] = True

  def _history(self, e):
    """Stream e's column history ({'frame', 'transition'} of `_ColumnHistory`); built
    once both columns exist (the writer rebuilds this dict on every `history` access)."""
    history = self._histories[e]
    if history is None:
      history = self._writers[e].history
      if "transition" in history:
        self._histories[e] = history
    return history

  def _create_items(self, writer, base, first_carrier, transitions, priorities, lo, hi):
    history = self._history(int(transitions.env[lo]))
    total = int(self._positions[transitions.env[lo]])
    s, n = self.layout.stack, self.layout.n_step
    for j, i in enumerate(range(lo, hi)):
      start = int(transitions.start_id[i]) - s + 1 - total     # negative offsets
      stop = int(transitions.start_id[i]) + n + 1 - total
      carrier = base + first_carrier + j - total
      frames = history["frame"][start:stop] if stop < 0 else history["frame"][start:]
      writer.create_item(self.table, float(priorities[i]),
                         {"frames": frames, "transition": history["transition"][carrier]})

  def flush(self, timeout_ms=None, everything=False):
    """Blocks until at most `max_unconfirmed` items per stream (0 if `everything`) await
    the server's confirmation. Raises reverb.errors.DeadlineExceededError on timeout."""
    keep = 0 if everything else self.max_unconfirmed
    for writer in self._writers:
      writer.flush(block_until_num_items=keep, timeout_ms=timeout_ms)

  def close(self):
    for writer in self._writers:
      try:
        writer.close()
      except Exception:  # pylint: disable=broad-except
        pass
    self._writers = []


class ReplayMismatchError(RuntimeError):
  """The server at the address is not this run's Ape-X replay."""


class ReplayUnreachableError(TimeoutError):
  """The replay server did not answer for `server_timeout_s`: the process gives up."""


class ReplayUnavailableError(RuntimeError):
  """A call to the replay server failed or did not answer in time (the caller then waits
  for the server with `wait_for_replay`)."""


# Exit status of an actor or learner that gave up on the replay server.
EXIT_REPLAY_UNREACHABLE = 3


@gin.configurable(module="apex")
class ReplayRetry:
  """How actors and learner wait for an unreachable replay server.

  Args:
    initial_s, max_s: the wait after the k-th failed attempt is
      min(max_s, initial_s * 2 ** (k - 1)): 1, 2, 4, ..., 30, 30, ... seconds.
    probe_timeout_s: deadline of each attempt (a `server_info` call), in whole seconds.
  """

  def __init__(self, initial_s=1.0, max_s=30.0, probe_timeout_s=10):
    self.initial_s = float(initial_s)
    self.max_s = float(max_s)
    self.probe_timeout_s = max(1, int(probe_timeout_s))

  def delay(self, attempt):
    return min(self.max_s, self.initial_s * 2.0 ** (attempt - 1))


def probe(client, address, timeout_s):
  """The server's table infos. A TCP connection is tried first: it fails at once where
  nothing listens, while a gRPC call there waits for its whole deadline."""
  host, _, port = address.rpartition(":")
  if host and port.isdigit():
    with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
      pass
  return client.server_info(timeout=timeout_s)


def wait_for_replay(client, address, timeout_s, should_stop=None, retry=None, since=None):
  """Calls `server_info` until the server answers; returns its table infos.

  After each failed attempt it logs "Replay server at ADDRESS not reachable (attempt k);
  retrying in X s" and waits X (`ReplayRetry`: 1, 2, 4, ... 30 s). Raises
  ReplayUnreachableError once `timeout_s` seconds have passed since `since` (a
  time.monotonic() value; default: now). Returns None as soon as `should_stop()` is true.
  """
  retry = retry or ReplayRetry()
  should_stop = should_stop or (lambda: False)
  start = time.monotonic() if since is None else since
  deadline = start + float(timeout_s)
  attempt = 0
  while True:
    attempt += 1
    remaining = deadline - time.monotonic()
    try:
      return probe(client, address,
                   max(1, min(retry.probe_timeout_s, int(remaining + 0.999))))
    except Exception as e:  # pylint: disable=broad-except  (gRPC errors vary)
      error = e
    remaining = deadline - time.monotonic()
    if remaining <= 0:
      raise ReplayUnreachableError(
          "Replay server at %s not reachable for %.0f s (%d attempts; last error: %s); giving "
          "up (server_timeout_s = %g). Is the replay running there (python -m "
          "paac_tf.runners.apex.replay --port=PORT --gin_file=...)?" % (
              address, time.monotonic() - start, attempt, errors.user_message(error),
              float(timeout_s))) from None
    delay = min(retry.delay(attempt), remaining)
    logging.warning("Replay server at %s not reachable (attempt %d); retrying in %.3g s (%s)",
                    address, attempt, delay, errors.user_message(error))
    until = time.monotonic() + delay
    while time.monotonic() < until:
      if should_stop():
        return None
      time.sleep(min(0.2, max(0.0, until - time.monotonic())))
    if should_stop():
      return None


def check_tables(info, layout, address=""):
  """Raises ReplayMismatchError unless the server info `info` has the Ape-X tables with
  the replay signature of `layout`; returns `info`."""
  missing = [t for t in (REPLAY_TABLE, WEIGHTS_TABLE, STATS_TABLE) if t not in info]
  if missing:
    raise ReplayMismatchError("The server at %s has no table(s) %s: it is not an Ape-X replay "
                              "(python -m paac_tf.runners.apex.replay)." % (address, ", ".join(missing)))
  served = info[REPLAY_TABLE].signature
  wanted = layout.item_signature()
  same = False
  try:
    tf.nest.assert_same_structure(served, wanted)
    same = all(a.shape == b.shape and a.dtype == b.dtype
               for a, b in zip(tf.nest.flatten(served), tf.nest.flatten(wanted)))
  except (ValueError, TypeError):
    pass
  if not same:
    raise ReplayMismatchError(
        "The replay at %s stores %s, but this process's configuration gives %s: start all "
        "processes with the same gin config (environment, ReplayLayout)." % (
            address, served, wanted))
  return info


def check_replay(client, layout, address="", timeout_s=60.0, should_stop=None, retry=None):
  """Waits up to `timeout_s` for the server (`wait_for_replay`: retries with backoff, one
  log line per retry); checks it has the Ape-X tables and that its replay signature
  matches `layout` (same environment, n and frame storage as this process's gin config).
  Raises ReplayMismatchError with what differs, or ReplayUnreachableError (a TimeoutError)
  if nothing answers. Returns the server info, or None if `should_stop()` became true."""
  info = wait_for_replay(client, address, timeout_s, should_stop=should_stop, retry=retry)
  if info is None:
    return None
  return check_tables(info, layout, address)


class CallThread:
  """Runs calls to the replay server one at a time on a daemon thread, so that the caller
  waits for them only as long as it chooses.

  Reverb calls without a deadline of their own (`Client.sample`, `mutate_priorities`) block
  while the server is down and complete once it is back (gRPC waits for the connection);
  made here, they cannot hang the caller, which sees ReplayUnavailableError instead.
  """

  def __init__(self, name="replay-calls", check=None):
    """`check`: optional callable that raises if the server is gone (e.g. `probe`),
    called every second while a call is waited for, to give up on it early."""
    self._jobs = queue.SimpleQueue()
    self._future = None
    self._check = check
    self._thread = threading.Thread(target=self._run, name=name, daemon=True)
    self._thread.start()

  def _run(self):
    while True:
      job = self._jobs.get()
      if job is None:
        return
      fn, future = job
      if not future.set_running_or_notify_cancel():
        continue
      try:
        future.set_result(fn())
      except BaseException as e:  # pylint: disable=broad-except
        future.set_exception(e)

  @property
  def busy(self):
    return self._future is not None and not self._future.done()

  def wait(self, timeout_s, what="A replay call"):
    """The result of the last call; ReplayUnavailableError if it is still running after
    `timeout_s` (it goes on in the background) or failed with a gRPC error."""
    future = self._future
    if future is None:
      return None
    try:
      deadline = time.monotonic() + timeout_s
      while not future.done() and time.monotonic() < deadline:
        concurrent.futures.wait([future], timeout=min(1.0, deadline - time.monotonic()))
        if not future.done() and self._check is not None:
          try:
            self._check()
          except Exception as e:  # pylint: disable=broad-except  (gRPC errors vary)
            raise ReplayUnavailableError("%s: server gone (%s)." % (what, errors.user_message(e))) from e
      if not future.done():
        raise ReplayUnavailableError("%s did not complete within %.0f s." % (what, timeout_s))
      self._future = None
      return future.result()
    except (RuntimeError, reverb.errors.ReverbError) as e:
      if isinstance(e, ReplayUnavailableError):
        raise
      raise ReplayUnavailableError("%s failed: %s" % (what, errors.user_message(e))) from e

  def start(self, fn):
    """Queues `fn()` (after any call still running); returns its concurrent Future."""
    future = concurrent.futures.Future()
    self._future = future
    self._jobs.put((fn, future))
    return future

  def submit(self, fn, timeout_s, what="A replay call"):
    """Starts `fn()` once the previous call is done (waiting up to `timeout_s` for it)."""
    self.wait(timeout_s, what)
    return self.start(fn)

  def call(self, fn, timeout_s, what="A replay call"):
    """`fn()`'s result, waiting at most `timeout_s` for the previous call and for this one."""
    self.submit(fn, timeout_s, what)
    return self.wait(timeout_s, what)

  def close(self):
    """Ends the thread after its current call (which may still be waiting for a server)."""
    self._jobs.put(None)


def insert_one(client, data, table, priority=1.0, timeout_s=None):
  """Inserts `data` as one item of `table` through a TrajectoryWriter (unlike
  `Client.insert`, whose writer spins a core while the server is down). Returns the
  writer if the server has not confirmed the item within `timeout_s` (the writer keeps
  trying: `flush` it later, or `close` it to drop the item), else None."""
  writer = client.trajectory_writer(num_keep_alive_refs=1)
  writer.append(data)
  writer.create_item(table, float(priority),
                     tree.map_structure(lambda column: column[-1:], writer.history))
  try:
    writer.flush(timeout_ms=None if timeout_s is None else max(1, int(1000 * timeout_s)))
  except reverb.errors.DeadlineExceededError:
    return writer
  except Exception:
    writer.close()
    raise
  writer.close()
  return None


class BackgroundSampler:
  """Batches of a replay pipeline, pulled on a daemon thread.

  The iterator of a `reverb.TrajectoryDataset` whose server is gone blocks without a
  deadline (and resumes once the server is back); pulled here, `get` returns None after
  `timeout_s` instead, so the learner keeps control (stop requests, actor reports, a lost
  server). A pipeline that ends (the rate limiter held samples back for its
  `rate_limiter_timeout_ms`) is replaced by a new one.
  """

  def __init__(self, make_dataset, queue_size=1, name="replay-sampler"):
    self._make_dataset = make_dataset
    self._queue = queue.Queue(maxsize=max(1, int(queue_size)))
    self._stop = threading.Event()
    self._error = None
    self._thread = threading.Thread(target=self._run, name=name, daemon=True)
    self._thread.start()

  def _run(self):
    try:
      while not self._stop.is_set():
        iterator = iter(self._make_dataset())
        try:
          for batch in iterator:
            while not self._stop.is_set():
              try:
                self._queue.put(batch, timeout=0.2)
                break
              except queue.Full:
                pass
            if self._stop.is_set():
              return
        except (tf.errors.OutOfRangeError, tf.errors.DeadlineExceededError):
          pass   # rate-limited for rate_limiter_timeout_ms: a new pipeline
        finally:
          iterator = None
    except Exception as e:  # pylint: disable=broad-except
      self._error = e

  def get(self, timeout_s):
    """The next batch, or None if none came within `timeout_s`. If the pipeline failed:
    ReplayUnavailableError for a gRPC `unavailable` error, else the pipeline's error."""
    try:
      if self._error is None:
        return self._queue.get(timeout=timeout_s)
    except queue.Empty:
      pass
    error = self._error
    if error is None:
      return None
    if isinstance(error, (tf.errors.UnavailableError, tf.errors.CancelledError)):
      raise ReplayUnavailableError("Sampling failed: %s" % errors.user_message(error)) from error
    raise error

  def close(self, wait_s=0.0):
    """Stops pulling; waits up to `wait_s` for the thread (one blocked on a lost server
    stays until the server is back, then ends). True if the thread has ended."""
    self._stop.set()
    try:
      while True:
        self._queue.get_nowait()
    except queue.Empty:
      pass
    self._thread.join(timeout=wait_s)
    return not self._thread.is_alive()


def replay_dataset(server_address, layout, batch_size, table=REPLAY_TABLE, prefetch=2,
                   num_workers=1, rate_limiter_timeout_ms=-1):
  """Prioritized batches as ReplaySample(info, data): a tf.data pipeline that keeps
  `prefetch` batches (and 2 batches of samples in flight) ahead of the learner."""
  signature = layout.item_signature()
  dataset = reverb.TrajectoryDataset(
      server_address=server_address, table=table,
      dtypes=tf.nest.map_structure(lambda s: s.dtype, signature),
      shapes=tf.nest.map_structure(lambda s: s.shape, signature),
      max_in_flight_samples_per_worker=2 * int(batch_size),
      num_workers_per_iterator=int(num_workers),
      rate_limiter_timeout_ms=int(rate_limiter_timeout_ms))
  dataset = dataset.batch(int(batch_size), drop_remainder=True).prefetch(int(prefetch))
  # The sizes are explicit, so tf.data's autotuner has nothing to tune; its background
  # thread also delayed the iterator's destruction by up to a minute (seen in gdb:
  # ~RootDataset::Iterator waiting for Model::OptimizeLoop).
  options = tf.data.Options()
  options.autotune.enabled = False
  return dataset.with_options(options)
