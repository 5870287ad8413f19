"""The lab beside the package: reports, benchmarks, Ape-X measurements, the campaign of
runs and generated files, one sub-package each (tools/README.md lists every command);
paac_tf never imports it."""
import os

from paac_tf.bookkeeping import startup as _startup

# Before any tool loads TensorFlow: no C++ start-up lines (cuDNN/cuFFT/cuBLAS registration
# errors, CPU features, TensorRT) unless TF_CPP_MIN_LOG_LEVEL or PAAC_TF_VERBOSE_TF says
# otherwise (`startup.quiet_tensorflow`).
_startup.quiet_tensorflow()

# The checkout: tools/ is one folder below it (the commands run from there).
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
