"""SIGINT / SIGTERM: ask the training loop to stop after the current update."""
import signal

from absl import logging


class StopRequest:
  """Installs handlers that set `requested`; a second signal exits at once."""

  def __init__(self, signals=(signal.SIGINT, signal.SIGTERM)):
    self.requested = False
    self._previous = {}
    for sig in signals:
      try:
        self._previous[sig] = signal.signal(sig, self._handle)
      except ValueError:  # not the main thread
        pass

  def _handle(self, signum, frame):
    del frame
    if self.requested:
      logging.warning("Second %s: exiting now.", signal.Signals(signum).name)
      raise KeyboardInterrupt
    self.requested = True
    logging.warning("%s received: finishing the current update, saving a checkpoint, exiting.",
                    signal.Signals(signum).name)

  def restore(self):
    for sig, handler in self._previous.items():
      signal.signal(sig, handler)
    self._previous = {}
