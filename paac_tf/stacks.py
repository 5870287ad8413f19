"""The two supported software stacks, and which one this process runs on.

  reference  Python 3.9-3.11, TensorFlow 2.15.1, tf-agents[reverb] 0.19.0 (dm-reverb 0.14):
             everything, Ape-X included.
  current    Python 3.12-3.13, TensorFlow 2.20-2.21 with tf-keras (Keras 2), tf-agents 0.19.0
             installed without its pins (requirements-no-deps.txt): everything but Ape-X
             (dm-reverb has no wheel past TensorFlow 2.15 and Python 3.11).

The Python version decides the stack, as setup.py's environment markers do. Imports nothing
heavy: paac_tf/__init__.py checks the Python and selects Keras 2 here, before TensorFlow
loads (TF >= 2.16's tf.keras is Keras 3 unless TF_USE_LEGACY_KERAS=1, and Keras 3 neither
loads the Keras 2 checkpoints nor keeps the tf-agents policy's variables).
"""
import collections
import importlib.util
import os
import sys

Stack = collections.namedtuple("Stack", "name first_python last_python runs reverb")

STACKS = (
    Stack("reference", (3, 9), (3, 11),
          "TensorFlow 2.15.1 and tf-agents[reverb] 0.19.0: PAAC and Ape-X", True),
    Stack("current", (3, 12), (3, 13),
          "TensorFlow 2.20-2.21 with tf-keras and tf-agents 0.19.0: PAAC (train, export, "
          "evaluate, --record, TensorBoard), not Ape-X (no dm-reverb wheel)", False),
)
REFERENCE, CURRENT = STACKS
LEGACY_KERAS = "TF_USE_LEGACY_KERAS"
# The current stack's requirements installed with `pip install --no-deps` (they are
# requirements-no-deps.txt; setup.py cannot name them: tf-agents 0.19.0 pins
# tensorflow-probability ~0.23 and gym <= 0.23, which TensorFlow 2.20-2.21 refuse), each with
# the module it installs.
UNPINNED = (("tf-agents==0.19.0", "tf_agents"), ("gym==0.23.0", "gym"),
            ("gym_notices==0.1.0", "gym_notices"))


def _python(version):
  return "%d.%d" % tuple(version[:2])


def stack_for(version=None):
  """The Stack of Python `version` (a (major, minor, ...) tuple; default: this one), or None
  if neither stack supports it."""
  version = tuple((version or sys.version_info)[:2])
  for stack in STACKS:
    if stack.first_python <= version <= stack.last_python:
      return stack
  return None


def describe(stack):
  """One line: the stack's Pythons and what it runs, e.g. 'Python 3.12-3.13 (current stack:
  ...)'."""
  return "Python %s-%s (%s stack: %s)" % (_python(stack.first_python),
                                          _python(stack.last_python), stack.name, stack.runs)


def unsupported_message(version, executable):
  """The version check's message for a Python neither stack supports."""
  return "paac_tf supports %s; this is Python %s at %s. Install one of those (make: " \
         "PYTHON=python3.12 make ...)." % ("; and ".join(describe(s) for s in STACKS),
                                           _python(version), executable)


def check_python():
  """Stops the process with `unsupported_message` on a Python neither stack supports."""
  if stack_for() is None:
    sys.exit(unsupported_message(sys.version_info, sys.executable))


def select_keras_2(environ=None, version=None):
  """On the current stack, sets TF_USE_LEGACY_KERAS=1 in `environ` (default: os.environ, so
  child processes inherit it) so that tf.keras is tf-keras (Keras 2); must run before
  TensorFlow is imported. The reference stack's TF 2.15 has Keras 2 as tf.keras."""
  environ = os.environ if environ is None else environ
  stack = stack_for(version)
  if stack is not None and stack.name == CURRENT.name:
    environ[LEGACY_KERAS] = "1"


def missing_unpinned(version=None, find_spec=importlib.util.find_spec):
  """The requirements of UNPINNED whose module is not installed, on the current stack (none
  on the reference stack, where pip installs tf-agents with its pins)."""
  stack = stack_for(version)
  if stack is None or stack.name != CURRENT.name:
    return []
  return [requirement for requirement, module in UNPINNED if find_spec(module) is None]


def unpinned_message(missing):
  """What a command says when `missing` (requirements of UNPINNED) are not installed."""
  return ("Not installed: %s. On Python 3.12-3.13 (the current stack) they are installed "
          "after paac_tf, without their pins: pip install --no-deps %s (make does it; "
          "docs/install.md)." % (", ".join(missing), " ".join(missing)))


def exit_if_unpinned_missing():
  """A command's first check, before the imports that need tf-agents: one line `error: ...`
  and exit status 2 if UNPINNED's requirements are missing here (a pip install without its
  --no-deps step)."""
  missing = missing_unpinned()
  if missing:
    sys.stderr.write("error: %s\n" % unpinned_message(missing))
    sys.exit(2)


def has_reverb():
  """Whether dm-reverb can be imported here (found, not imported: it loads TensorFlow)."""
  return importlib.util.find_spec("reverb") is not None


def require_reverb(what, version=None):
  """Raises a UserError naming the stack `what` (e.g. 'Ape-X (train_eval.algorithm =
  'apex')') needs unless dm-reverb is installed."""
  if has_reverb():
    return
  # Here, not at the top: `import paac_tf` runs this module's check on a bare Python (make's
  # first step), where absl (errors.py) is not installed yet.
  from paac_tf import errors  # pylint: disable=import-outside-toplevel
  stack = stack_for(version)
  here = "the %s stack" % stack.name if stack else "a Python neither stack supports"
  raise errors.UserError(
      "%s needs Reverb, which only the reference stack has: %s. This is Python %s, %s, "
      "without dm-reverb; PAAC runs here." % (
          what, describe(REFERENCE), _python(version or sys.version_info), here))
