r"""Trains an agent: `python -m paac_tf.train --gin_file=atari.gin [--gin_bindings=...]`.

The user-facing gin contract, for every algorithm's config:
  train_eval.env_name    the Atari game or gymnasium id
  train_eval.total_steps agent steps (one agent step = frameskip frames on Atari)
  train_eval.algorithm   'paac' or 'apex'
Outputs under --root_dir (default: a new folder under runs/): train/ (TensorBoard
summaries, checkpoints), policies/ (SavedModels), operative_config.gin. Rerunning with the
same --root_dir resumes from its latest checkpoint.
"""
from absl import flags
from absl import logging

from paac_tf import api
from paac_tf import errors

FLAGS = flags.FLAGS
flags.DEFINE_multi_string("gin_file", [],
                          "Gin config file(s); a bare name is looked up in paac_tf/configs/.")
flags.DEFINE_multi_string("gin_bindings", [],
                          "Gin bindings, e.g. 'train_eval.env_name=\"Breakout\"'.")
flags.DEFINE_string("root_dir", None, "Run directory (default: runs/<config>-<timestamp>).")


def main(argv):
  if len(argv) > 1:
    raise errors.UserError("Unexpected arguments: %s" % " ".join(argv[1:]))
  if not FLAGS.gin_file:
    raise errors.UserError("Give a config with --gin_file, e.g. --gin_file=atari.gin.")
  result = api.train(FLAGS.gin_file, FLAGS.gin_bindings, root_dir=FLAGS.root_dir)
  logging.info("Newest export: %s", result.policy_dir)


if __name__ == "__main__":
  errors.run_cli(main)
