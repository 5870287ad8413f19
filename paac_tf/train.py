r"""Trains an agent: `python -m paac_tf.train --gin_file=atari.gin [--gin_bindings=...]`.

The user-facing gin contract, for every algorithm's config:
  train_eval.env_name    the Atari game or gymnasium id
  train_eval.total_steps agent steps (one agent step = frameskip frames on Atari)
  train_eval.algorithm   a registered algorithm: {algorithms}
Every setting of a config, its value there, meaning and default: `python -m paac_tf.train
--gin_file=cartpole.gin --list_settings` (exits without training); all of them:
docs/configuration.md. A binding of no setting is refused, naming the closest ones.

Outputs under --root_dir (default: a new folder under runs/): train/ (TensorBoard
summaries, checkpoints), policies/ (SavedModels), operative_config.gin, last_stop.json (why
the last process stopped). Rerunning with the same --root_dir resumes from its latest
checkpoint.

SIGINT or SIGTERM (to this process or to its whole process group), at any moment: the run
saves a checkpoint once its model exists and exits with status 0; the last lines say where
it stopped, where its newest export is and the command that resumes it.

A program only: `python -m` runs it without importing it as `paac_tf.train`, which is the
API's function (paac_tf/api.py).
"""
import os
import shlex
import shutil
import sys

from paac_tf.bookkeeping import signals


def command_line(argv, root_dir=None):
  """The command that runs this again, as a shell line: `python -m paac_tf.train` and the
  arguments of `argv` (sys.argv), with --root_dir=`root_dir` added if none was given. The
  interpreter is named as `python` if that is the one on PATH, else by its path."""
  python = os.path.basename(sys.executable)
  found = shutil.which(python)
  if not found or os.path.realpath(found) != os.path.realpath(sys.executable):
    python = sys.executable
  args = list(argv[1:])
  if root_dir and not any(a == "--root_dir" or a.startswith("--root_dir=") for a in args):
    args.append("--root_dir=%s" % root_dir)
  return " ".join(shlex.quote(a) for a in [python, "-m", "paac_tf.train"] + args)


def _stopped_before_the_run(signal_name):
  """A signal during the imports or the configuration, before the run made anything: ends
  the process at once, status 0 (the run's own handler, `signals.install_for_process`)."""
  text = ("Stopped (%s) during the start-up, before the run made anything: nothing to save.\n"
          "Start it again with: %s\n" % (signal_name, command_line(sys.argv)))
  os.write(2, text.encode("utf-8", "replace"))   # no buffered stream: not reentrant-safe
  os._exit(0)  # pylint: disable=protected-access


if __name__ == "__main__":
  # First of all, before the heavy imports: a stop request during the start-up counts too.
  signals.install_for_process(before_run=_stopped_before_the_run)

from paac_tf import stacks  # noqa: E402

stacks.exit_if_unpinned_missing()   # before the imports below, which need tf-agents

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
from absl import logging  # noqa: E402

from paac_tf import api  # noqa: E402
from paac_tf import errors  # noqa: E402
from paac_tf.algorithms import registry  # noqa: E402
from paac_tf.bookkeeping import startup  # noqa: E402

# --help prints this docstring: the algorithms as the registry names them.
__doc__ = __doc__.replace("{algorithms}", ", ".join(repr(n) for n in registry.names()))

FLAGS = flags.FLAGS
flags.DEFINE_multi_string("gin_file", [],
                          "Gin config file(s); a bare name is looked up in configs/.")
flags.DEFINE_multi_string("gin_bindings", [],
                          "Gin bindings, e.g. 'train_eval.env_name=\"Breakout\"'.")
flags.DEFINE_string("root_dir", None, "Run directory (default: runs/<config>-<timestamp>).")
flags.DEFINE_boolean("list_settings", False,
                     "Print every gin setting of the --gin_file config (with --gin_bindings): "
                     "its value, meaning, default and what it allows; then exit, no training.")


def final_lines(result, signal_name, command):
  """The last lines of a run: where it stopped and its checkpoint, its newest export and,
  after a stop, the command that resumes it."""
  if result.reason == "signal":
    if result.checkpoint:
      lines = ["Stopped (%s) at agent step %d; checkpoint %s." % (
          signal_name or "signal", result.agent_steps, result.checkpoint)]
    else:
      lines = ["Stopped (%s) before the model was built: nothing to save." % (
          signal_name or "signal")]
  else:
    lines = ["Finished (%s) at agent step %d; checkpoint %s." % (
        result.reason, result.agent_steps, result.checkpoint)]
  lines.append("Newest export: %s" % (result.policy_dir or "none yet"))
  if result.reason == "signal":
    lines.append("%s: %s" % ("Resume with" if result.checkpoint else "Start it again with",
                             command))
  return lines


def settings_lines(gin_files, bindings):
  """What --list_settings prints: the settings of the configuration `gin_files` and
  `bindings` make, with their values there (`setting_docs.listing`), all but those of the
  algorithms and runners the configuration does not train with, and those of a lower layer
  in another algorithm's gin namespace (`apex_network` for PAAC)."""
  startup.quiet_tensorflow()
  # Lazy: TensorFlow is imported by the runners, after quiet_tensorflow.
  # pylint: disable=import-outside-toplevel
  import gin
  from paac_tf.bookkeeping import config
  from paac_tf.bookkeeping import setting_docs
  from paac_tf.runners import dispatch
  from paac_tf.runners import train_eval
  # pylint: enable=import-outside-toplevel
  train_eval.load_configurables()
  gin.clear_config()
  config.parse(gin_files, bindings)
  name = config.configured("train_eval.algorithm", registry.DEFAULT)
  algorithm = registry.get(name)
  own = {setting_docs.group_of(type(algorithm).__module__),
         setting_docs.group_of(dispatch.runner_of(algorithm).__name__)}
  others = set(registry.names()) - {name}
  shared = [c for c in setting_docs.configurables()
            if c.group in own or (c.namespace not in others and (
                c.group.partition(".")[0] not in ("algorithms", "runners") or
                "." not in c.group))]
  count = sum(len(c.settings) for c in shared)
  return ["The %d settings of %s for %s (train_eval.algorithm = %r): the value in force, its "
          "meaning, the default where the value is another, what it allows. Bind one with "
          "--gin_bindings='paac.num_envs=16'; other algorithms' settings: "
          "docs/configuration.md." % (count, " ".join(gin_files), algorithm.display_name, name)
          ] + setting_docs.listing(shared)


def main(argv):
  errors.refuse_arguments(argv)
  if not FLAGS.gin_file:
    raise errors.UserError("Give a config with --gin_file, e.g. --gin_file=atari.gin.")
  if FLAGS.list_settings:
    sys.stdout.write("".join(line + "\n" for line in settings_lines(FLAGS.gin_file,
                                                                     FLAGS.gin_bindings)))
    errors.exit_now(0)
  result = api.train(FLAGS.gin_file, FLAGS.gin_bindings, root_dir=FLAGS.root_dir)
  stop = signals.current()
  lines = final_lines(result, stop.signal_name if stop else None,
                      command_line(sys.argv, result.root_dir))
  lines[:0] = result.summary().splitlines()   # the run's summary (run_result.py) first
  logging.flush()
  sys.stderr.write("".join(line + "\n" for line in lines))
  # Everything is closed and saved: no teardown of TensorFlow (seconds) after the last line.
  errors.exit_now(0)


if __name__ == "__main__":
  app.run(main, flags_parser=errors.parse_flags)
