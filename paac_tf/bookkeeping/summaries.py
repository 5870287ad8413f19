"""TensorBoard summaries with stable tags, shared by PAAC and Ape-X."""
import collections

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

  def scalars(self, values, step):
    # numpy float32 / int64, not Python numbers: TensorFlow caches the tensor of every
    # Python int and float it converts, for the life of the process. Measured: 40,000
    # scalars written as Python numbers kept 52 MB, as numpy scalars 6 MB; a Pong trainer
    # writes ~400 a minute.
    step = tf_scalar(step, np.int64)
    with self._writer.as_default():
      for tag, value in values.items():
        value = float(value)
        if np.isfinite(value):
          tf.summary.scalar(tag, tf_scalar(value, np.float32), step=step)

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

  def close(self):
    self._writer.close()
