"""The issue-27 reports on hand-made results folders (real files, real rliable calls):
aggregates (IQM, median, P(X > Y) and their intervals), one run a seed (seed_runs), the
seeds report (seeds.md, its curves and the run made alone), the 12-game report, the
ablation report's rows of several seeds, reading a graph's values off a PNG and our run
against the original's curve."""
import csv
import json
import os
import re

import numpy as np
import pytest

from conftest import loss_rows_spanning
from conftest import run_module
from paac_tf import errors
from tools.reports import ablation
from tools.reports import aggregates
from tools.reports import games
from tools.reports import readme_glance as glance
from tools.reports import graph_reading
from tools.reports import curve_points
from tools.reports import original_curve
from tools.reports import run_groups
from tools.reports import run_results
from tools.reports import seed_runs
from tools.reports import seeds

REPS = 200         # bootstrap replications in these tests (the reports' default: 10,000)
M = 1_000_000
FAST = ("python -m paac_tf.train --gin_file=atari_fast.gin --root_dir=/x "
        "--gin_bindings=train_eval.total_steps=2500000")
REFERENCE = "python -m paac_tf.train --gin_file=atari.gin --root_dir=/y"


def _evaluation(game, mean, train_step, fire=False, own_actions=False, first_seed=10**9):
  returns = [mean - 1.0, mean, mean + 1.0]       # sample std 1.0
  return {"env_name": game, "mean": mean, "returns": returns, "episodes": 3,
          "train_step": train_step, "train_step_unit": "agent_steps", "noop_max": 30,
          "env_seeds": [first_seed, first_seed + 1],
          "assists": {"fire_at_game_start": fire and not own_actions,
                      "trained_with_fire_reset": fire, "episodic_life": False}}


def publish(top, name, game, command, points, seed=0, evals=(), wall_step_s=1.0, start=1e9,
            rates=(), **info):
  """A results folder as tools/campaign/publish_run.py writes it: summaries.csv of (agent step,
  training average) points, `wall_step_s` seconds apart from `start`; run_info.json;
  operative_config.gin binding the seed; eval files {file name: eval dict}."""
  folder = os.path.join(str(top), name)
  os.makedirs(folder)
  with open(os.path.join(folder, "summaries.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["step", "wall_time", "tag", "value"])
    for i, (step, value) in enumerate(points):
      w.writerow([step, start + i * wall_step_s, ablation.RETURN_TAG, value])
    for i, rate in enumerate(rates):
      w.writerow([points[i][0], start + i * wall_step_s, seeds.STEPS_PER_SECOND, rate])
    if "wall_time_s" in info:   # its summaries span the training time run_info.json states
      w.writerows(loss_rows_spanning(info["wall_time_s"], start))
  steps = points[-1][0]
  with open(os.path.join(folder, "run_info.json"), "w") as f:
    json.dump(dict({"command": command, "env_name": game, "algorithm": "paac",
                    "agent_steps": steps, "frames": 4 * steps}, **info), f)
  with open(os.path.join(folder, "operative_config.gin"), "w") as f:
    f.write("train_eval.algorithm = 'paac'\ntrain_eval.seed = %d\n" % seed)
  for file_name, evaluation in dict(evals).items():
    with open(os.path.join(folder, file_name), "w") as f:
      json.dump(evaluation, f)
  return folder


# --- aggregates ---------------------------------------------------------------------------

def test_iqm_and_median_by_hand_with_intervals_around_them():
  # 4 runs x 2 games. All 8 scores sorted: 0 1 2 4 5 6 7 10; the IQM drops the lowest and
  # highest quarter (0, 1 and 7, 10): mean(2, 4, 5, 6) = 4.25. Game means 3.25 and 5.5:
  # median 4.375.
  scores = np.array([[0, 4], [1, 5], [2, 6], [10, 7]], dtype=float)
  est = aggregates.interval_estimates(scores, reps=REPS)
  assert est["iqm"].point == pytest.approx(4.25)
  assert est["median"].point == pytest.approx(4.375)
  for e in est.values():
    assert e.low <= e.point <= e.high and e.low < e.high
  assert aggregates.interval_estimates(scores, reps=REPS) == est      # seeded: the same digits
  one_run = aggregates.interval_estimates(scores[:1], reps=REPS)      # nothing to resample
  assert one_run["iqm"].low == one_run["iqm"].point == one_run["iqm"].high == 2.0
  games_too = aggregates.interval_estimates(np.array([[0.0, 1.0, 2.0, 9.0]]), reps=REPS,
                                            task_bootstrap=True)
  assert games_too["iqm"].low < games_too["iqm"].point == 1.5 < games_too["iqm"].high


def test_probability_of_improvement_by_hand():
  # One game: X's runs 3 and 1 against Y's 2: one pair of two is greater, P = 0.5.
  est = aggregates.probability_of_improvement([[3.0], [1.0]], [[2.0]], reps=100)
  assert est.point == 0.5 and est.low <= 0.5 <= est.high
  # Two games, X above Y in every pair of the first, in none of the second: 0.5 again; in
  # both: 1.
  x, y = [[5.0, 0.0], [6.0, 1.0]], [[1.0, 2.0], [2.0, 3.0]]
  assert aggregates.probability_of_improvement(x, y, reps=100).point == 0.5
  assert aggregates.probability_of_improvement([[9.0, 9.0]], y, reps=100).point == 1.0
  with pytest.raises(ValueError, match="same games"):
    aggregates.probability_of_improvement([[1.0]], y)


def test_score_matrix_counts_every_run_and_bad_matrices():
  # As many runs a game: rliable's runs x games; otherwise each game's mean, no run dropped.
  matrix, pooled = aggregates.score_matrix([[1, 2], [4, 5]])
  assert matrix.tolist() == [[1, 4], [2, 5]] and not pooled
  matrix, pooled = aggregates.score_matrix([[1, 2, 3], [4, 5]])
  assert matrix.tolist() == [[2.0, 4.5]] and pooled
  assert aggregates.score_matrix([[1], []]) == (None, False)
  assert aggregates.score_matrix([]) == (None, False)
  assert aggregates.runs_text([("Pong", ["a", "b"]), ("Qbert", ["c"])], True) == (
      "Pong: a, b (their mean); Qbert: c")
  with pytest.raises(ValueError, match="finite"):
    aggregates.interval_estimates([[1.0, float("nan")]])


# --- one run a seed -----------------------------------------------------------------------

def test_one_run_a_seed_the_evaluated_then_the_first(tmp_path):
  points = [(M, -20.0), (2 * M, -15.0), (3 * M, -10.0)]
  publish(tmp_path, "pong", "Pong", REFERENCE, points)
  publish(tmp_path, "pong_extended", "Pong", REFERENCE, points + [(5 * M, 3.0)])  # same start
  publish(tmp_path, "pong_again", "Pong", REFERENCE, points, start=2e9,
          evals={"eval_at_2500000.json": _evaluation("Pong", -9.0, 2_500_000)})
  publish(tmp_path, "pong_old_protocol", "Pong", REFERENCE, points, start=5e8,   # env seeds
          evals={"eval.json": _evaluation("Pong", -9.0, 2_500_000, first_seed=0)})  # 0, 1
  publish(tmp_path, "pong_s1", "Pong", REFERENCE, points, seed=1)
  publish(tmp_path, "pong_short", "Pong", REFERENCE, [(M, -20.0)], seed=2)
  publish(tmp_path, "pong_variant", "Pong", REFERENCE + " --gin_bindings=paac.gamma=0.9",
          points, seed=3)
  runs = seed_runs.find(str(tmp_path))
  group = seed_runs.by_seed(runs, "PongNoFrameskip-v4", "atari.gin", 2_500_000)
  assert {s: r.name for s, r in group.runs.items()} == {0: "pong_again", 1: "pong_s1"}
  assert sorted((r.name, kept.name) for r, kept in group.repeats) == [
      ("pong", "pong_again"), ("pong_extended", "pong_again"),
      ("pong_old_protocol", "pong_again")]
  assert [r.name for r in group.short] == ["pong_short"]
  # Without an evaluation at the budget the run that started first counts, then fewer frames.
  later = seed_runs.by_seed(runs, "Pong", "atari.gin", 1_000_000)
  assert later.runs[0].name == "pong_old_protocol"
  assert seed_runs.by_seed([r for r in runs if r.name != "pong_old_protocol"], "Pong",
                           "atari.gin", 1_000_000).runs[0].name == "pong"
  assert seed_runs.seed_of(str(tmp_path / "nowhere")) == seed_runs.DEFAULT_SEED


def test_operative_binding_reads_one_binding_of_a_results_folders_config(tmp_path):
  (tmp_path / "operative_config.gin").write_text(
      "# Parameters for apex_network:\n"
      "# ==============================================================================\n"
      "apex_network.mlp_units = (64, 64)\n"
      "apex_network.network = 'arch_nips'\n"
      "train_eval.env_name = \"Pong\"\n"
      "train_eval.seed = 2\n"
      "train_eval.seed_offset = 7\n")
  binding = run_groups.operative_binding
  assert binding(str(tmp_path), "train_eval.seed") == "2"
  assert seed_runs.seed_of(str(tmp_path)) == 2
  assert binding(str(tmp_path), "*.network") == "arch_nips"
  assert binding(str(tmp_path), "apex_network.network") == "arch_nips"
  assert binding(str(tmp_path), "paac.network") is None
  assert binding(str(tmp_path), "train_eval.env_name") == "Pong"
  assert binding(str(tmp_path), "apex_network.mlp_units") == "(64, 64)"
  assert binding(str(tmp_path / "nowhere"), "train_eval.seed") is None


# --- the seeds report ---------------------------------------------------------------------

def _seed_results(top):
  """Pong: atari.gin seeds 0 and 1, atari_fast.gin seeds 0, 1, 2; Breakout: one seed each."""
  def curve(final):      # to 3M agent steps: the last point at or before 2.5M is at 2.4M
    return [(M, final - 5.0), (2_400_000, final), (3 * M, final + 50.0)]
  evals = lambda game, mean: {"eval_at_2500000.json": _evaluation(game, mean, 2_500_000)}
  publish(top, "pong_ref", "Pong", REFERENCE, curve(-20.0), evals=evals("Pong", -20.0))
  publish(top, "pong_ref_s1", "Pong", REFERENCE, curve(-19.0), seed=1)
  for seed, final in enumerate((10.0, 14.0, 12.0)):
    publish(top, "pong_fast_s%d" % seed, "Pong", FAST, curve(final), seed=seed,
            evals=evals("Pong", final + 5))
  publish(top, "breakout_ref", "Breakout", REFERENCE, curve(2.0), config="atari.gin",
          evals=evals("Breakout", 2.0))
  publish(top, "breakout_fast", "Breakout", REFERENCE, curve(20.0), config="atari_fast.gin")


def test_seeds_report_per_seed_spread_aggregates_and_curves(tmp_path):
  results = tmp_path / "results"
  _seed_results(results)
  png = str(tmp_path / "out" / "seeds" / "curves.png")
  text = seeds.report(str(results), "cmd", str(tmp_path / "out"), png, reps=REPS,
                      poi_reps=REPS)
  # Per game and config: seeds so far; mean ± sample std (min to max) of the training
  # averages at 2.4M agent steps (10, 14, 12: mean 12, std 2).
  assert "| Pong | atari_fast.gin | 3 of 3 seeds (seeds 0, 1, 2) | 12.0 ± 2.0 (10.0 to 14.0) |" \
      " 17.0 ± 2.0 (15.0 to 19.0) (3 seeds) |" in text
  assert "| Pong | atari.gin | 2 of 3 seeds (seeds 0, 1) | -19.5 ± 0.7 (-20.0 to -19.0) |" \
      " -20.0 (1 seed) |" in text
  assert "| Breakout | atari_fast.gin | 1 of 3 seeds (seed 0) | 20.0 | — (no seed" in text
  assert "| Pong | atari_fast.gin | 1 | [pong_fast_s1](../results/pong_fast_s1/) | 14.0 at " \
      "9.6M frames | 19.0 ± 1.0 (s.e. 0.6) (N=3) |" in text
  # rliable: every seed counts; the games have 3 and 1, so each enters as its seeds' mean.
  assert "- atari_fast.gin, over 2 games x each game's mean over its seeds: IQM" in text
  assert "the runs: Pong: pong_fast_s0, pong_fast_s1, pong_fast_s2 (their mean); Breakout: " \
      "breakout_fast." in text
  assert "- P(atari_fast.gin > atari.gin) of the training average: 1.00" in text
  assert "nothing to resample" in text
  assert "- atari_fast.gin: no evaluation in every game yet: no aggregate." in text
  assert os.path.getsize(png) > 0 and "![training average against frames](seeds/curves.png)" \
      in text
  assert "`pong_paac_fast_alone` (atari_fast.gin on Pong until its training average reaches " \
      "18, on an otherwise idle machine): not yet run" in text


def test_seeds_report_frames_to_18_alone(tmp_path):
  # 400 agent steps a second by the summaries (median of 300, 400, 500); 18 first at 2M
  # agent steps = 8M frames, 60 s after the start; the run: 3M agent steps in 5000 s.
  publish(tmp_path, seeds.ALONE_FOLDERS[0], "Pong", FAST, [(M, 0.0), (2 * M, 18.2), (3 * M, 19.0)],
          wall_step_s=60.0, rates=(300.0, 500.0, 400.0), wall_time_s=5000.0,
          machine_note="2 cores, alone; 1-min load average mean 2.1, max 2.6 (9 samples)",
          evals={"eval.json": _evaluation("Pong", 19.0, 3 * M)})
  lines = seeds.alone_lines(str(tmp_path))
  # A line a run made alone: the second (seed 1) not yet run.
  assert lines[4] == (
      "`pong_paac_fast_alone_s1` (atari_fast.gin on Pong until its training average reaches "
      "18, on an otherwise idle machine): not yet run (results/CAMPAIGN.md).")
  assert lines[2] == (
      "pong_paac_fast_alone (atari_fast.gin on Pong): its training average (last 100 "
      "episodes) first reached 18 at 8M frames (2M agent steps) after 1.0 training minutes; "
      "the median of its Perf/steps_per_second summaries 400 agent steps/s; agent steps / "
      "wall time over the whole run 600/s (3M agent steps in 1.4 h). Machine: 2 cores, "
      "alone; 1-min load average mean 2.1, max 2.6 (9 samples).")


def test_seeds_cli_refuses_a_missing_directory_and_a_hand_written_output(tmp_path):
  proc = run_module("tools.reports.seeds", str(tmp_path / "none"), timeout=120)
  assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1].startswith("error:")
  hand = tmp_path / "seeds.md"
  hand.write_text("my notes\n")
  os.makedirs(tmp_path / "results")
  proc = run_module("tools.reports.seeds", str(tmp_path / "results"), "--output=%s" % hand,
                    timeout=120)
  assert proc.returncode == 2 and "not generated by this tool" in proc.stderr
  assert hand.read_text() == "my notes\n"


# --- the 12 games -------------------------------------------------------------------------

def test_twelve_games_rows_assists_peers_and_aggregates(tmp_path):
  at_10m = lambda game, mean, **kw: _evaluation(game, mean, 2_500_000, **kw)
  points = [(M, 1.0), (2_500_000, 2.0)]
  publish(tmp_path, "seaquest_s0", "Seaquest", FAST, points,
          evals={"eval_at_2500000.json": at_10m("Seaquest", 800.0),
                 "eval.json": _evaluation("Seaquest", 1700.0, 10 * M)})
  publish(tmp_path, "seaquest_s1", "Seaquest", FAST, points, seed=1,
          evals={"eval.json": at_10m("Seaquest", 900.0)})
  publish(tmp_path, "breakout", "Breakout", REFERENCE, points, config="atari_fast.gin",
          evals={"eval.json": at_10m("Breakout", 31.7, fire=True),
                 "eval_policy_only.json": at_10m("Breakout", 20.0, fire=True,
                                                 own_actions=True)})
  publish(tmp_path, "pong", "Pong", FAST, points, evals={"eval.json": _evaluation(
      "Pong", 18.0, 5 * M)})
  text = games.report(str(tmp_path), "cmd", str(tmp_path), reps=REPS)
  rows = {line.split(" | ")[0].lstrip("| ").split(" ")[0]: line for line in text.splitlines()
          if line.startswith("| ") and not line.startswith("| game")}
  assert len(rows) == 12 and "not yet run (results/CAMPAIGN.md)" in rows["Amidar"]
  # Two seeds: the mean of their means ± their sample std, s.e. 50 / sqrt(2).
  assert "| 850.0 ± 70.7 (s.e. 50.0; N=2 runs, seeds 0, 1) |" in rows["Seaquest"]
  assert "1700.0 ± 1.0 (s.e. 0.6) (seaquest_s0); peers: sb3 A2C 1721" in rows["Seaquest"]
  # Breakout: human-normalized (31.7 - 1.7) / (30.5 - 1.7) = 104.2%; the FIRE assist and
  # the policy's own actions.
  assert "31.7 ± 1.0 (s.e. 0.6) (N=3 episodes, seed 0)" in rows["Breakout"]
  assert "FIRE at game start and after a lost life; its own actions only: 20.0" in \
      rows["Breakout"]
  assert "| 104.2% |" in rows["Breakout"] and "470.1 (arch_nips)" in rows["Breakout"]
  assert "no evaluation at 10M frames: pong evaluated at 20M frames" in rows["Pong"]
  # Seaquest's two seeds and Breakout's one: each game as the mean its row shows, named.
  assert "2 of the 12 games present, all at 10M frames, each game's mean over its runs" in text
  assert "The runs: Breakout: breakout; Seaquest: seaquest_s0, seaquest_s1 (their mean)." \
      in text
  assert "rliable's task bootstrap" in text


# --- the ablation report with seeds -------------------------------------------------------

def test_ablation_rows_of_several_seeds(tmp_path):
  results = tmp_path / "results"
  _seed_results(results)
  publish(results, "pong_entropy", "Pong", REFERENCE + " --gin_bindings=PaacAgent."
          "entropy_coef=0.01", [(M, -20.0), (2_400_000, -18.0), (3 * M, -17.0)])
  out = str(tmp_path / "ablation")
  rows = ablation.run("Pong", [("atari_fast.gin", str(results / "pong_fast_s0")),
                               ("entropy alone", str(results / "pong_entropy"))],
                      [11.0], out, budget_frames=10e6, seeds_dir=str(results), command="cmd")
  assert rows[0]["seeds"] == [0, 1, 2] and rows[1]["seeds"] == [0]
  table = open(os.path.join(out, "pong.md")).read()
  # The seeds' evaluations at the budget: mean ± sample std over seeds (min to max).
  assert ("| atari_fast.gin, seeds 0, 1, 2 (mean, min to max) | 9.6M | 0 | 2 of 3: 9.6M / 0 | "
          "12.0 (10.0 to 14.0) | 12.0 (10.0 to 14.0) | 17.0 ± 2.0 (15.0 to 19.0), 3 of 3 seeds "
          "evaluated at 10.0M frames (mean ± sample std over seeds) |") in table
  assert "| entropy alone | 9.6M | 0 | - | -18.0 | -18.0 | - (not evaluated) |" in table
  assert json.load(open(os.path.join(out, "pong.json")))["runs"][0][
      "final_training_average"]["std"] == pytest.approx(2.0)
  assert os.path.getsize(os.path.join(out, "pong.png")) > 0


# --- the original's curve -----------------------------------------------------------------

def _graph(path, xs, ys):
  """A line graph in the original's style: a blue line in a black frame with dotted grey
  grid lines, axes 0 to 8e7 and -5000 to 20000."""
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
  fig, ax = plt.subplots(figsize=(6.35, 2.39), dpi=100)
  ax.plot(xs, ys, color="#0000ff", linewidth=2)
  ax.set_xlim(0, 8e7)
  ax.set_ylim(-5000, 20000)
  ax.grid(True, color="0.45", linestyle=":", linewidth=1)
  for spine in ax.spines.values():
    spine.set_color("black")
    spine.set_linewidth(1.5)
  fig.savefig(path)
  plt.close(fig)


def test_reading_a_graph_returns_its_values_within_a_pixel(tmp_path):
  xs = np.linspace(0, 8e7, 200)
  ys = 15000 * xs / 8e7                   # 0 to 15000
  path = str(tmp_path / "graph.png")
  _graph(path, xs, ys)
  points = graph_reading.read(graph_reading.load(path), (0, 8e7), (-5000, 20000),
                              [1e7, 4e7, 6e7])
  for p, expected in zip(points, (1875.0, 7500.0, 11250.0)):
    assert abs(p["value"] - expected) <= 1.5 * p["value_per_px"] + 1.5 * p["x_per_px"] * (
        15000 / 8e7), (p, expected)
    assert p["line_low"] <= p["value"] <= p["line_high"]
  graph_reading.write_csv(points, str(tmp_path / "read.csv"))
  assert [p["x"] for p in graph_reading.read_csv(str(tmp_path / "read.csv"))] == [1e7, 4e7, 6e7]
  graph_reading.check_grid([10, 20, 30], 0, 40, "x")            # even steps: no error
  with pytest.raises(errors.UserError, match="not evenly spaced"):
    graph_reading.check_grid([10, 20, 33], 0, 40, "x")


def test_our_run_against_the_original_points(tmp_path):
  original = str(tmp_path / "original_curve.csv")
  graph_reading.write_csv([dict(x=x, value=v, line_low=v - 100, line_high=v + 100,
                                fill_low=v - 200, fill_high=v + 200, outer_low=v - 500,
                                outer_high=v + 500, column_px=0, median_row_px=0,
                                value_per_px=139.0, x_per_px=147000.0)
                           for x, v in ((5e6, 500.0), (1e7, 1000.0))], original)
  out = str(tmp_path / "out")
  text = original_curve.report(original, str(tmp_path / "none"), out, "cmd")
  assert "not yet run" in text and "| 5M | 500 (400 to 600) | 300 to 700; 0 to 1000 | — |" in text
  run = publish(tmp_path, "qbert", "Qbert", REFERENCE,
                [(4_800_000, 400.0), (5_100_000, 450.0), (9_950_000, 2000.0)],
                evals={"eval_at_5000000.json": _evaluation("Qbert", 650.0, 5 * M)})
  text = original_curve.report(original, run, out, "cmd")
  assert "| 5M | 500 (400 to 600) | 300 to 700; 0 to 1000 | 400.0 (4.8M) | -100 | 0.80 | " \
      "650.0 ± 1.0 (s.e. 0.6) |" in text
  assert "| 10M | 1000 (900 to 1100) | 800 to 1200; 500 to 1500 | 2000.0 (9.95M) | +1000 | " \
      "2.00 | — |" in text
  assert ("At 5M/10M agent steps (= the original's global steps) our training average is "
          "400 / 2000, the original's curve as read 500 / 1000: ours minus the original's "
          "-100 / +1000 (ours / original 0.80 / 2.00); 1 of 2 inside") in text
  assert original_curve.STUB in text and os.path.getsize(os.path.join(out, "comparison.png"))


def test_every_atari_gin_qbert_run_in_one_table_with_its_seed_loop_and_jump(tmp_path):
  """results/qbert_original's table of every run: seed, the loop (by the run's commit:
  37cc749 before the loop in the original's order, b672281 its first commit), the first
  step at or above 7,000 (by hand: 19.5M for the first run, never for the second) and the
  training average at 20M-45M where the run got there, and every evaluation by its step;
  which runs' curves drop at a resume (their commit before 97f9993)."""
  original = str(tmp_path / "original_curve.csv")
  graph_reading.write_csv([dict(x=2e7, value=4000.0, line_low=3900, line_high=4100,
                                fill_low=3800, fill_high=4200, outer_low=3500,
                                outer_high=4500, column_px=0, median_row_px=0,
                                value_per_px=139.0, x_per_px=147000.0)], original)
  results = tmp_path / "results"
  old = publish(results, "qbert_old", "Qbert", REFERENCE,
                [(10 * M, 3000.0), (19_500_000, 7100.0), (20 * M, 9000.0),
                 (30 * M, 10000.0), (40 * M, 11000.0), (45 * M, 12000.0)],
                commit="37cc7494379bf66089c2634b031184b934f2162e")
  publish(results, "qbert_new_s1", "Qbert", REFERENCE, [(10 * M, 2500.0), (20 * M, 5000.0)],
          seed=1, commit=original_curve.LOOP_COMMIT,
          evals={"eval_at_20000000.json": _evaluation("Qbert", 6000.0, 20 * M),
                 "eval_at_10000000.json": _evaluation("Qbert", 2000.0, 10 * M)})
  publish(results, "qbert_window_s2", "Qbert", REFERENCE, [(10 * M, 2600.0)], seed=2,
          commit=original_curve.WINDOW_COMMIT)
  publish(results, "qbert_fast", "Qbert", FAST, [(10 * M, 9000.0)])        # not atari.gin
  text = original_curve.report(original, old, str(tmp_path / "out"), "cmd", str(results))
  rows = [line for line in text.splitlines() if line.startswith("| qbert_")]
  assert rows == [
      "| qbert_old | 0 | loop before | 37cc749 | 19.5M | 9000 | 10000 | 11000 | 12000 | — |",
      "| qbert_new_s1 | 1 | original's order | b672281 | not reached | 5000 | — | — | — | "
      "10M: 2000.0 ± 1.0 (s.e. 0.6); 20M: 6000.0 ± 1.0 (s.e. 0.6) |",
      "| qbert_window_s2 | 2 | original's order | 97f9993 | not reached | — | — | — | — | — |"]
  # Runs of commits before the window was checkpointed (97f9993) drop at each resume.
  assert "The downward spikes of `qbert_old`, `qbert_new_s1` are resumes" in text
  assert os.path.getsize(os.path.join(tmp_path, "out", "comparison.png"))


def test_training_averages_at_given_steps_side_by_side(tmp_path):
  """tools/curve_points: the last summary at or before each step; blank after the run's
  end (its last summary before 0.99 of the step); the seed from operative_config.gin."""
  long_run = publish(tmp_path, "pong_a", "Pong", REFERENCE,
                     [(990_000, -20.5), (1_010_000, -20.0), (2_000_000, -19.0)], commit="abc1234")
  short_run = publish(tmp_path, "pong_b", "Pong", REFERENCE, [(1_000_000, -20.2)], seed=2)
  text = curve_points.table([long_run, short_run], [1e6, 2e6], "t")
  assert "| pong_a | 0 | abc1234 | -20.50 | -19.00 |" in text
  assert "| pong_b | 2 |  | -20.20 |  |" in text


def test_saved_campaign_state_is_not_a_result(tmp_path):
  publish(tmp_path, "pong", "Pong", FAST, [(M, 1.0)],
          evals={"eval.json": _evaluation("Pong", 1.0, M)})
  state = tmp_path / "campaign_state" / "pong_s1" / "train"      # tools/campaign/campaign.py save
  os.makedirs(state)
  (state / "run_config.json").write_text(json.dumps({"env_name": "Pong", "algorithm": "paac"}))
  assert [r.folder_name for r in run_results.collect([str(tmp_path)])] == ["pong"]
  assert [r.name for r in seed_runs.find(str(tmp_path))] == ["pong"]


# --- the README's results at a glance -----------------------------------------------------

def test_glance_tables_aggregates_and_the_readme_block(tmp_path):
  results = tmp_path / "results"
  at_10m = lambda game, mean, **kw: _evaluation(game, mean, 2_500_000, **kw)
  points = [(M, 1.0), (2_500_000, 2.0)]
  publish(results, "seaquest_s0", "Seaquest", FAST, points, wall_time_s=1500.0,
          evals={"eval.json": at_10m("Seaquest", 800.0)})
  publish(results, "seaquest_s1", "Seaquest", FAST, points, seed=1,
          evals={"eval.json": at_10m("Seaquest", 900.0)})
  publish(results, "breakout_long", "Breakout", FAST, [(M, 1.0), (10 * M, 300.0)],
          config="atari_fast.gin", wall_time_s=6000.0,
          machine_note="2 cores shared with another training run",
          evals={"eval_at_2500000.json": at_10m("Breakout", 31.7, fire=True),
                 "eval.json": _evaluation("Breakout", 400.0, 10 * M, fire=True),
                 "eval_policy_only.json": _evaluation("Breakout", 410.0, 10 * M, fire=True,
                                                      own_actions=True)})
  publish(results, "pong_ref", "Pong", REFERENCE, [(M, -20.0), (5 * M, 19.0)],
          wall_time_s=7200.0, machine_note="2 cores, alone",
          evals={"eval.json": _evaluation("Pong", 19.0, 5 * M)})
  text = glance.block(str(results), str(tmp_path), reps=REPS)
  rows = [line for line in text.splitlines() if line.startswith("| ")]
  # The headline: each row its evaluated run with the most frames beside the published
  # score (two decimals, with the s.e.); a headline without a run says so; the 12 games'
  # median with its task-bootstrap interval, then games.md's aggregate lines under it.
  assert "| Pong, `atari.gin` (what `make train` runs) | **19.00 ± 1.0 (s.e. 0.58)** (20M " \
      "frames, 2.0 h) | 20.6 (arch_nips) / 20.9 (arch_nature), PAAC paper (unverified " \
      "transcription, ~115M agent steps) | [pong_ref](results/pong_ref/) |" in rows
  assert "| Breakout, `atari_fast.gin` | **400.00 ± 1.0 (s.e. 0.58)** (40M frames, 1.7 h, " \
      "under load) | 470.1 (arch_nips) / 565.3 (arch_nature), PAAC paper (unverified " \
      "transcription, ~115M agent steps) | [breakout_long](results/breakout_long/) |" in rows
  assert "| Qbert, `atari.gin` | not yet run | — | — |" in rows
  assert not [r for r in rows if "seaquest" in r]      # 10M frames: in the 12 games' median
  median = next(r for r in rows if r.startswith("| 12 games"))
  assert re.search(r"\*\*-?[\d.]+% \(95% CI -?[\d.]+% to -?[\d.]+%\)\*\*", median), median
  assert "2 of the 12 games present, all at 10M frames" in text
  assert "The runs: Breakout: breakout_long; Seaquest: seaquest_s0, seaquest_s1" in text
  assert text.endswith("**Speed**: no benchmark in benchmark/benchmark.json yet (python -m "
                       "tools.bench.benchmark).")
  # The speed line from a benchmark's summary.
  os.makedirs(results / "benchmark")
  with open(results / glance.BENCHMARK, "w") as f:
    json.dump({"machine": {"cpus": 2}, "commit": "abc1234", "started_utc": "2026-12-01 17:01",
               "summary": {"serial_bound_steps_per_s": 3761.8,
                           "loop groups=1 overlap_learner=False": {"steps_per_s": 3372.3,
                                                                    "vs_bound": 0.896},
                           "interleaved": {"loop_vs_bound_median": 0.877},
                           "tf_agents": {"loop_vs_baseline_loop": 2.116,
                                         "vector_env_vs_baseline_env": 2.466}}}, f)
  line = glance.speed_line(str(results), "x.md")
  # A benchmark of the loop before the original code's order (no "loop" entry) says so.
  assert line.startswith("**Speed** ([results/benchmark](x.md), 2 cores, no GPU, commit "
                         "abc1234, 2026-12-01 17:01 UTC): the PAAC loop before the original "
                         "code's order (the loop now: its rate against that one in [the loop "
                         "and its speed-ups](docs/performance.md#the-paac-loop-and-its-speed-"
                         "ups)) with `atari.gin` makes 3,372 agent steps/s, 0.90 of its parts' "
                         "serial bound (3,762; in alternating rounds the median 0.88")
  assert "2.12x TF-Agents' own" in line and "steps 2.47x faster" in line
  with open(results / glance.BENCHMARK) as f:
    bench = json.load(f)
  bench["summary"]["loop"] = bench["summary"].pop("loop groups=1 overlap_learner=False")
  with open(results / glance.BENCHMARK, "w") as f:
    json.dump(bench, f)
  assert glance.speed_line(str(results), "x.md").startswith(
      "**Speed** ([results/benchmark](x.md), 2 cores, no GPU, commit abc1234, 2026-12-01 "
      "17:01 UTC): the PAAC loop with `atari.gin` makes 3,372 agent steps/s")
  # The README: only the block between its two lines is rewritten; without them, refused.
  readme = "intro\n%s\nold table\n%s\nafter\n" % (glance.BEGIN, glance.END)
  assert glance.replace_block(readme, "new") == "intro\n%s\nnew\n%s\nafter\n" % (
      glance.BEGIN, glance.END)
  with pytest.raises(errors.UserError):
    glance.replace_block("no block\n", "new")
  # --check: a README whose block is not what the tool writes fails with one line.
  (tmp_path / "README.md").write_text(readme)
  proc = run_module("tools.reports.readme_glance", "--results_dir=%s" % results, "--readme=%s" % (
      tmp_path / "README.md"), "--reps=%d" % REPS, "--check", timeout=300)
  assert proc.returncode == 1 and "rerun it" in proc.stderr.strip().splitlines()[-1]
  assert (tmp_path / "README.md").read_text() == readme
