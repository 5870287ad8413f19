r"""Runs the Ape-X learner as a program of its own (one host of a multi-host run;
`python -m paac_tf.train --gin_file=apex_*.gin` runs it inside the one-machine launcher).

  python -m paac_tf.commands.apex_learner --replay_address=HOST:PORT --root_dir=DIR \
      --gin_file=apex_atari.gin [--gin_bindings=...]

What the learner does and writes under --root_dir is described in
`paac_tf/runners/apex/learner.py`. Exit status 3, after one `error: ...` line: the replay
server stayed unreachable for `apex_learner.server_timeout_s` (a checkpoint was saved).
"""
from absl import app
from absl import flags
from absl import logging

from paac_tf import errors
from paac_tf import stacks
from paac_tf.bookkeeping import startup

FLAGS = flags.FLAGS


def _define_flags():
  flags.DEFINE_string("replay_address", None, "HOST:PORT of the Reverb replay server.")
  flags.DEFINE_string("root_dir", None, "Run directory (summaries, checkpoints, exports).")
  flags.DEFINE_multi_string("gin_file", [], "The run's gin config(s), e.g. apex_atari.gin.")
  flags.DEFINE_multi_string("gin_bindings", [], "Extra gin bindings.")
  flags.DEFINE_string("env_name", None, "Environment (default: train_eval.env_name).")
  flags.DEFINE_integer("total_steps", None, "Agent steps (default: train_eval.total_steps).")
  flags.DEFINE_integer("seed", None, "Seed (default: train_eval.seed or 0).")
  flags.DEFINE_string("algorithm", None, "The algorithm whose update the learner runs "
                      "(default: train_eval.algorithm).")


def main(argv):
  errors.refuse_arguments(argv)
  if not FLAGS.replay_address or not FLAGS.root_dir:
    raise errors.UserError("Give --replay_address=HOST:PORT and --root_dir.")
  stacks.require_reverb("The Ape-X learner (python -m paac_tf.commands.apex_learner)")
  startup.quiet_tensorflow()   # before the imports below load TensorFlow
  # Imported here so that flag errors and --help stay fast.
  from paac_tf.runners import train_eval  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import family  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import learner  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import processes  # pylint: disable=import-outside-toplevel
  from paac_tf.runners import validation  # pylint: disable=import-outside-toplevel
  from paac_tf.bookkeeping import config  # pylint: disable=import-outside-toplevel
  from paac_tf.bookkeeping import root_dirs  # pylint: disable=import-outside-toplevel
  from paac_tf.bookkeeping import run_lock  # pylint: disable=import-outside-toplevel
  train_eval.load_configurables()
  config.parse(FLAGS.gin_file, FLAGS.gin_bindings)
  env_name = validation.checked_env_name(FLAGS.env_name)   # bad values stop here, first
  algorithm = family.configured(FLAGS.algorithm)
  total_steps = validation.flag_or_configured("total_steps", "train_eval.total_steps",
                                             FLAGS.total_steps)
  if total_steps is None:
    raise errors.UserError("Give --total_steps or bind train_eval.total_steps.")
  seed = validation.flag_or_configured("seed", "train_eval.seed", FLAGS.seed, default=0)
  root_dir = root_dirs.prepare_root_dir(FLAGS.root_dir)
  # Before anything is written; held until the process ends (run_then_exit), which drops it.
  run_lock.acquire(root_dir, what="paac_tf.commands.apex_learner")

  def train():
    result = learner.apex_learner(FLAGS.replay_address, root_dir, env_name, int(total_steps),
                                  algorithm=algorithm, seed=seed)
    config.write_operative_config(root_dir)
    logging.info("Result: %s", result.as_dict())

  processes.run_then_exit(train)


def cli():
  _define_flags()
  app.run(main, flags_parser=errors.parse_flags)


if __name__ == "__main__":
  cli()
