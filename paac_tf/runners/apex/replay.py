"""Ape-X's replay: one Reverb server with the replay, weights and actor-stats tables.

Run on its own by `python -m paac_tf.commands.apex_replay` (`serve`), or inside the one-machine
launcher (`start_server`).

Tables (names in `replay_layout.py`):
  replay       prioritized transitions: `Prioritized(priority_exponent)` sampler (alpha 0.6),
               `Fifo` remover (oldest evicted first), `capacity` items, and a
               `SampleToInsertRatio` rate limiter: no sampling before `learning_starts`
               items, then samples per insert kept at `samples_per_insert` within
               +- `error_buffer` samples (inserts block when the learner falls behind,
               sampling blocks when it runs ahead). Items are validated against the
               layout's signature (`replay_layout.ReplayLayout`).
  weights      the learner's latest weights: max_size 1, never consumed by sampling.
  actor_stats  actors' reports, drained by the learner (FIFO, each sampled once; the
               oldest are dropped if nobody drains them).
  durability   the durability marker: max_size 1, what the checkpoints hold, for the
               actors' retention (`durability.py`, `retention.py`).

Networking: Reverb 0.14's `Server` takes a port only and listens on all interfaces
(gRPC address "[::]:port", IPv4 and IPv6); it cannot be bound to 127.0.0.1 or any one
address, and it has no authentication. Local runs only connect to 127.0.0.1, but the port
is reachable from the network: on a shared network, firewall it. Multi-host runs need
exactly this (actors and learner connect to HOST:PORT).

Checkpoints: with --checkpoint_dir the server restores the newest checkpoint found there at
start (Reverb's DefaultCheckpointer, `reverb.checkpointers`), writes one every
--checkpoint_interval_s seconds (0: never periodically) and one at a clean shutdown
(SIGINT/SIGTERM). Without it, nothing is written to disk. A Reverb checkpoint holds the
whole table contents (measured sizes and times per config: results/apex_capacity/README.md).
A checkpoint that cannot be restored (truncated, or tables of another configuration) is
moved aside to <checkpoint_dir>.unreadable-<time> with an ERROR line saying why, and the
replay starts empty; so does a missing one (an INFO line). Each checkpoint is a cycle of the
durability marker (`durability.checkpoint`): actors keep what they wrote until a completed
checkpoint holds it and write it again into a server restarted from an older one
(`retention.py`); without periodic checkpoints the marker says so and actors keep nothing.

Restarts: a server that dies (even SIGKILL) can be started again with the same command on
the same port; actors and learner wait for it (`replay_client.wait_for_replay`, up to their
`server_timeout_s`) and go on with it: restored from the newest checkpoint in
--checkpoint_dir (a crash loses what came after it: set --checkpoint_interval_s), or empty
(the learner then waits for `learning_starts` new transitions).

Reverb's line: "[reverb/cc/client.cc:165] Sampler and server are owned by the same process
(PID) so Table T is accessed directly without gRPC." Reverb 0.14 prints it to stderr
(std::clog) when a sampler is made in the process that owns the server, at the 1st, 2nd,
4th, 8th, ... such sampler (`REVERB_LOG_EVERY_POW_2`, one count in its Python client's
library and one in its TensorFlow ops'): n samplers print floor(log2 n) + 1 lines. Its
INFO level is not a level (no flag or environment variable turns it off without Reverb's
errors), so what is ours is the number of samplers. Only the launcher's process samples
its own server: the learner's replay pipeline (`sampling.BackgroundSampler` makes none
before the replay holds `learning_starts` items, where it made one per second) and its
drains of the actors' reports (one sampler per drain, about one drain a second: a sampler
made for the reports present takes exactly those, where a long-lived one takes the next
report out of the table before the drain that counts it, lost if the run ends first).
Measured on the 2-core machine (2026-12-07): a whole `apex_cartpole.gin` run (its target
reached after 2-3 minutes) printed 12 lines (5 for 26 pipelines, 7 for 120 drains), now 8
(1 pipeline, 7 for 102 drains); with `train_eval.total_steps=20000`, 7 then 5. Count them
with `python -m paac_tf.train --gin_file=apex_cartpole.gin 2>&1 | grep -c "Sampler and"`.
The other processes (actors, the multi-host learner, the replay program, Ray's roles)
sample over gRPC or read nothing back (`keep_serving` keeps the marker `start_server`
published), so they print none, except one line from a server that restores a checkpoint
(its marker is read back, `durability.start`).
"""
import os
import time

from absl import logging
import reverb
from reverb.platform.default import checkpointers

from paac_tf.envs import environment
from paac_tf.runners.apex import durability
from paac_tf.runners.apex import processes
from paac_tf.runners.apex import replay_layout
from paac_tf.bookkeeping import checks
from paac_tf.bookkeeping import signals

# Default of the stats table: ~1 report per actor per second, so hours of slack.
_STATS_CAPACITY = 100_000
_NETWORK_WARNING = (
    "Reverb listens on all network interfaces ([::]:%d; Reverb 0.14 cannot bind one "
    "address) and has no authentication: firewall this port on untrusted networks.")


@checks.configurable(module="apex")
def apex_replay(capacity: checks.Count = 2_000_000, priority_exponent: checks.NonNegative = 0.6,
                learning_starts: checks.NonNegativeInt = 50_000,
                samples_per_insert: checks.Positive = 1.0,
                samples_per_insert_tolerance: checks.NonNegative = 0.1,
                error_buffer: checks.OptionalPositive = None):
  """The replay table's settings.

  Args:
    capacity: transitions kept (FIFO eviction beyond). See the memory note in the
      configs: on Atari with single frames, a stored transition costs about one
      compressed 84x84 frame plus item overhead.
    priority_exponent: alpha of P(i) = p_i^alpha / sum p^alpha.
    learning_starts: transitions in replay before the learner may sample.
    samples_per_insert: target number of times each transition is sampled, i.e. learner
      batch size x learner steps / transitions inserted.
    samples_per_insert_tolerance: the band, as a fraction of
      learning_starts * samples_per_insert samples (as Acme); ignored if error_buffer.
    error_buffer: the band in samples: the learner may run this many samples ahead of or
      behind the target before sampling or inserting blocks.
  """
  if error_buffer is None:
    error_buffer = learning_starts * samples_per_insert * samples_per_insert_tolerance
  error_buffer = max(float(error_buffer), 2.0 * max(1.0, float(samples_per_insert)))
  return {"capacity": int(capacity), "priority_exponent": float(priority_exponent),
          "learning_starts": int(learning_starts),
          "samples_per_insert": float(samples_per_insert), "error_buffer": error_buffer}


def make_tables(layout, settings=None, extra_tables=()):
  """The four tables of an Ape-X Reverb server (see the module docstring), then
  `extra_tables` (`reverb.Table`s a measurement adds, e.g. tools/apex/audit.py's)."""
  settings = settings or apex_replay()
  limiter = reverb.rate_limiters.SampleToInsertRatio(
      samples_per_insert=settings["samples_per_insert"],
      min_size_to_sample=max(1, settings["learning_starts"]),
      error_buffer=settings["error_buffer"])
  replay = reverb.Table(
      name=replay_layout.REPLAY_TABLE,
      sampler=reverb.selectors.Prioritized(settings["priority_exponent"]),
      remover=reverb.selectors.Fifo(),
      max_size=settings["capacity"],
      rate_limiter=limiter,
      signature=layout.item_signature())
  weights = reverb.Table(
      name=replay_layout.WEIGHTS_TABLE, sampler=reverb.selectors.Fifo(),
      remover=reverb.selectors.Fifo(), max_size=1,
      rate_limiter=reverb.rate_limiters.MinSize(1))
  stats = reverb.Table(
      name=replay_layout.STATS_TABLE, sampler=reverb.selectors.Fifo(),
      remover=reverb.selectors.Fifo(), max_size=_STATS_CAPACITY, max_times_sampled=1,
      rate_limiter=reverb.rate_limiters.MinSize(1))
  return [replay, weights, stats, durability.make_table()] + list(extra_tables)


class _NoCheckpointer:
  """A server without checkpoints (Reverb's default would create a temporary directory)."""

  def internal_checkpointer(self):
    return None


def start_server(layout, port=None, checkpoint_dir=None, settings=None,
                 checkpoint_interval_s=0.0, extra_tables=()):
  """Starts the Reverb server and publishes its durability marker; returns it
  (`server.port`, `server.stop()`; `server.durability_marker`: the marker published).

  Args:
    layout: the `replay_layout.ReplayLayout` of the run (gives the replay signature).
    port: a free port, or None to pick one.
    checkpoint_dir: restore from / checkpoint into this directory (None: no checkpoints).
    checkpoint_interval_s: the period `keep_serving` will checkpoint at (0: not
      periodically); the marker tells the actors (nothing is kept for a replay that does
      not checkpoint periodically).
    extra_tables: more tables beside Ape-X's (`make_tables`), checkpointed with them.
  """
  if port is not None:
    processes.check_port_free(port)
  restoring = False
  if checkpoint_dir:
    os.makedirs(checkpoint_dir, exist_ok=True)
    restoring = bool(os.listdir(checkpoint_dir))
    if not restoring:
      logging.info("No replay checkpoint in %s: the replay starts empty.", checkpoint_dir)
  try:
    server = _server(layout, port, checkpoint_dir, settings, extra_tables)
  except RuntimeError as e:
    if not restoring:
      raise
    # An unreadable checkpoint (truncated by a crash, or tables of another configuration):
    # the run goes on with an empty replay, the checkpoint kept aside for a look.
    aside = set_aside(checkpoint_dir)
    logging.error("The replay checkpoint in %s cannot be restored (%s); moved to %s. The "
                  "replay starts empty.", checkpoint_dir, e, aside)
    restoring = False
    server = _server(layout, port, checkpoint_dir, settings, extra_tables)
  logging.info("Reverb server on port %d: %s, replay %s", server.port, layout,
               settings or apex_replay())
  client = reverb.Client("127.0.0.1:%d" % server.port)
  marker = durability.start(client, bool(checkpoint_dir) and checkpoint_interval_s > 0)
  logging.info("Durability marker: %s", marker)
  server.durability_marker = marker   # for `keep_serving`, which must not read it back
  if restoring:
    info = client.server_info(timeout=60)
    logging.info("Replay restored from the checkpoint in %s: %d transitions, %d weights "
                 "item(s), %d actor reports.", checkpoint_dir,
                 info[replay_layout.REPLAY_TABLE].current_size,
                 info[replay_layout.WEIGHTS_TABLE].current_size,
                 info[replay_layout.STATS_TABLE].current_size)
  logging.warning(_NETWORK_WARNING, server.port)
  return server


def _server(layout, port, checkpoint_dir, settings, extra_tables):
  if checkpoint_dir:
    os.makedirs(checkpoint_dir, exist_ok=True)
    checkpointer = checkpointers.DefaultCheckpointer(os.path.abspath(checkpoint_dir))
  else:
    checkpointer = _NoCheckpointer()
  return reverb.Server(tables=make_tables(layout, settings, extra_tables), port=port,
                       checkpointer=checkpointer)


def set_aside(checkpoint_dir):
  """Renames `checkpoint_dir` to `<checkpoint_dir>.unreadable-<time>` (a new name each
  time); returns the new name."""
  aside = "%s.unreadable-%s" % (os.path.normpath(checkpoint_dir), time.strftime("%Y%m%d-%H%M%S"))
  n = 1
  while os.path.exists(aside + ("" if n == 1 else "-%d" % n)):
    n += 1
  aside += "" if n == 1 else "-%d" % n
  os.replace(checkpoint_dir, aside)
  return aside


def layout_for(env_name):
  """The ReplayLayout of `env_name` under the current gin configuration."""
  return replay_layout.ReplayLayout(*environment.specs(env_name))


def serve(port, env_name, checkpoint_dir=None, checkpoint_interval_s=0.0):
  """Runs a server until SIGINT/SIGTERM; checkpoints on the way out if configured."""
  server = start_server(layout_for(env_name), port=port, checkpoint_dir=checkpoint_dir,
                        checkpoint_interval_s=checkpoint_interval_s)
  keep_serving(server, checkpoint_dir, checkpoint_interval_s)


def keep_serving(server, checkpoint_dir=None, checkpoint_interval_s=0.0):
  """Keeps `server` (from `start_server`) running until SIGINT/SIGTERM, checkpointing it
  every `checkpoint_interval_s` seconds (0: never periodically) and, with a
  `checkpoint_dir`, on the way out (each a cycle of its durability marker,
  `durability.checkpoint`); then stops it. Also used by tools/apex/synthetic.py."""
  stop = signals.StopRequest(message="%s received: stopping the replay.")
  client = reverb.Client("127.0.0.1:%d" % server.port)
  next_checkpoint = time.monotonic() + checkpoint_interval_s if checkpoint_interval_s else None
  # The marker `start_server` published, not read back (a sampler in the server's own
  # process: Reverb's line, see the module docstring).
  marker = server.durability_marker
  try:
    while not stop.wait(1.0):
      if next_checkpoint is not None and time.monotonic() >= next_checkpoint:
        marker, path = durability.checkpoint(client, marker)
        logging.info("Replay checkpoint: %s (%s)", path, marker)
        next_checkpoint = time.monotonic() + checkpoint_interval_s
    if checkpoint_dir:
      marker, path = durability.checkpoint(client, marker)
      logging.info("Replay checkpoint: %s (%s)", path, marker)
  finally:
    server.stop()
    stop.restore()
    logging.info("Replay server stopped.")
