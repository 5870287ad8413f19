"""What an Ape-X actor keeps until the replay has made it durable, and what it resends to
a replay restarted from its checkpoint.

Reverb's writers resend to a restarted server only what the lost one had not confirmed;
what it had confirmed after its last checkpoint is gone with it. So an actor keeps the
items it wrote (`add`, opaque records: the writer's own form of an item) until the replay
says they are inside a completed checkpoint, and writes them again into a server that
replaced the one they went to.

The replay says so with its durability marker (`Marker`, published by
`runners/apex/durability.py` beside its checkpoints): `incarnation` (random, chosen at the
server's start), `epoch` (a counter, raised before and after each checkpoint), `durable`
(every item confirmed before the replay's epoch passed `durable` is inside a completed
checkpoint), `restored` (for a server started from a checkpoint: the `durable` of that
checkpoint, in the numbering of the server that wrote it; -1 if it started empty) and
`checkpointing` (false: the replay makes nothing durable, and nothing is kept).

The actor, single-threaded, calls in this order:
  add(records)      items written (not yet confirmed);
  confirm()         after a flush that confirmed everything added so far;
  observe(marker)   with a marker read after that confirmation: the confirmed items become
                    one batch tagged (lo, hi): `lo` the epoch of the previous marker (read
                    before any of them was confirmed), `hi` this marker's epoch (read after
                    all were). Batches with hi <= durable are dropped. On a new incarnation,
                    every kept record that may be missing from the new server is returned
                    to be written again (the caller writes it and adds it back with
                    `add(..., resent=True)`), the rest dropped;
  server_lost(in_flight)  when the server stops answering: `in_flight(record)` is true for
                    the records it had not confirmed (the writer's pending items), which
                    Reverb's writer itself sends to the server that answers next: those are
                    not resent if that server is a new one (they stay kept).

A batch that was confirmed by a server restored later can be in its checkpoint or not:
  hi <= restored                      in it (confirmed before the checkpoint began): dropped;
  lo > restored + 1                   not in it (confirmed after the checkpoint ended):
                                      resent, exactly once;
  otherwise                           confirmed while the checkpoint ran: resent, and
                                      counted in `maybe_duplicates` (never when
                                      the new server started empty, restored -1).
Records not yet in a tagged batch when the incarnation changes were confirmed after `lo`
= the last marker's epoch: the ones `server_lost` found unconfirmed are left to Reverb's
writer, the others were confirmed by the lost server and are classified as a batch (lo,
infinity). Without `server_lost` (the loss was not seen) they are all resent and counted
in `maybe_duplicates`. So no kept item is lost (but for one the lost server confirmed
between `server_lost` and its end), and duplicates are at most `maybe_duplicates`.

Bound: at most `max_items` records are kept; beyond it the oldest go first, counted in
`overflowed` (with a log line by the caller): they are then lost if the replay is lost
before its next checkpoint.
"""
import collections

Marker = collections.namedtuple(
    "Marker", ["incarnation", "epoch", "durable", "restored", "checkpointing"])


class Retention:
  """The kept records and their counters (see the module docstring)."""

  def __init__(self, max_items):
    self.max_items = int(max_items)
    if self.max_items < 1:
      raise ValueError("Retention.max_items must be >= 1, got %d." % self.max_items)
    self._pending = []        # added, not confirmed
    self._confirmed = []      # confirmed, not tagged yet
    self._batches = collections.deque()   # [lo, hi, records], oldest first
    self._kept = 0            # records in _batches
    self.incarnation = None
    self._epoch = -1          # the last marker's epoch (lo of the next batch)
    self.active = True        # false while the replay is not checkpointing
    self.retained = 0         # records added while active
    self.dropped_durable = 0  # dropped: inside a completed checkpoint
    self.resent = 0           # returned to be written again
    self.maybe_duplicates = 0  # of them, possibly held already by the new server
    self.overflowed = 0       # dropped by the bound
    self.left_to_writer = 0   # unconfirmed at a loss: sent again by Reverb's writer
    self._in_flight = None    # from server_lost, until the next marker

  @property
  def size(self):
    """Records kept now."""
    return len(self._pending) + len(self._confirmed) + self._kept

  def add(self, records, resent=False):
    """Records written (`resent`: written again, as `observe` returned them)."""
    if not self.active or not records:
      return
    self._pending.extend(records)
    if not resent:
      self.retained += len(records)
    self._bound()

  def untagged(self):
    """The records not in a tagged batch yet, oldest first."""
    return self._confirmed + self._pending

  def server_lost(self, in_flight):
    self._in_flight = in_flight

  def confirm(self):
    self._confirmed.extend(self._pending)
    self._pending = []

  def observe(self, marker):
    """Applies a marker read after the last `confirm`; returns the records to write
    again (counted in `resent`)."""
    in_flight, self._in_flight = self._in_flight, None
    if not marker.checkpointing:     # nothing will become durable: keep nothing
      self._clear()
      self.active = False
      self.incarnation, self._epoch = marker.incarnation, int(marker.epoch)
      return []
    self.active = True
    if self.incarnation is not None and marker.incarnation != self.incarnation:
      resend = self._replaced(int(marker.restored), in_flight)
    else:
      resend = []
      if self._confirmed:
        self._batches.append([self._epoch, int(marker.epoch), self._confirmed])
        self._kept += len(self._confirmed)
        self._confirmed = []
      while self._batches and self._batches[0][1] <= marker.durable:
        self.dropped_durable += len(self._batches[0][2])
        self._kept -= len(self._batches.popleft()[2])
    self.incarnation, self._epoch = marker.incarnation, int(marker.epoch)
    self._bound()
    return resend

  def _replaced(self, restored, in_flight):
    """A new server, restored up to `restored` of the old one's epochs: what to resend
    (the records Reverb's writer sends again stay kept, untagged)."""
    untagged, writer_sends = self.untagged(), []
    batches = list(self._batches)
    if in_flight is None:
      self.maybe_duplicates += len(untagged)
    else:
      writer_sends = [r for r in untagged if in_flight(r)]
      confirmed = [r for r in untagged if not in_flight(r)]
      batches.append([self._epoch, float("inf"), confirmed])
      untagged = []
    resend = []
    for lo, hi, records in batches:
      if hi <= restored:
        self.dropped_durable += len(records)
        continue
      if 0 <= restored and lo <= restored + 1:
        self.maybe_duplicates += len(records)
      resend.extend(records)
    resend.extend(untagged)
    self._pending, self._confirmed = writer_sends, []
    self.left_to_writer += len(writer_sends)
    self._batches.clear()
    self._kept = 0
    self.resent += len(resend)
    return resend

  def _bound(self):
    """Drops the oldest records beyond `max_items` (counted in `overflowed`)."""
    excess = self.size - self.max_items
    while excess > 0 and self._batches:
      records = self._batches[0][2]
      if len(records) <= excess:
        self._batches.popleft()
        drop = len(records)
      else:
        drop = excess
        del records[:drop]
      self._kept -= drop
      self.overflowed += drop
      excess -= drop
    for group in (self._confirmed, self._pending):
      if excess > 0:
        drop = min(excess, len(group))
        del group[:drop]
        self.overflowed += drop
        excess -= drop

  def _clear(self):
    self._pending, self._confirmed = [], []
    self._batches.clear()
    self._kept = 0

  def counters(self):
    return {"retained": self.retained, "dropped_durable": self.dropped_durable,
            "resent": self.resent, "maybe_duplicates": self.maybe_duplicates,
            "overflowed": self.overflowed, "left_to_writer": self.left_to_writer,
            "kept": self.size}
