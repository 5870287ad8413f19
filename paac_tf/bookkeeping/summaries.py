"""TensorBoard summaries with stable tags, shared by PAAC and Ape-X; each scalar goes to
the run's train/summaries.csv too (`step,wall_time,tag,value`), which `python -m paac_tf.plot`
reads without TensorFlow."""
import collections
import csv
import os
import time

import numpy as np
import tensorflow as tf

from paac_tf.bookkeeping import summary_tags


class EpisodeWindow:
  """The last `size` finished episodes (raw returns and lengths)."""

  def __init__(self, size=100):
    self.returns = collections.deque(maxlen=size)
    self.lengths = collections.deque(maxlen=size)
    self.total = 0

  def add(self, episodes):
    for ret, length in episodes:
      self.returns.append(ret)
      self.lengths.append(length)
      self.total += 1

  @property
  def average_return(self):
    return float(np.mean(self.returns)) if self.returns else float("nan")

  @property
  def average_length(self):
    return float(np.mean(self.lengths)) if self.lengths else float("nan")


class WindowVariables(tf.Module):
  """An `EpisodeWindow`'s episodes as checkpoint variables (returns, lengths, how many), so
  that a resumed run averages over the whole window at once, not over the episodes since
  the resume. The episode total is the checkpoint's `episodes` counter, not kept here."""

  def __init__(self, size=100):
    super().__init__(name="episode_window")
    self.returns = tf.Variable(np.zeros(size, np.float64), name="returns")
    self.lengths = tf.Variable(np.zeros(size, np.int64), name="lengths")
    self.count = tf.Variable(0, dtype=tf.int64, name="count")

  def store(self, window):
    """Copies the last `size` episodes of `window` into the variables."""
    size = int(self.returns.shape[0])
    returns, lengths = list(window.returns)[-size:], list(window.lengths)[-size:]
    pad = size - len(returns)
    self.returns.assign(np.asarray(returns + [0.0] * pad, np.float64))
    self.lengths.assign(np.asarray(lengths + [0] * pad, np.int64))
    self.count.assign(tf_scalar(len(returns), np.int64))

  def load(self, window):
    """Replaces `window`'s episodes (not its total) by those stored."""
    count = int(self.count.numpy())
    window.returns.clear()
    window.lengths.clear()
    window.returns.extend(float(r) for r in self.returns.numpy()[:count])
    window.lengths.extend(int(n) for n in self.lengths.numpy()[:count])


def tf_scalar(value, dtype):
  """`value` as a numpy scalar of `dtype` (np.float32 or an integer type) for TensorFlow.

  TensorFlow keeps the tensor made from each distinct Python int or float (and numpy
  float64, a float subclass) it converts in a process-wide cache that is never emptied:
  a value that changes at every call (a step count, a loss) grows the process's memory.
  numpy float32 and integer scalars are not cached.
  """
  return np.asarray(value, dtype)[()]


class SummaryWriter:
  """Writes scalars under `directory` (TensorBoard event files)."""

  def __init__(self, directory):
    self._writer = tf.summary.create_file_writer(directory)
    self._csv_path = os.path.join(directory, summary_tags.CSV_FILE)
    self._csv_file = None
    self._csv = None

  def _csv_rows(self):
    """The CSV writer, opened at the first row (appending: a resumed run goes on)."""
    if self._csv is None:
      os.makedirs(os.path.dirname(self._csv_path), exist_ok=True)
      new = not os.path.exists(self._csv_path) or os.path.getsize(self._csv_path) == 0
      self._csv_file = open(self._csv_path, "a", newline="", encoding="utf-8")
      self._csv = csv.writer(self._csv_file)
      if new:
        self._csv.writerow(summary_tags.CSV_COLUMNS)
    return self._csv

  def scalars(self, values, step):
    # numpy float32 / int64, not Python numbers: TensorFlow caches the tensor of every
    # Python int and float it converts, for the life of the process. Measured: 40,000
    # scalars written as Python numbers kept 52 MB, as numpy scalars 6 MB; a Pong trainer
    # writes ~400 a minute.
    rows, now = self._csv_rows(), time.time()
    csv_step = int(step)
    step = tf_scalar(step, np.int64)
    with self._writer.as_default():
      for tag, value in values.items():
        value = float(value)
        if np.isfinite(value):
          tf.summary.scalar(tag, tf_scalar(value, np.float32), step=step)
          rows.writerow((csv_step, repr(now), tag, repr(value)))

  def evaluation(self, result):
    """The Eval/* scalars of an evaluation while training, against its agent step."""
    self.scalars({tag: result[key] for key, tag in summary_tags.EVAL_TAGS.items()},
                 result["agent_steps"])

  def episode_metrics(self, window, train_step, agent_steps):
    if not window.returns:
      return
    self.scalars({summary_tags.RETURN_VS_UPDATES: window.average_return,
                  "Metrics/AverageEpisodeLength": window.average_length,
                  "Metrics/NumberOfEpisodes": window.total}, train_step)
    self.scalars({summary_tags.RETURN_VS_AGENT_STEPS: window.average_return},
                 agent_steps)

  def flush(self):
    self._writer.flush()
    if self._csv_file is not None:
      self._csv_file.flush()

  def close(self):
    self._writer.close()
    if self._csv_file is not None:
      self._csv_file.close()
      self._csv_file = self._csv = None
