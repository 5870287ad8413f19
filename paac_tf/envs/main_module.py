"""Worker processes and the caller's main module: what multiprocessing would run again.

With the 'forkserver' and 'spawn' start methods, multiprocessing prepares each new process
by running the parent's main module again, as `__mp_main__` (`multiprocessing.spawn.
get_preparation_data`: by module name after `python -m`, else by the path in
`__main__.__file__`), so that objects defined there can be unpickled. Two callers break:

- `python -` (a snippet on stdin): `__main__.__file__` is '<stdin>', which no process can
  run again; every worker fails with `FileNotFoundError: ... '<stdin>'`;
- a script (or `python -m` module) that trains from top-level code, without
  `if __name__ == "__main__":`: every worker runs that code again, up to its own start of
  workers, which multiprocessing refuses (RuntimeError: "... bootstrapping phase").

`hidden_if_unsafe()` hides the main module from the workers started inside it in those two
cases (and only then): the workers then start from the module that runs them
(`worker_process`) and the environment constructors' own modules, as they do under
`python -c` (whose main has no file) or in a notebook. Elsewhere (a script with the guard)
multiprocessing's usual preparation is kept, so that environments registered by the
script itself still reach the workers.
"""
import ast
import contextlib
import os
import sys
import threading
import types


def _rerun_source():
  """The source file that multiprocessing would run again in a new process (the rules of
  `spawn.get_preparation_data` and `spawn.prepare`), or None if it would run nothing."""
  main = sys.modules.get("__main__")
  name = getattr(getattr(main, "__spec__", None), "name", None)
  if name is not None:
    if name == "__main__" or name.endswith(".__main__"):
      return None   # a package's __main__: never run again
    return getattr(main, "__file__", None)   # None: a module without a file, left alone
  path = getattr(main, "__file__", None)
  if path is None or os.path.splitext(os.path.basename(path))[0] == "ipython":
    return None
  return path


def _running_top_level_line():
  """The line of the main module's top-level code that is running now (the statement that,
  somewhere down the stack of this thread, or of the main thread, which runs that code,
  called us), or None if the main module is not running its top-level code."""
  main_globals = getattr(sys.modules.get("__main__"), "__dict__", None)
  stacks = [sys._getframe(1)]  # pylint: disable=protected-access
  if threading.current_thread() is not threading.main_thread():
    stacks.append(sys._current_frames().get(threading.main_thread().ident))  # pylint: disable=protected-access
  for frame in stacks:
    line = None
    while frame is not None:
      if frame.f_globals is main_globals and frame.f_code.co_name == "<module>":
        line = frame.f_lineno
      frame = frame.f_back
    if line is not None:
      return line
  return None


def _is_guarded(source, line):
  """Whether `line` of the module `source` lies in a top-level `if` that tests `__name__`
  (`if __name__ == "__main__":`). None if the source cannot be read."""
  try:
    with open(source, encoding="utf-8") as f:
      tree = ast.parse(f.read(), source)
  except (OSError, SyntaxError, ValueError):
    return None
  for node in tree.body:
    if node.lineno <= line <= (node.end_lineno or node.lineno):
      return isinstance(node, ast.If) and any(
          isinstance(n, ast.Name) and n.id == "__name__" for n in ast.walk(node.test))
  return None


def rerun_is_unsafe():
  """Why running the main module again in a new process would fail, or None if it would
  not (or would run nothing)."""
  source = _rerun_source()
  if source is None:
    return None
  if not os.path.isfile(source):
    return "the main module %s has no file to run again" % source
  line = _running_top_level_line()
  if line is not None and _is_guarded(source, line) is False:
    return ("line %d of %s runs outside `if __name__ == \"__main__\":`, so each worker would "
            "run it again" % (line, source))
  return None


@contextlib.contextmanager
def hidden_if_unsafe():
  """While processes start inside this block, multiprocessing sees a bare main module (no
  file, no spec) if running the real one again would fail (`rerun_is_unsafe`); the real
  one is back in sys.modules when the block ends."""
  main = sys.modules.get("__main__")
  if main is None or rerun_is_unsafe() is None:
    yield
    return
  sys.modules["__main__"] = types.ModuleType("__main__")
  try:
    yield
  finally:
    sys.modules["__main__"] = main
