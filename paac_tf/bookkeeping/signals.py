"""SIGINT / SIGTERM: ask a run to stop at its next check, and keep the run's children out
of the signals that a terminal, Kubernetes, Slurm, systemd or `docker stop` send.

- `StopRequest`: handlers that only note the signal (`requested`, `signal_name`); the
  loops check it between updates and at each phase of their start. A second signal sets
  `hurry` (what is optional, the final export, is skipped; the checkpoint is still written
  whole): no signal ever interrupts a write.
- `install_for_process()`: the entry point (`python -m paac_tf.train`) installs the
  process's StopRequest before any heavy import, so that a signal during start-up
  (imports, configuration, environment workers, tracing) is honoured too; the loops and
  launchers then use that one (`stop_on_signals`), or install one for their own duration
  when called from Python (`paac_tf.train` in a notebook). Until the run begins to make
  things (`begin_run()`: its directory, environments, model), a signal there ends the
  process at once (`before_run`): nothing exists yet, and the imports alone take seconds.
- `children_shielded()`: child processes started inside it (the environment workers'
  fork server, a Ray started for the run) begin with SIGINT and SIGTERM blocked, so that
  a signal to the whole process group does not kill them; their parent stops them.
"""
import contextlib
import signal
import threading

FINISH_UPDATE = ("%s received: stopping after the current update (or start-up step), saving a "
                 "checkpoint once the model exists, exiting.")
HURRY = ("%s received again: the checkpoint is still written whole; what is left after it "
         "(the final export) is skipped.")
ALREADY_STOPPING = "%s received again: already stopping."
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

_process_stop = None   # the StopRequest of install_for_process, or of an enclosing block


class StopRequest:
  """Installs handlers that set `requested` (and `hurry` on a second signal).

  Args:
    signals: the signals that request the stop.
    ignore_sigint: ignore SIGINT instead (a process that its launcher manages: the
      terminal's Ctrl-C reaches the whole process group, and the launcher decides).
    message: logged (warning) at the first signal; %s is the signal's name.
    hurry_message: logged at later signals; %s is the signal's name.
    before_run: callable(signal name) that ends the process, called for a first signal that
      comes before `begin_run()` (see `install_for_process`); None: such a signal is noted.
  """

  def __init__(self, signals=STOP_SIGNALS, ignore_sigint=False, message=FINISH_UPDATE,
               hurry_message=ALREADY_STOPPING, before_run=None):
    self.requested = False
    self._before_run = before_run
    self.hurry = False
    self.signal_name = None       # of the first signal
    self._message = message
    self._hurry_message = hurry_message
    self._event = threading.Event()
    self._previous = {}
    self._handlers = {sig: self._handle for sig in signals}
    if ignore_sigint:
      self._handlers[signal.SIGINT] = signal.SIG_IGN
    self.reinstall()

  def reinstall(self):
    """(Re)installs the handlers, e.g. after a library replaced them; keeps the state."""
    for sig, handler in self._handlers.items():
      try:
        previous = signal.signal(sig, handler)
      except ValueError:  # not the main thread
        continue
      self._previous.setdefault(sig, previous)

  def begin_run(self):
    """The run begins to make things: from now on a signal is only noted (see above)."""
    self._before_run = None

  def _handle(self, signum, frame):
    del frame
    name = signal.Signals(signum).name
    if self._before_run is not None and not self.requested:
      self.signal_name, self.requested = name, True
      self._before_run(name)   # ends the process
      return
    if self.requested:
      if not self.hurry:
        self.hurry = True
        _warn(self._hurry_message, name)
      return
    self.signal_name = name
    self.requested = True
    self._event.set()
    _warn(self._message, name)

  def wait(self, timeout_s):
    """Blocks until a stop is requested or `timeout_s` passed; True if requested."""
    return self.requested or self._event.wait(timeout_s)

  def restore(self):
    for sig, handler in self._previous.items():
      try:
        signal.signal(sig, handler)
      except ValueError:
        pass
    self._previous = {}


def _warn(message, *args):
  # Imported here: this module is the entry point's first import, and absl's logging alone
  # takes ~0.1-0.4 s to import (a signal before the handler is installed is not honoured).
  from absl import logging  # pylint: disable=import-outside-toplevel
  logging.warning(message, *args)


def install_for_process(before_run=None):
  """The process's StopRequest, installed now (once) and never restored: for an entry
  point, first thing, so that the whole run (start-up included) honours SIGINT/SIGTERM.

  Args:
    before_run: callable(signal name) that ends the process (e.g. with a line saying so
      and `os._exit(0)`), called for a signal that comes before `begin_run()`.
  """
  global _process_stop  # pylint: disable=global-statement
  if _process_stop is None:
    _process_stop = StopRequest(hurry_message=HURRY, before_run=before_run)
  return _process_stop


def current():
  """The StopRequest in force for this process (`install_for_process`, or the innermost
  `stop_on_signals` block), or None."""
  return _process_stop


@contextlib.contextmanager
def stop_on_signals():
  """The StopRequest in force, or, if there is none, one installed for the block's duration
  (the previous handlers are restored after it)."""
  global _process_stop  # pylint: disable=global-statement
  if _process_stop is not None:
    yield _process_stop
    return
  stop = _process_stop = StopRequest(hurry_message=HURRY)
  try:
    yield stop
  finally:
    _process_stop = None
    stop.restore()


@contextlib.contextmanager
def children_shielded():
  """Blocks SIGINT and SIGTERM in the calling thread while the block runs: processes forked
  inside it inherit the blocked signals (across exec too), so a signal sent to the whole
  process group (Ctrl-C, `kill -TERM -PGID`, a container stop) does not kill them; the
  parent, which decides, stops them. A signal that reaches this process meanwhile is
  handled by another thread, or, if none, once the block ends: it is never lost."""
  previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
  try:
    yield
  finally:
    signal.pthread_sigmask(signal.SIG_SETMASK, previous)
