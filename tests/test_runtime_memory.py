"""paac_tf.runtime.memory: what a save frees goes back to the operating system."""
import numpy as np
import psutil
import pytest

from paac_tf.runtime import memory


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
