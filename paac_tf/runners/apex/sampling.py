"""The learner's prioritized batches: the Reverb tf.data pipeline and the thread that pulls
it without ever blocking the learner's loop."""
import queue
import threading

import reverb
import tensorflow as tf

from paac_tf import errors
from paac_tf.runners.apex import replay_client
from paac_tf.runners.apex import replay_layout


class BackgroundSampler:
  """Batches of a replay pipeline, pulled on a daemon thread.

  The iterator of a `reverb.TrajectoryDataset` whose server is gone blocks without a
  deadline (and resumes once the server is back); pulled here, `get` returns None after
  `timeout_s` instead, so the learner keeps control (stop requests, actor reports, a lost
  server). A pipeline that ends (the rate limiter held samples back for its
  `rate_limiter_timeout_ms`) is replaced by a new one.

  `ready`: if given, each pipeline is made only once `ready()` is true, polled every
  `poll_s` (e.g. `min_size_reached`: no sampler can deliver before the replay holds its
  `learning_starts` items). Without it a learner waiting for those items would make a new
  pipeline every `rate_limiter_timeout_ms`, each a new Reverb sampler, and with the
  server in its process each of those counts towards Reverb's line (replay.py).
  """

  def __init__(self, make_dataset, queue_size=1, name="replay-sampler", ready=None,
               poll_s=0.25):
    self._make_dataset = make_dataset
    self._ready = ready
    self._poll_s = float(poll_s)
    self._queue = queue.Queue(maxsize=max(1, int(queue_size)))
    self._stop = threading.Event()
    self._error = None
    self._thread = threading.Thread(target=self._run, name=name, daemon=True)
    self._thread.start()

  def _run(self):
    try:
      while not self._stop.is_set():
        if not self._wait_until_ready():
          return
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

  def _wait_until_ready(self):
    """False if stopped first. A failing `ready` (the server gone) counts as not ready:
    the learner finds a lost server by its own calls."""
    while self._ready is not None and not self._stop.is_set():
      try:
        if self._ready():
          return True
      except Exception:  # pylint: disable=broad-except  (gRPC errors vary)
        pass
      self._stop.wait(self._poll_s)
    return not self._stop.is_set()

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
      raise replay_client.ReplayUnavailableError(
          "Sampling failed: %s" % errors.user_message(error)) from error
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


def min_size_reached(client, table=replay_layout.REPLAY_TABLE, timeout_s=2):
  """A `BackgroundSampler` `ready`: whether `table` holds its rate limiter's
  `min_size_to_sample` items, without which no sample comes."""
  def ready():
    info = client.server_info(timeout=int(timeout_s))[table]
    return info.current_size >= info.rate_limiter_info.min_size_to_sample
  return ready


def replay_dataset(server_address, layout, batch_size, table=replay_layout.REPLAY_TABLE,
                   prefetch=2, num_workers=1, rate_limiter_timeout_ms=-1):
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
