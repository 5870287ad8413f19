"""Stops at once, with a clear message, on a Python that paac_tf does not support."""
import sys

if not ((3, 9) <= sys.version_info[:2] <= (3, 11)):
    sys.exit("paac_tf supports Python 3.9 to 3.11 (the TensorFlow 2.15 and dm-reverb 0.14 "
             "wheels); found Python %d.%d at %s. Run with PYTHON=python3.11 make ..."
             % (sys.version_info[0], sys.version_info[1], sys.executable))
