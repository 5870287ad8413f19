"""TensorFlow's thread pools: capping them for processes that share the machine's cores."""
from absl import logging
import tensorflow as tf


def set_tf_threads(num_threads, inter_op_threads=None):
  """Caps TensorFlow's thread pools; call before any TF op runs.

  Args:
    num_threads: intra-op threads (one op's work split over them); None or 0 leaves TF's
      default (one per core).
    inter_op_threads: threads running independent ops at once; None: `num_threads`.

  Returns:
    (intra-op, inter-op) threads in effect (0: TF's default), or None if TF was already
    running, in which case its pools stay as they are and a warning says so.
  """
  intra = int(num_threads or 0)
  inter = intra if inter_op_threads is None else int(inter_op_threads or 0)
  if not intra and not inter:
    return (0, 0)
  try:
    if intra:
      tf.config.threading.set_intra_op_parallelism_threads(intra)
    if inter:
      tf.config.threading.set_inter_op_parallelism_threads(inter)
  except RuntimeError:   # TF already initialized in this process: keep its pools
    current = (tf.config.threading.get_intra_op_parallelism_threads(),
               tf.config.threading.get_inter_op_parallelism_threads())
    if current != (intra, inter):
      logging.warning("TensorFlow was already running: its thread pools stay at %s "
                      "(intra-op, inter-op; 0 = one per core), not %s.", current,
                      (intra, inter))
    return None
  return (tf.config.threading.get_intra_op_parallelism_threads(),
          tf.config.threading.get_inter_op_parallelism_threads())
