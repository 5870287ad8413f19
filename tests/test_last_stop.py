"""root_dir/last_stop.json: how a run's last training process ended (bookkeeping/last_stop.py)."""
import json
import os

from paac_tf.bookkeeping import cadence
from paac_tf.bookkeeping import last_stop


def _result(reason="target", steps=5200, average=18.1):
  return cadence.RunResult(agent_steps=steps, updates=40, episodes=7, average_return=average,
                           reason=reason, extras={"anything": object()})


def test_the_record_holds_the_result_and_no_nan():
  assert last_stop.record(_result(), "2026-12-03T06:00:00+00:00",
                          "2026-12-03T07:00:00+00:00") == {
      "reason": "target", "agent_steps": 5200, "updates": 40, "episodes": 7,
      "average_return": 18.1, "started": "2026-12-03T06:00:00+00:00",
      "ended": "2026-12-03T07:00:00+00:00"}
  # Before the first episode the average is nan: null in the file (strict JSON).
  assert last_stop.record(_result(average=float("nan")), "a", "b")["average_return"] is None


def test_written_whole_and_read_back(tmp_path):
  last_stop.write(str(tmp_path), _result(), "2026-12-03T06:00:00+00:00")
  assert sorted(os.listdir(tmp_path)) == ["last_stop.json"]   # no temporary file left
  with open(tmp_path / "last_stop.json") as f:
    on_disk = json.load(f)
  assert on_disk == last_stop.read(str(tmp_path))
  assert (on_disk["reason"], on_disk["agent_steps"]) == ("target", 5200)
  assert on_disk["ended"] >= on_disk["started"] == "2026-12-03T06:00:00+00:00"
  # The next process's record replaces it.
  last_stop.write(str(tmp_path), _result("signal", 6000), "2026-12-03T08:00:00+00:00")
  assert last_stop.read(str(tmp_path))["reason"] == "signal"


def test_a_record_of_a_process_that_started_before_since_is_not_this_ones(tmp_path):
  last_stop.write(str(tmp_path), _result(), "2026-12-03T06:00:00+00:00")
  assert last_stop.read(str(tmp_path), since="2026-12-03T06:00:00+00:00")["reason"] == "target"
  assert last_stop.read(str(tmp_path), since="2026-12-03T06:00:01+00:00") is None
  assert last_stop.read(str(tmp_path / "missing")) is None
  (tmp_path / "last_stop.json").write_text("{half")
  assert last_stop.read(str(tmp_path)) is None
