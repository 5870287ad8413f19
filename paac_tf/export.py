r"""Exports a training run's checkpoint as a SavedModel that TF Serving and plain TensorFlow
can run.

  python -m paac_tf.export --root_dir=RUN [--checkpoint=STEP] [--export_dir=DIR] [--greedy]

The policy goes to `DIR/<model_name>/<version>/` (TF Serving's layout; by default DIR is
`RUN/policies`, the model name comes from the environment, the version is the agent step
of the checkpoint); an existing version is never overwritten. The command prints the
version directory. The network is rebuilt from the spec the run recorded in
train/run_config.json. The export: `paac_tf/policies/checkpoint_export.py`; signatures and
metadata: `paac_tf/policies/saved_model.py`.
"""
import contextlib
import os
import sys

from absl import app
from absl import flags

from paac_tf import errors
from paac_tf import stacks
from paac_tf.bookkeeping import root_dirs
from paac_tf.bookkeeping import run_lock
from paac_tf.bookkeeping import startup

stacks.exit_if_unpinned_missing()   # before main's imports, which need tf-agents


def _define_flags():
  flags.DEFINE_string("root_dir", None, "Training run directory.")
  flags.DEFINE_integer("checkpoint", None, "Agent step of the checkpoint (default: newest).")
  flags.DEFINE_string("export_dir", None, "Base directory (default: ROOT_DIR/policies); the "
                      "SavedModel goes to EXPORT_DIR/<model_name>/<version>/.")
  flags.DEFINE_boolean("greedy", None, "Argmax actions (default: PAAC samples from its policy, "
                       "Ape-X is greedy).")
  flags.DEFINE_float("epsilon", None, "Ape-X with --nogreedy: epsilon of the exported policy.")
  flags.DEFINE_integer("version", None, "Integer version (default: the checkpoint's step).")
  flags.DEFINE_string("model_name", None, "TF Serving model name (default: from the env, e.g. "
                      "pong, cartpole_v1).")
  flags.mark_flag_as_required("root_dir")


def main(argv):
  FLAGS = flags.FLAGS  # pylint: disable=invalid-name
  errors.refuse_arguments(argv)
  root_dir = root_dirs.absolute(FLAGS.root_dir)
  # An export into the run (the default) is refused at once if the run is in use, before
  # TensorFlow loads; export_checkpoint locks (again, as a no-op) in any case.
  early = not FLAGS.export_dir and os.path.isdir(root_dir)
  lock = run_lock.acquire(root_dir, create=False, what="paac_tf.export") if early else None
  with lock or contextlib.nullcontext():
    startup.quiet_tensorflow()   # before the import below loads TensorFlow
    # Lazy: TensorFlow loads only once the run directory is known to be free.
    from paac_tf.policies import checkpoint_export  # pylint: disable=import-outside-toplevel
    path = checkpoint_export.export_checkpoint(
        root_dir, checkpoint=FLAGS.checkpoint, export_dir=FLAGS.export_dir,
        greedy=FLAGS.greedy, epsilon=FLAGS.epsilon, version=FLAGS.version,
        name=FLAGS.model_name)
  print(path)
  sys.stdout.flush()


if __name__ == "__main__":
  _define_flags()
  app.run(main, flags_parser=errors.parse_flags)
