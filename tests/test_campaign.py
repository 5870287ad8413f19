"""The campaign tool's record of when each run trained (paac_tf/tools/campaign.py)."""
import json

from paac_tf.tools import campaign


def _plan(tmp_path, histories):
  for name, history in histories.items():
    (tmp_path / name).mkdir()
    (tmp_path / name / campaign.RUN_STATE).write_text(json.dumps({"history": history}))
  return {"runs_dir": str(tmp_path), "runs": [{"name": n, "stages": [1]} for n in histories]}


def test_a_start_whose_end_went_with_its_machine_ends_where_the_next_one_starts():
  history = [{"started": "2026-12-02T05:00:00+00:00"},    # its session's machine went
             {"started": "2026-12-03T03:00:00+00:00", "ended": "2026-12-03T04:00:00+00:00"},
             {"started": "2026-12-03T05:00:00+00:00"}]    # running now
  spans = campaign.training_spans(history)
  assert spans[0] == ("2026-12-02T05:00:00+00:00", "2026-12-03T03:00:00+00:00")
  assert spans[1] == ("2026-12-03T03:00:00+00:00", "2026-12-03T04:00:00+00:00")
  assert spans[2][0] == "2026-12-03T05:00:00+00:00" and spans[2][1] > "2026-12-03T05:00:00"


def test_runs_that_trained_before_another_started_are_not_counted_as_sharing_it(tmp_path):
  plan = _plan(tmp_path, {
      "old": [{"started": "2026-12-02T05:00:00+00:00"},
              {"started": "2026-12-03T03:00:00+00:00", "ended": "2026-12-03T04:00:00+00:00"}],
      "new": [{"started": "2026-12-03T06:00:00+00:00", "ended": "2026-12-03T07:00:00+00:00"}],
      "beside": [{"started": "2026-12-03T06:30:00+00:00",
                  "ended": "2026-12-03T07:30:00+00:00"}],
      "earlier_session": [{"started": "2026-12-02T06:00:00+00:00",
                           "ended": "2026-12-02T07:00:00+00:00"}]})
  by_name = {r["name"]: r for r in plan["runs"]}
  assert campaign.overlapped(plan, by_name["new"]) == ["beside"]
  assert campaign.overlapped(plan, by_name["old"]) == ["earlier_session"]
