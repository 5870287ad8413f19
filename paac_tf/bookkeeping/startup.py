"""A quiet start: TensorFlow's C++ start-up noise and the old `gym` package's notice.

- `quiet_tensorflow()`: the entry points and the public API call it before TensorFlow is
  first imported. On a CPU machine TensorFlow's C++ side prints, at import, a oneDNN
  notice, a CPU-feature line, a TensorRT warning and (with the CUDA wheels installed)
  cuDNN/cuFFT/cuBLAS "Unable to register factory" errors, none of which the user can act
  on. It sets TF_CPP_MIN_LOG_LEVEL=3 unless the user set it, or set PAAC_TF_VERBOSE_TF=1.
  Python-side messages (absl logging, exceptions) are not affected.
- `verbose_tensorflow()`: whether the user asked for TensorFlow's messages
  (PAAC_TF_VERBOSE_TF=1); exports keep TensorFlow's INFO lines (SavedModel builder,
  fingerprinting, renamed inputs) off the terminal unless so (`policies/saved_model.py`).
- `import_old_gym_quietly()`: tf-agents 0.19 imports the old `gym` package, whose import
  prints a three-line notice asking to move to gymnasium, which is what this project uses
  (the old package is only tf-agents' dependency). The packages whose modules import
  tf-agents (envs, networks, policies) call it first, in their `__init__`.
"""
import contextlib
import io
import os

VERBOSE_ENV = "PAAC_TF_VERBOSE_TF"
TF_LOG_LEVEL_ENV = "TF_CPP_MIN_LOG_LEVEL"
QUIET_TF_LOG_LEVEL = "3"   # "2" still shows the CUDA factory-registration ERROR lines


def verbose_tensorflow():
  """True if the user asked for TensorFlow's own messages (PAAC_TF_VERBOSE_TF=1)."""
  return os.environ.get(VERBOSE_ENV, "").strip().lower() in ("1", "true", "yes")


def quiet_tensorflow():
  """Sets TF_CPP_MIN_LOG_LEVEL for a quiet TensorFlow import, unless the user set it or asked
  for TensorFlow's messages with PAAC_TF_VERBOSE_TF=1. Returns the level in force (None:
  TensorFlow's default). Has no effect on a TensorFlow already imported."""
  if verbose_tensorflow():
    return os.environ.get(TF_LOG_LEVEL_ENV)
  return os.environ.setdefault(TF_LOG_LEVEL_ENV, QUIET_TF_LOG_LEVEL)


_gym_imported = False


def import_old_gym_quietly():
  """Imports the old `gym` package (if installed) with its notice kept off the terminal."""
  global _gym_imported  # pylint: disable=global-statement
  if _gym_imported:
    return
  _gym_imported = True
  try:
    with contextlib.redirect_stderr(io.StringIO()):
      # Lazy: the point of this function (its notice kept off the terminal).
      import gym  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
  except Exception:  # pylint: disable=broad-except  (tf-agents reports a missing gym itself)
    pass
