"""TensorFlow's thread pools: capping them for processes that share the machine's cores."""


def set_tf_threads(num_threads):
  """Caps TensorFlow's thread pools (call before any TF op runs); None leaves them."""
  if not num_threads:
    return
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  try:
    tf.config.threading.set_intra_op_parallelism_threads(int(num_threads))
    tf.config.threading.set_inter_op_parallelism_threads(int(num_threads))
  except RuntimeError:   # TF already initialized in this process: keep its pools
    pass
