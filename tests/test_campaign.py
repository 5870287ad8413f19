"""The campaign tool's record of when each run trained (tools/campaign: campaign.py,
run_state.py)."""
import json

from paac_tf.bookkeeping import cadence
from paac_tf.bookkeeping import last_stop
from tools.campaign import campaign
from tools.campaign import run_state


def _plan(tmp_path, histories):
  for name, history in histories.items():
    (tmp_path / name).mkdir()
    (tmp_path / name / run_state.RUN_STATE).write_text(json.dumps({"history": history}))
  return {"runs_dir": str(tmp_path), "runs": [{"name": n, "stages": [1]} for n in histories]}


def test_a_start_whose_end_went_with_its_machine_ends_where_the_next_one_starts():
  history = [{"started": "2026-12-02T05:00:00+00:00"},    # its session's machine went
             {"started": "2026-12-03T03:00:00+00:00", "ended": "2026-12-03T04:00:00+00:00"},
             {"started": "2026-12-03T05:00:00+00:00"}]    # running now
  spans = run_state.training_spans(history)
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
  assert run_state.overlapped(plan, by_name["new"]) == ["beside"]
  assert run_state.overlapped(plan, by_name["old"]) == ["earlier_session"]


STARTED = "2026-12-03T06:00:00+00:00"


def _stopped_at_target(tmp_path, name="alone"):
  """A run planned to 10,000 agent steps whose process stopped at its target at 5,200."""
  directory = tmp_path / name
  (directory / "train").mkdir(parents=True)
  (directory / "train" / "checkpoint").write_text('model_checkpoint_path: "ckpt-5200"\n')
  last_stop.write(str(directory), cadence.RunResult(
      agent_steps=5200, updates=40, episodes=7, average_return=18.1, reason="target"), STARTED)
  (directory / run_state.RUN_STATE).write_text(json.dumps({"history": [
      {"started": STARTED, "ended": "2026-12-03T07:00:00+00:00", "end_step": 5200,
       "reason": campaign.stop_reason(str(directory), since=STARTED)}]}))
  return {"runs_dir": str(tmp_path), "runs": [{"name": name, "stages": [1000, 10000]}]}


def test_why_a_run_stopped_is_read_from_the_last_stop_its_process_wrote(tmp_path):
  _stopped_at_target(tmp_path)
  directory = str(tmp_path / "alone")
  assert campaign.stop_reason(directory, since=STARTED) == "target"
  # A record older than the process (which died without writing one): not its reason.
  assert campaign.stop_reason(directory, since="2026-12-03T06:30:00+00:00") is None
  assert campaign.stop_reason(str(tmp_path / "missing")) is None


def test_runs_of_earlier_commits_are_read_from_the_last_stop_line_of_their_log(tmp_path):
  (tmp_path / "train.log").write_text(
      "I1203 train_loop.py:156] Stopped (done) at agent step 100; average return: 1\n"
      "I1203 train_loop.py:156] Stopped (target) at agent step 5200; average return: 18.1\n")
  assert campaign.stop_reason(str(tmp_path), since=STARTED) == "target"
  (tmp_path / "train.log").write_text("Stopped (SIGTERM) at agent step 6000; checkpoint x.\n")
  assert campaign.stop_reason(str(tmp_path), since=STARTED) == "SIGTERM"


def test_a_run_that_reached_its_target_is_published_there_and_then_done(tmp_path, monkeypatch):
  plan = _stopped_at_target(tmp_path)
  run = plan["runs"][0]
  monkeypatch.setattr(campaign, "published_steps", lambda r: 1000)
  assert campaign.status_of(plan, run)[0] == "trained"     # not restarted towards 10,000
  monkeypatch.setattr(campaign, "published_steps", lambda r: 5200)
  assert campaign.status_of(plan, run)[0] == "done"


def test_a_run_published_at_its_target_stays_done_once_its_directory_is_gone(tmp_path,
                                                                           monkeypatch):
  """On a new machine the run directory (its campaign.json) is gone: the published
  run_info.json's stop_reason says the run ended at its target (it was shown 'queued', to
  be trained again from zero towards its last stage)."""
  plan = {"runs_dir": str(tmp_path), "runs": [{"name": "alone", "stages": [10_000]}]}
  run = plan["runs"][0]
  info = {"agent_steps": 5200}
  monkeypatch.setattr(campaign, "published_info", lambda r: info)
  assert campaign.status_of(plan, run)[0] == "queued"       # no stop_reason recorded
  info["stop_reason"] = "target"
  assert campaign.status_of(plan, run) == ("done", "5200 agent steps, published")
  info["stop_reason"] = "signal"
  assert campaign.status_of(plan, run)[0] == "queued"


def test_a_run_stopped_by_a_signal_before_its_stage_is_resumed(tmp_path, monkeypatch):
  plan = _stopped_at_target(tmp_path)
  monkeypatch.setattr(campaign, "published_steps", lambda r: 1000)
  state_path = tmp_path / "alone" / run_state.RUN_STATE
  state = json.loads(state_path.read_text())
  state["history"][0]["reason"] = "signal"
  state_path.write_text(json.dumps(state))
  status, detail = campaign.status_of(plan, plan["runs"][0])
  assert status == "stopped"
  assert detail == "stopped at agent step 5200 (newest checkpoint); next stage 10000"


def test_a_stage_published_from_another_checkout_is_not_published_again(tmp_path,
                                                                         monkeypatch):
  """The driver's checkout has no results/<name>/run_info.json (it is older than the
  publication); the run directory's campaign.json records the stage as published, so the
  stopped run resumes instead of being published at its newest checkpoint."""
  plan = _stopped_at_target(tmp_path)
  monkeypatch.setattr(campaign, "published_steps", lambda r: 0)
  state_path = tmp_path / "alone" / run_state.RUN_STATE
  state = json.loads(state_path.read_text())
  state["history"][0]["reason"] = "signal"
  state["published"] = [{"step": 1000, "at": STARTED, "returncode": 0}]
  state_path.write_text(json.dumps(state))
  assert campaign.status_of(plan, plan["runs"][0])[0] == "stopped"
  state["published"][0]["returncode"] = 1        # a failed publication does not count
  state_path.write_text(json.dumps(state))
  assert campaign.status_of(plan, plan["runs"][0])[0] == "trained"


def _runs(*specs):
  """Plan runs named a, b, ...: spec is (status, alone)."""
  runs = [{"name": chr(ord("a") + i), "alone": alone} for i, (_, alone) in enumerate(specs)]
  return runs, {r["name"]: s for r, (s, _) in zip(runs, specs)}


def _names(runs):
  return [r["name"] for r in runs]


def test_runs_start_in_plan_order_into_the_free_slots():
  runs, statuses = _runs(("done", False), ("running", False), ("stopped", False),
                         ("queued", False))
  assert _names(campaign.runs_to_start(runs, statuses, set(), 2, False)) == ["c"]
  assert _names(campaign.runs_to_start(runs, statuses, {"c"}, 2, False)) == ["d"]
  assert _names(campaign.runs_to_start(runs, statuses, set(), 3, False)) == ["c", "d"]
  assert campaign.runs_to_start(runs, statuses, set(), 1, False) == []


def test_an_alone_run_waits_for_every_run_and_evaluation_and_holds_back_later_runs():
  runs, statuses = _runs(("publishing", False), ("queued", True), ("stopped", False))
  # Without --allow_alone it is passed over.
  assert _names(campaign.runs_to_start(runs, statuses, set(), 2, False)) == ["c"]
  # With it, nothing starts while another run is being evaluated...
  assert campaign.runs_to_start(runs, statuses, set(), 2, True) == []
  # ... or trains; then it starts by itself.
  statuses["a"] = "running"
  assert campaign.runs_to_start(runs, statuses, set(), 2, True) == []
  statuses["a"] = "done"
  assert _names(campaign.runs_to_start(runs, statuses, set(), 2, True)) == ["b"]
  # A run before it in the plan starts first, and it waits for that run.
  runs, statuses = _runs(("queued", False), ("queued", True), ("queued", False))
  assert _names(campaign.runs_to_start(runs, statuses, set(), 2, True)) == ["a"]
  # While it runs, nothing else starts.
  runs, statuses = _runs(("running", True), ("queued", False))
  assert campaign.runs_to_start(runs, statuses, set(), 2, True) == []
  assert campaign.runs_to_start(runs, statuses, set(), 2, False) == []


def test_the_runs_a_run_shared_the_machine_with_outlive_their_directories(tmp_path):
  """The 1M-step HalfCheetah run was published as having had 'no other campaign run': the
  two PAAC runs beside its first 300k steps had been published and their directories
  removed. What a run shared is now kept in its own state."""
  plan = _plan(tmp_path, {
      "long": [{"started": "2026-12-03T04:00:00+00:00", "ended": "2026-12-03T05:00:00+00:00"},
               {"started": "2026-12-04T16:00:00+00:00", "ended": "2026-12-04T17:00:00+00:00"}],
      "beside": [{"started": "2026-12-03T04:30:00+00:00",
                  "ended": "2026-12-03T05:30:00+00:00"}]})
  long_run = plan["runs"][0]
  assert run_state.shared_with(plan, long_run) == ["beside"]
  (tmp_path / "beside" / run_state.RUN_STATE).unlink()       # published, its folder removed
  assert run_state.overlapped(plan, long_run) == []
  assert run_state.shared_with(plan, long_run) == ["beside"]
  assert campaign.load_note(plan, long_run) == "2 cores, under load: shared with beside"


def test_a_published_run_whose_directory_is_gone_shows_its_commands_and_commit(tmp_path,
                                                                               monkeypatch):
  """On a new machine a finished run's campaign.json is gone: the report reads what the
  run did from its published run_info.json (its ';'-separated commands and commit), not
  the plan's command marked '(not yet run)'."""
  plan = {"runs_dir": str(tmp_path), "runs": [
      {"name": "done_run", "item": "x", "config": "atari.gin", "args": ["--gin_file=atari.gin"],
       "stages": [1000, 2000]},
      {"name": "queued_run", "item": "y", "config": "atari.gin",
       "args": ["--gin_file=atari.gin"], "stages": [1000]}]}
  info = {"command": "python -m paac_tf.train --a ; then resumed with: python -m paac_tf.train "
                     "--b", "commit": "c5355565e0b12472bbb78db0150c0e871cb37aeb",
          "agent_steps": 2000}
  monkeypatch.setattr(campaign, "published_info",
                      lambda r: info if r["name"] == "done_run" else {})
  monkeypatch.setattr(campaign, "published_steps",
                      lambda r: 2000 if r["name"] == "done_run" else 0)
  path = tmp_path / "CAMPAIGN.md"
  campaign.write_report(plan, str(path))
  rows = {line.split("`")[1]: line for line in path.read_text().splitlines()
          if line.startswith("| `")}
  assert "| c535556 | `python -m paac_tf.train --a`<br>`then resumed with: python -m " \
         "paac_tf.train --b` |" in rows["done_run"]
  assert "(not yet run)" not in rows["done_run"] and "(not yet run)" in rows["queued_run"]
