"""What the Ape-X processes need about each other and the host: a free port for the replay
server, whether the launcher that started a process is still there, a fast exit with the
status that says why."""
import os
import socket
import sys

from absl import logging

from paac_tf import errors
from paac_tf.runners.apex import replay_client


def check_port_free(port):
  """Raises UserError if something already listens on `port` (any interface).

  gRPC sets SO_REUSEPORT, so a second Reverb server on a busy port would start and
  silently share it; a bind without SO_REUSEPORT detects the conflict. SO_REUSEADDR (which
  gRPC sets too) lets connections of a previous server in TIME_WAIT pass.
  """
  port = int(port)
  if not 0 < port < 65536:
    raise errors.UserError("Invalid port %d." % port)
  for family, address in ((socket.AF_INET6, "::"), (socket.AF_INET, "0.0.0.0")):
    try:
      sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError:
      continue   # no IPv6 (or IPv4) on this host
    try:
      sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
      sock.bind((address, port))
    except OSError as e:
      raise errors.UserError("Port %d is in use (%s); choose another --port." % (
          port, e.strerror or e)) from None
    finally:
      sock.close()


def parent_alive(parent_pid):
  """False once the process that started us has exited (we were re-parented)."""
  return not parent_pid or os.getppid() == int(parent_pid)


def run_then_exit(fn):
  """Runs `fn()`, then ends the process at once (`errors.exit_now`): status 0, or
  EXIT_REPLAY_UNREACHABLE after one `error: ...` line if `fn` gave up on the replay server
  (ReplayUnreachableError). Other errors propagate (the entry points report them:
  `errors.parse_flags`)."""
  status = 0
  try:
    fn()
  except replay_client.ReplayUnreachableError as e:
    logging.flush()
    sys.stderr.write("error: %s\n" % errors.user_message(e))
    status = replay_client.EXIT_REPLAY_UNREACHABLE
  errors.exit_now(status)   # everything is closed (and saved): skip the slow teardown
