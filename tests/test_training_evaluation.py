"""Evaluation while training, the run's summary, callbacks and the plot, on real short
CartPole runs (400 agent steps: 5 updates of n_e 16 x t_max 5, in-process)."""
import csv
import os
import subprocess
import sys

import pytest

import paac_tf
from conftest import REPO

from paac_tf import errors
from paac_tf import plot
from paac_tf.bookkeeping import callbacks
from paac_tf.bookkeeping import last_stop
from paac_tf.bookkeeping import run_result

SHORT = {"train_eval.total_steps": 400, "paac.num_workers": 0,
         "paac.stop_at_average_return": None}


class Recorder:
  """Keeps what the run tells its callbacks; stops it after `stop_after` updates."""

  def __init__(self, stop_after=None):
    self.updates, self.evaluations, self.end = [], [], None
    self.stop_after = stop_after

  def on_update(self, metrics):
    self.updates.append(metrics)
    return not (self.stop_after and len(self.updates) >= self.stop_after)

  def on_evaluation(self, result):
    self.evaluations.append(result)

  def on_end(self, result):
    self.end = result


def _csv_rows(root_dir):
  with open(os.path.join(root_dir, "train", "summaries.csv"), newline="") as f:
    return list(csv.DictReader(f))


def test_evaluation_while_training_changes_no_training_metric_and_is_summarised(tmp_path):
  """The same seed with the evaluation on (every 2 updates) and off gives the same updates
  bit for bit; the evaluations are logged (Eval/* in summaries.csv, against agent steps),
  told to the callbacks, the last one in the result and its summary."""
  off, on = Recorder(), Recorder()
  plain = paac_tf.train("cartpole.gin", {**SHORT, "paac.eval_interval": None},
                        root_dir=str(tmp_path / "off"), callbacks=[off])
  result = paac_tf.train("cartpole.gin", {**SHORT, "paac.eval_interval": 160,
                                          "paac.eval_episodes": 3},
                         root_dir=str(tmp_path / "on"), callbacks=[on])
  assert [u["agent_steps"] for u in on.updates] == [80, 160, 240, 320, 400]
  assert on.updates == off.updates   # every metric of every update, exactly
  assert [e["agent_steps"] for e in on.evaluations] == [160, 320, 400]   # 400: the end
  assert all(e["episodes"] == 3 and len(e["returns"]) == 3 for e in on.evaluations)
  assert on.end is result and off.end is plain
  assert result.evaluation == on.evaluations[-1] and plain.evaluation is None
  assert result.eval_seconds == pytest.approx(sum(e["wall_time_s"] for e in on.evaluations),
                                              abs=0.01)
  rows = [r for r in _csv_rows(result.root_dir) if r["tag"] == "Eval/AverageReturn"]
  assert [(int(r["step"]), float(r["value"])) for r in rows] == [
      (e["agent_steps"], e["mean"]) for e in on.evaluations]
  assert not [r for r in _csv_rows(plain.root_dir) if r["tag"].startswith("Eval/")]

  summary = result.summary().splitlines()
  assert summary[0].startswith("Run summary: total_steps reached at agent step 400 "
                               "(5 updates, %d episodes) in 0:" % result.episodes)
  assert "s of it evaluating" in summary[0] and result.wall_time_s > result.eval_seconds
  assert summary[1] == "  Training average return: %.2f over the last %d episodes." % (
      result.average_return, result.episodes_averaged)
  assert summary[2] == ("  Evaluation at agent step 400: mean return %.2f +- %.2f (std) "
                        "over 3 episodes (the evaluation protocol)." % (
                            result.evaluation["mean"], result.evaluation["std"]))
  policy = result.policy_dir
  assert policy == os.path.join(result.root_dir, "policies", "cartpole_v1", "400")
  assert summary[3:] == [
      "  Curves:   tensorboard --logdir %s/train" % result.root_dir,
      "  Plot:     python -m paac_tf.plot %s" % result.root_dir,
      "  Policy:   %s" % policy,
      "  Evaluate: python -m paac_tf.evaluate --policy_dir=%s" % policy,
      "  GIF:      python -m paac_tf.evaluate --policy_dir=%s --record=best.gif "
      "--output_dir=%s-gif" % (policy, policy)]
  assert "  Evaluation: none in this run (paac.eval_interval)." in plain.summary()

  # The plot command of the summary draws both curves from summaries.csv.
  png = plot.plot(result.root_dir)
  assert png == os.path.join(result.root_dir, "curve.png") and os.path.getsize(png) > 1000


def test_a_callback_stops_the_run_with_a_checkpoint_that_resumes(tmp_path):
  root = str(tmp_path / "run")
  stopper = Recorder(stop_after=2)
  stopped = paac_tf.train("cartpole.gin", SHORT, root_dir=root, callbacks=[stopper])
  assert (stopped.reason, stopped.agent_steps, stopped.updates) == ("callback", 160, 2)
  assert stopped.checkpoint == os.path.join(root, "train", "ckpt-160")
  assert stopped.policy_dir == os.path.join(root, "policies", "cartpole_v1", "160")
  assert "stopped by a callback at agent step 160" in stopped.summary()
  assert last_stop.read(root)["reason"] == "callback"
  resumed = Recorder()
  finished = paac_tf.train("cartpole.gin", SHORT, root_dir=root, callbacks=[resumed])
  assert [u["agent_steps"] for u in resumed.updates] == [240, 320, 400]
  assert [u["updates"] for u in resumed.updates] == [3, 4, 5]
  assert (finished.reason, finished.agent_steps) == ("done", 400)


def test_a_callback_without_a_hook_is_one_user_error():
  with pytest.raises(errors.UserError, match=r"callback 3 has none of the methods "
                                             r"on_update, on_evaluation, on_end\."):
    paac_tf.train("cartpole.gin", SHORT, callbacks=[3])
  assert not callbacks.active()


def test_the_summary_of_a_run_without_episodes_or_export():
  result = run_result.RunResult(agent_steps=0, updates=0, episodes=0,
                                average_return=float("nan"), reason="signal",
                                root_dir="/r", wall_time_s=3725.4)
  assert result.summary().splitlines() == [
      "Run summary: stopped by a signal at agent step 0 (0 updates, 0 episodes) in 1:02:05 "
      "(3725 s).",
      "  Training average return: no episode finished.",
      "  Evaluation: none in this run.",
      "  Curves:   tensorboard --logdir /r/train",
      "  Plot:     python -m paac_tf.plot /r",
      "  Policy:   none exported yet."]


def test_plot_of_a_directory_without_summaries_is_one_error(tmp_path):
  with pytest.raises(errors.UserError, match="summaries.csv not found: give a run directory"):
    plot.plot(str(tmp_path))


def test_plot_without_matplotlib_is_one_error_line_and_status_2(tmp_path):
  (tmp_path / "train").mkdir()
  (tmp_path / "train" / "summaries.csv").write_text("step,wall_time,tag,value\n")
  code = ("import runpy, sys; sys.modules['matplotlib'] = None; sys.argv = ['plot', %r]; "
          "runpy.run_module('paac_tf.plot', run_name='__main__')" % str(tmp_path))
  proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                        env=dict(os.environ, PYTHONPATH=REPO), timeout=120)
  assert (proc.returncode, proc.stderr) == (
      2, "error: plotting needs matplotlib: pip install 'paac_tf[plot]'.\n")
