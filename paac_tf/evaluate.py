r"""Evaluates an exported policy (a SavedModel) under the papers' protocol.

  python -m paac_tf.evaluate --policy_dir=runs/X/policies/pong/5000000 --episodes=30

The policy is loaded with `tf.saved_model.load` alone and run through its
`serving_default` signature; the training code's model is not used. `--policy_dir` may
also be a model directory (`.../policies/pong`): its highest version is evaluated; or a
run directory (`runs/X`): its newest export.
The protocol (30 no-op starts, whole games, unclipped scores, a fixed share of the
episodes per environment, epsilon): `paac_tf/policies/evaluation.py`.

Evaluation environments are seeded 10**9 + i, apart from every training seed; the FIRE
assist a policy trained with is applied unless `--nofire_reset`; eval.json records the
seeds and every assist. Results are printed and written to `eval.json` in `--output_dir` (default:
`<policy_dir>-eval/` beside the version directory; TF Serving ignores that non-integer
name). An existing eval.json is kept unless `--overwrite`. `--record=best.gif` writes
the best episode as a GIF (a relative path goes into the output directory).
"""
import sys

from absl import app
from absl import flags

from paac_tf import errors
from paac_tf import stacks
from paac_tf.bookkeeping import startup

stacks.exit_if_unpinned_missing()   # before the imports below, which need tf-agents

startup.quiet_tensorflow()   # before the import below loads TensorFlow
from paac_tf.policies import evaluation  # noqa: E402


def _define_flags():
  flags.DEFINE_string("policy_dir", None, "SavedModel version directory, a model directory "
                      "(its highest version is used) or a run directory (its newest export).")
  flags.DEFINE_integer("episodes", 30, "Number of whole episodes to evaluate.")
  flags.DEFINE_float("epsilon", None, "Probability of a uniformly random action (default: "
                     "0.001 for greedy Ape-X policies, 0 otherwise).")
  flags.DEFINE_string("env_name", None, "Environment (default: from the policy's metadata).")
  flags.DEFINE_integer("noop_max", 30, "Atari: up to this many no-op actions at each start.")
  flags.DEFINE_integer("max_episode_frames", None, "Atari: frame limit per game (default: "
                       "the run's, 108000 = 30 minutes).")
  flags.DEFINE_integer("num_envs", evaluation.DEFAULT_NUM_ENVS, "Parallel environments (at "
                       "most --episodes).")
  flags.DEFINE_integer("num_workers", None, "Worker processes/threads (default: in-process for "
                       "gymnasium envs, the cores for Atari).")
  flags.DEFINE_integer("seed", evaluation.EVAL_SEED, "Environment seed (env slot i gets seed + "
                       "i); the default, 10**9, is above every training seed.")
  flags.DEFINE_boolean("fire_reset", None, "Atari: FIRE at game start and after a lost life "
                       "(default: as the policy trained; --nofire_reset: the policy's own "
                       "actions only).")
  flags.DEFINE_string("output_name", evaluation.EVAL_FILE, "File name of the results in "
                      "--output_dir.")
  flags.DEFINE_string("output_dir", None, "Where eval.json goes (default: <policy_dir>-eval).")
  flags.DEFINE_boolean("overwrite", False, "Replace an existing eval.json / GIF.")
  flags.DEFINE_string("record", None, "Write the best episode as this GIF (relative paths go "
                      "into the output directory).")
  flags.mark_flag_as_required("policy_dir")


def main(argv):
  FLAGS = flags.FLAGS  # pylint: disable=invalid-name
  errors.refuse_arguments(argv)
  summary = evaluation.evaluate(
      FLAGS.policy_dir, episodes=FLAGS.episodes, epsilon=FLAGS.epsilon,
      env_name=FLAGS.env_name, noop_max=FLAGS.noop_max,
      max_episode_frames=FLAGS.max_episode_frames, num_envs=FLAGS.num_envs, seed=FLAGS.seed,
      output_dir=FLAGS.output_dir, overwrite=FLAGS.overwrite, record=FLAGS.record,
      num_workers=FLAGS.num_workers, fire_reset=FLAGS.fire_reset,
      output_name=FLAGS.output_name)
  print(evaluation.format_summary(summary))
  if summary.get("record"):
    print("best episode: %s" % summary["record"])
  sys.stdout.flush()


if __name__ == "__main__":
  _define_flags()
  app.run(main, flags_parser=errors.parse_flags)
