"""tools/apex/audit.py: each item's id travels with it into a real replay (and with its
resent copy), and the drain counts lost and duplicated ids exactly."""
import json
import threading
import time

import gin
import numpy as np
import pytest
import reverb

from paac_tf.envs import environment
from paac_tf.runners.apex import n_step
from paac_tf.runners.apex import replay
from paac_tf.runners.apex import replay_layout
from tools.apex import audit as apex_audit
from tools.apex import synthetic as apex_synthetic


def test_ids_split_back_and_counts_are_exact():
  assert apex_audit.split_id(apex_audit.item_id(127, 5)) == (127, 5)
  held = [apex_audit.item_id(0, 0), apex_audit.item_id(0, 1), apex_audit.item_id(0, 1),
          apex_audit.item_id(1, 0), apex_audit.item_id(1, 0), apex_audit.item_id(1, 0),
          apex_audit.item_id(9, 0)]
  c = apex_audit.counts({0: 3, 1: 1}, held)
  assert c["lost_ids"] == [apex_audit.item_id(0, 2)] and c["lost"] == 1
  assert c["duplicate_ids"] == {apex_audit.item_id(0, 1): 1, apex_audit.item_id(1, 0): 2}
  assert (c["created"], c["held"], c["distinct_held"], c["duplicates"], c["unknown"]) == (
      4, 7, 4, 3, 1)


def test_lost_ids_are_classified_by_when_they_were_created():
  timelines = {3: [(10.0, 2), (20.0, 5), (30.0, 9)]}
  assert apex_audit.created_at(timelines[3], 1) == 10.0
  assert apex_audit.created_at(timelines[3], 2) == 20.0
  assert apex_audit.created_at(timelines[3], 9) is None
  ids = [apex_audit.item_id(3, s) for s in (0, 3, 6, 9)] + [apex_audit.item_id(4, 0)]
  assert apex_audit.classify(ids, timelines, cut=15.0, restored_at=25.0) == {
      "before_cut": 1, "during_outage": 1, "after_restore": 1, "unknown_time": 2}


@pytest.mark.timeout(120)
def test_the_drain_counts_a_known_set_of_ids_with_a_duplicate_and_a_missing_one():
  """A real replay with the audit table: items written with ids and one resent (its
  record carries its id), then drained: the ids held are exactly those written, the
  resent one twice, and one id never written is lost."""
  gin.parse_config(["ReplayLayout.n_step = 3"])
  layout = replay_layout.ReplayLayout(*environment.specs("CartPole-v1"))
  settings = replay.apex_replay(capacity=10_000, learning_starts=1, error_buffer=1e7)
  server = replay.start_server(layout, settings=settings,
                               extra_tables=[apex_audit.audit_table()])
  client = reverb.Client("127.0.0.1:%d" % server.port)
  writer = replay_layout.TransitionWriter(client, layout, 1, chunk_length=4, retain=True,
                                          audit_table=apex_audit.AUDIT_TABLE)
  builder = n_step.NStepBuilder(1, n=layout.n_step, gamma=0.9)
  rng = np.random.default_rng(0)
  written = 0
  try:
    step_types = [n_step.FIRST] + [n_step.MID] * 10 + [n_step.LAST]
    for step_type in step_types * 2:
      st = np.array([step_type])
      t = builder.step(st, np.ones(1, np.float32),
                       np.array([0.0 if step_type == n_step.LAST else 1.0], np.float32),
                       np.zeros(1, np.int64), ids=writer.observation_ids(st))
      ids = [apex_audit.item_id(7, written + j) for j in range(len(t.env))]
      writer.write(st, rng.normal(size=(1, 4)).astype(np.float32), t, np.ones(len(t.env)),
                   ids=ids)
      written += len(t.env)
    records = writer.take_kept()
    assert [r[4] for r in records] == [apex_audit.item_id(7, s) for s in range(written)]
    writer.resend([records[2]])
    writer.flush(everything=True, timeout_ms=30_000)
    replay_size = client.server_info()[replay_layout.REPLAY_TABLE].current_size
    held = apex_audit.drain(client, timeout_s=60)
    c = apex_audit.counts({7: written + 1}, held)     # one more id than was written
    assert written > 15 and len(held) == replay_size == written + 1
    assert c["lost_ids"] == [apex_audit.item_id(7, written)] and c["lost"] == 1
    assert c["duplicate_ids"] == {apex_audit.item_id(7, 2): 1} and c["unknown"] == 0
    assert client.server_info()[apex_audit.AUDIT_TABLE].current_size == 0
    assert apex_audit.drain(client, timeout_s=10) == []
  finally:
    writer.close()
    server.stop()


@pytest.mark.timeout(120)
def test_synthetic_actors_ids_are_all_held_once():
  """Two synthetic actors with `audit` (tools/apex/synthetic.py) into a replay with the
  audit table: every id each created is held exactly once, as many as replay items."""
  layout = apex_synthetic.make_layout("mujoco")
  settings = replay.apex_replay(capacity=10_000, learning_starts=1, error_buffer=1e15)
  server = replay.start_server(layout, settings=settings,
                               extra_tables=[apex_audit.audit_table()])
  address = "127.0.0.1:%d" % server.port
  recording = apex_synthetic.record("mujoco", steps=50)
  actors = [apex_synthetic.SyntheticActor(reverb.Client(address), address, layout, recording,
                                          50.0, offset=i, index=10 + i, audit=True)
            for i in range(2)]
  try:
    apex_synthetic.run_until(actors, threading.Event(), time.monotonic() + 2.0,
                              grace_s=28.0)
    assert [a.error for a in actors] == [None, None]
    client = reverb.Client(address)
    replay_size = client.server_info()[replay_layout.REPLAY_TABLE].current_size
    c = apex_audit.counts({a.index: a.items for a in actors},
                          apex_audit.drain(client, timeout_s=60))
    assert c["created"] == replay_size == c["held"] == sum(a.items for a in actors) > 50
    assert (c["lost"], c["duplicates"], c["unknown"]) == (0, 0, 0)
    assert all(a.timeline and a.timeline[-1][1] <= a.items for a in actors)
    json.dumps([a.timeline for a in actors])     # run_actors' results go to JSON
  finally:
    for a in actors:
      a.close()
    server.stop()


def test_a_runs_audit_effects_count_lost_ids_by_actor_and_time(tmp_path):
  from tools.apex import scale_ray as apex_scale_ray   # pylint: disable=import-outside-toplevel  (lazy: only here)
  ids = [apex_audit.item_id(0, s) for s in (0, 1, 1, 3)] + [apex_audit.item_id(1, 0)]
  (tmp_path / "audit.json").write_text(json.dumps({"ids": ids, "replay_size": 5}))
  (tmp_path / "actors0.json").write_text(json.dumps({"audit": {
      "items": {"0": 4, "1": 2},
      "timelines": {"0": [[100.0, 2], [110.0, 4]], "1": [[100.0, 1], [120.0, 2]]}}}))
  r = apex_scale_ray.audit_effects(str(tmp_path), cut=105.0, restored_at=115.0)
  assert (r["items_lost_exact"], r["duplicates_exact"], r["audit_held"]) == (2, 1, 5)
  assert r["lost_by_actor"] == {"0": [1, 2, 2, 5.0, 5.0], "1": [1, 1, 1, 15.0, 15.0]}
  assert r["lost_when"] == {"before_cut": 0, "during_outage": 1, "after_restore": 1,
                            "unknown_time": 0}
  assert r["duplicates_when"]["before_cut"] == 1
  assert apex_scale_ray._lost_actors(r["lost_by_actor"]) == "2 / 1 / 5.0 to 15.0"
