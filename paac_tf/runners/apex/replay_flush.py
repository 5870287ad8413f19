"""An actor's wait on the replay after each write (`ReplayFlush`), with its retention of
what the replay has not made durable (`retention.py`). Used by the actor (`actor.py`)
and the synthetic actors (tools/apex/synthetic.py)."""
import time

from absl import logging
import reverb

from paac_tf import errors
from paac_tf.runners.apex import call_thread
from paac_tf.runners.apex import durability
from paac_tf.runners.apex import replay_client
from paac_tf.runners.apex import replay_layout

# While inserts are blocked, the weights (and the learner's `done`) are read this often.
_BLOCKED_REFRESH_S = 5.0
# The durability marker of a replay that does not checkpoint is read this often.
_IDLE_MARK_S = 30.0
# A mark's flush of everything waits this long (ms), and is tried again this much later
# (s) if items are still unconfirmed.
_MARK_FLUSH_MS = 200
_MARK_RETRY_S = 0.2
# A marker read not back after this long (s) is abandoned.
_MARK_READ_S = 10.0


class ReplayFlush:
  """An actor's wait on the replay after each write: flushes `writer` down to its bound of
  unconfirmed items, waiting while the replay's rate limiter holds inserts; a server that
  stops answering is waited for with backoff (`replay_client.wait_for_replay`, giving up
  after `server_timeout_s`) while Reverb's writer reconnects by itself and resends what was
  not confirmed. `subscriber` (optional): its weights, and the learner's `done`, are read
  every few seconds while blocked. Counts `blocked_s` and `reconnects`; `server_lost` is
  true while a lost server is waited for. Also used by tools/apex/synthetic.py.

  With `retention` (a `retention.Retention`; the writer made with `retain=True`), every
  `mark_interval_s` it flushes everything, reads the replay's durability marker on a helper
  thread (collected by a later flush: the loop never waits for it) and gives it to the
  retention, which keeps what a completed checkpoint does not hold yet; what it returns
  after a replay restart is written again (`TransitionWriter.resend`)."""

  def __init__(self, writer, client, replay_address, server_timeout_s, layout=None,
               subscriber=None, actor_index=0, retention=None, mark_interval_s=1.0):
    self.writer, self.client, self.replay_address = writer, client, replay_address
    self.server_timeout_s = float(server_timeout_s)
    self.layout, self.subscriber, self.actor_index = layout, subscriber, int(actor_index)
    self.blocked_s = 0.0
    self.server_lost = False        # waiting for a lost server (then no final report)
    self.reconnects = 0
    self.retention = retention
    self.mark_interval_s = float(mark_interval_s)
    self._next_mark = time.monotonic()
    self._marks = None              # the helper thread reading the marker
    self._reading = None            # its pending read
    self._read_since = 0.0
    self._overflow_logged = 0

  def flush(self, should_stop):
    """Waits while too many items are unconfirmed: the replay's rate limiter holds them,
    or the server is gone (then waits for it, see `_wait_for_server`)."""
    start = last_refresh = time.monotonic()
    while True:
      try:
        self.writer.flush(timeout_ms=1000)
        break
      except reverb.errors.DeadlineExceededError:
        pass
      if should_stop():
        break
      # Blocked: the rate limiter holds inserts (or the server is gone). A learner that has
      # ended samples no more, so its `done` is looked for here too, every few seconds.
      if (self.subscriber is not None
          and time.monotonic() - last_refresh > _BLOCKED_REFRESH_S):
        self.subscriber.refresh(wait_s=0.2)
        last_refresh = time.monotonic()
        if self.subscriber.done:
          break
      try:
        replay_client.probe(self.client, self.replay_address, 10)
      except Exception as e:  # pylint: disable=broad-except  (gRPC errors vary)
        self._wait_for_server(e, should_stop)
    self.blocked_s += time.monotonic() - start
    if self.retention is not None:
      self._mark()

  def _mark(self, flush_timeout_ms=_MARK_FLUSH_MS):
    """The retention's step (see the class docstring): collects a marker read, or starts
    one after a flush that confirmed everything written (within `flush_timeout_ms`: else
    it is tried again a little later)."""
    if self._reading is not None:
      if not self._reading.done():
        if time.monotonic() - self._read_since > _MARK_READ_S:
          self._abandon_read()     # the items stay confirmed: a later read tags them
        return
      reading, self._reading = self._reading, None
      try:
        marker = reading.result()
      except Exception as e:  # pylint: disable=broad-except  (gRPC errors vary)
        logging.info("Actor %d: durability marker not read (%s).", self.actor_index,
                     errors.user_message(e))
        return
      self.retention.add(self.writer.take_kept())
      incarnation = self.retention.incarnation
      resend = self.retention.observe(marker)
      # A replay that does not checkpoint: no records are made (nor held until the next read).
      self.writer.keep_items = self.retention.active
      if not self.retention.active:
        self.writer.take_kept()
      if resend or (incarnation is not None and marker.incarnation != incarnation):
        logging.warning("Actor %d: the replay was restarted (restored up to epoch %d); "
                        "writing %d kept items again.", self.actor_index, marker.restored,
                        len(resend))
        self.retention.add(self.writer.resend(resend), resent=True)
        self._next_mark = time.monotonic()
      if self.retention.overflowed > self._overflow_logged:
        logging.warning("Actor %d: %d kept items dropped (over the bound of %d): lost if "
                        "the replay is lost before its next checkpoint.", self.actor_index,
                        self.retention.overflowed - self._overflow_logged,
                        self.retention.max_items)
        self._overflow_logged = self.retention.overflowed
      return
    if time.monotonic() < self._next_mark:
      return
    # A replay that does not checkpoint is asked again only now and then (and at once
    # after a restart, see `_wait_for_server`).
    self._next_mark = time.monotonic() + (self.mark_interval_s if self.retention.active
                                          else max(self.mark_interval_s, _IDLE_MARK_S))
    self.retention.add(self.writer.take_kept())
    try:
      self.writer.flush(timeout_ms=flush_timeout_ms, everything=True)
    except reverb.errors.DeadlineExceededError:
      # Not all confirmed yet (the rate limiter holds inserts, or the server is gone).
      self._next_mark = time.monotonic() + _MARK_RETRY_S
      return
    self.retention.confirm()
    if self._marks is None:
      self._marks = call_thread.CallThread(name="durability-marker")
    self._reading = self._marks.start(lambda: durability.read(self.client))
    self._read_since = time.monotonic()

  def _abandon_read(self):
    """Leaves a marker read that does not return (a sample begun on a server that went
    away can wait for ever) on its own thread; the next read gets a new one."""
    self._marks.close()
    self._marks = self._reading = None

  def _note_in_flight(self):
    """Tells the retention which kept items the lost server had not confirmed: the newest
    ones of each stream, as many as its writer still has pending. A marker read begun
    before is dropped: its marker must not be taken for the next server's."""
    if self._reading is not None:
      self._abandon_read()
    self.retention.add(self.writer.take_kept())
    untagged = self.retention.untagged()
    most = [0] * (self.writer.num_envs + 1)
    for record in untagged:
      most[record[0]] += 1
    need = self.writer.unconfirmed(most)
    flight = set()
    for record in reversed(untagged):
      if need[record[0]] > 0:
        flight.add(id(record))
        need[record[0]] -= 1
    self.retention.server_lost(lambda record: id(record) in flight)

  def close(self):
    if self._marks is not None:
      self._marks.close()
      self._marks = None

  def counters(self):
    """The retention's counters (empty without retention)."""
    return {} if self.retention is None else self.retention.counters()

  def _wait_for_server(self, error, should_stop):
    """The server stopped answering: waits for it with backoff (the writers reconnect by
    themselves); raises ReplayUnreachableError after `server_timeout_s`."""
    lost = time.monotonic()
    self.server_lost = True
    if self.retention is not None and self.retention.active:
      self._note_in_flight()
    logging.warning("Actor %d lost the replay server at %s (%s); waiting for it (giving up "
                    "after %.0f s).", self.actor_index, self.replay_address,
                    errors.user_message(error), self.server_timeout_s)
    info = replay_client.wait_for_replay(self.client, self.replay_address,
                                         self.server_timeout_s, should_stop=should_stop,
                                         since=lost)
    if info is None:
      return
    self.server_lost = False
    if self.layout is not None:
      try:
        replay_client.check_tables(info, self.layout, self.replay_address)
      except replay_client.ReplayMismatchError as e:
        raise errors.UserError(str(e)) from None
    self.reconnects += 1
    logging.warning("Replay server at %s answers again after %.0f s (replay holds %d items); "
                    "actor %d goes on.", self.replay_address, time.monotonic() - lost,
                    info[replay_layout.REPLAY_TABLE].current_size, self.actor_index)
    if self.retention is not None:
      # A restarted server: its marker read before anything new is written (what is
      # written before the actor knows of the restart would be resent twice).
      if self._reading is not None and not self._reading.done():
        self._abandon_read()     # begun on the lost server
      self._next_mark = time.monotonic()
      self._mark(flush_timeout_ms=10_000)
      if self._reading is not None:
        try:
          self._reading.result(timeout=10)
        except Exception:  # pylint: disable=broad-except  (timeout, or gRPC errors vary)
          pass
        self._mark()
