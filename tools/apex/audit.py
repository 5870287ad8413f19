"""An exact count of the synthetic actors' items a replay holds: lost and duplicated ids.

Measurements only (tools/apex/synthetic.py, tools/apex/scale.py). Each synthetic item has an
int64 id (`item_id`: its actor's index and its sequence number in that actor). The replay
server gets one more table, `AUDIT_TABLE` (`audit_table`, given to `replay.start_server`
as an extra table, so its checkpoints hold it and a restarted server restores it), and
every replay item is written with an audit item that references the same writer step's
`id` column (`replay_layout.TransitionWriter(audit_table=...)`; the retention's records
carry the id, so a resent item has its original id). At the end, `drain` takes every
audit item out (sampled once, then removed) and `counts` compares the ids held with the
ids created: exactly which were lost and which are held more than once.

`python -m tools.apex.audit drain ADDRESS OUT.json`: drains the audit table at ADDRESS and
writes {'ids': [...], 'replay_size': n} (the replay table's size before the drain).
"""
import collections
import json
import sys
import time

AUDIT_TABLE = "audit"
AUDIT_CAPACITY = 50_000_000   # far above the items of a measurement: nothing is evicted
_SEQUENCE_BITS = 32


def item_id(actor, sequence):
  """The id of item `sequence` (0, 1, ...) of actor `actor`."""
  return (int(actor) << _SEQUENCE_BITS) | int(sequence)


def split_id(value):
  """(actor, sequence) of an `item_id`."""
  return int(value) >> _SEQUENCE_BITS, int(value) & ((1 << _SEQUENCE_BITS) - 1)


def audit_table():
  """The audit table: FIFO, each item sampled once (then removed), never evicted."""
  import reverb  # pylint: disable=import-outside-toplevel  (the counts need no Reverb)
  return reverb.Table(
      name=AUDIT_TABLE, sampler=reverb.selectors.Fifo(), remover=reverb.selectors.Fifo(),
      max_size=AUDIT_CAPACITY, max_times_sampled=1,
      rate_limiter=reverb.rate_limiters.MinSize(1))


def drain(client, timeout_s=600.0, batch=10_000):
  """Every id in the audit table, taken out (each sampled once, so removed). Samples only
  what the table holds (a sample of an empty table would block); raises TimeoutError
  after `timeout_s`."""
  ids = []
  deadline = time.monotonic() + float(timeout_s)
  while True:
    size = client.server_info(timeout=60)[AUDIT_TABLE].current_size
    if size == 0:
      return ids
    if time.monotonic() > deadline:
      raise TimeoutError("The audit table still holds %d items after %.0f s." % (
          size, timeout_s))
    for sample in client.sample(AUDIT_TABLE, num_samples=min(size, batch),
                                emit_timesteps=False):
      ids.append(int(sample.data[0]))


def counts(created, held):
  """The exact effect of a run on its items. `created`: {actor: items created} (their ids
  are `item_id(actor, 0 .. n-1)`); `held`: the ids drained, with repeats. Returns
  {'created', 'held', 'distinct_held', 'lost', 'duplicates', 'unknown'} and 'lost_ids'
  (sorted), 'duplicate_ids' ({id: extra copies})."""
  held_counts = collections.Counter(int(i) for i in held)
  created_ids = {item_id(a, s) for a, n in created.items() for s in range(int(n))}
  lost = sorted(created_ids - held_counts.keys())
  extra = {i: c - 1 for i, c in held_counts.items() if c > 1}
  return {"created": len(created_ids), "held": sum(held_counts.values()),
          "distinct_held": len(held_counts), "lost": len(lost),
          "duplicates": sum(extra.values()),
          "unknown": len(held_counts.keys() - created_ids),
          "lost_ids": lost, "duplicate_ids": extra}


def created_at(timeline, sequence):
  """When item `sequence` of an actor was created, from its `timeline` [(time, items
  created by then), ...] (ascending): the first reading that counts it (None: after the
  last reading)."""
  for t, items in timeline:
    if items > sequence:
      return t
  return None


def classify(ids, timelines, cut, restored_at):
  """Lost (or duplicated) `ids` by when they were created relative to a replay loss:
  {'before_cut', 'during_outage', 'after_restore', 'unknown_time'} counts, with
  `timelines` {actor: timeline} (`created_at`); times are time.time() seconds."""
  out = collections.Counter({"before_cut": 0, "during_outage": 0, "after_restore": 0,
                             "unknown_time": 0})
  for value in ids:
    actor, sequence = split_id(value)
    t = created_at(timelines.get(actor, ()), sequence)
    key = ("unknown_time" if t is None else "before_cut" if t < cut else
           "during_outage" if t < restored_at else "after_restore")
    out[key] += 1
  return dict(out)


def main(argv):
  if len(argv) != 4 or argv[1] != "drain":
    print("error: usage: python -m tools.apex.audit drain ADDRESS OUT.json", file=sys.stderr)
    return 2
  # Lazy: apex_scale_ray's driver imports this module and needs neither Reverb nor TF.
  import reverb  # pylint: disable=import-outside-toplevel  (lazy, as above)
  from paac_tf.runners.apex import replay_layout  # pylint: disable=import-outside-toplevel  (lazy)
  client = reverb.Client(argv[2])
  replay_size = client.server_info(timeout=60)[replay_layout.REPLAY_TABLE].current_size
  ids = drain(client)
  with open(argv[3], "w") as f:
    json.dump({"ids": ids, "replay_size": int(replay_size)}, f)
  print("drained %d audit items (replay table: %d)" % (len(ids), replay_size), flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
