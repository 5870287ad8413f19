"""Terminal progress: a live line on a TTY, plain log lines otherwise."""
import sys
import time

from absl import logging


def _hms(seconds):
  if seconds != seconds or seconds == float("inf"):
    return "?"
  seconds = int(seconds)
  return "%d:%02d:%02d" % (seconds // 3600, seconds // 60 % 60, seconds % 60)


class Progress:

  def __init__(self, total_steps, start_step=0, log_interval_s=30.0, stream=None):
    self.total_steps = int(total_steps)
    self.stream = stream or sys.stdout
    self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
    self.log_interval_s = 1.0 if self.tty else log_interval_s
    self._t0 = self._last = time.monotonic()
    self._s0 = self._last_step = int(start_step)
    self.steps_per_second = float("nan")

  def update(self, step, average_return, force=False):
    now = time.monotonic()
    if not force and now - self._last < self.log_interval_s:
      return False
    if now > self._last:
      self.steps_per_second = (step - self._last_step) / (now - self._last)
    overall = (step - self._s0) / max(now - self._t0, 1e-9)
    eta = (self.total_steps - step) / overall if overall > 0 else float("inf")
    line = "steps %d/%d (%.1f%%) | %.0f steps/s | avg return %.2f | elapsed %s | ETA %s" % (
        step, self.total_steps, 100.0 * step / max(self.total_steps, 1), self.steps_per_second,
        average_return, _hms(now - self._t0), _hms(eta))
    if self.tty:
      self.stream.write("\r" + line + "   ")
      self.stream.flush()
    else:
      logging.info(line)
    self._last, self._last_step = now, step
    return True

  def close(self):
    if self.tty:
      self.stream.write("\n")
      self.stream.flush()
