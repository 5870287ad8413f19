"""paac_tf: efficient parallel deep RL (PAAC and Ape-X) on TensorFlow 2 / Keras."""
import sys as _sys

SUPPORTED_PYTHON = ((3, 9), (3, 11))

if not (SUPPORTED_PYTHON[0] <= _sys.version_info[:2] <= SUPPORTED_PYTHON[1]):
  _sys.exit(
      "paac_tf supports Python 3.9 to 3.11 only (the TensorFlow 2.15 and dm-reverb "
      "0.14 wheels); this is Python %d.%d." % _sys.version_info[:2])

__version__ = "0.1.0"


def _import_old_gym_quietly():
  """tf-agents 0.19 imports the old `gym` package, whose import prints a three-line notice
  asking to move to gymnasium, which is what this project uses (the old package is only
  tf-agents' dependency): imported here first with that print kept off the terminal."""
  import contextlib  # pylint: disable=import-outside-toplevel
  import io  # pylint: disable=import-outside-toplevel
  try:
    with contextlib.redirect_stderr(io.StringIO()):
      import gym  # noqa: F401  (imported for its notice, which is dropped)
  except Exception:  # pylint: disable=broad-except  (tf-agents reports a missing gym itself)
    pass


_import_old_gym_quietly()
