"""paac_tf: efficient parallel deep RL (PAAC and Ape-X) on TensorFlow 2 / Keras."""
import sys as _sys

SUPPORTED_PYTHON = ((3, 9), (3, 11))

if not (SUPPORTED_PYTHON[0] <= _sys.version_info[:2] <= SUPPORTED_PYTHON[1]):
  _sys.exit(
      "paac_tf supports Python 3.9 to 3.11 only (the TensorFlow 2.15 and dm-reverb "
      "0.14 wheels); this is Python %d.%d." % _sys.version_info[:2])

__version__ = "0.1.0"
