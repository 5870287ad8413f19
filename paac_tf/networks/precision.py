"""The networks' compute precision: float32, or Keras mixed precision with bfloat16.

  'float32'         variables and compute in float32 (the default);
  'mixed_bfloat16'  Keras' `mixed_bfloat16` policy on the torso's layers (and the dueling
                    head's hidden layers): float32 variables, bfloat16 convolutions and
                    matmuls. The output layers (policy logits, value, advantage) compute in
                    float32 from the bfloat16 features, so logits, values and Q-values are
                    float32 before any loss, softmax, sampling, argmax or priority;
  'auto'            'mixed_bfloat16' on a CPU with bfloat16 instructions (avx512_bf16 or
                    amx_bf16 in /proc/cpuinfo) and no GPU, 'float32' otherwise (on a GPU
                    too, until the benchmark's precision rows have been measured on one).

Variables are float32 in every precision, so checkpoints, exports and weights published
to Ape-X actors are the same whatever the precision; a run may resume in another one.
Set with `paac.precision` (PAAC) and `apex_precision.precision` (Ape-X: learner and
actors alike); `python -m tools.bench.benchmark` measures both precisions side by side.
"""
import tensorflow as tf

from paac_tf import errors

PRECISIONS = ("float32", "mixed_bfloat16", "auto")
BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")
# What 'auto' picks on a GPU: no GPU measurement yet, so the default.
GPU_AUTO = "float32"


def check(precision):
  """`precision` if it is one of PRECISIONS; ConfigError otherwise."""
  if precision not in PRECISIONS:
    raise errors.ConfigError("Unknown precision %r; choose one of %s."
                             % (precision, ", ".join(PRECISIONS)))
  return precision


def cpu_has_bf16(cpuinfo="/proc/cpuinfo"):
  """Whether the CPU's flags (as /proc/cpuinfo lists them) include a bfloat16 instruction
  set, BF16_CPU_FLAGS. False where the file cannot be read (not Linux)."""
  try:
    with open(cpuinfo, encoding="utf-8", errors="replace") as f:
      for line in f:
        if line.startswith("flags"):
          return bool(set(line.split(":", 1)[-1].split()) & set(BF16_CPU_FLAGS))
  except OSError:
    pass
  return False


def resolve(precision, cpuinfo="/proc/cpuinfo", has_gpu=None):
  """'float32' or 'mixed_bfloat16': `precision` with 'auto' decided for this machine."""
  if check(precision) != "auto":
    return precision
  if has_gpu is None:
    has_gpu = bool(tf.config.list_physical_devices("GPU"))
  if has_gpu:
    return GPU_AUTO
  return "mixed_bfloat16" if cpu_has_bf16(cpuinfo) else "float32"


def layer_dtype(precision):
  """The `dtype` argument of the layers that compute in `precision`: None (the float32
  default) or the Keras `mixed_bfloat16` policy."""
  if resolve(precision) == "mixed_bfloat16":
    return tf.keras.mixed_precision.Policy("mixed_bfloat16")
  return None


def model_precision(model):
  """The resolved precision a model of this package was built with ('float32' if unset)."""
  return getattr(model, "precision", "float32")
