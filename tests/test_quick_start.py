"""tools/reports/readme_quick_start.py: the README quick start's table of what `make train`
reaches, from hand-made results folders and from the committed ones."""
import csv
import json
import os
import subprocess
import sys

from tools.reports import ablation
from tools.reports import readme_quick_start as quick_start

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_milestone_points_every_milestone_the_target_the_evaluations_and_the_end():
  steps = [1_000_000, 2_000_000, 2_600_000, 4_000_000, 5_100_000, 5_200_000, 9_000_000]
  returns = [-21, -20, -15, 10, 18.5, 19, 20]
  # 2.5M -> index 2, 5M -> 4 (also the first >= 18), 7.5M -> 6 (also the last; one row for
  # the marks it passes at once); an evaluation at 3.9M -> index 3.
  assert quick_start.milestone_points(steps, returns, [3_900_000], 2_500_000) == [2, 3, 4, 6]
  assert quick_start.milestone_points(steps, returns, [], 2_500_000) == [2, 4, 6]
  assert quick_start.milestone_points(steps, returns, []) == [4, 6]   # every 5M
  assert quick_start.milestone_points([], [], [5]) == []


def test_nearest_point_ties_go_to_the_earlier():
  assert quick_start.nearest([10, 20, 30], 24) == 1
  assert quick_start.nearest([10, 20, 30], 25) == 1
  assert quick_start.nearest([10, 20, 30], 99) == 2


def _results_folder(folder, points, info, evaluations=()):
  os.makedirs(folder)
  with open(os.path.join(folder, "summaries.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["step", "wall_time", "tag", "value"])
    for step, wall, value in points:
      w.writerow([step, wall, ablation.RETURN_TAG, value])
  with open(os.path.join(folder, "run_info.json"), "w") as f:
    json.dump(info, f)
  for name, evaluation in evaluations:
    with open(os.path.join(folder, name), "w") as f:
      json.dump(evaluation, f)


def test_block_shows_atari_gin_pong_runs_only_with_their_evaluations(tmp_path):
  results = tmp_path / "results"
  points = [(1_250_000 * i, 1000 + 120 * i, r) for i, r in
            enumerate([-21, -20, -15, -5, 10, 17, 18.2, 19], start=1)]
  protocol = {"mean": 19.0, "returns": [18.0, 19.0, 20.0], "episodes": 3,
              "train_step": 10_000_000, "env_seeds": [10**9, 10**9 + 15]}
  earlier = {"mean": -5.0, "returns": [-6.0, -4.0], "episodes": 2, "train_step": 5_000_000}
  other_epsilon = dict(protocol, mean=3.0, epsilon=0.05, default_epsilon=0.0)
  _results_folder(str(results / "pong_ref"), points,
                  {"env_name": "Pong", "algorithm": "paac", "config": "atari.gin",
                   "machine_note": "2 cores, alone"},
                  [("eval.json", protocol), ("eval_at_5000000.json", earlier),
                   ("eval_epsilon_0.05.json", other_epsilon)])
  _results_folder(str(results / "pong_fast"), points,
                  {"env_name": "Pong", "algorithm": "paac", "config": "atari_fast.gin"})
  _results_folder(str(results / "breakout_ref"), points,
                  {"env_name": "Breakout", "algorithm": "paac", "config": "atari.gin"})
  _results_folder(str(results / "archive" / "pong_old"), points,
                  {"env_name": "Pong", "config": "atari.gin"})
  text = quick_start.block(str(results))
  assert "pong_fast" not in text and "breakout_ref" not in text and "pong_old" not in text
  rows = [line for line in text.splitlines() if line.startswith("| [pong_ref]")]
  # 5M (evaluated, earlier protocol), 8.75M (first at 18), 10M (the end, evaluated, with
  # the machine note); minutes: 120 s a point from the first.
  assert rows == [
      "| [pong_ref](results/pong_ref/) | 5M | 20M | 6 | -5.0 | -5.00 (s.e. 1.00; std 1.4, "
      "2 episodes) "
      "(earlier protocol) |  |",
      "| [pong_ref](results/pong_ref/) | 8.75M | 35M | 12 | 18.2 (**18 reached**) |  |  |",
      "| [pong_ref](results/pong_ref/) | 10M | 40M | 14 | 19.0 | 19.00 (s.e. 0.58; std 1.0, "
      "3 episodes) | "
      "2 cores, alone |"]


def test_the_readme_table_is_what_the_tool_writes():
  done = subprocess.run([sys.executable, "-m", "tools.reports.readme_quick_start", "--check"],
                        cwd=REPO, capture_output=True, text=True, timeout=120)
  assert done.returncode == 0, done.stderr


def test_check_fails_on_a_table_edited_by_hand(tmp_path):
  with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
    text = f.read()
  start = text.index(quick_start.BEGIN) + len(quick_start.BEGIN)
  readme = tmp_path / "README.md"
  readme.write_text(text[:start] + "\n| typed | by hand |" + text[start:], encoding="utf-8")
  done = subprocess.run([sys.executable, "-m", "tools.reports.readme_quick_start", "--check",
                         "--readme=%s" % readme,
                         "--results_dir=%s" % os.path.join(REPO, "results")],
                        cwd=REPO, capture_output=True, text=True, timeout=120)
  assert done.returncode == 1 and "tools.reports.readme_quick_start" in done.stderr
