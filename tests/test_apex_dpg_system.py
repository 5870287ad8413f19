"""Ape-X DPG learns: `python -m paac_tf.train --gin_file=apex_dpg_pendulum.gin` as shipped (two
actors, a learner, the replay server; no shortening bindings) stops at its target, an
average return >= -200 over the last 100 episodes played at noise scale <= 0.2, and its
final export, evaluated on its own (30 whole episodes, no noise), averages >= -200 too.
Random and untrained policies average about -1200 on Pendulum-v1."""
import ast
import json
import os
import re
import time

import pytest

from conftest import run_module

pytestmark = pytest.mark.usefixtures("no_new_children")

TARGET = -200.0


def _result(text):
  match = re.search(r"Result: (\{.*\})", text)
  assert match, text[-4000:]
  return ast.literal_eval(match.group(1).replace("nan", "None"))


@pytest.mark.timeout(900)
@pytest.mark.system   # a whole run: `make test-system` (.ci/run's second step)
def test_apex_dpg_learns_pendulum_and_its_export_holds_the_target(tmp_path):
  root = tmp_path / "run"
  start = time.monotonic()
  proc = run_module("paac_tf.train", "--gin_file=apex_dpg_pendulum.gin",
                    "--root_dir=%s" % root, timeout=850, env={"PYTHONUNBUFFERED": "1"})
  wall = time.monotonic() - start
  assert proc.returncode == 0, proc.stderr[-4000:]
  assert "Traceback" not in proc.stderr, proc.stderr[-4000:]
  result = _result(proc.stderr)
  run = "wall %.0f s, %d agent steps, %d learner steps, %d episodes: %s" % (
      wall, result["agent_steps"], result["updates"], result["episodes"], result)
  print("Ape-X DPG on Pendulum-v1:", run)
  assert result["reason"] == "target", run
  assert result["low_epsilon"] == 0.2, run
  assert result["average_return_low_epsilon"] >= TARGET, run
  assert result["agent_steps"] < 400000, run   # the config's bound was not what stopped it

  # The final export (the newest version: its agent step) plays as well on its own.
  base = root / "policies" / "pendulum_v1"
  version = max(int(v) for v in os.listdir(base) if v.isdigit())
  assert version == result["agent_steps"], (os.listdir(base), run)
  out = tmp_path / "eval"
  evaluation = run_module("paac_tf.evaluate", "--policy_dir=%s" % (base / str(version)),
                          "--output_dir=%s" % out, timeout=300)
  assert evaluation.returncode == 0, evaluation.stderr[-3000:]
  with open(out / "eval.json") as f:
    summary = json.load(f)
  evaluated = "evaluation: mean %.1f +- %.1f over %d episodes (%s)" % (
      summary["mean"], summary["std"], summary["episodes"], run)
  print(evaluated)
  assert summary["episodes"] == 30 and summary["epsilon"] == 0.0, evaluated
  assert summary["algorithm"] == "apex_dpg", evaluated
  assert summary["mean"] >= TARGET, evaluated
