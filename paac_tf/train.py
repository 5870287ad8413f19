r"""Trains an agent: `python -m paac_tf.train --gin_file=atari.gin [--gin_bindings=...]`.

The user-facing gin contract, for every algorithm's config:
  train_eval.env_name    the Atari game or gymnasium id
  train_eval.total_steps agent steps (one agent step = frameskip frames on Atari)
  train_eval.algorithm   'paac' or 'apex'
Outputs under --root_dir (default: a new folder under runs/): train/ (TensorBoard
summaries, checkpoints), policies/ (SavedModels), operative_config.gin. Rerunning with the
same --root_dir resumes from its latest checkpoint.
"""
import datetime
import os

from absl import flags
from absl import logging

from paac_tf import errors

FLAGS = flags.FLAGS
flags.DEFINE_multi_string("gin_file", [],
                          "Gin config file(s); a bare name is looked up in configs/.")
flags.DEFINE_multi_string("gin_bindings", [],
                          "Gin bindings, e.g. 'train_eval.env_name=\"Breakout\"'.")
flags.DEFINE_string("root_dir", None, "Run directory (default: runs/<config>-<timestamp>).")


def default_root_dir(gin_files):
  stem = os.path.splitext(os.path.basename(gin_files[-1]))[0] if gin_files else "run"
  stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
  return os.path.join("runs", "%s-%s" % (stem, stamp))


def main(argv):
  if len(argv) > 1:
    raise errors.UserError("Unexpected arguments: %s" % " ".join(argv[1:]))
  if not FLAGS.gin_file:
    raise errors.UserError("Give a config with --gin_file, e.g. --gin_file=atari.gin.")
  # Imported here so that flag errors and --help stay fast.
  from paac_tf.runners import train_eval as train_eval_lib  # pylint: disable=import-outside-toplevel
  from paac_tf import configurables  # noqa: F401  (imported to register the gin configurables)
  from paac_tf.runtime import config  # pylint: disable=import-outside-toplevel
  from paac_tf.runtime import root_dirs  # pylint: disable=import-outside-toplevel
  config.parse(FLAGS.gin_file, FLAGS.gin_bindings)
  root_dir = root_dirs.prepare_root_dir(FLAGS.root_dir or default_root_dir(FLAGS.gin_file))
  logging.info("Run directory: %s", root_dir)
  result = train_eval_lib.train_eval(root_dir=root_dir)
  logging.info("Result: %s", result)


if __name__ == "__main__":
  errors.run_cli(main)
