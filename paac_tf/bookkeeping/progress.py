"""Training progress for the user: a tqdm bar when output is interactive, log lines otherwise.

Interactive means a terminal, or a Jupyter kernel (whose output is no TTY): there
`tqdm.auto` picks the terminal bar or the notebook widget (the widget needs ipywidgets;
without it tqdm falls back to the text bar). Anywhere else (a log file, CI) one absl INFO
line every `log_interval_s`. The PAAC loop and the Ape-X learner report agent steps and
the average return of the last 100 episodes.
"""
import sys
import time

from absl import logging

TTY_INTERVAL_S = 0.5   # bar refreshes at most this often


def _hms(seconds):
  if seconds != seconds or seconds == float("inf"):
    return "?"
  seconds = int(seconds)
  return "%d:%02d:%02d" % (seconds // 3600, seconds // 60 % 60, seconds % 60)


def in_notebook():
  """True inside a Jupyter kernel (IPython with an IPKernelApp, as tqdm.auto checks)."""
  ipython = sys.modules.get("IPython")
  try:
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and "IPKernelApp" in shell.config
  except Exception:  # pylint: disable=broad-except  (any odd shell: not a notebook)
    return False


def interactive(stream=None):
  """Whether `stream` (default: stdout) shows a live display: a TTY, or stdout in a
  notebook."""
  if stream is None:
    return interactive(sys.stdout) or in_notebook()
  return bool(getattr(stream, "isatty", None) and stream.isatty())


class Progress:
  """Progress of a run of `total_steps` agent steps that starts (or resumes) at
  `start_step`. `update(step, average_return)` as often as convenient: it shows at most
  every TTY_INTERVAL_S (the bar) or `log_interval_s` (log lines) unless forced.

  Attributes:
    tty: whether the bar is shown (`interactive(stream)`), else log lines.
    steps_per_second: agent steps per second between the last two displays.
  """

  def __init__(self, total_steps, start_step=0, log_interval_s=30.0, stream=None):
    self.total_steps = int(total_steps)
    self.tty = interactive(stream)
    self.stream = stream or sys.stdout
    self.log_interval_s = TTY_INTERVAL_S if self.tty else log_interval_s
    self._t0 = self._last = time.monotonic()
    self._s0 = self._last_step = int(start_step)
    self.steps_per_second = float("nan")
    self._bar = None
    if self.tty:
      # Lazy: tqdm.auto picks the terminal bar or the notebook widget when imported, and
      # only a terminal or a notebook shows one.
      from tqdm import auto as tqdm_auto  # pylint: disable=import-outside-toplevel
      self._bar = tqdm_auto.tqdm(
          total=self.total_steps, initial=min(self._s0, self.total_steps), file=self.stream,
          unit=" steps", unit_scale=True, dynamic_ncols=True, smoothing=0.1,
          mininterval=TTY_INTERVAL_S, leave=True)

  def update(self, step, average_return, force=False):
    """Shows `step` and `average_return` if due (or `force`); returns whether it did."""
    now = time.monotonic()
    if not force and now - self._last < self.log_interval_s:
      return False
    if now > self._last:
      self.steps_per_second = (step - self._last_step) / (now - self._last)
    if self._bar is not None:
      self._bar.set_postfix_str("avg return %.2f" % average_return, refresh=False)
      self._bar.update(max(0, min(step, self.total_steps) - self._bar.n))
      if force:
        self._bar.refresh()
    else:
      overall = (step - self._s0) / max(now - self._t0, 1e-9)
      eta = (self.total_steps - step) / overall if overall > 0 else float("inf")
      logging.info(
          "steps %d/%d (%.1f%%) | %.0f steps/s | avg return %.2f | elapsed %s | ETA %s",
          step, self.total_steps, 100.0 * step / max(self.total_steps, 1),
          self.steps_per_second, average_return, _hms(now - self._t0), _hms(eta))
    self._last, self._last_step = now, step
    return True

  def close(self):
    if self._bar is not None:
      self._bar.close()
      self._bar = None
