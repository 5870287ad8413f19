"""paac_tf: efficient parallel deep RL (PAAC and Ape-X) on TensorFlow 2 / Keras.

The public API (paac_tf/api.py), loaded on first use so that `import paac_tf` imports
neither TensorFlow nor anything else heavy:

  paac_tf.train(gin_files, bindings=(), root_dir=None) -> paac_tf.TrainResult
  paac_tf.load_policy(path) -> paac_tf.Policy   (`action(observations)`, `metadata`)
  paac_tf.make_env(name, num_envs=1, ...)       the batched environment training uses
"""
from paac_tf import stacks as _stacks

# The Python-version check, then Keras 2 selected before anything imports TensorFlow
# (paac_tf/stacks.py: which Python gets which stack).
_stacks.check_python()
_stacks.select_keras_2()

__version__ = "0.1.0"
__all__ = ["train", "load_policy", "make_env", "TrainResult", "Policy"]


def __getattr__(name):
  """PEP 562: the API's names, imported from paac_tf.api when first asked for."""
  if name in __all__:
    missing = _stacks.missing_unpinned()
    if missing:   # a pip install without the current stack's --no-deps step
      raise ImportError(_stacks.unpinned_message(missing))
    # Lazy: `import paac_tf` imports neither TensorFlow nor anything else heavy.
    from paac_tf import api  # pylint: disable=import-outside-toplevel
    return getattr(api, name)
  raise AttributeError("module 'paac_tf' has no attribute %r" % name)


def __dir__():
  return sorted(list(globals()) + __all__)
