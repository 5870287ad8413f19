"""tools/reports/ablation.py: thresholds, budget cut and training wall time on hand-made runs; the
benchmark's frames and wall minutes to 18 per config (`time_to_score`)."""
import csv
import json
import os
import subprocess
import sys

import pytest

from paac_tf import errors
from tools.reports import ablation
from tools import events

TAG = ablation.RETURN_TAG


def _write_run(folder, points, eval_score=None):
  """points: (agent step, wall time, average return)."""
  os.makedirs(folder)
  with open(os.path.join(folder, "summaries.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["step", "wall_time", "tag", "value"])
    for step, wall, value in points:
      w.writerow([step, wall, TAG, value])
      w.writerow([step, wall, "Losses/total", 1.0])
  with open(os.path.join(folder, "run_info.json"), "w") as f:
    json.dump({"command": "python -m paac_tf.train --gin_file=x.gin"}, f)
  if eval_score is not None:
    with open(os.path.join(folder, "eval.json"), "w") as f:
      json.dump({"mean": eval_score, "std": 1.5}, f)   # as policies/evaluation writes it


def test_training_seconds_leave_out_pauses():
  assert events.training_seconds([100, 160, 220, 5000, 5060], 300) == [0, 60, 120, 120, 180]


def test_report_times_each_threshold_and_cuts_at_the_shortest_run(tmp_path):
  fast, slow = str(tmp_path / "fast"), str(tmp_path / "slow")
  # 250,000 agent steps = 1M frames per point, 60 s apart.
  _write_run(fast, [(250_000 * i, 1000 + 60 * i, r) for i, r in
                    enumerate([-21, -15, -5, 5, 19, 20], start=1)], eval_score=20.0)
  _write_run(slow, [(250_000 * i, 1000 + 120 * i, r) for i, r in
                    enumerate([-21, -20, -12, -8], start=1)])
  out = str(tmp_path / "out")
  rows = ablation.run("Pong", [("fast", fast), ("slow", slow)], [-10, 0, 18], out)
  by = {r["label"]: r for r in rows}
  # Budget = the shortest run: 4M frames; the fast run's points after it are cut.
  assert by["fast"]["frames"] == 4_000_000
  assert by["fast"]["final_training_average"] == 5
  assert by["fast"]["reached"]["-10"] == {"frames": 3_000_000, "wall_minutes": 2.0}
  assert by["fast"]["reached"]["0"] == {"frames": 4_000_000, "wall_minutes": 3.0}
  assert by["fast"]["reached"]["18"] is None
  assert by["slow"]["reached"]["-10"] == {"frames": 4_000_000, "wall_minutes": 6.0}
  # fast's eval.json names no train_step: no evaluation at the budget, so none in the table.
  assert by["fast"]["eval_score"] is None and by["slow"]["eval_score"] is None
  for ext in ("png", "md", "json"):
    assert os.path.getsize(os.path.join(out, "pong." + ext)) > 0
  table = open(os.path.join(out, "pong.md")).read()
  assert "| fast | 4.0M | 3 | 3.0M / 2 | 4.0M / 3 | - | 5.0 | 5.0 | - (not evaluated) |" in table


def test_a_folder_without_summaries_is_a_user_error(tmp_path):
  with pytest.raises(errors.UserError, match="publish_run"):
    ablation.read_curve("x", str(tmp_path))


# --- frames and wall minutes to a score, per config (the benchmark's table) ---------------

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _publish(folder, points, **info):
  """A results folder: run_info.json (`info`) and summaries.csv of (agent step, wall time,
  return)."""
  _write_run(str(folder), points)
  with open(os.path.join(folder, "run_info.json"), "w") as f:
    json.dump(dict({"env_name": "Pong", "algorithm": "paac"}, **info), f)


def test_time_to_score_per_config_leaves_out_pauses_archive_and_other_games(tmp_path):
  m = 1_000_000     # agent steps; 4 frames each
  # atari.gin: resumed after a 2-hour pause: 60 s, (pause), 60 s more to reach 18.
  _publish(tmp_path / "pong_a", [(m, 0.0, -20.0), (2 * m, 60.0, 5.0), (3 * m, 7260.0, 10.0),
                                 (4 * m, 7320.0, 18.5)],
           command="python -m paac_tf.train --gin_file=atari.gin --root_dir=runs/a "
                   "--gin_bindings=train_eval.total_steps=4000000",
           machine_note="2 cores, alone")
  # apex_atari.gin, never at 18: '-' and its best average.
  _publish(tmp_path / "pong_b", [(m, 0.0, -20.0), (2 * m, 240.0, 17.0), (3 * m, 300.0, 16.0)],
           command="python -m paac_tf.train --gin_file=apex_atari.gin", algorithm="apex",
           hardware="2-core x86_64, no GPU (Linux-6.1-x86_64)")
  # An explicit config wins over the command's.
  _publish(tmp_path / "pong_fast", [(m, 0.0, -5.0), (2 * m, 180.0, 18.0)],
           command="python -m paac_tf.train --gin_file=atari.gin "
                   "--gin_bindings=paac.entropy_coef=0.01", config="atari_fast.gin")
  _publish(tmp_path / "archive" / "pong_old", [(m, 0.0, 19.0)],
           command="python -m paac_tf.train --gin_file=atari.gin")
  _publish(tmp_path / "breakout", [(m, 0.0, 30.0)], env_name="Breakout",
           command="python -m paac_tf.train --gin_file=atari.gin")
  os.makedirs(tmp_path / "benchmark")          # no run_info.json: not a run
  result = ablation.time_to_score(str(tmp_path))
  rows = [(os.path.basename(r["folder"]), r) for r in result["rows"]]
  assert [name for name, _ in rows] == ["pong_b", "pong_a", "pong_fast"]   # by config
  by = dict(rows)
  assert by["pong_a"]["config"] == "atari.gin"
  assert by["pong_a"]["frames"] == 16 * m and by["pong_a"]["wall_minutes"] == 2.0
  assert by["pong_b"]["frames"] is None and by["pong_b"]["wall_minutes"] is None
  assert by["pong_b"]["best_training_average"] == 17.0
  assert by["pong_b"]["machine_note"] == "2-core x86_64, no GPU"    # hardware, no platform
  assert by["pong_fast"]["config"] == "atari_fast.gin"
  assert by["pong_fast"]["frames"] == 8 * m and by["pong_fast"]["wall_minutes"] == 3.0

  # The benchmark's table (in a subprocess: benchmark.py defines absl flags at import).
  code = ("import json, sys\nfrom tools.bench import benchmark\n"
          "table, summary = benchmark.summarize([json.loads(sys.argv[1])], 32)\n"
          "print(json.dumps([table, summary]))")
  proc = subprocess.run([sys.executable, "-c", code, json.dumps(result)], cwd=REPO,
                        capture_output=True, text=True, timeout=60)
  assert proc.returncode == 0, proc.stderr[-3000:]
  table, summary = json.loads(proc.stdout.strip().splitlines()[-1])
  folder = lambda name: os.path.join(str(tmp_path), name)
  assert "| config | results folder | frames to 18 | wall minutes to 18 | machine note |" in table
  assert "| atari.gin | %s | 16.0M | **2** | 2 cores, alone |" % folder("pong_a") in table
  assert ("| apex_atari.gin | %s | - (best 17.0 in 12.0M) | - (5 min run) | 2-core x86_64, "
          "no GPU |" % folder("pong_b")) in table
  assert "| atari_fast.gin | %s | 8.0M | **3** |  |" % folder("pong_fast") in table
  assert "pong_old" not in table and "breakout" not in table
  assert summary["time_to_score"] == {folder("pong_a"): 2.0, folder("pong_b"): None,
                                      folder("pong_fast"): 3.0}


def test_time_to_score_report_is_generated_and_never_replaces_a_hand_written_file(tmp_path):
  """results/time_to_score.md: the benchmark's last table over the committed Pong runs,
  written by its tool (python -m tools.reports.time_to_score), marked as generated."""
  m = 1_000_000
  results = tmp_path / "results"
  _publish(results / "pong_a", [(m, 0.0, -20.0), (2 * m, 120.0, 18.5)],
           command="python -m paac_tf.train --gin_file=atari.gin", machine_note="alone")
  output = results / "time_to_score.md"
  cli = [sys.executable, "-m", "tools.reports.time_to_score", str(results),
         "--output=%s" % output]
  proc = subprocess.run(cli, cwd=REPO, capture_output=True, text=True, timeout=120)
  assert proc.returncode == 0, proc.stderr[-3000:]
  text = output.read_text()
  assert text.startswith("Generated by `tools.reports.time_to_score` with `")
  assert "| atari.gin | %s | 8.0M | **2** | alone |" % (results / "pong_a") in text
  assert text == proc.stdout
  output.write_text("typed by hand\n")   # not ours: refused (one error line, exit 2)
  proc = subprocess.run(cli, cwd=REPO, capture_output=True, text=True, timeout=120)
  assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1].startswith("error: ")
  assert output.read_text() == "typed by hand\n"


def test_time_to_score_of_the_committed_pong_runs():
  rows = {os.path.basename(r["folder"]): r
          for r in ablation.time_to_score(os.path.join(REPO, "results"))["rows"]}
  assert "pong_paac_reference" in rows and "pong_apex" in rows
  assert "pong_paac_first_run" not in rows and "pong_paac_extended" not in rows   # archived
  reference = rows["pong_paac_reference"]
  assert reference["config"] == "atari.gin"
  assert 35e6 < reference["frames"] <= 38.4e6 and reference["best_training_average"] >= 18
  assert rows["pong_paac"]["frames"] is None     # 20M frames, never 18
  # Trained from atari.gin with atari_fast.gin's settings as bindings: labelled so.
  assert rows["pong_paac_fast"]["config"].startswith("atari.gin + initializer=orthogonal")
  assert rows["pong_paac_fast"]["frames"] < 21.2e6
  # Ape-X: the training average over all episodes, never the low-epsilon one alone (right
  # after pong_apex_small_2's resume, that was of one episode, at 18+ at 3.0M frames).
  for name in ("pong_apex_small", "pong_apex_small_2"):
    assert rows[name]["frames"] is None and rows[name]["best_training_average"] < 18


def test_an_apex_runs_curve_is_its_low_epsilon_return(tmp_path):
  folder = tmp_path / "apex"
  _write_run(str(folder), [(100, 10.0, -21.0), (200, 20.0, -5.0)])
  with open(folder / "summaries.csv", "a", newline="") as f:
    csv.writer(f).writerows([[100, 10.0, ablation.events.LOW_EPSILON_RETURN_VS_AGENT_STEPS, -20.0],
                             [200, 20.0, ablation.events.LOW_EPSILON_RETURN_VS_AGENT_STEPS, 3.0]])
  assert ablation.read_curve("apex", str(folder)).returns == [-20.0, 3.0]
  plain = tmp_path / "paac"
  _write_run(str(plain), [(100, 10.0, -21.0), (200, 20.0, -5.0)])
  assert ablation.read_curve("paac", str(plain)).returns == [-21.0, -5.0]
