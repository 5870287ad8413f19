"""Reaching the Ape-X replay server, and what its clients do when it is gone.

`wait_for_replay` retries an unreachable server with backoff (`ReplayRetry`), logging each
retry, and gives up with ReplayUnreachableError after a timeout; `check_replay` also checks
that the server is this run's replay (`check_tables`). Reverb's writers reconnect by
themselves after the server is restarted and resend what was not confirmed; calls without
a deadline of their own (sample, mutate_priorities, the dataset iterator) wait for the
server to come back, so they run on helper threads (`call_thread.CallThread`,
`sampling.BackgroundSampler`) that the caller waits for only as long as it chooses.
`Client.insert` is not used: its writer spins a core while the server is down
(`insert_one` uses a TrajectoryWriter instead).
"""
import socket
import time

from absl import logging
import reverb
import tensorflow as tf
import tree

from paac_tf import errors
from paac_tf.runners.apex import replay_layout
from paac_tf.bookkeeping import checks


class ReplayMismatchError(RuntimeError):
  """The server at the address is not this run's Ape-X replay."""


class ReplayUnreachableError(TimeoutError):
  """The replay server did not answer for `server_timeout_s`: the process gives up."""


class ReplayUnavailableError(RuntimeError):
  """A call to the replay server failed or did not answer in time (the caller then waits
  for the server with `wait_for_replay`)."""


# Exit status of an actor or learner that gave up on the replay server.
EXIT_REPLAY_UNREACHABLE = 3


@checks.configurable(module="apex")
class ReplayRetry:
  """How actors and learner wait for an unreachable replay server.

  Args:
    initial_s, max_s: the wait after the k-th failed attempt is
      min(max_s, initial_s * 2 ** (k - 1)): 1, 2, 4, ..., 30, 30, ... seconds.
    probe_timeout_s: deadline of each attempt (a `server_info` call), in whole seconds.
  """

  def __init__(self, initial_s: checks.Positive = 1.0, max_s: checks.Positive = 30.0,
               probe_timeout_s: checks.Positive = 10):
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
          "paac_tf.commands.apex_replay --port=PORT --gin_file=...)?" % (
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
  missing = [t for t in (replay_layout.REPLAY_TABLE, replay_layout.WEIGHTS_TABLE,
                          replay_layout.STATS_TABLE) if t not in info]
  if missing:
    raise ReplayMismatchError("The server at %s has no table(s) %s: it is not an Ape-X replay "
                              "(python -m paac_tf.commands.apex_replay)." % (
                                  address, ", ".join(missing)))
  served = info[replay_layout.REPLAY_TABLE].signature
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
