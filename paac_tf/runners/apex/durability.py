"""The replay's durability marker: what its checkpoints hold, for the actors' retention
(`runners/apex/retention.py`).

The marker (`retention.Marker`) is the one item of the replay server's MARKER_TABLE (max
size 1, like the weights table; it is inside the server's checkpoints with the replay):
  incarnation    random int64 chosen when the server starts;
  epoch          a counter; each checkpoint cycle (`checkpoint`) publishes epoch + 1,
                 checkpoints, then publishes epoch + 2 with durable = the epoch before the
                 cycle: every item confirmed before the first publication is inside that
                 checkpoint;
  durable        see epoch (-1: nothing yet);
  restored       for a server started from a checkpoint: R - 1 where R is the epoch of the
                 marker found in it (the one published just before that checkpoint), i.e.
                 the old server's `durable` for that checkpoint; -1 if the server started
                 empty. The epoch then continues at R + 3, above anything the old server
                 published after that checkpoint (R + 1, and R + 2 if it had begun the next
                 one, which it had not completed);
  checkpointing  whether the server checkpoints periodically (if not, actors keep nothing).
"""
import random

import numpy as np
import reverb

from paac_tf.runners.apex import replay_client
from paac_tf.runners.apex import replay_layout
from paac_tf.runners.apex import retention


def make_table():
  """The marker's table (one item, sampled without being consumed)."""
  return reverb.Table(
      name=replay_layout.MARKER_TABLE, sampler=reverb.selectors.Fifo(),
      remover=reverb.selectors.Fifo(), max_size=1,
      rate_limiter=reverb.rate_limiters.MinSize(1))


def publish(client, marker, timeout_s=60.0):
  """Inserts `marker` as the table's item; raises ReplayUnavailableError if the server
  does not confirm it within `timeout_s`."""
  data = {"incarnation": np.int64(marker.incarnation), "epoch": np.int64(marker.epoch),
          "durable": np.int64(marker.durable), "restored": np.int64(marker.restored),
          "checkpointing": np.bool_(marker.checkpointing)}
  pending = replay_client.insert_one(client, data, replay_layout.MARKER_TABLE,
                                     timeout_s=timeout_s)
  if pending is not None:
    pending.close()
    raise replay_client.ReplayUnavailableError(
        "The replay did not confirm its durability marker within %.0f s." % timeout_s)
  return marker


def read(client):
  """The published marker (blocks while the table is empty or the server is gone: call
  it on a helper thread, e.g. `call_thread.CallThread`, where that matters)."""
  flat = list(next(client.sample(replay_layout.MARKER_TABLE, 1,
                                 emit_timesteps=False)).data)
  # Columns in the flattened order of the published dict (sorted keys).
  values = dict(zip(sorted(retention.Marker._fields), flat))
  return retention.Marker(*(
      (bool if name == "checkpointing" else int)(np.asarray(values[name]).reshape(-1)[0])
      for name in retention.Marker._fields))


def start(client, checkpointing):
  """Publishes a new server's first marker: a new incarnation, continuing above the marker
  restored from a checkpoint if there is one (see the module docstring)."""
  info = client.server_info(timeout=60)
  restored, epoch = -1, 0
  if info[replay_layout.MARKER_TABLE].current_size > 0:
    old = read(client)
    restored, epoch = old.epoch - 1, old.epoch + 3
  incarnation = random.SystemRandom().getrandbits(63)
  return publish(client, retention.Marker(incarnation, epoch, -1, restored,
                                          bool(checkpointing)))


def checkpoint(client, marker):
  """One checkpoint cycle (see the module docstring); returns (the new marker, the
  checkpoint's path)."""
  before = marker.epoch
  marker = publish(client, marker._replace(epoch=before + 1))
  path = client.checkpoint()
  return publish(client, marker._replace(epoch=before + 2, durable=before)), path
