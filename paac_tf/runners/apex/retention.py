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
                    to be written again (and is kept again, as added), the rest dropped.

A batch that was confirmed by a server restored later can be in its checkpoint or not:
  hi <= restored                      in it (confirmed before the checkpoint began): dropped;
  lo > restored + 1                   not in it (confirmed after the checkpoint ended):
                                      resent, exactly once;
  otherwise                           confirmed while the checkpoint ran: resent, and
                                      counted in `maybe_duplicates` (never when
                                      the new server started empty, restored -1).
Records not yet in a tagged batch when the incarnation changes (confirmed by the lost
server, or by the new one after Reverb's writer resent them: one cannot tell) are resent
and counted in `maybe_duplicates` too. So no kept item is lost, and duplicates are at most
`maybe_duplicates`.

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

  @property
  def size(self):
    """Records kept now."""
    return len(self._pending) + len(self._confirmed) + self._kept

  def add(self, records):
    if not self.active or not records:
      return
    self._pending.extend(records)
    self.retained += len(records)
    self._bound()

  def confirm(self):
    self._confirmed.extend(self._pending)
    self._pending = []

  def observe(self, marker):
    """Applies a marker read after the last `confirm`; returns the records to write
    again (already counted and kept again)."""
    if not marker.checkpointing:     # nothing will become durable: keep nothing
      self._clear()
      self.active = False
      self.incarnation, self._epoch = marker.incarnation, int(marker.epoch)
      return []
    self.active = True
    if self.incarnation is not None and marker.incarnation != self.incarnation:
      resend = self._replaced(int(marker.restored))
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
    self._pending.extend(resend)
    self._bound()
    return resend

  def _replaced(self, restored):
    """A new server, restored up to `restored` of the old one's epochs: what to resend."""
    resend = []
    for lo, hi, records in self._batches:
      if hi <= restored:
        self.dropped_durable += len(records)
        continue
      if 0 <= restored and lo <= restored + 1:
        self.maybe_duplicates += len(records)
      resend.extend(records)
    untagged = self._confirmed + self._pending
    self.maybe_duplicates += len(untagged)
    resend.extend(untagged)
    self._pending, self._confirmed = [], []
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
            "overflowed": self.overflowed, "kept": self.size}
