"""tools/apex/scale_ray.py's replay loss timed against the replay's checkpoints: when a
checkpoint began (read from the replay's log, as Reverb names its directory), the wait for
the next one, faults.md's sections, and the whole loss with Ray actors on the namespace
hosts (cluster)."""
import datetime
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from tools.apex import scale as apex_scale
from tools.apex import scale_ray as apex_scale_ray


def _log_line(path):
  return "INFO:absl:Replay checkpoint: %s (Marker(incarnation=1, epoch=2, durable=0, " \
         "restored=-1, checkpointing=True))\n" % path


def test_checkpoint_times_read_the_directory_names(tmp_path):
  log = tmp_path / "replay.log"
  log.write_text("serving on 8000\n"
                 + _log_line("/c/checkpoint/2026-12-06T07:00:32.350463778+00:00")
                 + "[reverb/cc/reverb_service_impl.cc:168] Stored checkpoint to /c/x\n"
                 + _log_line("/c/checkpoint/2026-12-06T07:00:38+00:00/"))
  t0 = datetime.datetime(2026, 12, 6, 7, 0, 32, tzinfo=datetime.timezone.utc).timestamp()
  times = apex_scale_ray.checkpoint_times(str(log))
  assert len(times) == 2
  assert times[0] == pytest.approx(t0 + 0.350463778, abs=1e-6)
  assert times[1] == pytest.approx(t0 + 6.0, abs=1e-6)
  empty = tmp_path / "empty.log"
  empty.write_text("serving on 8000\n")
  assert apex_scale_ray.checkpoint_times(str(empty)) == []


def test_a_real_checkpoint_is_named_by_when_it_began(tmp_path):
  """The time in a Reverb checkpoint's directory name lies between the calls before and
  after it (what `checkpoint_times` relies on), read back as the replay logs it."""
  import reverb   # pylint: disable=import-outside-toplevel  (lazy: TensorFlow)
  from paac_tf.runners.apex import durability   # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import replay   # pylint: disable=import-outside-toplevel
  from tools.apex import synthetic as apex_synthetic   # pylint: disable=import-outside-toplevel
  server = replay.start_server(apex_synthetic.make_layout("mujoco"),
                               checkpoint_dir=str(tmp_path / "checkpoint"),
                               settings=replay.apex_replay(capacity=1000, learning_starts=1,
                                                               error_buffer=1e15),
                               checkpoint_interval_s=10)
  try:
    client = reverb.Client("127.0.0.1:%d" % server.port)
    before = time.time()
    _, path = durability.checkpoint(client, durability.read(client))
    after = time.time()
  finally:
    server.stop()
  log = tmp_path / "replay.log"
  log.write_text(_log_line(path))
  (began,) = apex_scale_ray.checkpoint_times(str(log))
  assert before - 0.01 <= began <= after


def test_wait_for_checkpoint_waits_for_the_next_line(tmp_path):
  log = tmp_path / "replay.log"
  log.write_text(_log_line("/c/2026-12-06T07:00:32+00:00"))
  appended = []

  def append():
    time.sleep(0.5)
    appended.append(time.time())
    with open(log, "a") as f:
      f.write(_log_line("/c/2026-12-06T07:00:42+00:00"))
  thread = threading.Thread(target=append)
  thread.start()
  seen = apex_scale_ray.wait_for_checkpoint(str(log), timeout_s=10)
  thread.join()
  assert appended[0] <= seen <= appended[0] + 1.0
  with pytest.raises(RuntimeError, match="no checkpoint in 0 s"):
    apex_scale_ray.wait_for_checkpoint(str(log), timeout_s=0.3)


def _loss_row(**extra):
  row = {"command": "python -m tools.apex.scale ...", "actors": 128, "loss_at_s": 38.2,
         "seconds": 90.0, "processes_killed": 2, "replay_loss_s": 10.0,
         "checkpoint_interval_s": 10.0, "items_created": 1000, "held_by_lost_server": 600,
         "restored_from_checkpoint": 500, "inserted_by_restored_server": 500,
         "held_at_end": 1000, "confirmed_after_checkpoint": 100, "left_to_writer": 16,
         "resent": 100, "maybe_duplicates": 0, "retention_overflowed": 0,
         "items_missing": 0, "items_lost_at_least": 0, "items_lost_at_most": 0,
         "actor_reconnects": 128, "sampler_reconnects": 1,
         "sampler_resumed_s_after_restore": 3.0, "batches_before": 5, "batches_during": 0,
         "batches_after": 6, "actor_errors": []}
  row.update(extra)
  return row


def test_faults_table_keeps_both_replay_losses_and_the_checkpoint_timing():
  old = _loss_row()       # a row of before the checkpoint timing was recorded
  timed = _loss_row(cut_after_checkpoint_s=5.0, cut_s_after_checkpoint_done=5.4,
                    lost_server_checkpoints=4, last_checkpoint_began_s_before_cut=7.25,
                    audit_created=1000, audit_held=990, audit_distinct_held=980,
                    audit_unknown=0, audit_replay_size=1000, items_lost_exact=20,
                    duplicates_exact=10, lost_beyond_unconfirmed=0, replay_minus_audit=10,
                    lost_when={"before_cut": 18, "during_outage": 2, "after_restore": 0,
                               "unknown_time": 0},
                    duplicates_when={"before_cut": 10, "during_outage": 0,
                                     "after_restore": 0, "unknown_time": 0},
                    lost_by_actor={"3": [12, 100, 111, -0.5, 0.1], "7": [8, 90, 97, -0.2, 0.0]})
  text = apex_scale_ray.faults_table(
      {"replay_loss": old, "replay_loss_after_checkpoint": timed}, "NOTE")
  first, second = text.split("## Replay host lost a set time after a checkpoint")
  assert "## Replay host lost and restored" in first
  assert "checkpoints the lost server completed" not in first
  assert "5.4 s after the replay's log said a checkpoint completed" in second
  assert "| checkpoints the lost server completed / the last began .. s before the cut " \
         "| 4 / 7.2 |" in second
  assert "| resent by the actors' retention | 100 |" in second
  assert "| items lost, by their ids (created, not held) | 20 |" in second
  assert "| of them created | 18 before the cut / 2 during the outage / 0 after the " \
         "restart |" in second
  assert "| actors that lost items / the most one lost / created from .. to .. s after " \
         "the cut | 2 / 12 / -0.5 to 0.1 |" in second
  assert "| lost beyond what each actor's writer had unconfirmed at the cut | 0 |" in second
  assert "| replay items - audit items at the end (0: the ids count the replay exactly) " \
         "| 10 |" in second
  assert "here 990 audit items against 1,000 replay items" in second
  assert text.count("NOTE") == 2


@pytest.mark.parametrize("args,message", [
    (["--cut_after_checkpoint_s=3"],
     "--cut_after_checkpoint_s must be >= 0 and needs --replay_loss_s."),
    # A cut 2 s after a checkpoint with checkpoints every 2 s: the next one would begin
    # between the cut and the kill (1.5 s later) and hold everything the lost server held.
    (["--launcher=ray", "--replay_loss_s=3", "--checkpoint_interval_s=2",
      "--cut_after_checkpoint_s=1"],
     "--cut_after_checkpoint_s + 1.5 s must be below --checkpoint_interval_s - 0.5: the "
     "replay's next checkpoint would begin before its processes are killed.")])
def test_cut_after_checkpoint_usage_errors(args, message):
  proc = subprocess.run([sys.executable, "-m", "tools.apex.scale", "--actors=2"] + args,
                        capture_output=True, text=True, check=False, timeout=120)
  assert proc.returncode == 2
  assert proc.stderr.strip().splitlines() == ["error: " + message]


@pytest.mark.cluster
def test_replay_host_lost_after_a_checkpoint_with_ray_actors(tmp_path):
  """Four synthetic actors as Ray actors; the replay host is lost 1 s after a checkpoint
  completed and restored from it: the lost server held items its checkpoint did not, the
  actors' retention wrote them again, and the audit's exact count loses nothing but items
  whose confirmation had not reached their actor at the cut (left to Reverb's writers),
  none created after the outage."""
  reason = apex_scale._cluster_hosts().unavailable()   # pylint: disable=protected-access
  if reason:
    pytest.skip(reason)
  proc = subprocess.run([sys.executable, "-m", "tools.apex.scale", "--actors=4",
                         "--seconds=30", "--launcher=ray", "--threads_per_process=2",
                         "--replay_loss_s=3", "--checkpoint_interval_s=4",
                         "--cut_after_checkpoint_s=1", "--out_dir=%s" % tmp_path],
                        capture_output=True, text=True, check=False, timeout=900)
  assert proc.returncode == 0, proc.stderr[-3000:]
  row = json.loads((tmp_path / "faults.json").read_text())["replay_loss_after_checkpoint"]
  assert row["cut_after_checkpoint_s"] == 1.0
  assert 1.0 <= row["cut_s_after_checkpoint_done"] < 4.0
  assert row["lost_server_checkpoints"] >= 1
  assert row["last_checkpoint_began_s_before_cut"] >= 1.0
  assert row["confirmed_after_checkpoint"] > 0
  # What the lost server held beyond its checkpoint was written again: by the retention
  # (confirmed to the actor) or by Reverb's writers (its confirmation never came back).
  assert row["resent"] > 0
  assert row["resent"] + row["left_to_writer"] >= row["confirmed_after_checkpoint"]
  assert row["audit_created"] == row["items_created"] > 0
  assert row["items_lost_exact"] <= row["left_to_writer"]
  assert row["lost_when"]["after_restore"] == row["lost_when"]["unknown_time"] == 0
  assert row["lost_beyond_unconfirmed"] == 0
  for _, _, _, first_t, last_t in row["lost_by_actor"].values():   # in flight at the cut
    assert -2.0 <= first_t <= last_t <= row["replay_loss_s"]
  assert row["duplicates_exact"] <= row["maybe_duplicates"] + row["left_to_writer"]
  assert row["actor_errors"] == [] and row["actor_reconnects"] == 4
  assert "## Replay host lost a set time after a checkpoint" in (
      tmp_path / "faults.md").read_text()
  assert os.path.exists(tmp_path / "faults.json")


def test_committed_faults_md_regenerates_from_faults_json():
  results = os.path.join(apex_scale.REPO, "results", "apex_capacity")
  with open(os.path.join(results, "faults.json")) as f:
    faults = json.load(f)
  with open(os.path.join(results, "faults.md")) as f:
    assert f.read() == apex_scale_ray.faults_markdown(faults)
