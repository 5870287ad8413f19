"""Handing memory freed by saves back to the operating system.

Saving a checkpoint or exporting a policy (which traces the policy's functions) allocates and
frees tens of MB of small objects. Two things kept that memory in a long training run's RSS:
the traced graphs sit in reference cycles that Python's collector frees only now and then,
and glibc's allocator keeps freed memory in its heap instead of returning it (what that
cost a long run's RSS, and what `malloc_trim` gave back: docs/performance.md, "Memory").

`release()` runs the collector, then `malloc_trim(0)` where the C library has it (glibc);
elsewhere only the collector. The savers call it after each save (about every two minutes
in a training run; it takes a fraction of a second).
"""
import ctypes
import ctypes.util
import gc

_TRIM = []   # [malloc_trim or None], looked up once


def _malloc_trim():
  if not _TRIM:
    trim = None
    try:
      libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
      trim = getattr(libc, "malloc_trim", None)
      if trim is not None:
        trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    except OSError:
      trim = None
    _TRIM.append(trim)
  return _TRIM[0]


def release():
  """Collects Python's reference cycles and returns the C heap's free pages to the OS."""
  gc.collect()
  trim = _malloc_trim()
  if trim is not None:
    trim(0)
