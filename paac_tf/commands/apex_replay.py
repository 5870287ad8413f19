r"""Runs the Ape-X replay server as a program of its own (one host of a multi-host run).

  python -m paac_tf.commands.apex_replay --port=P --gin_file=apex_atari.gin \
      [--checkpoint_dir=DIR] [--checkpoint_interval_s=S] [--env_name=...]

It serves until SIGINT/SIGTERM, checkpointing on the way out with --checkpoint_dir. The
tables, networking and checkpoints are described in `paac_tf/runners/apex/replay.py`.
"""
from absl import app
from absl import flags

from paac_tf import errors
from paac_tf import stacks
from paac_tf.bookkeeping import startup

FLAGS = flags.FLAGS


def _define_flags():
  flags.DEFINE_integer("port", None, "Port to serve on (all interfaces, see above).")
  flags.DEFINE_multi_string("gin_file", [], "The run's gin config(s), e.g. apex_atari.gin.")
  flags.DEFINE_multi_string("gin_bindings", [], "Extra gin bindings.")
  flags.DEFINE_string("env_name", None, "Environment (default: train_eval.env_name).")
  flags.DEFINE_string("checkpoint_dir", None, "Restore from and checkpoint into this dir.")
  flags.DEFINE_float("checkpoint_interval_s", 0.0,
                     "Seconds between checkpoints (0: only at shutdown).")


def main(argv):
  errors.refuse_arguments(argv)
  if FLAGS.port is None:
    raise errors.UserError("Give --port (the port actors and learner connect to).")
  stacks.require_reverb("The Ape-X replay server (python -m paac_tf.commands.apex_replay)")
  startup.quiet_tensorflow()   # before the imports below load TensorFlow
  # Imported here so that flag errors and --help stay fast.
  from paac_tf.runners import train_eval  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import replay  # pylint: disable=import-outside-toplevel
  from paac_tf.runners import validation  # pylint: disable=import-outside-toplevel
  from paac_tf.bookkeeping import config  # pylint: disable=import-outside-toplevel
  train_eval.load_configurables()
  config.parse(FLAGS.gin_file, FLAGS.gin_bindings)
  env_name = validation.checked_env_name(FLAGS.env_name)   # bad values stop here, first
  replay.serve(FLAGS.port, env_name, FLAGS.checkpoint_dir, FLAGS.checkpoint_interval_s)


def cli():
  _define_flags()
  app.run(main, flags_parser=errors.parse_flags)


if __name__ == "__main__":
  cli()
