"""tools (events, run_results, results_table, compare, plot, benchmark) and
tools.reference_scores, on real event files and a real Reverb replay."""
import csv
import json
import os
import shutil
import statistics
import subprocess

import pytest
import tensorflow as tf

from paac_tf import errors
from tools import reference_scores as ref
from tools.reports import compare
from tools import events
from tools.reports import plot
from tools.reports import results_index
from tools.reports import results_table
from tools.reports import run_groups
from tools.reports import run_labels
from tools.reports import run_record
from tools.reports import run_results

from conftest import run_module
from conftest import run_snippet_json

pytestmark = pytest.mark.timeout(60)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_REFERENCE = "/work/shared/reference"
N_E, T_MAX = 32, 5                     # agent steps per PAAC update: 160
PONG_RETURNS = [-3.0, 1.0, 5.0, 0.0, -1.0, 2.0] * 5   # 30 evaluation episodes
BOXING_RETURNS = [10.0, 12.0, 14.0]
BREAKOUT_RETURNS = [20.0, 30.0]


def _csv_row(name, game):
  """A row of the packaged CSV, read with the csv module (independently of the code)."""
  with open(os.path.join(REPO, "paac_tf", "data", name), newline="") as f:
    for row in csv.DictReader(f):
      if row["game"] == game:
        return row
  raise KeyError(game)


def _hns_by_hand(game, score):
  row = _csv_row("atari_scores.csv", game)
  random, human = float(row["random"]), float(row["human"])
  return (score - random) / (human - random)


def _write_scalars(directory, series):
  """Writes {tag: [(step, value)]} with tf.summary (TF2: tensor protos) into one new file."""
  writer = tf.summary.create_file_writer(directory)
  with writer.as_default():
    for tag, points in series.items():
      for step, value in points:
        tf.summary.scalar(tag, value, step=step)
  writer.flush()
  writer.close()


def _write_json(path, data):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w") as f:
    json.dump(data, f)


def _eval_json(env_name, returns, train_step, policy_dir, **extra):
  mean = sum(returns) / len(returns)
  data = {"env_name": env_name, "episodes": len(returns), "returns": returns, "mean": mean,
          "std": statistics.pstdev(returns), "min": min(returns), "max": max(returns),
          "lengths": [1000] * len(returns), "policy_dir": policy_dir,
          "train_step": train_step, "epsilon": 0.0, "noop_max": 30,
          "protocol": "Atari: up to 30 no-op starts", "wall_time_s": 12.5,
          "timestamp": "2026-11-29T12:00:00+00:00"}
  data.update(extra)
  return data


def _make_paac_run(root, updates=(100, 200, 300, 400, 500), returns=(-21, -15, -8, -2, 3)):
  """A PAAC Pong run directory: train/ events, run_config.json."""
  train = os.path.join(root, "train")
  os.makedirs(train, exist_ok=True)
  _write_scalars(train, {
      events.RETURN_VS_UPDATES: [(u, float(r)) for u, r in zip(updates, returns)],
      events.RETURN_VS_AGENT_STEPS: [(u * N_E * T_MAX, float(r))
                                   for u, r in zip(updates, returns)],
      "Losses/total": [(u, 1.0 / u) for u in updates],
  })
  _write_json(os.path.join(train, events.RUN_CONFIG),
              {"algorithm": "paac", "env_name": "Pong", "network": "arch_nips",
               "num_envs": N_E, "t_max": T_MAX})
  return root


@pytest.fixture(name="workspace")
def fixture_workspace(tmp_path):
  """runs/pong_paac (events + eval.json), runs/seaquest_apex (events only),
  results/boxing_paac (eval.json + run_info.json), results/breakout_paac (eval.json,
  command.txt, wall_time.txt)."""
  pong = _make_paac_run(str(tmp_path / "runs" / "pong_paac"))
  policy = os.path.join(pong, "policies", "pong", "80000")
  _write_json(os.path.join(policy + "-eval", "eval.json"),
              _eval_json("Pong", PONG_RETURNS, 80000, policy))
  older = os.path.join(pong, "policies", "pong", "32000")
  _write_json(os.path.join(older + "-eval", "eval.json"),
              _eval_json("Pong", [-20.0] * 30, 32000, older))

  seaquest = str(tmp_path / "runs" / "seaquest_apex")
  _write_scalars(os.path.join(seaquest, "train"), {
      events.RETURN_VS_UPDATES: [(10, 50.0), (20, 120.0)],
      events.RETURN_VS_AGENT_STEPS: [(5000, 50.0), (10000, 120.0)]})
  _write_json(os.path.join(seaquest, "train", events.RUN_CONFIG),
              {"algorithm": "apex", "env_name": "Seaquest", "network": "nature_dueling"})

  boxing = str(tmp_path / "results" / "boxing_paac")
  fire = {"episodic_life": False, "reward_clipping": False, "fire_at_game_start": True,
          "fire_after_life_loss": True, "trained_with_fire_reset": True, "epsilon": 0.0,
          "noop_max": 30, "max_episode_frames": 108000, "sticky_actions": False}
  _write_json(os.path.join(boxing, "eval.json"),
              _eval_json("BoxingNoFrameskip-v4", BOXING_RETURNS, 10000000,
                         "/elsewhere/boxing/policies/boxing/10000000", algorithm="paac",
                         env_seeds=[10**9, 10**9 + 15], assists=fire))
  _write_json(os.path.join(boxing, "eval_policy_only.json"),   # the same policy, no FIRE assist
              _eval_json("BoxingNoFrameskip-v4", [1.0, 3.0], 10000000,
                         "/elsewhere/boxing/policies/boxing/10000000", algorithm="paac",
                         env_seeds=[10**9, 10**9 + 1],
                         assists=dict(fire, fire_at_game_start=False,
                                      fire_after_life_loss=False)))
  _write_json(os.path.join(boxing, run_groups.RUN_INFO),
              {"command": "python -m paac_tf.train --gin_file=atari.gin",
               "wall_time_s": 7200, "hardware": "1x H200, 16 cores",
               "agent_steps": 10000000, "frames": 40000000, "algorithm": "paac",
               "env_name": "Boxing", "notes": "fake run for tests"})

  breakout = str(tmp_path / "results" / "breakout_paac")
  _write_json(os.path.join(breakout, "eval.json"),
              _eval_json("ALE/Breakout-v5", BREAKOUT_RETURNS, None, None, algorithm="paac"))
  with open(os.path.join(breakout, run_results.COMMAND_TXT), "w") as f:
    f.write("make train GIN=atari.gin\n")
  with open(os.path.join(breakout, run_results.WALL_TIME_TXT), "w") as f:
    f.write("1:30:00\n")
  return tmp_path


def _table(markdown):
  """(header, rows) of the report's table, as lists of cell texts."""
  lines = markdown.splitlines()
  start = next(i for i, x in enumerate(lines) if x.startswith("| Results folder |"))
  cells = lambda line: [c.strip() for c in line.strip().strip("|").split(" | ")]
  rows = []
  for line in lines[start + 2:]:
    if not line.startswith("|"):
      break
    rows.append(cells(line))
  return cells(lines[start]), rows


def _row(markdown, game, index=None):
  """The table row of `game` (its only one; or its `index`-th when it has several)."""
  header, rows = _table(markdown)
  rows = [r for r in rows if r[header.index("Game")] == game]
  if index is None:
    assert len(rows) == 1, markdown
    index = 0
  return rows[index]


def _header(markdown):
  return _table(markdown)[0]


def _run_cli(module, *args, cwd, timeout=60):
  env = {"PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
         "TF_CPP_MIN_LOG_LEVEL": "2"}
  return run_module(module, *args, timeout=timeout, env=env, cwd=cwd)


# --- reference scores ---------------------------------------------------------------------

def test_packaged_csvs_are_the_shared_reference_copies():
  for name in (ref.ATARI_SCORES_CSV, ref.PAAC_TABLE1_CSV):
    shared = os.path.join(SHARED_REFERENCE, name)
    if not os.path.exists(shared):
      pytest.skip("no shared reference folder on this machine")
    with open(shared) as a, open(os.path.join(REPO, "paac_tf", "data", name)) as b:
      assert a.read() == b.read(), name


def test_reference_scores_load_and_resolve_names():
  scores = ref.atari_scores()
  assert len(scores) == 55
  assert scores["Pong"][ref.RANDOM] == -20.7 and scores["Pong"][ref.HUMAN] == 14.6
  assert scores["Pong"][ref.RLLIB_APEX_10M] is None        # empty cell
  for name in ("Pong", "PongNoFrameskip-v4", "ALE/Pong-v5", "pong"):
    assert ref.game_key(name) == "Pong"
  assert ref.game_key("space_invaders") == "SpaceInvaders"
  assert ref.game_key("CartPole-v1") is None
  assert ref.human_normalized("Pong", 14.6) == pytest.approx(1.0)
  assert ref.human_normalized("Pong", 0.0) == pytest.approx(_hns_by_hand("Pong", 0.0))
  assert ref.human_normalized("CartPole-v1", 100.0) is None
  table1 = ref.paac_paper_table1()
  assert len(table1) == 12 and table1["Pong"][ref.PAAC_NIPS_UNVERIFIED] == 20.6
  assert "unverified transcription" in ref.sources()


# --- events -------------------------------------------------------------------------------

def test_events_of_a_resumed_run_are_merged_and_sorted(tmp_path):
  train = str(tmp_path / "train")
  _write_scalars(train, {"a": [(1, 1.0), (2, 2.0), (3, 3.0), (4, 4.0)]})
  _write_scalars(train, {"a": [(3, 30.0), (5, 50.0), (4, 40.0)]})   # resumed at step 3
  run = events.read_run_events(train)
  assert len(run.files) == 2
  assert [(p.step, p.value) for p in run.series("a")] == [
      (1, 1.0), (2, 2.0), (3, 30.0), (4, 40.0), (5, 50.0)]
  assert run.wall_time_s() >= 0
  assert run.elapsed_s(run.spans[-1][1]) == pytest.approx(run.wall_time_s())


def test_active_spans_split_at_pauses():
  walls = [0.0, 10.0, 20.0, 400.0, 410.0, 1000.0]
  assert events.active_spans(walls, 300) == [(0.0, 20.0), (400.0, 410.0), (1000.0, 1000.0)]
  assert events.active_spans([], 300) == []
  assert sum(b - a for a, b in events.active_spans(walls, 300)) == 30.0
  assert events.training_seconds(walls, 300)[-1] == 30.0


def test_an_event_files_pause_is_not_wall_time(tmp_path):
  """A process stopped (SIGSTOP) for an hour between two summaries of one file: the run's
  wall time (what publish_run writes to run_info.json, and the curve's hours) leaves the
  hour out."""
  train = tmp_path / "train"
  train.mkdir()
  # An event file is TFRecords of Event protos; written directly to set their wall times.
  with tf.io.TFRecordWriter(str(train / "events.out.tfevents.1000.host.1.v2")) as writer:
    writer.write(tf.compat.v1.Event(wall_time=1000.0, file_version="brain.Event:2")
                 .SerializeToString())
    for step, wall in [(1, 1000.0), (2, 1100.0), (3, 4700.0), (4, 4750.0)]:
      summary = tf.compat.v1.Summary(value=[tf.compat.v1.Summary.Value(
          tag=events.RETURN_VS_AGENT_STEPS, simple_value=float(step))])
      writer.write(tf.compat.v1.Event(wall_time=wall, step=step, summary=summary)
                   .SerializeToString())
  train = str(train)
  run = events.read_run_events(train)
  assert [p.step for p in run.series(events.RETURN_VS_AGENT_STEPS)] == [1, 2, 3, 4]
  assert run.spans == [(1000.0, 1100.0), (4700.0, 4750.0)]
  assert run.wall_time_s() == 150.0 and run.elapsed_s(4710.0) == 110.0


def test_events_read_tensor_scalars_and_map_updates_to_agent_steps(tmp_path):
  root = _make_paac_run(str(tmp_path / "run"))
  # The run's reference curve for TensorBoard (root/reference, its own event file) is no run.
  shutil.copytree(os.path.join(root, "train"), os.path.join(root, "reference"),
                  ignore=lambda _, names: [n for n in names if not events.is_event_file(n)])
  found = events.find_run_dirs(str(tmp_path))
  assert [r.root for r in found] == [root]
  assert found[0].run_config["env_name"] == "Pong"
  run = events.read_run_events(found[0].event_dir)
  assert set(run.tags()) == {events.RETURN_VS_UPDATES, events.RETURN_VS_AGENT_STEPS,
                             "Losses/total"}
  assert [p.value for p in run.series(events.RETURN_VS_UPDATES)] == [-21, -15, -8, -2, 3]
  assert run.series("Losses/total")[0].value == pytest.approx(0.01)   # float32
  assert run.last_env_step() == 500 * N_E * T_MAX
  assert run.agent_steps_at_update(300) == 300 * N_E * T_MAX
  assert run.agent_steps_at_update(250) == 250 * N_E * T_MAX            # interpolated
  assert run.agent_steps_at_update(1000) == 1000 * N_E * T_MAX          # extrapolated
  # A run's train/ folder given directly still names the run.
  assert events.find_run_dirs(os.path.join(root, "train"))[0].root == root


# --- compare ------------------------------------------------------------------------------

def test_compare_table_numbers(workspace):
  text, results = compare.build_report([str(workspace / "runs"), str(workspace / "results")],
                                       command="python -m tools.reports.compare runs results",
                                       link_base=str(workspace))
  assert text.splitlines()[0].startswith(results_table.GENERATED_MARKER)
  assert "`python -m tools.reports.compare runs results`" in text.splitlines()[0]
  assert [r.game for r in results] == ["Boxing", "Breakout", "Pong", "Pong", "Seaquest"]
  header = _header(text)
  col = header.index

  pong = _row(text, "Pong", index=1)     # the run's newest evaluation, after its earlier one
  mean, std = statistics.mean(PONG_RETURNS), statistics.stdev(PONG_RETURNS)
  score = "Our score (mean ± sample std, s.e.)"
  # An evaluation made before the protocol of disjoint seeds and recorded assists says so.
  assert pong[col(score)] == (
      "%.1f ± %.1f (s.e. %.1f) (N=30, up to 30 no-op starts, env seeds from 0, overlapping "
      "training's (earlier protocol))" % (mean, std, std / 30 ** 0.5))
  assert pong[col("Evaluation assists")] == "not recorded (earlier protocol)"
  assert pong[col("Random")] == "-20.7" and pong[col("Human")] == "14.6"
  pong_hns = _hns_by_hand("Pong", mean)
  assert pong[col("Ours, human-normalized")] == "%.1f%%" % (100 * pong_hns)
  assert pong[col("Ape-X paper (no-op starts, 22.8B frames)")] == "20.9"
  assert pong[col("sb3 A2C @10M steps (40M frames)")] == "17.3"
  assert pong[col("RLlib Ape-X @10M steps (40M frames)")] == "—"
  # The evaluated policy was trained for 80,000 agent steps (its train_step), x 4 frames.
  assert pong[col("Frames trained")] == "320k frames"
  assert pong[col("Algorithm")] == "PAAC (arch_nips)"
  # Each row named by its folder, linked relative to link_base; its config beside it.
  assert header[:4] == ["Results folder", "Config", "Game", "Algorithm"]
  assert pong[col("Results folder")] == "[pong_paac](runs/pong_paac/)"
  assert pong[col("Config")] == "?"                        # no command recorded

  # The PAAC paper's values only in their labelled column.
  assert "PAAC paper (unverified transcription)" in header
  assert pong[col("PAAC paper (unverified transcription)")] == "20.6 (arch_nips)"
  assert all("UNVERIFIED" not in h and "20.6" not in h for h in header)

  boxing = _row(text, "Boxing")
  assert boxing[col("Results folder")] == "[boxing_paac](results/boxing_paac/)"
  assert boxing[col("Config")] == "atari.gin"               # from run_info's command
  assert boxing[col("Frames trained")] == "40M frames"                 # run_info.json
  assert boxing[col("Wall time, hardware")] == "2.0 h, 1x H200, 16 cores"
  # The FIRE-reset policy: its score with the assist, and beside it its own actions' only
  # (that evaluation is no row of its own: _row found one Boxing row).
  box_std = statistics.stdev(BOXING_RETURNS)
  assert boxing[col(score)] == (
      "%.1f ± %.1f (s.e. %.1f) (N=%d, up to 30 no-op starts); policy's own actions only (no "
      "FIRE assist): 2.0 ± 1.4 (s.e. 1.0)" % (statistics.mean(BOXING_RETURNS), box_std,
                                             box_std / len(BOXING_RETURNS) ** 0.5,
                                             len(BOXING_RETURNS)))
  assert boxing[col("Evaluation assists")] == "FIRE at game start and after a lost life"
  assert "the policy's own actions only (no FIRE assist): `%s`" % os.path.join(
      str(workspace), "results", "boxing_paac", "eval_policy_only.json") in text
  breakout = _row(text, "Breakout")
  assert breakout[col("Wall time, hardware")] == "1.5 h, hardware not recorded"
  assert "make train GIN=atari.gin" in text                           # command.txt

  # Seaquest (Ape-X) was never evaluated: its training average, marked, outside the median.
  seaquest = _row(text, "Seaquest")
  assert seaquest[col(score)] == "120.0 (training average†)"
  assert seaquest[col("Ours, human-normalized")].endswith("†")
  assert "not evaluated under the 30 no-op protocol" in text

  # The headline: only over runs of a known config of its own (Boxing's atari.gin); the
  # runs of unknown config are listed as in no headline.
  expected = _hns_by_hand("Boxing", statistics.mean(BOXING_RETURNS))
  assert ("- **Median human-normalized score, PAAC, atari.gin at 40M frames, protocol of issue "
          "27: %.1f%%** over 1 game (Boxing: boxing_paac)." % (100 * expected)) in text
  assert "In no headline (variants or unknown config): breakout_paac, pong_paac." in text
  assert "Median human-normalized score, Ape-X" not in text

  # Budgets, in plain sentences.
  assert ("Pong PAAC (pong_paac): 320k frames (80k agent steps) = 0.07% of the PAAC paper's "
          "budget (~115M timesteps = ~460M frames)") in text
  assert "Boxing PAAC (boxing_paac): 40M frames (10M agent steps) = 8.7% of the PAAC" in text
  assert "Seaquest Ape-X (seaquest_apex): 40k frames (10k agent steps) = 0.00018% of " \
         "Ape-X's 22.8B frames." in text
  assert "Breakout PAAC (breakout_paac): training budget unknown" in text
  # The run's earlier evaluation (32,000 agent steps) has its own row, and the median of its
  # own budget only.
  earlier = _row(text, "Pong", index=0)
  assert earlier[col(score)] == ("-20.0 ± 0.0 (s.e. 0.0) (N=30, up to 30 no-op starts, env seeds "
                                 "from 0, overlapping training's (earlier protocol))")
  assert earlier[col("Frames trained")] == "128k frames (run: %s)" % results_table.human_count(
      4 * 500 * N_E * T_MAX)
  assert "an earlier evaluation of this run (in the median of its own budget" in text
  assert "the run's newest evaluation (in the median of its budget)" in text


def test_compare_index_one_line_per_run_with_the_headlines(workspace):
  """results/README.md's index: the headline medians as the full report states them, and
  one row per results folder with its score, frames and human-normalized score."""
  paths = [str(workspace / "runs"), str(workspace / "results")]
  full, _ = compare.build_report(paths, command="c", link_base=str(workspace))
  text, _ = compare.build_report(paths, command="c", link_base=str(workspace),
                                 make=results_index.index)
  assert text.splitlines()[0].startswith(results_table.GENERATED_MARKER)
  medians = [line for line in full.splitlines() if line.startswith("- **Median")]
  assert medians and all(line in text for line in medians)
  header = _header(text)
  assert header == list(results_index.COLUMNS)
  boxing = _row(text, "Boxing")
  box_std = statistics.stdev(BOXING_RETURNS)
  assert boxing[:4] == ["[boxing_paac](results/boxing_paac/)", "atari.gin", "Boxing", "PAAC"]
  assert boxing[4] == "%.1f ± %.1f (s.e. %.1f)" % (
      statistics.mean(BOXING_RETURNS), box_std, box_std / len(BOXING_RETURNS) ** 0.5)
  assert boxing[5] == "40M frames" and boxing[7] == "2.0 h"
  assert boxing[6] == "%.1f%%" % (100 * _hns_by_hand("Boxing", statistics.mean(BOXING_RETURNS)))
  pong = _row(text, "Pong", index=1)
  assert pong[4].endswith("(earlier protocol)")
  assert _row(text, "Seaquest")[4] == "120.0 (training average†)"
  # Shorter than the full report: no budgets, sources or peers' columns.
  assert "training budget unknown" not in text and len(text) < len(full)


def test_compare_matches_a_results_eval_to_its_run_and_dedups(workspace):
  run = str(workspace / "runs" / "pong_paac")
  policy = os.path.join(run, "policies", "pong", "96000")
  _write_json(str(workspace / "elsewhere" / "pong" / "eval.json"),
              _eval_json("Pong", [21.0] * 30, 96000, policy))
  results = run_results.collect([run, str(workspace / "elsewhere"), run])
  # One run (given twice), three evaluations (each once), oldest first; the newest is
  # the one elsewhere, matched to the run by its policy_dir.
  assert [r.name for r in results] == ["pong_paac"] * 3
  assert [r.agent_steps for r in results] == [32000, 80000, 96000]
  pong = results[-1]
  assert pong.score[0] == 21.0 and pong.run_agent_steps == 500 * N_E * T_MAX
  assert pong.run_events is not None and len(pong.other_evals) == 2
  assert all(r.newer_eval == pong.eval_path and r.run_events is pong.run_events
             for r in results[:-1])


def test_compare_reads_train_step_in_agent_steps_or_in_updates_when_told(tmp_path):
  run = _make_paac_run(str(tmp_path / "pong_paac"))
  policy = os.path.join(run, "policies", "pong", "96000")
  path = os.path.join(policy + "-eval", "eval.json")
  # An evaluation without a unit (older exports): agent steps, like every paac_tf export.
  _write_json(path, _eval_json("Pong", [21.0] * 30, 96000, policy))
  (pong,) = run_results.collect([run])
  assert pong.agent_steps == 96000 and pong.frames == 4 * 96000
  # A policy saved by code that counts learner updates: mapped through the summaries
  # (update 250 lies between the logged updates 200 and 300).
  _write_json(path, _eval_json("Pong", [21.0] * 30, 250, policy, train_step_unit="updates"))
  (pong,) = run_results.collect([run])
  assert pong.agent_steps == 250 * N_E * T_MAX and "update 250" in pong.steps_source


def test_a_row_names_a_run_directory_elsewhere_only_where_a_number_came_from_it(tmp_path):
  """A results folder (committed) whose policy came from a run directory outside it (that
  machine's runs folder): the row's source line names that directory, and its event files,
  only where a number of the row was read from them; otherwise the line would change with
  the machine that regenerates the report (the run directory exists only on one)."""
  run = _make_paac_run(str(tmp_path / "runs" / "pong_paac"))
  folder = str(tmp_path / "results" / "pong_paac")
  _write_json(os.path.join(folder, "eval.json"), _eval_json(
      "Pong", [21.0] * 30, 80000, os.path.join(run, "policies", "pong", "80000")))
  info = {"command": "python -m paac_tf.train --gin_file=atari.gin", "wall_time_s": 600}

  def source_line():
    (pong,) = run_results.collect([str(tmp_path / "runs"), str(tmp_path / "results")])
    assert pong.folder == folder and pong.root == run
    return results_table.source_lines(pong)

  # The run's budget from run_info.json: its run directory is not named.
  _write_json(os.path.join(folder, run_groups.RUN_INFO), dict(info, agent_steps=80000))
  line = source_line()
  assert run not in line and "training summaries" not in line
  assert "wall time from run_info.json" in line
  # Without the run's budget in run_info.json it comes from the summaries: named.
  _write_json(os.path.join(folder, run_groups.RUN_INFO), info)
  line = source_line()
  assert "run directory `%s`" % run in line
  assert "training summaries `%s` (1 event file)" % os.path.join(run, "train") in line


def test_compare_errors(workspace, tmp_path):
  empty = tmp_path / "empty"
  empty.mkdir()
  with pytest.raises(errors.UserError, match="nothing to read"):
    run_results.collect([str(empty)])
  with pytest.raises(errors.UserError, match="does not exist"):
    run_results.collect([str(tmp_path / "missing")])
  hand_written = tmp_path / "README.md"
  hand_written.write_text("# My notes\n")
  with pytest.raises(errors.UserError, match="not generated by this tool"):
    compare.write_report("x\n", str(hand_written))
  compare.write_report(results_table.generated_line("c") + "\n", str(hand_written), overwrite=True)
  compare.write_report(results_table.generated_line("d") + "\n", str(hand_written))   # ours now


def test_compare_cli(workspace):
  proc = _run_cli("tools.reports.compare", "results", "--output=out/README.md",
                  cwd=str(workspace))
  assert proc.returncode == 0, proc.stderr
  with open(workspace / "out" / "README.md") as f:
    first = f.readline()
  assert first.startswith(results_table.GENERATED_MARKER)
  assert "`python -m tools.reports.compare results --output=out/README.md`" in first
  assert "| Boxing |" in proc.stdout and "Wrote out/README.md" in proc.stdout
  with open(workspace / "out" / "README.md") as f:
    assert "| [boxing_paac](../results/boxing_paac/) | atari.gin | Boxing |" in f.read()

  (workspace / "empty").mkdir()
  proc = _run_cli("tools.reports.compare", "empty", cwd=str(workspace))
  assert proc.returncode == 2
  assert proc.stderr.strip().splitlines()[-1].startswith("error: empty: nothing to read")
  assert "Traceback" not in proc.stderr


def _results_folder(folder, env_name, returns, frames, **info):
  """A results folder as tools/campaign/publish_run.py writes it: eval.json and run_info.json (the
  evaluated policy's run directory does not exist here)."""
  steps = frames // 4
  _write_json(os.path.join(folder, "eval.json"), _eval_json(
      env_name, returns, steps, "/gone/%s/policies/x/%d" % (os.path.basename(folder), steps),
      algorithm="paac"))
  _write_json(os.path.join(folder, run_groups.RUN_INFO),
              dict({"env_name": env_name, "algorithm": "paac", "frames": frames,
                    "agent_steps": steps, "wall_time_s": 600}, **info))


def test_config_labels_from_commands():
  label = run_labels.config_label
  train = "python -m paac_tf.train "
  assert label(train + "--gin_file=atari.gin --root_dir=runs/x") == "atari.gin"
  # Bindings that set only the budget, stopping, game or directory are left out.
  assert label(train + "--gin_file=atari.gin --gin_bindings='train_eval.env_name=\"Breakout\"' "
               "--gin_bindings=train_eval.total_steps=2500000 "
               "--gin_bindings=paac.stop_at_average_return=18.5") == "atari.gin"
  # Runs made before the paac.* namespace bound paac_train.* / PaacAgent.* (results/ keeps
  # their commands): the same labels.
  assert label(train + "--gin_file=atari.gin --gin_bindings=paac_train.stop_at_average_return="
               "18.5 --gin_bindings=paac_train.target_env_name=Pong") == "atari.gin"
  assert label(train + "--gin_file=paac_tf/configs/atari.gin --gin_bindings=PaacAgent."
               "entropy_coef=0.01") == "atari.gin + entropy_coef=0.01"
  assert label(train + "--gin_file=configs/atari.gin --gin_bindings=train_eval.total_"
               "steps=2500000 --gin_bindings=paac.entropy_coef=0.01") == (
                   "atari.gin + entropy_coef=0.01")
  assert label(train + "--gin_file=atari.gin --gin_bindings=\"paac.initializer="
               "'orthogonal'\"") == "atari.gin + initializer=orthogonal"
  assert label(train + "--gin_file atari.gin --gin_bindings paac.learning_rate=0.001 "
               "--gin_file=extra.gin") == "atari.gin + extra.gin + learning_rate=0.001"
  # A resumed run's parts: each binding once, with its last value; comments ignored.
  assert label(train + "--gin_file=atari.gin --gin_bindings=paac.learning_rate=0.001 "
               "--gin_bindings=train_eval.total_steps=1 ; then resumed with: " + train +
               "--gin_file=atari.gin --gin_bindings=paac.learning_rate=0.002  "
               "# and --gin_bindings=paac.entropy_coef=9") == (
                   "atari.gin + learning_rate=0.002")
  # The same parameter of two configurables keeps their names.
  assert label(train + "--gin_file=a.gin --gin_bindings=paac.learning_rate=1 "
               "--gin_bindings=apex_learner.learning_rate=2") == (
                   "a.gin + paac.learning_rate=1 + apex_learner.learning_rate=2")
  assert label("make train GIN=atari.gin") is None and label("") is None
  # An explicit config in run_info.json wins; else the command's (or command.txt's).
  fast = {"config": "atari_fast.gin", "command": train + "--gin_file=atari.gin "
          "--gin_bindings=paac.entropy_coef=0.01"}
  assert run_labels.config_of(fast) == ("atari_fast.gin", True)
  assert run_labels.config_of({}, train + "--gin_file=apex_atari.gin") == (
      "apex_atari.gin", False)
  assert [run_labels.is_headline_config(c) for c in
          ("atari.gin", "atari.gin + entropy_coef=0.01", None)] == [True, False, False]


def test_compare_one_row_per_folder_headline_per_exact_config_and_archive(tmp_path):
  results = tmp_path / "results"
  cmd = "python -m paac_tf.train --gin_file=%s --root_dir=runs/x"
  # atari.gin on Pong twice (the same run at 20M and 50M frames): the latest counts.
  _results_folder(str(results / "pong_new"), "Pong", [19.0] * 30, 50_000_000,
                  command=cmd % "atari.gin")
  _results_folder(str(results / "pong_short"), "Pong", [-15.0] * 30, 20_000_000,
                  command=cmd % "atari.gin" + " --gin_bindings=train_eval.total_steps=5000000")
  # A variant: in the table, in no headline.
  _results_folder(str(results / "pong_entropy"), "Pong", [21.0] * 30, 10_000_000,
                  command=cmd % "atari.gin" + " --gin_bindings=paac.entropy_coef=0.01")
  # atari_fast.gin: explicit on Breakout (its command has bindings), derived on Boxing.
  _results_folder(str(results / "breakout_fast"), "Breakout", [40.0] * 30, 40_000_000,
                  command=cmd % "atari.gin" + " --gin_bindings=paac.entropy_coef=0.01",
                  config="atari_fast.gin")
  _results_folder(str(results / "boxing_fast"), "Boxing", [50.0] * 30, 40_000_000,
                  command=cmd % "atari_fast.gin" + " --gin_bindings='train_eval.env_name="
                  "\"Boxing\"'")
  # Superseded: archived, with why.
  _results_folder(str(results / "archive" / "pong_old"), "Pong", [21.0] * 30, 40_000_000,
                  command=cmd % "atari.gin", archive_reason="made before the fix",
                  superseded_by="pong_new")
  text, found = compare.build_report([str(results)], "compare results",
                                     link_base=str(results))
  header, rows = _table(text)
  folders = [r[header.index("Results folder")] for r in rows]
  assert sorted(folders) == ["[%s](%s/)" % (n, n) for n in (
      "boxing_fast", "breakout_fast", "pong_entropy", "pong_new", "pong_short")]
  assert sorted(r.folder_name for r in found) == sorted(f[1:f.index("]")] for f in folders)
  configs = {r[0]: r[header.index("Config")] for r in rows}
  assert configs == {"[pong_new](pong_new/)": "atari.gin",
                     "[pong_short](pong_short/)": "atari.gin",
                     "[pong_entropy](pong_entropy/)": "atari.gin + entropy_coef=0.01",
                     "[breakout_fast](breakout_fast/)": "atari_fast.gin",
                     "[boxing_fast](boxing_fast/)": "atari_fast.gin"}
  # Headlines: one per config and budget: atari.gin's Pong at 50M frames (not the archived
  # 21, nor the variant's 21) apart from its shorter run's at 20M; atari_fast.gin over Boxing
  # and Breakout at 40M frames; their eval.json record no env seeds: the earlier protocol.
  assert ("- **Median human-normalized score, PAAC, atari.gin at 20M frames, earlier "
          "protocol: %s** over 1 game (Pong: pong_short)." % results_table.percent(
              _hns_by_hand("Pong", -15.0))) in text
  assert ("- **Median human-normalized score, PAAC, atari.gin at 50M frames, earlier "
          "protocol: %s** over 1 game (Pong: pong_new)." % results_table.percent(
              _hns_by_hand("Pong", 19.0))) in text
  fast = statistics.median([_hns_by_hand("Boxing", 50.0), _hns_by_hand("Breakout", 40.0)])
  assert ("- **Median human-normalized score, PAAC, atari_fast.gin at 40M frames, earlier "
          "protocol: %s** over 2 games (Boxing: boxing_fast, Breakout: breakout_fast)"
          % results_table.percent(fast)) in text
  assert text.count("**Median human-normalized score") == 3
  assert "In no headline (variants or unknown config): pong_entropy." in text
  # The archived folder: only in the last section, with its reason and its successor.
  archive = text.index("## Archived (superseded) runs")
  assert text.index("pong_old") > archive
  assert text[archive:].splitlines()[-1] == (
      "- [pong_old](archive/pong_old/) (Pong PAAC, atari.gin, 21.0 ± 0.0, 40M frames): made "
      "before the fix; superseded by [pong_new](pong_new/).")
  # Without archive folders, no such section.
  text, _ = compare.build_report([str(results / "pong_new")], "compare pong_new")
  assert "Archived" not in text


def _archive(argv, cwd):
  """`python -m tools.campaign.archive_run ARGV`: the CompletedProcess."""
  return _run_cli("tools.campaign.archive_run", *argv, cwd=str(cwd))


def test_archive_run_moves_a_superseded_folder_with_its_why_and_overwrites_nothing(tmp_path):
  results = tmp_path / "results"
  cmd = "python -m paac_tf.train --gin_file=atari.gin --root_dir=runs/x"
  _results_folder(str(results / "pong_new"), "Pong", [19.0] * 30, 50_000_000, command=cmd)
  _results_folder(str(results / "pong_old"), "Pong", [-5.0] * 30, 10_000_000, command=cmd)
  args = ["--results_dir=%s" % results, "--no_reports"]
  assert _archive(["pong_old", "--superseded_by=pong_new",
                   "--reason=evaluated by the earlier protocol"] + args, tmp_path).returncode == 0
  assert not (results / "pong_old").exists()
  with open(results / "archive" / "pong_old" / "run_info.json") as f:
    info = json.load(f)
  assert info["archive_reason"] == "evaluated by the earlier protocol"
  assert info["superseded_by"] == "pong_new" and info["frames"] == 10_000_000
  assert (results / "archive" / "pong_old" / "eval.json").exists()
  # The network from the folder's operative_config.gin (its run directory is elsewhere).
  (results / "pong_new" / "operative_config.gin").write_text(
      "paac.network = 'arch_nips'\n")
  text, found = compare.build_report([str(results)], "compare results",
                                     link_base=str(results))
  assert [r.folder_name for r in found] == ["pong_new"] and found[0].network == "arch_nips"
  assert "| [pong_new](pong_new/) | atari.gin | Pong | PAAC (arch_nips) |" in text
  assert text.splitlines()[-1] == (
      "- [pong_old](archive/pong_old/) (Pong PAAC, atari.gin, -5.0 ± 0.0, 10M frames): "
      "evaluated by the earlier protocol; superseded by [pong_new](pong_new/).")
  # Bad input: one error line, exit 2, nothing moved or overwritten.
  _results_folder(str(results / "pong_old"), "Pong", [0.0] * 30, 10_000_000, command=cmd)
  for bad in (["pong_old", "--reason=again"],                 # already in archive/
              ["pong_gone", "--reason=x"],                    # no such folder
              ["pong_old", "--superseded_by=pong_gone", "--reason=x"],
              ["../pong_new", "--reason=x"], ["archive", "--reason=x"],
              ["pong_old", "--reason="]):
    proc = _archive(bad + args, tmp_path)
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, bad
    assert len(err) == 1 and err[0].startswith("error: "), (bad, err)
  assert (results / "pong_old" / "eval.json").exists()
  # Reports are the repository's: not regenerated for a results folder elsewhere.
  _results_folder(str(results / "pong_older"), "Pong", [0.0] * 30, 5_000_000, command=cmd)
  proc = _archive(["pong_older", "--reason=older", "--results_dir=%s" % results], tmp_path)
  assert proc.returncode == 0 and "not regenerated" in proc.stdout
  assert (results / "archive" / "pong_older" / "eval.json").exists()
  with open(results / "archive" / "pong_old" / "run_info.json") as f:
    assert json.load(f)["archive_reason"] == "evaluated by the earlier protocol"


def test_a_benchmark_is_archived_not_overwritten_and_an_old_archive_gets_its_why(tmp_path):
  """The benchmark refuses a folder that holds one (one error line, exit 2, before it
  measures anything; the file unchanged); archive_run moves it under the name the error
  suggests, with a run_info.json that says why; a folder archived without a why gets one,
  once."""
  results = tmp_path / "results"
  (results / "benchmark").mkdir(parents=True)
  old = json.dumps({"commit": "abc1234", "results": []})
  (results / "benchmark" / "benchmark.json").write_text(old)
  proc = _run_cli("tools.bench.benchmark", "--output_dir=%s" % (results / "benchmark"),
                  "--quick", cwd=str(tmp_path))
  err = proc.stderr.strip().splitlines()
  assert proc.returncode == 2 and err[-1].startswith("error: ") and "Traceback" not in proc.stderr
  assert "(commit abc1234): not overwritten" in err[-1]
  assert "--archived_name=benchmark_abc1234 --superseded_by=benchmark" in err[-1]
  assert (results / "benchmark" / "benchmark.json").read_text() == old
  args = ["--results_dir=%s" % results, "--no_reports"]
  assert _archive(["benchmark", "--archived_name=benchmark_abc1234",
                   "--superseded_by=benchmark", "--reason=an earlier benchmark"] + args,
                  tmp_path).returncode == 0
  archived = results / "archive" / "benchmark_abc1234"
  assert (archived / "benchmark.json").read_text() == old and not (results / "benchmark").exists()
  with open(archived / "run_info.json") as f:
    assert json.load(f) == {"archive_reason": "an earlier benchmark", "superseded_by": "benchmark"}
  # One archived by hand, without its why (no run_info.json): the why is written, once.
  (results / "archive" / "benchmark_old").mkdir()
  (results / "archive" / "benchmark_old" / "benchmark.json").write_text(old)
  assert _archive(["benchmark_old", "--already_archived", "--reason=older"] + args,
                  tmp_path).returncode == 0
  with open(results / "archive" / "benchmark_old" / "run_info.json") as f:
    assert json.load(f) == {"archive_reason": "older"}
  for bad in (["benchmark_old", "--already_archived", "--reason=again"],   # says why already
              ["benchmark_gone", "--already_archived", "--reason=x"],
              ["benchmark_old", "--already_archived", "--archived_name=y", "--reason=x"]):
    assert _archive(bad + args, tmp_path).returncode == 2, bad
  with open(results / "archive" / "benchmark_old" / "run_info.json") as f:
    assert json.load(f) == {"archive_reason": "older"}
  _results_folder(str(results / "pong"), "Pong", [19.0] * 30, 40_000_000,
                  command="python -m paac_tf.train --gin_file=atari.gin --root_dir=runs/x")
  text, _ = compare.build_report([str(results)], "compare results", link_base=str(results))
  assert "- [benchmark_old](archive/benchmark_old/): older." in text.splitlines()
  assert ("- [benchmark_abc1234](archive/benchmark_abc1234/): an earlier benchmark; "
          "superseded by `benchmark`.") in text.splitlines()


# --- plot ---------------------------------------------------------------------------------

def test_plot_png_and_csv(workspace, tmp_path):
  runs = plot.load_runs([str(workspace / "runs")])
  curves = plot.make_curves(runs)
  assert sorted(c.label for c in curves) == ["Pong PAAC", "Seaquest Ape-X"]
  pong = next(c for c in curves if c.label == "Pong PAAC")
  assert pong.x_steps == [u * N_E * T_MAX * 4 for u in (100, 200, 300, 400, 500)]
  output = plot.plot(curves, str(tmp_path / "fig" / "curve.png"), x="both", title="Test")
  with open(output, "rb") as f:
    data = f.read()
  assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20000
  assert os.path.getsize(plot.plot(curves, str(tmp_path / "f.png"), x="frames")) > 10000

  pong_run = [r for r in runs if os.path.basename(r[0].root) == "pong_paac"][0][1]
  path = str(tmp_path / "scalars.csv")
  assert events.write_csv(pong_run, path) == 15
  with open(path, newline="") as f:
    rows = list(csv.DictReader(f))
  assert list(rows[0]) == ["step", "wall_time", "tag", "value"]
  by_tag = [(int(r["step"]), float(r["value"])) for r in rows
            if r["tag"] == events.RETURN_VS_AGENT_STEPS]
  assert by_tag == [(u * N_E * T_MAX, float(v))
                    for u, v in zip((100, 200, 300, 400, 500), (-21, -15, -8, -2, 3))]
  assert all(float(r["wall_time"]) > 1e9 for r in rows)

  with pytest.raises(errors.UserError, match="no TensorBoard event files"):
    plot.load_runs([str(workspace / "results")])
  with pytest.raises(errors.UserError, match="--x"):
    plot.plot(curves, str(tmp_path / "g.png"), x="episodes")


def test_apex_curves_and_training_return_follow_the_low_epsilon_episodes(tmp_path):
  """An Ape-X run's curve and training return are its near-greedy episodes' (epsilon <=
  apex_learner.low_epsilon) where it wrote them; a run without them keeps all episodes'."""
  for name, low in (("pong_apex", True), ("pong_apex_old", False)):
    series = {events.RETURN_VS_AGENT_STEPS: [(5000, -20.0), (10000, -15.0)]}
    if low:
      series[events.LOW_EPSILON_RETURN_VS_AGENT_STEPS] = [(5000, -12.0), (10000, -3.0)]
    _write_scalars(str(tmp_path / name / "train"), series)
    _write_json(str(tmp_path / name / "train" / events.RUN_CONFIG),
                {"algorithm": "apex", "env_name": "Pong", "network": "arch_nips"})
  runs = plot.load_runs([str(tmp_path / "pong_apex"), str(tmp_path / "pong_apex_old")])
  curves = {os.path.basename(c.root): c for c in plot.make_curves(runs)}
  assert curves["pong_apex"].returns == [-12.0, -3.0]
  assert curves["pong_apex"].x_steps == [20000, 40000]
  assert curves["pong_apex"].label.endswith("(low-epsilon episodes)")
  assert curves["pong_apex_old"].returns == [-20.0, -15.0]
  assert not curves["pong_apex_old"].label.endswith("(low-epsilon episodes)")
  for (run, run_events), expected in zip(runs, (-3.0, -15.0)):
    result = run_record.RunRecord(name=run.root, root=run.root, run_events=run_events)
    assert result.training_return.value == expected


def test_learner_rates_of_an_apex_run(tmp_path):
  train = str(tmp_path / "apex" / "train")
  _write_scalars(train, {events.LEARNER_STEP_TAG: [(100, 0.5), (200, 0.4), (300, 0.3)],
                         events.LEARNER_STEPS_PER_SECOND: [(100, 40.0), (200, 30.0),
                                                           (300, 44.0)],
                         events.SAMPLES_PER_INSERT: [(100, 7.5), (200, 8.5), (300, 8.1)]})
  run = events.read_run_events(train)
  rates = events.learner_rates(run)
  assert rates["learner_steps"] == 300
  assert set(rates) <= set(run_results.RUN_INFO_KEYS)   # publish_run writes them to run_info
  assert rates["learner_steps_per_second_median"] == pytest.approx(40.0)
  assert rates["samples_per_insert_median"] == pytest.approx(8.1)
  wall = run.wall_time_s()
  assert rates["learner_steps_per_second"] == (pytest.approx(300 / wall) if wall > 0 else None)
  _write_scalars(str(tmp_path / "paac" / "train"), {events.RETURN_VS_AGENT_STEPS: [(5, 1.0)]})
  assert events.learner_rates(events.read_run_events(str(tmp_path / "paac" / "train"))) == {}


def test_plot_cli_errors(tmp_path):
  proc = _run_cli("tools.reports.plot", str(tmp_path), "--output=c.png", cwd=str(tmp_path))
  assert proc.returncode == 2
  assert proc.stderr.strip().splitlines()[-1].startswith("error: ")
  assert "no TensorBoard event files" in proc.stderr
  proc = _run_cli("tools.reports.plot", str(tmp_path), cwd=str(tmp_path))
  assert proc.returncode == 2 and "Nothing to do" in proc.stderr


# --- benchmark: the Ape-X part ----------------------------------------------------------------

APEX_KEYS = ("emulator_agent_steps_per_second", "emulator_agent_steps_per_cpu_second",
             "actor_agent_steps_per_second", "actor_frames_per_second",
             "actor_agent_steps_per_cpu_second", "inserts_per_second",
             "replay_rss_bytes_per_item", "replay_checkpoint_bytes_per_item",
             "learner_batches_per_second", "learner_samples_per_second",
             "replay_samples_per_second", "train_step_batches_per_second",
             "replay_peak_rss_bytes", "actor_peak_rss_bytes", "learner_peak_rss_bytes",
             "actor_vs_emulator_per_core", "actor_vs_emulator_per_cpu_second",
             "act_observations_per_second", "act_observations_per_cpu_second",
             "actor_serial_bound_per_cpu_second", "actor_serial_bound_vs_emulator",
             "actor_vs_serial_bound_per_cpu_second", "learner_vs_train_step",
             "write_agent_steps_per_second", "write_agent_steps_per_cpu_second",
             "actor_full_bound_per_cpu_second", "actor_full_bound_vs_emulator",
             "actor_vs_full_bound_per_cpu_second")


def test_benchmark_table_shows_apex_rates_beside_their_limits():
  # In a subprocess: the benchmark module defines absl flags at import.
  code = r'''
import json
from tools.bench import benchmark
apex = {"part": "apex", "game": "Pong", "quick": True, "env_name": "Pong", "num_actors": 2,
        "emulator_num_envs": 16, "layout": "L", "frames_per_agent_step": 4,
        "emulator_agent_steps_per_second": 1000.0, "emulator_agent_steps_per_cpu_second": 1100.0,
        "actor_agent_steps_per_second": 1400.0, "actor_frames_per_second": 5600.0,
        "actor_agent_steps_per_cpu_second": 770.0, "actor_cpu_cores_used": 1.8,
        "inserts_per_second": 1390.0, "learner_batches_per_second": 3.0,
        "learner_samples_per_second": 1536.0, "replay_samples_per_second": 1530.0,
        "train_step_batches_per_second": 4.0, "replay_rss_bytes_per_item": 1300.0,
        "replay_checkpoint_bytes_per_item": 250.0, "item_bytes_if_frames_copied": 49408,
        "raw_frame_bytes": 7056, "replay_peak_rss_bytes": 2 ** 30,
        "actor_peak_rss_bytes": 2 ** 29, "learner_peak_rss_bytes": 2 ** 31,
        "actor_vs_emulator_per_core": 0.7, "actor_vs_emulator_per_cpu_second": 0.7,
        "learner_vs_train_step": 0.75, "peak_rss_mb": 3000.0,
        "act_batch_size": 16, "act_observations_per_cpu_second": 3300.0,
        "actor_serial_bound_per_cpu_second": 825.0, "actor_serial_bound_vs_emulator": 0.75,
        "actor_vs_serial_bound_per_cpu_second": 770.0 / 825.0,
        "write_agent_steps_per_cpu_second": 5000.0, "actor_full_bound_per_cpu_second": 700.0,
        "actor_full_bound_vs_emulator": 0.64, "actor_vs_full_bound_per_cpu_second": 1.1}
table, summary = benchmark.summarize([apex], 32)
settings = benchmark.config_settings("atari_nature.gin")   # atari.gin's, through its include
print(json.dumps({"table": table, "summary": summary, "settings": settings}))
'''
  out = run_snippet_json(code, timeout=60)
  assert out["settings"] == {"game": "Pong", "num_envs": 32, "num_workers": 8, "t_max": 5}
  table = out["table"]
  assert "| apex Pong actors=2 | 5600 actor frames/s, 3.0 learner batches/s | 3000 |" in table
  assert ("| actor, per process | 700 agent steps/s (2800 frames/s) | emulator alone on one "
          "core: 1000 steps/s | 0.70 |") in table
  assert ("| actor vs its serial bound, per CPU second | 770 agent steps | emulator + action "
          "selection alone (3300 obs per CPU second at batch 16): 825 steps = 0.75 of the "
          "emulator | 0.93 |") in table
  assert ("| actor vs its full serial bound, per CPU second | 770 agent steps | emulator + "
          "action selection + replay writes alone (5000 agent steps of n-step transitions, "
          "priorities and Reverb writes per CPU second): 700 steps = 0.64 of the emulator | "
          "1.10 |") in table
  assert "train step alone: 4.00 batches/s | 0.75 |" in table
  assert ("| bytes per stored transition | 1300 (replay RSS growth), 250 (Reverb checkpoint)"
          in table)
  assert "| peak RSS (MB) | replay 1024, largest actor 512, learner 2048 |" in table
  assert out["summary"]["apex"] == {"actor_vs_emulator_per_core": 0.7,
                                    "actor_vs_emulator_per_cpu_second": 0.7,
                                    "actor_serial_bound_vs_emulator": 0.75,
                                    "actor_vs_serial_bound_per_cpu_second": 770.0 / 825.0,
                                    "actor_full_bound_vs_emulator": 0.64,
                                    "actor_vs_full_bound_per_cpu_second": 1.1,
                                    "learner_vs_train_step": 0.75}


def test_benchmark_table_gives_the_loop_against_its_serial_bound_and_reads_earlier_ones():
  """The PAAC loop's row and summary ("loop"); a benchmark made before the loop was
  Algorithm 1 alone (results/ keeps one) named its loops by their options: its plain loop
  is the one the README reads."""
  from tools.bench import benchmark_tables  # pylint: disable=import-outside-toplevel
  parts = [{"part": "env", "backend": "vector", "num_envs": 32, "steps_per_s": 4000.0},
           {"part": "act", "network": "arch_nips", "jit": False, "obs_per_s": 8000.0},
           {"part": "train", "network": "arch_nips", "jit": False, "samples_per_s": 8000.0}]
  loop = {"part": "loop", "num_envs": 32, "num_workers": 8, "t_max": 5, "steps_per_s": 1500.0}
  table, summary = benchmark_tables.summarize(parts + [loop], 32)
  assert "| Algorithm 1 | 1500 | 0.75 | 0.38 |" in table.splitlines()
  assert "Serial bound 1 / (1/env + 1/act + 1/train) = 2000 agent steps/s" in table
  assert summary["loop"] == {"steps_per_s": 1500.0, "vs_bound": 0.75, "vs_env": 0.375}
  assert benchmark_tables.loop_summary(summary) == summary["loop"]
  earlier = [dict(loop, num_groups=g, overlap_learner=o, steps_per_s=r)
             for g, o, r in ((1, False, 1000.0), (2, True, 1600.0))]
  table, summary = benchmark_tables.summarize(parts + earlier, 32)
  assert "| groups=2 overlap_learner=True | 1600 | 0.80 | 0.40 |" in table.splitlines()
  assert "loop" not in summary
  assert benchmark_tables.loop_summary(summary)["steps_per_s"] == 1000.0
  assert benchmark_tables.loop_summary({}) is None


@pytest.mark.timeout(300)
def test_the_benchmarks_loop_makes_the_training_loops_updates(tmp_path):
  """benchmark_parts' PAAC (the model, optimizer and compiled calls of `PaacCalls`, the
  rollouts and updates of `Loop`) trains the same weights as `python -m paac_tf.train`'s
  loop from the same seed: the benchmark measures the loop the CLI runs (CartPole, n_e 4,
  t_max 3, 3 updates; in a fresh process: the CLI's run parses gin)."""
  code = r'''
import json
import numpy as np
import paac_tf
from paac_tf.algorithms.paac import algorithm
from paac_tf.envs import environment
from tools.bench import benchmark_parts
made = []
make_model = algorithm.Paac.make_model
def recording(self, action_spec, observation_spec, settings, seed=None):
  model = make_model(self, action_spec, observation_spec, settings, seed=seed)
  made.append((model, settings, [w.copy() for w in model.get_weights()]))
  return model
algorithm.Paac.make_model = recording
result = paac_tf.train("cartpole.gin", {"paac.num_envs": 4, "paac.num_workers": 0,
                                        "paac.t_max": 3, "train_eval.total_steps": 36,
                                        "train_eval.seed": 3}, root_dir=%r)
(model, settings, initial), = made
env = environment.make_environment("CartPole-v1", 4, 0, seed=3)
try:
  calls = benchmark_parts.PaacCalls(settings, env.observation_spec(), env.action_spec(),
                                    seed=3, total_updates=3)
  same_start = all(np.array_equal(a, b) for a, b in zip(initial, calls.model.get_weights()))
  loop = benchmark_parts.Loop(env, calls, settings.t_max)
  steps = [loop.update() for _ in range(3)]
finally:
  env.close()
print(json.dumps({"updates": result.updates, "steps": steps, "same_start": same_start,
                  "updates_applied": int(calls.optimizer.iterations.numpy()),
                  "changed": max(float(np.abs(a - b).max())
                                 for a, b in zip(initial, model.get_weights())),
                  "difference": max(float(np.abs(a - b).max()) for a, b in
                                    zip(model.get_weights(), calls.model.get_weights()))}))
''' % str(tmp_path / "run")
  out = run_snippet_json(code, timeout=280)
  assert out["updates"] == 3 and out["steps"] == [12, 12, 12] and out["updates_applied"] == 3
  assert out["same_start"] and out["changed"] > 1e-3
  assert out["difference"] < 1e-6, out


@pytest.mark.timeout(300)
@pytest.mark.system   # a whole run: `make test-system` (.ci/run's second step)
def test_benchmark_apex_part_measures_a_real_replay_actor_and_learner():
  """The tools benchmark's 'apex' part, as it runs it, on CartPole with short timings."""
  args = {"game": "CartPole-v1", "quick": True, "gin_file": "apex_cartpole.gin",
          "num_actors": 1, "emulator_seconds": 1, "actor_seconds": 3, "learner_seconds": 2,
          "train_seconds": 1, "write_seconds": 1}
  proc = _run_cli("tools.bench.benchmark", "--part=apex", "--args=" + json.dumps(args),
                  cwd=REPO, timeout=280)
  assert proc.returncode == 0, proc.stderr[-3000:]
  result = json.loads([x for x in proc.stdout.splitlines() if x.startswith("{")][-1])
  for key in APEX_KEYS:
    assert result[key] > 0, (key, result)
  assert result["env_name"] == "CartPole-v1" and result["num_actors"] == 1
  assert result["actor_frames_per_second"] == result["actor_agent_steps_per_second"]
  assert result["learner_batch_size"] == 64   # apex_cartpole.gin
  # Samples the server counted are the learner's batches (plus prefetch in flight).
  assert result["replay_samples_per_second"] >= 0.9 * result["learner_samples_per_second"]
  emulator, act = (result["emulator_agent_steps_per_cpu_second"],
                   result["act_observations_per_cpu_second"])
  assert result["actor_serial_bound_per_cpu_second"] == pytest.approx(
      1 / (1 / emulator + 1 / act))
  assert result["actor_full_bound_per_cpu_second"] == pytest.approx(
      1 / (1 / emulator + 1 / act + 1 / result["write_agent_steps_per_cpu_second"]))
  assert result["act_batch_size"] == 8   # apex_cartpole.gin's apex_actor.num_envs
  assert result["learner_vs_train_step"] == pytest.approx(
      result["learner_batches_per_second"] / result["train_step_batches_per_second"])


@pytest.mark.timeout(300)
@pytest.mark.system   # a whole run: `make test-system` (.ci/run's second step)
def test_benchmark_interleaved_part_measures_loop_and_bound_in_alternating_rounds():
  """The loop against its serial bound, each round's four rates from one process (Pong,
  arch_nips, short segments), and the table built from them."""
  # As the benchmark runs it: a subprocess for the part, then the table from its result.
  code = r'''
import json
from tools.bench import benchmark
r = benchmark._run_part("interleaved", game="Pong", num_envs=8, num_workers=2, t_max=5,
                        num_rounds=2, seconds=0.5)
table, summary = benchmark.summarize([r], 8)
print(json.dumps({"result": r, "table": table, "summary": summary}))
'''
  out = run_snippet_json(code, timeout=280)
  result = out["result"]
  assert "error" not in result, result
  assert len(result["rounds"]) == 2 and result["num_rounds"] == 2
  for r in result["rounds"]:
    assert all(r[k] > 0 for k in ("env", "act", "train", "loop"))
    assert r["bound"] == pytest.approx(1 / (1 / r["env"] + 1 / r["act"] + 1 / r["train"]))
    assert r["ratio"] == pytest.approx(r["loop"] / r["bound"])
  ratios = [r["ratio"] for r in result["rounds"]]
  assert result["median"]["ratio"] == pytest.approx(statistics.median(ratios))
  assert (result["ratio_min"], result["ratio_max"]) == (min(ratios), max(ratios))
  assert "2 rounds, through the loop's call paths" in out["table"]
  assert "| median |" in out["table"] and "**%.2f**" % result["median"]["ratio"] in out["table"]
  assert out["summary"]["interleaved"]["loop_vs_bound_median"] == result["median"]["ratio"]


def test_benchmark_records_the_commit_of_the_source_it_measures():
  # In a subprocess: the benchmark module defines absl flags at import.
  repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True,
                        text=True, check=False).stdout.strip()
  if not head:
    pytest.skip("not a git checkout")
  commit = run_snippet_json("import json\nfrom tools.bench import benchmark\n"
                            "print(json.dumps(benchmark.source_commit()))", timeout=120)
  short, _, dirty = commit.partition("+")
  assert head.startswith(short) and len(short) >= 7, (commit, head)
  changed = subprocess.run(["git", "status", "--porcelain", "--", "paac_tf"], cwd=repo,
                           capture_output=True, text=True, check=False).stdout.strip()
  assert dirty == ("dirty" if changed else ""), (commit, changed)


def test_an_evaluation_at_another_epsilon_is_a_study_not_the_runs_score(tmp_path):
  """`paac_tf.evaluate --epsilon=0.05` into a results folder: eval.json records the export's
  default epsilon beside the one used, and the tables keep the protocol's evaluation (the
  newer one at epsilon 0.05 would otherwise have become the run's score). An eval.json made
  before `default_epsilon` was recorded counts as the protocol's."""
  folder = str(tmp_path / "results" / "breakout_apex")
  policy = "/elsewhere/runs/breakout_apex/policies/breakout/2500320"
  _write_json(os.path.join(folder, "eval.json"), _eval_json(
      "Breakout", [23.0] * 30, 2500320, policy, algorithm="apex", epsilon=0.001,
      default_epsilon=0.001))
  _write_json(os.path.join(folder, "eval_epsilon_0.05.json"), _eval_json(
      "Breakout", [31.0] * 30, 2500320, policy, algorithm="apex", epsilon=0.05,
      default_epsilon=0.001, timestamp="2026-12-04T17:00:00+00:00"))
  _write_json(os.path.join(folder, run_groups.RUN_INFO), {"agent_steps": 2500320})
  (result,) = run_results.collect([str(tmp_path / "results")])
  assert result.evaluation["mean"] == 23.0 and result.other_evals == []
  assert run_record.off_protocol({"epsilon": 0.05, "default_epsilon": 0.001})
  assert not run_record.off_protocol({"epsilon": 0.001, "default_epsilon": 0.001})
  assert not run_record.off_protocol({"epsilon": 0.05})       # before it was recorded


def test_an_earlier_evaluation_shows_the_wall_time_to_its_policy_not_the_whole_runs(tmp_path):
  """A 40M-frame run evaluated at 10M frames too: the 10M row's wall time is the training
  time to 2.5M agent steps (summaries.csv, the pause between parts left out), not the run's."""
  folder = tmp_path / "results" / "beamrider_40m"
  rows = ["step,wall_time,tag,value"]
  for step, wall in [(i * 625000, 1000.0 + 300 * i) for i in range(5)] + [  # part 1: 20 min
      (2600000, 9000.0), (2700000, 9100.0)]:                                # resumed later
    rows.append("%d,%s,%s,1.0" % (step, wall, events.RETURN_VS_AGENT_STEPS))
  folder.mkdir(parents=True)
  (folder / events.SUMMARIES_CSV).write_text("\n".join(rows) + "\n")
  policy = "/elsewhere/runs/beamrider_40m/policies/beamrider/"
  _write_json(str(folder / "eval_at_2500000.json"), _eval_json(
      "BeamRider", [600.0] * 30, 2500000, policy + "2500000"))
  _write_json(str(folder / "eval.json"), _eval_json(
      "BeamRider", [2500.0] * 30, 10000000, policy + "10000000",
      timestamp="2026-12-04T07:00:00+00:00"))
  _write_json(str(folder / run_groups.RUN_INFO), {"agent_steps": 10000000, "wall_time_s": 4200})
  early, final = run_results.collect([str(tmp_path / "results")])
  assert early.agent_steps == 2500000 and early.wall_time_s == 1200.0
  assert early.wall_time_source == ("summaries.csv (pauses over 300 s left out), to the "
                                    "evaluated policy's step")
  # The whole run's row: the same summaries (20 min + 100 s), not run_info.json's 4200 s.
  assert final.wall_time_s == 1300.0
  assert final.wall_time_source == "summaries.csv (pauses over 300 s left out)"


def test_a_paused_runs_wall_time_leaves_the_pause_out(tmp_path):
  """A run stopped with SIGSTOP for 2 h inside one part (a measurement ran alone): its row's
  wall time is the training time from summaries.csv, every tag's summaries in time order
  (800 s), not run_info.json's, which counted the pause (8,200 s); without summaries.csv
  run_info.json's stands."""
  folder = tmp_path / "results" / "pong_paused"
  rows = ["step,wall_time,tag,value"]
  for step, wall in [(0, 100.0), (1000, 500.0), (2000, 7700.0), (3000, 8100.0)]:
    rows.append("%d,%s,%s,1.0" % (step, wall, events.RETURN_VS_AGENT_STEPS))
  rows += ["5,300.0,Losses/total,0.5", "6,7900.0,Losses/total,0.4"]   # another tag's times
  folder.mkdir(parents=True)
  (folder / events.SUMMARIES_CSV).write_text("\n".join(rows) + "\n")
  # In time order: 100, 300, 500 | 2 h paused | 7700, 7900, 8100: 400 + 400 s.
  summaries = events.summaries_rows(str(folder))
  assert [wall for _, _, wall in summaries] == [100.0, 300.0, 500.0, 7700.0, 7900.0, 8100.0]
  assert events.summaries_training_seconds(summaries) == 800.0
  # To agent step 2500: the return summary at 2000 (7700 s) is the last, so 100..500 only.
  assert events.summaries_training_seconds(summaries, to_agent_step=2500) == 400.0
  assert events.summaries_training_seconds(summaries, to_agent_step=3000) == 800.0
  assert events.summaries_training_seconds(summaries, to_agent_step=0) is None
  assert events.summaries_rows(str(tmp_path)) is None
  _write_json(str(folder / "eval.json"), _eval_json(
      "Pong", [18.0] * 30, 3000, "/elsewhere/runs/pong_paused/policies/pong/3000"))
  _write_json(str(folder / run_groups.RUN_INFO), {"agent_steps": 3000, "wall_time_s": 8200})
  (result,) = run_results.collect([str(tmp_path / "results")])
  assert result.wall_time_s == 800.0
  (folder / events.SUMMARIES_CSV).unlink()
  (result,) = run_results.collect([str(tmp_path / "results")])
  assert result.wall_time_s == 8200 and result.wall_time_source == "run_info.json"


# --- tensorboard_screenshot -------------------------------------------------------------------

def test_tensorboard_screenshot_url_asks_for_svg_charts_and_the_tag_filter():
  from tools.reports import tensorboard_screenshot
  url = tensorboard_screenshot.page_url(6006, "Eval/AverageReturn|Metrics/AverageReturn")
  assert url == ("http://127.0.0.1:6006/?forceSVG=true&tagFilter=Eval%2FAverageReturn"
                 "%7CMetrics%2FAverageReturn#timeseries")


def test_tensorboard_screenshot_cli_errors(tmp_path):
  proc = _run_cli("tools.reports.tensorboard_screenshot", str(tmp_path),
                  "--output=" + str(tmp_path / "shot.png"), cwd=str(tmp_path))
  assert proc.returncode == 2
  assert proc.stderr.strip().splitlines()[-1] == (
      "error: %s has no train/ folder of TensorBoard events" % tmp_path)


@pytest.mark.skipif(shutil.which("chromium") is None,
                    reason="needs Debian's chromium (headless) for the screenshot")
def test_tensorboard_screenshot_draws_a_runs_page(tmp_path):
  writer = tf.summary.create_file_writer(str(tmp_path / "train"))
  with writer.as_default():
    for step in range(10):
      tf.summary.scalar("Eval/AverageReturn", float(step * step), step=step * 1000)
  writer.close()
  output = tmp_path / "shot.png"
  proc = _run_cli("tools.reports.tensorboard_screenshot", str(tmp_path),
                  "--output=" + str(output), cwd=str(tmp_path))
  assert proc.returncode == 0, proc.stderr
  with open(output, "rb") as f:
    assert f.read(8) == b"\x89PNG\r\n\x1a\n"
  assert os.path.getsize(output) > 10000
