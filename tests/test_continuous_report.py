"""The continuous-control report (tools/reports/continuous.py) on a hand-made results folder,
and the published scores it reads (paac_tf/data/continuous_control_scores.csv)."""
import csv
import json
import os
import re

import paac_tf
from conftest import loss_rows_spanning
from conftest import run_module
from tools.reports import continuous
from tools import events

LOW_EPSILON = events.LOW_EPSILON_RETURN_VS_AGENT_STEPS
COMMAND = ("python -m paac_tf.train --gin_file=apex_dpg_small.gin --root_dir=/x "
           "--gin_bindings=train_eval.total_steps=300000")
TD3_CURVES = "https://github.com/sfujim/TD3/tree/master/learning_curves"
TD3_PAPER = "https://arxiv.org/abs/1802.09477"
SPINNING_UP = "https://spinningup.openai.com/en/latest/spinningup/bench.html"
ZOO = "https://github.com/DLR-RM/rl-baselines3-zoo/blob/master/benchmark.md"


def _folder(top, name, env_name, steps, returns=None, summaries=(), **info):
  """A results folder as tools/campaign/publish_run.py writes it."""
  folder = os.path.join(str(top), name)
  os.makedirs(folder)
  with open(os.path.join(folder, "run_info.json"), "w") as f:
    json.dump(dict({"command": COMMAND, "env_name": env_name, "algorithm": "apex_dpg",
                    "agent_steps": steps}, **info), f)
  with open(os.path.join(folder, "summaries.csv"), "w", newline="") as f:
    writer = csv.writer(f)
    writer.writerow(["step", "wall_time", "tag", "value"])
    writer.writerows([step, 1e9 + step / 100, tag, value] for step, tag, value in summaries)
    if "wall_time_s" in info:   # its summaries span the training time run_info.json states
      writer.writerows(loss_rows_spanning(info["wall_time_s"]))
  if returns is not None:
    with open(os.path.join(folder, "eval.json"), "w") as f:
      json.dump({"env_name": env_name, "mean": sum(returns) / len(returns), "returns": returns,
                 "episodes": len(returns), "train_step": steps, "train_step_unit": "agent_steps",
                 "algorithm": "apex_dpg", "epsilon": 0.0, "num_envs": 8,
                 "env_seeds": [10**9, 10**9 + 7]}, f)
  return folder


def _rows(text, heading):
  """The table rows (lists of cells) of the section under `heading`."""
  body = text.split("## %s\n" % heading, 1)[1].split("\n## ", 1)[0]
  return [[c.strip() for c in line.strip("|").split(" | ")]
          for line in body.splitlines() if line.startswith("| ") and "---" not in line][1:]


def test_halfcheetah_run_beside_the_published_rows(tmp_path):
  results = tmp_path / "results"
  # 30 episodes, 15 of 3900 and 15 of 4100: mean 4000, sample std 101.7, s.e. 18.6.
  _folder(results, "halfcheetah_apex_dpg", "HalfCheetah-v5", 300_000,
          returns=[3900.0] * 15 + [4100.0] * 15, config="apex_dpg_small.gin",
          wall_time_s=2.5 * 3600, hardware="2-core x86_64, no GPU",
          machine_note="2 cores, shared with two runs",
          summaries=[(100_000, LOW_EPSILON, 2500.0), (300_000, LOW_EPSILON, 3800.0),
                     (300_000, events.RETURN_VS_AGENT_STEPS, 3000.0),
                     (400_000, LOW_EPSILON, 4500.0)])      # after the evaluated policy
  _folder(results, "pong_paac", "PongNoFrameskip-v4", 1000, returns=[21.0, 20.0],
          algorithm="paac")                                  # not continuous control: left out
  text = continuous.report(str(results), "cmd", link_base=str(results))
  assert text.startswith(continuous.MARKER)
  assert "Pong" not in text and "## Hopper" not in text
  rows = _rows(text, "HalfCheetah")
  assert rows[0] == [
      "[halfcheetah_apex_dpg](halfcheetah_apex_dpg/)", "apex_dpg_small.gin", "Ape-X DPG",
      "HalfCheetah-v5", "300,000", "4000.0 ± 101.7 (s.e. 18.6), N=30",
      "3800.0 (at 300,000 steps, near-greedy actors)",
      "2.5 h (2 cores, shared with two runs; 2-core x86_64, no GPU)",
      "ours: 30 episodes, deterministic actor, env seeds apart from training's"]
  published = {(r[0], r[2], r[3], r[4]): (r[5], r[8].split(":")[0]) for r in rows[1:]}
  # The same step count where a series has it; else the nearest below (none here) and above.
  assert published == {
      ("[TD3 official learning curves](%s)" % TD3_CURVES, "TD3", "HalfCheetah-v1", "300,000"):
          ("7697 ± 727 (seeds: 10; std over seeds)", "eval_at_step"),
      ("[Spinning Up benchmark (PyTorch plots)](%s)" % SPINNING_UP, "DDPG", "HalfCheetah-v3",
       "300,000"): ("7757 (seeds: 10; no std)", "eval_smoothed_plot"),
      ("[Spinning Up benchmark (PyTorch plots)](%s)" % SPINNING_UP, "TD3", "HalfCheetah-v3",
       "300,000"): ("7625 (seeds: 10; no std)", "eval_smoothed_plot"),
      ("[Spinning Up benchmark (PyTorch plots)](%s)" % SPINNING_UP, "SAC", "HalfCheetah-v3",
       "300,000"): ("9163 (seeds: 10; no std)", "eval_smoothed_plot"),
      ("[TD3 paper, Table 1](%s)" % TD3_PAPER, "TD3", "HalfCheetah-v1", "1,000,000"):
          ("9637.0 ± 859.1 (seeds: 10; std over seeds)", "eval_max_over_time"),
      ("[TD3 paper, Table 1](%s)" % TD3_PAPER, "DDPG", "HalfCheetah-v1", "1,000,000"):
          ("3305.6 (seeds: 10; no std)", "eval_max_over_time"),
      ("[TD3 paper, Table 1](%s)" % TD3_PAPER, "Our DDPG", "HalfCheetah-v1", "1,000,000"):
          ("8577.3 (seeds: 10; no std)", "eval_max_over_time"),
      ("[TD3 paper, Table 2](%s)" % TD3_PAPER, "TD3", "HalfCheetah-v1", "1,000,000"):
          ("9533.0 (seeds: 10; no std)", "eval_last_10_mean"),
      ("[TD3 paper, Table 2](%s)" % TD3_PAPER, "DDPG", "HalfCheetah-v1", "1,000,000"):
          ("3162.5 (seeds: 10; no std)", "eval_last_10_mean"),
      ("[TD3 paper, Table 2](%s)" % TD3_PAPER, "Our DDPG", "HalfCheetah-v1", "1,000,000"):
          ("8401.0 (seeds: 10; no std)", "eval_last_10_mean"),
      ("[CleanRL ddpg_continuous_action.py](https://docs.cleanrl.dev/rl-algorithms/ddpg/)",
       "DDPG", "HalfCheetah-v4", "1,000,000"):
          ("10374.1 ± 157.4 (seeds: 3; std over seeds)", "training_episodes"),
      ("[CleanRL td3_continuous_action.py](https://docs.cleanrl.dev/rl-algorithms/td3/)",
       "TD3", "HalfCheetah-v4", "1,000,000"):
          ("9583.2 ± 126.1 (seeds: 3; std over seeds)", "training_episodes"),
      ("[rl-baselines3-zoo benchmark](%s)" % ZOO, "TD3", "HalfCheetah-v3", "1,000,000"):
          ("9655.7 ± 969.9 (seeds: 1; std over episodes)", "one_agent_eval"),
      ("[rl-baselines3-zoo benchmark](%s)" % ZOO, "SAC", "HalfCheetah-v3", "1,000,000"):
          ("9535.5 ± 100.5 (seeds: 1; std over episodes)", "one_agent_eval")}
  assert [r[4] for r in rows[1:]] == sorted((r[4] for r in rows[1:]),
                                            key=lambda s: int(s.replace(",", "")))
  assert "ours HalfCheetah-v5" in text and "30 episodes" in text


def test_nearest_below_and_above_without_the_same_step_count():
  rows = [r for r in continuous.published()
          if r["env"] == "Hopper" and r["source_name"] == "TD3 official learning curves"]
  chosen = continuous.nearest(rows, 250_000)
  assert [(r["env_steps"], r["score"]) for r in chosen] == [(200_000, 2441.0), (300_000, 2410.0)]
  assert [r["env_steps"] for r in continuous.nearest(rows, 50_000)] == [50_000]
  assert [r["env_steps"] for r in continuous.nearest(rows, 2_000_000)] == [1_000_000]
  assert continuous.env_base("HalfCheetah-v5") == "HalfCheetah"
  assert continuous.env_base("ALE/Pong-v5") == "Pong"


def test_no_matching_run_writes_a_short_file(tmp_path):
  results = tmp_path / "results"
  _folder(results, "pong_paac", "PongNoFrameskip-v4", 1000, returns=[21.0, 20.0])
  output = tmp_path / "out" / "continuous.md"
  proc = run_module("tools.reports.continuous", "--results_dir=%s" % results,
                    "--output=%s" % output, timeout=300)
  assert proc.returncode == 0, proc.stderr
  text = output.read_text()
  assert text.startswith(continuous.MARKER)
  assert text.rstrip().endswith("No results run of HalfCheetah, Hopper yet.")
  hand = tmp_path / "hand.md"
  hand.write_text("typed by hand\n")
  proc = run_module("tools.reports.continuous", "--results_dir=%s" % results,
                    "--output=%s" % hand, timeout=300)
  assert proc.returncode == 2 and "not generated by this tool" in proc.stderr
  assert hand.read_text() == "typed by hand\n"


def test_the_published_scores_are_well_formed():
  path = os.path.join(os.path.dirname(paac_tf.__file__), "data", continuous.SCORES_CSV)
  with open(path, newline="", encoding="utf-8") as f:
    reader = csv.DictReader(f)
    assert reader.fieldnames == ["env", "env_version", "algorithm", "env_steps", "score", "std",
                                 "std_over", "seeds", "protocol", "source_name", "source"]
    rows = list(reader)
  assert len(rows) == len(continuous.published()) == 68
  keys = set()
  for row in rows:
    assert all(row[k].strip() for k in ("env", "algorithm", "source_name", "protocol")), row
    assert re.fullmatch(r"https://\S+", row["source"]), row
    assert re.fullmatch(r"v\d+", row["env_version"]), row
    assert int(row["env_steps"]) > 0 and int(row["seeds"]) >= 1, row
    float(row["score"])
    assert row["protocol"] in continuous.PROTOCOLS, row
    assert (row["std_over"] in ("seeds", "episodes")) == bool(row["std"]), row
    if row["std"]:
      assert float(row["std"]) > 0
    key = (row["env"], row["env_version"], row["algorithm"], row["env_steps"],
           row["source_name"])
    assert key not in keys, key
    keys.add(key)
  # No D4PG rows: its paper has no gym MuJoCo numbers (paac_tf/data/SOURCES.md).
  assert not [r for r in rows if "D4PG" in r["algorithm"]]
  with open(os.path.join(os.path.dirname(path), "SOURCES.md"), encoding="utf-8") as f:
    sources = f.read()
  assert continuous.SCORES_CSV in sources
  for url in {r["source"] for r in rows}:
    assert url in sources, url
