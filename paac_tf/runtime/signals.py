"""SIGINT / SIGTERM: ask a training loop or process to stop at its next check."""
import signal
import threading

from absl import logging

FINISH_UPDATE = "%s received: finishing the current update, saving a checkpoint, exiting."


class StopRequest:
  """Installs handlers that set `requested`.

  Args:
    signals: the signals that request the stop.
    ignore_sigint: ignore SIGINT instead (a process that its launcher manages: the
      terminal's Ctrl-C reaches the whole process group, and the launcher decides).
    second_exits: a second signal raises KeyboardInterrupt (exits at once); if False it
      is only noted again.
    message: logged (warning) at the first signal; %s is the signal's name.
  """

  def __init__(self, signals=(signal.SIGINT, signal.SIGTERM), ignore_sigint=False,
               second_exits=True, message=FINISH_UPDATE):
    self.requested = False
    self._second_exits = bool(second_exits)
    self._message = message
    self._event = threading.Event()
    self._previous = {}
    handlers = {sig: self._handle for sig in signals}
    if ignore_sigint:
      handlers[signal.SIGINT] = signal.SIG_IGN
    for sig, handler in handlers.items():
      try:
        self._previous[sig] = signal.signal(sig, handler)
      except ValueError:  # not the main thread
        pass

  def _handle(self, signum, frame):
    del frame
    name = signal.Signals(signum).name
    if self.requested:
      if self._second_exits:
        logging.warning("Second %s: exiting now.", name)
        raise KeyboardInterrupt
      return
    self.requested = True
    self._event.set()
    logging.warning(self._message, name)

  def wait(self, timeout_s):
    """Blocks until a stop is requested or `timeout_s` passed; True if requested."""
    return self.requested or self._event.wait(timeout_s)

  def restore(self):
    for sig, handler in self._previous.items():
      signal.signal(sig, handler)
    self._previous = {}
