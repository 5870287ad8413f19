"""tools/ablation.py: thresholds, budget cut and training wall time on hand-made runs."""
import csv
import json
import os

import pytest

from paac_tf import errors
from paac_tf.tools import ablation

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
  assert ablation.training_seconds([100, 160, 220, 5000, 5060], 300) == [0, 60, 120, 120, 180]


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
  assert by["fast"]["eval_score"] == 20.0 and by["slow"]["eval_score"] is None
  for ext in ("png", "md", "json"):
    assert os.path.getsize(os.path.join(out, "pong." + ext)) > 0
  table = open(os.path.join(out, "pong.md")).read()
  assert "| fast | 4.0M | 3 | 3.0M / 2 | 4.0M / 3 | - | 5.0 | 5.0 | 20.0 ± 1.5 |" in table


def test_a_folder_without_summaries_is_a_user_error(tmp_path):
  with pytest.raises(errors.UserError, match="publish_run"):
    ablation.read_curve("x", str(tmp_path))
