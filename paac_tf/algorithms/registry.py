"""The algorithms by name: what `train_eval.algorithm`, a run's train/run_config.json and an
export's metadata name.

The algorithms that ship with the package are imported when first asked for (one line
each in BUILTIN, the module whose import registers the algorithm); an algorithm defined
outside the package registers itself with `register` when its module is imported, e.g. by
an `import my_algorithm` line in a gin config, and is named `'my_algorithm:name'` where a
fresh process must find it (as gymnasium's `'module:EnvId'`: `reference`, `get`).
"""
import importlib

from paac_tf import errors

# name -> (the module whose import registers it, its name in tables and messages).
BUILTIN = {
    "paac": ("paac_tf.algorithms.paac", "PAAC"),
    "apex": ("paac_tf.algorithms.apex", "Ape-X"),
    "apex_dpg": ("paac_tf.algorithms.apex_dpg", "Ape-X DPG"),
}
DEFAULT = "paac"   # train_eval.algorithm when a config does not bind it

_REGISTERED = {}


class UnknownAlgorithmError(errors.UserError, ValueError):
  """No algorithm is registered under the name."""


def register(algorithm):
  """Registers `algorithm` (a `base.Algorithm`) under `algorithm.name`; returns it. A second
  algorithm under a registered name is refused."""
  name = algorithm.name
  known = _REGISTERED.get(name)
  if known is not None and known is not algorithm:
    raise ValueError("An algorithm named %r is registered already (%s)." % (name, known))
  _REGISTERED[name] = algorithm
  return algorithm


def names():
  """The names of the algorithms known in this process: the built-in ones, then those
  registered from elsewhere."""
  return tuple(BUILTIN) + tuple(n for n in _REGISTERED if n not in BUILTIN)


def get(name):
  """The algorithm registered as `name`, or as `module:name` (its module imported first).

  Raises:
    UnknownAlgorithmError: nothing is registered under the name.
  """
  module, _, short = str(name).rpartition(":")
  if short in BUILTIN and short not in _REGISTERED:
    importlib.import_module(BUILTIN[short][0])
  elif module and short not in _REGISTERED:
    try:
      importlib.import_module(module)
    except ImportError as e:
      raise UnknownAlgorithmError("Cannot import module %r of algorithm %r (%s)."
                                  % (module, name, e)) from None
  if short not in _REGISTERED:
    raise UnknownAlgorithmError("Unknown algorithm %r; known: %s." % (
        name, ", ".join(repr(n) for n in names())))
  return _REGISTERED[short]


def reference(algorithm):
  """The name that finds `algorithm` in a fresh process: its name for a built-in one, else
  'module:name' with the module that registered it."""
  if algorithm.name in BUILTIN:
    return algorithm.name
  return "%s:%s" % (type(algorithm).__module__, algorithm.name)


def record(algorithm):
  """What a run records of its algorithm in train/run_config.json: its name, and the module
  that registers it unless it is built in (`get` finds it again in a fresh process)."""
  if algorithm.name in BUILTIN:
    return {"algorithm": algorithm.name}
  return {"algorithm": algorithm.name, "algorithm_module": type(algorithm).__module__}


def display_name(name):
  """The name in tables and messages of the algorithm named `name` ('PAAC', 'Ape-X'),
  without importing it (tools that read run records stay light); `name` itself if no
  algorithm is known by it."""
  if name in _REGISTERED:
    return _REGISTERED[name].display_name
  return BUILTIN[name][1] if name in BUILTIN else str(name)


def algorithms():
  """Every algorithm: the built-in ones (imported now if they were not) and those
  registered from elsewhere."""
  return tuple(get(name) for name in names())


def load_builtin():
  """Imports every built-in algorithm (and so registers their gin configurables)."""
  for name in BUILTIN:
    get(name)
