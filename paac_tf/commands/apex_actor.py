r"""Runs one Ape-X actor as a program of its own (the one-machine launcher starts one per
actor; on several hosts, start them by hand).

  python -m paac_tf.commands.apex_actor --replay_address=HOST:PORT --actor_index=I --num_actors=N \
      --gin_file=apex_atari.gin [--gin_bindings=...] [--root_dir=DIR]

What an actor does, and when it stops, is described in `paac_tf/runners/apex/actor.py`.
Exit status 3, after one `error: ...` line: the replay server stayed unreachable for
`apex_actor.server_timeout_s`.
"""
from absl import app
from absl import flags

from paac_tf import errors
from paac_tf import stacks
from paac_tf.bookkeeping import startup

FLAGS = flags.FLAGS


def _define_flags():
  flags.DEFINE_string("replay_address", None, "HOST:PORT of the Reverb replay server.")
  flags.DEFINE_integer("actor_index", 0, "This actor's index i in [0, num_actors).")
  flags.DEFINE_integer("num_actors", 1, "The number of actors (with apex_actor.num_envs, the "
                       "same for all, it sets the epsilon ladder).")
  flags.DEFINE_multi_string("gin_file", [], "The run's gin config(s), e.g. apex_atari.gin.")
  flags.DEFINE_multi_string("gin_bindings", [], "Extra gin bindings.")
  flags.DEFINE_string("root_dir", None, "Run directory: summaries go to actors/actor_I.")
  flags.DEFINE_string("env_name", None, "Environment (default: train_eval.env_name).")
  flags.DEFINE_integer("seed", None, "Environment/exploration seed (default: derived from "
                       "train_eval.seed and the actor index).")
  flags.DEFINE_integer("parent_pid", None, "Exit when this process is gone (launcher use).")
  flags.DEFINE_string("algorithm", None, "The algorithm whose acting the actor runs "
                      "(default: train_eval.algorithm).")


def main(argv):
  errors.refuse_arguments(argv)
  if not FLAGS.replay_address:
    raise errors.UserError("Give --replay_address=HOST:PORT of the replay server.")
  if not 0 <= FLAGS.actor_index < FLAGS.num_actors:
    raise errors.UserError("--actor_index must be in [0, --num_actors), got %d of %d."
                           % (FLAGS.actor_index, FLAGS.num_actors))
  stacks.require_reverb("The Ape-X actor (python -m paac_tf.commands.apex_actor)")
  startup.quiet_tensorflow()   # before the imports below load TensorFlow
  # Imported here so that flag errors and --help stay fast.
  from paac_tf.runners import train_eval  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import actor  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import family  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import processes  # pylint: disable=import-outside-toplevel
  from paac_tf.runners import validation  # pylint: disable=import-outside-toplevel
  from paac_tf.bookkeeping import config  # pylint: disable=import-outside-toplevel
  from paac_tf.bookkeeping import root_dirs  # pylint: disable=import-outside-toplevel
  train_eval.load_configurables()
  config.parse(FLAGS.gin_file, FLAGS.gin_bindings)
  env_name = validation.checked_env_name(FLAGS.env_name)   # bad values stop here, first
  algorithm = family.configured(FLAGS.algorithm)
  seed = FLAGS.seed
  if seed is not None:
    validation.check_flag("seed", "train_eval.seed", seed)
  else:
    seed = actor.actor_seed(config.configured("train_eval.seed", 0), FLAGS.actor_index)
  root_dir = root_dirs.prepare_root_dir(FLAGS.root_dir) if FLAGS.root_dir else None
  processes.run_then_exit(lambda: actor.apex_actor(
      FLAGS.replay_address, FLAGS.actor_index, FLAGS.num_actors, env_name, algorithm=algorithm,
      root_dir=root_dir, seed=seed, parent_pid=FLAGS.parent_pid))


def cli():
  _define_flags()
  app.run(main, flags_parser=errors.parse_flags)


if __name__ == "__main__":
  cli()
