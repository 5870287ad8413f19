"""numpy arrays and CPU tensors on the same memory (DLPack), for the PAAC loop: each
rollout's observations are written once, by the environments, into an array that acting
and the update read as a tensor (`as_tensor`), and the loop reads the actions and values of
each acting call through a view of the tensor it returned (`numpy_view`).
"""
import numpy as np
import tensorflow as tf

# TensorFlow's alignment of the buffers of its tensors (EIGEN_MAX_ALIGN_BYTES): a tensor on
# memory it does not own must start at such an address (else TF aborts the process).
TENSOR_ALIGNMENT = 64


def aligned_empty(shape, dtype):
  """An uninitialised C-contiguous array whose data starts at a TENSOR_ALIGNMENT address."""
  dtype = np.dtype(dtype)
  nbytes = int(np.prod(shape)) * dtype.itemsize
  raw = np.empty(nbytes + TENSOR_ALIGNMENT, np.uint8)
  start = -raw.ctypes.data % TENSOR_ALIGNMENT
  return raw[start:start + nbytes].view(dtype).reshape(shape)


class _DLPackExport:
  """What `np.from_dlpack` takes: a CPU tensor's DLPack capsule."""

  def __init__(self, tensor):
    self._capsule = tf.experimental.dlpack.to_dlpack(tensor)

  def __dlpack__(self, stream=None):
    del stream
    return self._capsule

  def __dlpack_device__(self):
    return (1, 0)   # kDLCPU, device 0


def numpy_view(tensor):
  """A numpy array sharing the memory of the CPU tensor `tensor` (which it keeps alive), where
  `tensor.numpy()` would copy it."""
  return np.from_dlpack(_DLPackExport(tensor))


def as_tensor(array):
  """A tensor of a numpy array that shares its memory (DLPack) when the array is
  C-contiguous, writable and TENSOR_ALIGNMENT-aligned, else a copy (what
  `tf.convert_to_tensor` always makes of a numpy array). The caller must not change a
  shared array while the tensor is in use."""
  if (array.flags.c_contiguous and array.flags.writeable and array.dtype != np.bool_ and
      array.ctypes.data % TENSOR_ALIGNMENT == 0):
    return tf.experimental.dlpack.from_dlpack(array.__dlpack__())
  return tf.convert_to_tensor(array)
