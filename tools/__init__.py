"""The lab: benchmarks, reports and measurements (`python -m tools.X`); paac_tf never
imports it."""
from paac_tf.bookkeeping import startup as _startup

# Before any tool loads TensorFlow: no C++ start-up lines (cuDNN/cuFFT/cuBLAS registration
# errors, CPU features, TensorRT) unless TF_CPP_MIN_LOG_LEVEL or PAAC_TF_VERBOSE_TF says
# otherwise (`startup.quiet_tensorflow`).
_startup.quiet_tensorflow()
