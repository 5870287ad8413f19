"""paac_tf.bookkeeping.memory: what a save frees goes back to the operating system."""
import numpy as np
import psutil
import pytest

from paac_tf.bookkeeping import memory


@pytest.mark.skipif(memory._malloc_trim() is None,  # pylint: disable=protected-access
                    reason="needs glibc's malloc_trim")
def test_release_returns_freed_heap_memory_to_the_os():
  process = psutil.Process()
  rss = lambda: process.memory_info().rss / 2 ** 20   # pylint: disable=unnecessary-lambda-assignment
  arrays = [np.ones(8000) for _ in range(2000)]   # 64 KB each: the C heap, not mmap
  last = arrays[-1]     # held, so that the heap's top cannot shrink by itself
  del arrays
  held = rss()
  memory.release()
  assert held - rss() > 100, "released %.1f MB of 125" % (held - rss())
  del last


def test_release_collects_reference_cycles():
  import gc  # pylint: disable=import-outside-toplevel
  import weakref  # pylint: disable=import-outside-toplevel

  class Node:
    pass

  a, b = Node(), Node()
  a.other, b.other = b, a
  alive = weakref.ref(a)
  gc.disable()
  try:
    del a, b
    assert alive() is not None
    memory.release()
    assert alive() is None
  finally:
    gc.enable()


def test_summaries_of_changing_values_do_not_grow_the_process(tmp_path):
  """TensorFlow caches the tensor of every distinct Python number it converts, for good:
  a trainer writing its losses and step counts as Python numbers grew ~1 MB a minute."""
  from paac_tf.bookkeeping import summaries  # pylint: disable=import-outside-toplevel
  writer = summaries.SummaryWriter(str(tmp_path))
  process = psutil.Process()

  def write(first, count):
    for i in range(first, first + count):
      writer.scalars({"Losses/total": 0.5 + i * 1e-7, "Metrics/NumberOfEpisodes": i}, i)

  write(0, 2000)     # warm-up: TF's own one-time allocations
  memory.release()
  before = process.memory_info().rss
  write(10 ** 6, 8000)
  memory.release()
  grown = (process.memory_info().rss - before) / 2 ** 20
  writer.close()
  # As Python numbers: 52 MB for 40,000 scalars (measured), so ~21 MB for these 16,000; as
  # numpy scalars: 6 MB for 40,000.
  assert grown < 10, "%.1f MB" % grown


def test_tf_scalar_gives_uncached_numpy_scalars():
  from paac_tf.bookkeeping import summaries  # pylint: disable=import-outside-toplevel
  value, step = summaries.tf_scalar(0.25, np.float32), summaries.tf_scalar(7, np.int64)
  assert type(value) is np.float32 and value == 0.25    # pylint: disable=unidiomatic-typecheck
  assert type(step) is np.int64 and step == 7           # pylint: disable=unidiomatic-typecheck
  assert not isinstance(value, float) and not isinstance(step, int)
