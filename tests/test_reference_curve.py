"""The reference run's curve beside a run's own in TensorBoard (bookkeeping/reference_curve.py):
the choice of the reference among results folders, the thinning of its curve, and a real
short run that writes it to root_dir/reference once (not again on resume)."""
import json
import os
import subprocess
import sys

import pytest

import paac_tf
from paac_tf.bookkeeping import config
from paac_tf.bookkeeping import reference_curve
from paac_tf.bookkeeping import summary_tags
from tools import events

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

RETURN = summary_tags.RETURN_VS_AGENT_STEPS


def test_choose_takes_same_config_and_env_with_most_agent_steps_ties_by_name():
  runs = {"pong_b": {"config": "atari.gin", "env_key": "Pong", "agent_steps": 5},
          "pong_a": {"config": "atari.gin", "env_key": "Pong", "agent_steps": 5},
          "pong_short": {"config": "atari.gin", "env_key": "Pong", "agent_steps": 4},
          "pong_longer_other_config": {"config": "atari_fast.gin", "env_key": "Pong",
                                       "agent_steps": 9},
          "breakout": {"config": "atari.gin", "env_key": "Breakout", "agent_steps": 9}}
  assert reference_curve.choose(runs, "atari.gin", "Pong") == "pong_a"
  assert reference_curve.choose(runs, "atari_fast.gin", "Pong") == "pong_longer_other_config"
  assert reference_curve.choose(runs, "atari.gin", "Qbert") is None


def test_thin_keeps_first_and_last_evenly_spaced():
  assert reference_curve.thin([1, 2, 3], 5) == [1, 2, 3]
  assert reference_curve.thin(list(range(11)), 3) == [0, 5, 10]
  assert reference_curve.thin(list(range(10)), 4) == [0, 3, 6, 9]
  assert reference_curve.thin([1, 2, 3], 1) == [3]


@pytest.mark.parametrize("config_name,env,folder", [
    ("atari.gin", "Qbert", "qbert_paac_reference_80m"),   # 40M agent steps: the longest
    ("atari_fast.gin", "PongNoFrameskip-v4", "pong_paac_fast_alone"),   # 10M: the longest
    ("apex_dpg_small.gin", "HalfCheetah-v5", "halfcheetah_apex_dpg_small"),
    ("cartpole.gin", "CartPole-v1", None)])
def test_the_committed_results_give_each_config_and_game_its_reference(config_name, env, folder):
  found = reference_curve.find_reference(reference_curve.RESULTS_DIR, config_name, env)
  assert found == (os.path.join(reference_curve.RESULTS_DIR, folder) if folder else None)


def _results_folder(parent, name, agent_steps, returns):
  folder = parent / name
  folder.mkdir(parents=True)
  (folder / reference_curve.RUN_INFO).write_text(json.dumps(
      {"config": "cartpole.gin", "env_name": "CartPole-v1", "agent_steps": agent_steps}))
  rows = ["step,wall_time,tag,value"] + [
      "%d,%f,%s,%r" % (step, 1.7e9 + step, RETURN, value) for step, value in returns] + [
      "%d,%f,Losses/total,0.5" % (step, 1.7e9 + step) for step, _ in returns]
  (folder / reference_curve.SUMMARIES_CSV).write_text("\n".join(rows) + "\n")


@pytest.mark.timeout(300)
@pytest.mark.system   # two short trainings: ~45 s on a loaded 2-core machine
def test_a_run_writes_its_reference_curve_once(tmp_path):
  results = tmp_path / "results"
  reference = [(200 * i, 10.0 + 3.5 * i) for i in range(1, 31)]
  _results_folder(results, "cartpole_long", 6000, reference)
  _results_folder(results, "cartpole_short", 400, [(200, 99.0)])
  root = str(tmp_path / "run")
  short = ["train_eval.total_steps=400", "paac.num_workers=0",
           "reference_curve.results_dir='%s'" % results, "reference_curve.max_points=10"]
  paac_tf.train(["cartpole.gin"], short, root_dir=root)
  reference_dir = os.path.join(root, reference_curve.REFERENCE_DIR)
  files = events.event_files(reference_dir)
  assert len(files) == 1
  read = events.read_run_events(reference_dir)
  expected = reference_curve.thin(reference, 10)
  assert [(p.step, p.value) for p in read.series(RETURN)] == expected   # exact in float32
  assert read.tags() == [RETURN]
  # The run's own curve has the same tag, in root/train: TensorBoard overlays the two.
  assert events.read_run_events(os.path.join(root, "train")).series(RETURN)
  # Resumed: the reference is not written again.
  paac_tf.train(["cartpole.gin"], short[:1] + ["train_eval.total_steps=800"] + short[1:],
                root_dir=root)
  assert events.event_files(reference_dir) == files
  # A run of a config of its own, or without results: no reference.
  assert reference_curve.write(str(tmp_path / "other"), ["/x/my.gin"], "CartPole-v1") is None
  assert reference_curve.write(str(tmp_path / "other"), [os.path.join(
      config.CONFIGS_DIR, "cartpole.gin")], "CartPole-v1",
                               results_dir=str(tmp_path / "none")) is None


def test_writing_the_reference_leaves_tensorflows_thread_pools_to_the_run(tmp_path):
  """The reference is written before the training processes set TensorFlow's thread pools
  (bookkeeping/threads.py), which fails once TensorFlow's runtime has started."""
  code = ("import sys, tensorflow as tf\n"
          "from paac_tf.bookkeeping import reference_curve\n"
          "reference_curve._write_events(sys.argv[1], {'a/b': [(1, 2.0), (2, 3.0)]})\n"
          "tf.config.threading.set_intra_op_parallelism_threads(2)\n"
          "print('pools', tf.config.threading.get_intra_op_parallelism_threads())\n")
  done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "ref")], cwd=REPO,
                        capture_output=True, text=True, timeout=300,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert done.returncode == 0 and "pools 2" in done.stdout, done.stderr[-2000:]
  read = events.read_run_events(str(tmp_path / "ref"))
  assert [(p.step, p.value) for p in read.series("a/b")] == [(1, 2.0), (2, 3.0)]
