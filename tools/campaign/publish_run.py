r"""Publishes a finished (or stopped) run under results/<name>/ with everything to repeat it.

  python -m tools.campaign.publish_run --run_dir=runs/pong_paac --name=pong_paac \
      --command="python -m paac_tf.train --gin_file=atari.gin --root_dir=runs/pong_paac"

Writes results/<name>/: curve.png (return against frames and wall time), summaries.csv
(every scalar summary), eval.json (the newest exported policy under the 30 no-op protocol,
unless --episodes=0; a policy trained with FIRE at reset is evaluated twice: eval.json with
that assist, eval_policy_only.json with its own actions only; --eval_name names the
first file, e.g. eval_at_2500000.json for a run that goes on), --commit_policy copies the
evaluated SavedModel into results/<name>/policy/, run_info.json (command, wall time,
hardware, steps, and --config / --machine_note when given; for Ape-X also learner steps,
learner steps/s and the replay ratio from the learner's summaries), operative_config.gin;
then regenerates the reports over all of results/: results/games.md (the 12 games),
results/seeds.md (the seeds of Pong and Breakout), results/qbert_original/comparison.md
(Qbert against the original's curve), results/continuous.md (continuous-control runs beside
published DDPG / TD3 scores), results/README.md with the compare tool (results/archive/
only in its last section; it links the other four) and the README's results at a glance
(tools/reports/readme_glance.py) and quick-start table (tools/reports/readme_quick_start.py).

--config names the config that made the run when its command does not say it plainly (e.g.
atari.gin with bindings equal to atari_fast.gin's: --config=atari_fast.gin); without it,
compare derives the label from --command (tools/reports/run_labels.py). A superseded
results folder is moved to results/archive/ by tools/campaign/archive_run.py, which adds
"archive_reason" (and "superseded_by": the folder that replaces it) to its run_info.json.
"""
import glob
import json
import os
import platform
import shutil
import subprocess
import sys

from absl import app
from absl import flags

from paac_tf import errors
from paac_tf.envs import names
from paac_tf.bookkeeping import last_stop
from tools import events
from tools import reference_scores as ref
from tools import REPO


def run(*args):
  print("+", " ".join(args), flush=True)
  subprocess.run([sys.executable, *args], cwd=REPO, check=True)


def newest_policy(run_dir):
  versions = [p for p in glob.glob(os.path.join(run_dir, "policies", "*", "*"))
              if os.path.basename(p).isdigit()]
  return max(versions, key=lambda p: int(os.path.basename(p))) if versions else None


FLAGS = flags.FLAGS


def _define_flags():
  flags.DEFINE_string("run_dir", None, "The run directory (what paac_tf.train wrote).")
  flags.DEFINE_string("name", None, "The results folder to write: results/<name>/.")
  flags.DEFINE_string("command", None, "The exact command that made the run.")
  flags.DEFINE_integer("episodes", 30, "Evaluation episodes (0: no evaluation).")
  flags.DEFINE_string("notes", "", "What the run is for, kept in run_info.json.")
  flags.DEFINE_string("config", None, "The config that made the run, e.g. atari_fast.gin "
                      "(default: derived from --command by compare).")
  flags.DEFINE_string("machine_note", None, "How loaded the machine was, e.g. '2 cores, "
                      "alone' (shown beside the wall minutes in the benchmark's time-to-18 "
                      "table).")
  flags.DEFINE_string("commit", None, "Commit of the code that made the run (default: this "
                      "checkout's HEAD).")
  flags.DEFINE_string("policy_dir", None, "SavedModel to evaluate (default: the run's newest "
                      "export).")
  flags.DEFINE_string("eval_name", "eval.json", "File of the evaluation in results/<name>/.")
  flags.DEFINE_boolean("commit_policy", False, "Copy the evaluated SavedModel into "
                       "results/<name>/policy/.")
  flags.mark_flags_as_required(["run_dir", "name", "command"])


def main(argv):
  errors.refuse_arguments(argv)
  out = os.path.join(REPO, "results", FLAGS.name)
  os.makedirs(out, exist_ok=True)
  run("-m", "tools.reports.plot", FLAGS.run_dir, "--output=" + os.path.join(out, "curve.png"),
      "--x=both", "--csv=" + os.path.join(out, "summaries.csv"))
  policy = FLAGS.policy_dir or newest_policy(FLAGS.run_dir)
  if FLAGS.episodes and policy:
    run("-m", "paac_tf.evaluate", "--policy_dir=" + policy, "--episodes=%d" % FLAGS.episodes,
        "--output_dir=" + out, "--output_name=" + FLAGS.eval_name, "--overwrite")
    with open(os.path.join(out, FLAGS.eval_name)) as f:
      trained_with_fire = (json.load(f).get("assists") or {}).get("fire_at_game_start")
    if trained_with_fire:   # the same policy with its own actions only
      run("-m", "paac_tf.evaluate", "--policy_dir=" + policy, "--episodes=%d" % FLAGS.episodes,
          "--output_dir=" + out, "--nofire_reset", "--overwrite",
          "--output_name=" + FLAGS.eval_name.replace("eval", "eval_policy_only", 1))
  if FLAGS.commit_policy and policy:
    target = os.path.join(out, "policy", *os.path.normpath(policy).split(os.sep)[-2:])
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(policy, target)
  ev = events.read_run_events(os.path.join(FLAGS.run_dir, "train"))
  with open(os.path.join(FLAGS.run_dir, "train", "run_config.json")) as f:
    run_config = json.load(f)
  steps = int(ev.last_env_step() or 0)
  atari = names.resolve_atari(run_config.get("env_name", "")) is not None
  info = {"command": FLAGS.command, "wall_time_s": ev.wall_time_s(), "agent_steps": steps,
          "frames": steps * ref.FRAMES_PER_AGENT_STEP if atari else None,
          "algorithm": run_config.get("algorithm"), "env_name": run_config.get("env_name"),
          "hardware": "%d-core %s, no GPU (%s)" % (os.cpu_count(), platform.machine(),
                                                  platform.platform()),
          "evaluated_policy": policy, "notes": FLAGS.notes,
          "commit": FLAGS.commit or subprocess.run(
              ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True,
              check=False).stdout.strip() or None}
  info.update({k: v for k, v in (("config", FLAGS.config), ("machine_note", FLAGS.machine_note))
               if v})
  # Why its last training process stopped (done / target / signal): a run stopped at its
  # target average return is finished there (tools/campaign/campaign.py reads it once the run
  # directory is gone).
  stopped = last_stop.read(FLAGS.run_dir)
  if stopped and stopped.get("reason"):
    info["stop_reason"] = stopped["reason"]
  # A learner's steps, batches/s and replay ratio, from its summaries (none for a run
  # without a learner).
  info.update(events.learner_rates(ev))
  with open(os.path.join(out, "run_info.json"), "w") as f:
    json.dump(info, f, indent=2)
  shutil.copy(os.path.join(FLAGS.run_dir, "operative_config.gin"), out)
  regenerate_reports()


def regenerate_reports():
  """The reports over all of results/ (issue 27), then results/README.md, which links them,
  and the README's results at a glance."""
  run("-m", "tools.reports.games", "results", "--output=results/games.md")
  run("-m", "tools.reports.seeds", "results", "--output=results/seeds.md")
  run("-m", "tools.reports.original_curve")
  run("-m", "tools.reports.continuous", "--results_dir=results", "--output=results/continuous.md")
  run("-m", "tools.reports.time_to_score", "results", "--output=results/time_to_score.md")
  run("-m", "tools.reports.compare", "results", "--output=results/README.md", "--overwrite")
  run("-m", "tools.reports.readme_glance")        # README.md's results at a glance
  run("-m", "tools.reports.readme_quick_start")   # README.md's quick-start table


if __name__ == "__main__":
  _define_flags()
  app.run(main, flags_parser=errors.parse_flags)
