"""Replay calls without a deadline of their own, made on a helper thread that the caller
waits for only as long as it chooses."""
import concurrent.futures
import queue
import threading
import time

import reverb

from paac_tf import errors
from paac_tf.runners.apex import replay_client


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
            raise replay_client.ReplayUnavailableError(
                "%s: server gone (%s)." % (what, errors.user_message(e))) from e
      if not future.done():
        raise replay_client.ReplayUnavailableError(
            "%s did not complete within %.0f s." % (what, timeout_s))
      self._future = None
      return future.result()
    except (RuntimeError, reverb.errors.ReverbError) as e:
      if isinstance(e, replay_client.ReplayUnavailableError):
        raise
      raise replay_client.ReplayUnavailableError(
          "%s failed: %s" % (what, errors.user_message(e))) from e

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
