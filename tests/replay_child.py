"""Replay servers in child processes, for tests that lose one while their own threads write
to it (tests/test_apex_capacity.py, tests/test_apex_retention.py).

A server is lost by SIGKILL, as a host is lost: stopping an in-process `reverb.Server`
while a writer of the same process streams to it can abort the whole pytest process
inside Reverb ("Fatal Python error: Aborted", seen once in the fast suite on a loaded
machine), and a killed process is the real failure anyway. `ReplayChildren.start` runs
a program that serves the Ape-X tables (`python -m tools.apex.synthetic serve ...` or
`python -m paac_tf.commands.apex_replay ...`) and returns once it answers; `kill_all`,
at the test's end by the `replay_children` fixture (tests/conftest.py), leaves no child
behind whatever happened (and `_DIE_WITH_PARENT` none after an aborted pytest).
"""
import os
import signal
import socket
import subprocess
import sys
import time

import reverb

from paac_tf.runners.apex import durability
from paac_tf.runners.apex import replay_layout

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The child's first step, then it becomes `python -m ARGS...` (the same pid): it is
# SIGKILLed when the thread of the test's process that started it ends, whatever way
# (Linux's PR_SET_PDEATHSIG, kept across exec), so that not even an aborted pytest leaves
# a server behind; a parent already gone by then (its pid is argv[1]) ends it at once.
_DIE_WITH_PARENT = (
    "import ctypes, os, signal, sys; "
    "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL); "    # 1: PR_SET_PDEATHSIG
    "os.getppid() == int(sys.argv[1]) or os._exit(1); "
    "os.execv(sys.executable, [sys.executable, '-m'] + sys.argv[2:])")


def free_port():
  with socket.socket() as sock:
    sock.bind(("127.0.0.1", 0))
    return sock.getsockname()[1]


def synthetic_serve(port, layout_name, capacity, checkpoint_dir, checkpoint_interval_s):
  """The module and arguments of tools/apex/synthetic.py's `serve` (learning_starts 1, no
  rate limiting)."""
  return ["tools.apex.synthetic", "serve", "port=%d" % port, "layout_name=%s" % layout_name,
          "capacity=%d" % capacity, "checkpoint_dir=%s" % checkpoint_dir,
          "checkpoint_interval_s=%s" % float(checkpoint_interval_s)]


class ReplayChildren:
  """Replay servers started as child processes (each in a session of its own, its output
  in `log_dir`), killed by `kill` or, all that are left, by `kill_all`."""

  def __init__(self, log_dir):
    self.log_dir = str(log_dir)
    self.started = []
    self.incarnations = {}    # address: the durability marker of the last server started

  def start(self, args, address, timeout_s=120.0):
    """Runs `python -m *args` (through `_DIE_WITH_PARENT`) and waits (at most `timeout_s`)
    until the server at `address` answers with a durability marker of its own
    (`replay.start_server` publishes it once the tables are restored; a server restored
    from a checkpoint holds the lost one's marker until then); returns the process."""
    log_path = os.path.join(self.log_dir, "replay_child_%d.log" % len(self.started))
    with open(log_path, "wb") as log:
      process = subprocess.Popen(
          [sys.executable, "-c", _DIE_WITH_PARENT, str(os.getpid()), *args], cwd=REPO,
          stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), start_new_session=True)
    process.log_path = log_path
    self.started.append(process)
    client = reverb.Client(address)
    deadline = time.monotonic() + float(timeout_s)
    while True:
      if process.poll() is not None:
        raise AssertionError("The replay child exited (%s) before serving:\n%s" % (
            process.returncode, _tail(log_path)))
      try:
        if client.server_info(timeout=2)[replay_layout.MARKER_TABLE].current_size:
          incarnation = durability.read(client).incarnation
          if incarnation != self.incarnations.get(address):
            self.incarnations[address] = incarnation
            return process
      except Exception:  # pylint: disable=broad-except  (not listening yet: gRPC errors vary)
        pass
      if time.monotonic() > deadline:
        raise AssertionError("The replay child did not serve at %s within %.0f s:\n%s" % (
            address, timeout_s, _tail(log_path)))
      time.sleep(0.2)

  def kill(self, process):
    """SIGKILLs `process` (and anything it started) and reaps it."""
    if process.poll() is None:
      try:
        os.killpg(process.pid, signal.SIGKILL)
      except ProcessLookupError:
        pass
    process.wait(timeout=30)

  def kill_all(self):
    for process in self.started:
      self.kill(process)


def _tail(path, chars=3000):
  with open(path, "rb") as f:
    return f.read().decode("utf-8", "replace")[-chars:]
