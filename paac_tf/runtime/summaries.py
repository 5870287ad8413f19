"""TensorBoard summaries with stable tags, shared by PAAC and Ape-X."""
import collections

import numpy as np
import tensorflow as tf


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


class SummaryWriter:
  """Writes scalars under `directory` (TensorBoard event files)."""

  def __init__(self, directory):
    self._writer = tf.summary.create_file_writer(directory)

  def scalars(self, values, step):
    with self._writer.as_default():
      for tag, value in values.items():
        value = float(value)
        if np.isfinite(value):
          tf.summary.scalar(tag, value, step=int(step))

  def episode_metrics(self, window, train_step, env_steps):
    if not window.returns:
      return
    self.scalars({"Metrics/AverageReturn": window.average_return,
                  "Metrics/AverageEpisodeLength": window.average_length,
                  "Metrics/NumberOfEpisodes": window.total}, train_step)
    self.scalars({"Metrics_vs_EnvironmentSteps/AverageReturn": window.average_return},
                 env_steps)

  def flush(self):
    self._writer.flush()

  def close(self):
    self._writer.close()
