"""`python -m paac_tf.train` end to end, as a user runs it (real processes, real envs)."""
import glob
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

import pytest
import tensorflow as tf

from conftest import REPO, run_module

from paac_tf.bookkeeping import last_stop


def _scalars(run_dir, tag):
  """[(step, value)] of a scalar tag in run_dir/train's event files."""
  out = []
  for path in sorted(glob.glob(os.path.join(run_dir, "train", "events.out.tfevents*"))):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        if value.tag == tag:
          out.append((event.step, float(tf.make_ndarray(value.tensor))))
  return sorted(out)


def _checkpoint_steps(run_dir):
  state = tf.train.get_checkpoint_state(os.path.join(run_dir, "train"))
  if state is None:
    return []
  return [int(p.rsplit("-", 1)[1]) for p in state.all_model_checkpoint_paths]


@pytest.mark.timeout(900)
@pytest.mark.system   # a whole run: `make test-system` (.ci/run's second step)
def test_cartpole_is_solved_through_the_cli(tmp_path):
  root = str(tmp_path / "cartpole")
  proc = run_module("paac_tf.train", "--gin_file=cartpole.gin", "--root_dir=" + root, timeout=900)
  assert proc.returncode == 0, proc.stderr[-3000:]
  returns = _scalars(root, "Metrics/AverageReturn")
  assert returns, "no Metrics/AverageReturn summaries"
  assert returns[-1][1] >= 475.0, returns[-5:]
  assert os.path.exists(os.path.join(root, "operative_config.gin"))
  assert glob.glob(os.path.join(root, "policies", "*", "*", "saved_model.pb"))


@pytest.mark.timeout(600)
def test_pong_runs_2000_agent_steps_end_to_end(tmp_path):
  root = str(tmp_path / "pong")
  proc = run_module("paac_tf.train", "--gin_file=atari.gin", "--root_dir=" + root,
                    "--gin_bindings=train_eval.total_steps=2000",
                    "--gin_bindings=paac.summary_interval=2", timeout=600)
  assert proc.returncode == 0, proc.stderr[-3000:]
  for tag in ("Losses/policy", "Losses/value", "Losses/entropy", "Losses/total",
              "Optimizer/learning_rate", "Optimizer/global_norm", "Perf/steps_per_second"):
    assert _scalars(root, tag), tag
  steps = _checkpoint_steps(root)
  assert steps and steps[-1] >= 2000, steps
  assert os.path.exists(os.path.join(root, "operative_config.gin"))
  with open(os.path.join(root, "operative_config.gin")) as f:
    config = f.read()
  assert "paac.network = 'arch_nips'" in config
  assert "train_eval.env_name = 'Pong'" in config
  # The run's summary (run_result.summary_lines), before the last two lines.
  summary = proc.stderr.rstrip("\n").splitlines()[-10:-2]
  policy = os.path.join(root, "policies", "pong", str(steps[-1]))
  assert summary[0].startswith("Run summary: total_steps reached at agent step %d (%d "
                               "updates, " % (steps[-1], steps[-1] // 160)), summary
  assert summary[2:] == [
      "  Evaluation: none in this run (paac.eval_interval).",
      "  Curves:   tensorboard --logdir %s/train" % root,
      "  Plot:     python -m paac_tf.plot %s" % root,
      "  Policy:   %s" % policy,
      "  Evaluate: python -m paac_tf.evaluate --policy_dir=%s" % policy,
      "  GIF:      python -m paac_tf.evaluate --policy_dir=%s --record=best.gif "
      "--output_dir=%s-gif" % (policy, policy)], summary


@pytest.mark.timeout(600)
@pytest.mark.system   # a whole run: `make test-system` (.ci/run's second step)
def test_after_ctrl_c_the_printed_command_resumes_the_run_and_finishes_it(tmp_path):
  """No --root_dir (the default one under the working directory): SIGINT once the model
  exists; the last lines name the checkpoint and the exact command that resumes it (with
  the --root_dir that was chosen), which, run as printed, resumes there and finishes."""
  cwd = tmp_path / "cwd"
  cwd.mkdir()
  env = dict(os.environ, PYTHONPATH=REPO)
  args = [sys.executable, "-m", "paac_tf.train", "--gin_file=cartpole.gin",
          "--gin_bindings=paac.stop_at_average_return=None",
          "--gin_bindings=train_eval.total_steps=4000"]
  proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
  try:
    deadline = time.time() + 300
    while not glob.glob(str(cwd / "runs" / "cartpole-*" / "train" / "events.out.tfevents*")):
      assert proc.poll() is None, proc.stdout.read()[-3000:]
      assert time.time() < deadline
      time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=180)
  finally:
    if proc.poll() is None:
      proc.kill()
  assert proc.returncode == 0, out[-3000:]
  root = glob.glob(str(cwd / "runs" / "cartpole-*"))[0]
  step = _checkpoint_steps(root)[-1]
  assert step < 4000, step
  last = out.rstrip("\n").splitlines()[-3:]
  assert last[0] == "Stopped (SIGINT) at agent step %d; checkpoint %s/train/ckpt-%d." % (
      step, root, step), last
  assert last[1].startswith("Newest export: "), last
  assert last[2].startswith("Resume with: ") and last[2].endswith(" --root_dir=" + root), last
  stopped = last_stop.read(root)   # why it stopped, for tools, without reading the log
  assert (stopped["reason"], stopped["agent_steps"]) == ("signal", step), stopped
  command = shlex.split(last[2][len("Resume with: "):])
  assert command[1:] == args[1:] + ["--root_dir=" + root], command
  rerun = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
  assert rerun.returncode == 0, rerun.stderr[-3000:]
  assert "Resuming at agent step %d" % step in rerun.stderr
  final = _checkpoint_steps(root)[-1]
  assert final >= 4000, final
  assert rerun.stderr.rstrip("\n").splitlines()[-2:] == [
      "Finished (done) at agent step %d; checkpoint %s/train/ckpt-%d." % (final, root, final),
      "Newest export: %s/policies/cartpole_v1/%d" % (root, final)], rerun.stderr[-2000:]
  finished = last_stop.read(root, since=stopped["ended"])   # the resumed process's record
  assert (finished["reason"], finished["agent_steps"]) == ("done", final), finished


@pytest.mark.timeout(600)
@pytest.mark.system   # a whole run: `make test-system` (.ci/run's second step)
@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_ctrl_c_through_make_train_saves_and_make_ends_by_the_signal(tmp_path):
  """The quick start's `make train` in a terminal: Ctrl-C is SIGINT to make's process group.
  The run saves and ends with status 0, as run directly; GNU make (4.3 here) then ends by
  the SIGINT itself, whatever its recipe returned (a shell shows 130): docs/training.md,
  'Stopping', states it. The Makefile's own recipe, with this interpreter and no install."""
  root = str(tmp_path / "run")
  stamp = str(tmp_path / "installed")      # -o: make takes the install as done
  command = ["make", "-C", REPO, "train", "PY=" + sys.executable, "STAMP=" + stamp, "-o", stamp,
             "GIN=cartpole.gin", "ARGS=--root_dir=%s --gin_bindings=train_eval.total_steps=40000 "
             "--gin_bindings=paac.stop_at_average_return=None" % root]
  # make as a terminal starts it: SIGINT at its default. A background job of a shell without
  # job control (`cmd &` in a script, as a CI may run this suite) inherits SIGINT ignored,
  # and an ignored SIGINT stays ignored in make (it then ends with its recipe's status, 0).
  proc = subprocess.Popen(command, env=dict(os.environ, PYTHONPATH=REPO), text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          start_new_session=True,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
  try:
    deadline = time.time() + 300
    while not glob.glob(os.path.join(root, "train", "events.out.tfevents*")):
      assert proc.poll() is None, proc.stdout.read()[-3000:]
      assert time.time() < deadline
      time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGINT)        # as a terminal's Ctrl-C
    out, _ = proc.communicate(timeout=180)
  finally:
    if proc.poll() is None:
      os.killpg(proc.pid, signal.SIGKILL)
  assert proc.returncode == -signal.SIGINT, (proc.returncode, out[-3000:])
  step = _checkpoint_steps(root)[-1]
  assert step < 40000, step
  assert "Stopped (SIGINT) at agent step %d; checkpoint %s/train/ckpt-%d." % (
      step, root, step) in out, out[-3000:]
  stopped = last_stop.read(root)
  assert (stopped["reason"], stopped["agent_steps"]) == ("signal", step), stopped


# TensorFlow's C++ start-up noise on a CPU machine (and the old gym package's notice), and
# its INFO lines at every export (SavedModel builder, fingerprint, Keras's renamed inputs).
TF_NOISE = ("oneDNN custom operations", "cpu_feature_guard", "rebuild TensorFlow",
            "TensorRT", "Unable to register", "cudart_stub", "Gym has been unmaintained",
            "Assets written to", "Writing fingerprint", "will be renamed", "untraced functions")


def _user_env(**extra):
  """The environment of a user who set no TF_CPP_MIN_LOG_LEVEL (conftest sets one)."""
  env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
  env.update(extra)
  return env


@pytest.mark.timeout(300)
@pytest.mark.system   # a whole run: `make test-system` (.ci/run's second step)
def test_no_tensorflow_start_up_noise_unless_asked_for(tmp_path):
  proc = subprocess.run(
      [sys.executable, "-m", "paac_tf.train", "--gin_file=cartpole.gin",
       "--gin_bindings=train_eval.total_steps=500", "--root_dir=%s" % tmp_path],
      cwd=REPO, env=_user_env(), capture_output=True, text=True, timeout=300)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert "Run directory" in proc.stderr          # the project's own log lines stay
  assert "Exported paac policy" in proc.stderr   # the final export was made
  assert [n for n in TF_NOISE if n in proc.stderr] == [], proc.stderr[:3000]
  # export of a missing run loads TensorFlow, then stops: it shows the switch at work.
  export_args = [sys.executable, "-m", "paac_tf.export", "--root_dir=%s" % (tmp_path / "none")]
  quiet = subprocess.run(export_args, cwd=REPO, env=_user_env(), capture_output=True,
                         text=True, timeout=120)
  verbose = subprocess.run(export_args, cwd=REPO, env=_user_env(PAAC_TF_VERBOSE_TF="1"),
                           capture_output=True, text=True, timeout=120)
  assert "does not exist" in quiet.stderr, quiet.stderr[-2000:]
  assert [n for n in TF_NOISE if n in quiet.stderr + quiet.stdout] == []
  assert "cpu_feature_guard" in verbose.stderr, verbose.stderr[-2000:]
  assert "Gym has been unmaintained" not in verbose.stderr   # tf-agents' gym stays quiet


@pytest.mark.timeout(600)
@pytest.mark.system   # a run of the example: `make test-system`
def test_the_tf_agents_example_and_the_tools_start_quietly_unless_asked_for():
  """examples/tf_agents_cartpole.py (which imports tf-agents before anything of paac_tf) and
  a tool that loads TensorFlow (`python -m tools.codegen.config_reference --check`) print none of
  TensorFlow's C++ start-up lines nor the old gym's notice; a user's own
  TF_CPP_MIN_LOG_LEVEL=0 is kept."""
  example = [sys.executable, os.path.join(REPO, "examples", "tf_agents_cartpole.py"),
             "--batched", "--max_iterations", "1"]
  tool = [sys.executable, "-m", "tools.codegen.config_reference", "--check"]
  env = _user_env(PYTHONPATH=REPO)
  for args in (example, tool):
    proc = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [n for n in TF_NOISE if n in proc.stderr + proc.stdout] == [], proc.stderr[:3000]
    if args is example:   # it ran: its last line is its result
      assert json.loads(proc.stdout.strip().splitlines()[-1])["updates"] == 1, proc.stdout
  own = subprocess.run(tool, cwd=REPO, env=_user_env(PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="0"),
                       capture_output=True, text=True, timeout=300)
  assert own.returncode == 0 and "cpu_feature_guard" in own.stderr, own.stderr[-2000:]


def _expect_user_error(proc, *fragments):
  assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
  assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
  for fragment in fragments:
    assert fragment in proc.stderr, proc.stderr[-2000:]


def test_unknown_game_is_a_clear_error(tmp_path):
  proc = run_module("paac_tf.train", "--gin_file=atari.gin", "--root_dir=%s" % tmp_path,
                    "--gin_bindings=train_eval.env_name='Pongg'")
  _expect_user_error(proc, "Unknown environment 'Pongg'", "Pong")


def test_user_message_is_one_line_without_gin_call_lines():
  from paac_tf import errors  # pylint: disable=import-outside-toplevel
  error = ValueError("Replay at  host:1\n  is gone.\n  In call to configurable 'x' (<fn>)")
  assert errors.user_message(error) == "Replay at host:1 is gone."
  assert errors.user_message(TimeoutError()) == "TimeoutError"


def test_missing_gin_file_is_a_clear_error(tmp_path):
  proc = run_module("paac_tf.train", "--gin_file=atarri.gin", "--root_dir=%s" % tmp_path)
  _expect_user_error(proc, "atarri.gin", "not found", "atari.gin")


def test_unknown_binding_is_a_clear_error(tmp_path):
  proc = run_module("paac_tf.train", "--gin_file=cartpole.gin", "--root_dir=%s" % tmp_path,
                    "--gin_bindings=paac.num_envz=3")
  _expect_user_error(proc, "num_envz")


def test_an_unknown_target_environment_is_a_clear_error(tmp_path):
  proc = run_module("paac_tf.train", "--gin_file=cartpole.gin", "--root_dir=%s" % tmp_path,
                    "--gin_bindings=paac.target_env_name='CartPol-v1'",
                    "--gin_bindings=paac.num_workers=0")
  _expect_user_error(proc, "Unknown environment 'CartPol-v1'", "CartPole-v1")


def test_gin_syntax_error_names_the_line(tmp_path):
  bad = tmp_path / "bad.gin"
  bad.write_text("train_eval.env_name = 'CartPole-v1'\ntrain_eval.total_steps = = 3\n")
  proc = run_module("paac_tf.train", "--gin_file=%s" % bad, "--root_dir=%s" % (tmp_path / "r"))
  _expect_user_error(proc, "line 2")


def test_unwritable_root_dir_is_a_clear_error(tmp_path):
  blocker = tmp_path / "file"
  blocker.write_text("x")
  proc = run_module("paac_tf.train", "--gin_file=cartpole.gin", "--root_dir=%s/run" % blocker)
  _expect_user_error(proc, "Cannot write to --root_dir")


@pytest.mark.timeout(300)
@pytest.mark.system   # a whole run: `make test-system` (.ci/run's second step)
def test_resuming_with_another_network_is_refused_and_touches_nothing(tmp_path):
  root = str(tmp_path / "run")
  first = run_module("paac_tf.train", "--gin_file=cartpole.gin", "--root_dir=" + root,
                     "--gin_bindings=train_eval.total_steps=1600")
  assert first.returncode == 0, first.stderr[-3000:]
  before = {p: os.path.getmtime(p) for p in glob.glob(os.path.join(root, "**"), recursive=True)}
  proc = run_module("paac_tf.train", "--gin_file=cartpole.gin", "--root_dir=" + root,
                    "--gin_bindings=train_eval.total_steps=3200",
                    "--gin_bindings=paac.mlp_units=(32,)",
                    "--gin_bindings=paac.network='arch_nips'")
  _expect_user_error(proc, "different configuration", "network")
  after = {p: os.path.getmtime(p) for p in glob.glob(os.path.join(root, "**"), recursive=True)}
  assert before == after


def test_unsupported_action_space_is_a_clear_error(tmp_path):
  proc = run_module("paac_tf.train", "--gin_file=cartpole.gin", "--root_dir=%s" % tmp_path,
                    "--gin_bindings=train_eval.env_name='Pendulum-v1'")
  _expect_user_error(proc, "Pendulum-v1", "Box")


@pytest.mark.parametrize("module, flag", [("paac_tf.train", "--gin_file=cartpole.gin"),
                                          ("paac_tf.evaluate", "--policy_dir=/nonexistent"),
                                          ("paac_tf.export", "--root_dir=/nonexistent")])
def test_a_positional_argument_is_refused_in_one_line(module, flag):
  proc = run_module(module, "stray", flag, timeout=120)
  assert proc.returncode == 2, proc.stderr[-2000:]
  assert proc.stderr.strip().splitlines()[-1] == "error: Unexpected arguments: stray"
  assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("module, args, expected", [
    ("paac_tf.train", ["--gin_fil=atari.gin"],
     "error: Unknown command line flag 'gin_fil'. Did you mean: gin_file ?"),
    ("paac_tf.evaluate", ["--policy_dir=/nonexistent", "--episodes=abc"],
     "error: flag --episodes=abc: invalid literal for int() with base 10: 'abc'"),
    ("tools.reports.time_to_score", ["results", "--reps=3"],   # it draws no intervals
     "error: Unknown command line flag 'reps'")])
def test_a_flag_absl_cannot_parse_is_one_error_line_and_exit_2(module, args, expected):
  proc = run_module(module, *args, timeout=120)
  assert proc.returncode == 2, proc.stderr[-2000:]
  lines = proc.stderr.strip().splitlines()
  assert lines[-1] == expected + " (--helpshort lists the flags)", proc.stderr[-2000:]
  assert [line for line in lines if line.startswith(("error:", "FATAL", "Traceback"))] == lines[-1:]
