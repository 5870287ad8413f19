"""The actors' retention (runners/apex/retention.py) against hand-computed cases, and
through a real Reverb replay that is checkpointed, stopped and restored: no item lost."""
import collections
import threading
import time

import gin
import numpy as np
import pytest
import reverb

from paac_tf.envs import environment
from paac_tf.runners.apex import durability
from paac_tf.runners.apex import n_step
from paac_tf.runners.apex import replay
from paac_tf.runners.apex import replay_flush
from paac_tf.runners.apex import replay_layout
from paac_tf.runners.apex import retention as retention_lib
import replay_child

Marker = retention_lib.Marker


def _marker(incarnation=7, epoch=0, durable=-1, restored=-1, checkpointing=True):
  return Marker(incarnation, epoch, durable, restored, checkpointing)


def _batch(retention, records, marker):
  """Records written, confirmed, then the marker read: returns what to resend."""
  retention.add(records)
  retention.confirm()
  return retention.observe(marker)


def test_batches_are_tagged_and_dropped_once_a_checkpoint_holds_them():
  r = retention_lib.Retention(100)
  assert _batch(r, ["a1", "a2"], _marker(epoch=0)) == []      # tagged (-1, 0)
  assert _batch(r, ["b1"], _marker(epoch=1)) == []             # (0, 1): checkpoint running
  assert r.size == 3 and r.dropped_durable == 0
  # The checkpoint that began at epoch 1 is done: durable 0 holds the batch tagged hi 0.
  assert _batch(r, ["c1", "c2", "c3"], _marker(epoch=2, durable=0)) == []   # (1, 2)
  assert r.size == 4 and r.dropped_durable == 2
  assert _batch(r, [], _marker(epoch=4, durable=2)) == []
  assert r.size == 0 and r.dropped_durable == 6
  assert r.counters() == {"retained": 6, "dropped_durable": 6, "resent": 0,
                          "maybe_duplicates": 0, "overflowed": 0, "left_to_writer": 0,
                          "kept": 0}


def test_a_restored_replay_gets_back_what_its_checkpoint_lacks():
  r = retention_lib.Retention(100)
  _batch(r, ["a"], _marker(epoch=0))              # (-1, 0): in the checkpoint below
  _batch(r, ["b"], _marker(epoch=1))              # (0, 1): confirmed while it ran
  _batch(r, ["c"], _marker(epoch=2, durable=0))   # (1, 2): also while it ran
  _batch(r, ["d"], _marker(epoch=2, durable=0))   # (2, 2): after it ended
  r.add(["e"])                                    # confirmed by nobody we know of
  # Restarted from the checkpoint begun at epoch 1 (its marker: epoch 1 -> restored 0).
  resend = r.observe(_marker(incarnation=8, epoch=4, restored=0))
  assert resend == ["b", "c", "d", "e"]
  assert r.dropped_durable == 1 and r.resent == 4
  assert r.maybe_duplicates == 3                  # b, c (checkpoint running), e (untagged)
  assert r.incarnation == 8 and r.size == 0
  r.add(resend, resent=True)                      # written again: kept, not yet confirmed
  assert r.size == 4 and r.retained == 5
  # Confirmed by the new server and tagged in its epochs, then durable there.
  assert _batch(r, [], _marker(incarnation=8, epoch=5)) == []
  assert _batch(r, [], _marker(incarnation=8, epoch=6, durable=5)) == []
  assert r.size == 0 and r.dropped_durable == 5


def test_what_the_lost_server_had_not_confirmed_is_left_to_reverbs_writer():
  r = retention_lib.Retention(100)
  _batch(r, ["a"], _marker(epoch=2, durable=0))   # (-1, 2)
  _batch(r, ["b"], _marker(epoch=4, durable=2))   # (2, 4): after the checkpoint begun at 3
  r.add(["c", "d"])
  r.confirm()                                      # confirmed by the lost server
  r.add(["e", "f"])
  r.server_lost(lambda record: record in ("e", "f"))   # its writer still has them pending
  # Restored from the checkpoint begun at epoch 3 (restored 2): "a" is in it, "b" not
  # (lo 2 <= 3: confirmed while it ran, maybe in it), "c", "d" not (lo 4 > 3).
  assert r.observe(_marker(incarnation=8, epoch=6, restored=2)) == ["b", "c", "d"]
  assert r.maybe_duplicates == 1 and r.left_to_writer == 2 and r.dropped_durable == 1
  assert r.untagged() == ["e", "f"]               # kept until the new server holds them
  # A loss that turns out to be the same server again forgets what it was told.
  r.server_lost(lambda record: True)
  r.confirm()
  assert r.observe(_marker(incarnation=8, epoch=7)) == [] and r.size == 2   # tagged (6, 7)
  assert r.observe(_marker(incarnation=8, epoch=8, durable=7)) == [] and r.size == 0


def test_a_replay_restarted_empty_gets_everything_back_without_duplicates():
  r = retention_lib.Retention(100)
  _batch(r, ["a", "b"], _marker(epoch=3))
  assert r.observe(_marker(incarnation=9, epoch=0, restored=-1)) == ["a", "b"]
  assert r.resent == 2 and r.maybe_duplicates == 0


def test_the_bound_drops_the_oldest_and_counts_them():
  r = retention_lib.Retention(4)
  _batch(r, ["a", "b", "c"], _marker(epoch=0))
  _batch(r, ["d", "e"], _marker(epoch=1))         # 5 > 4: "a" goes
  assert r.size == 4 and r.overflowed == 1
  r.add(["f", "g", "h"])                          # "b", "c" (the rest of the oldest), "d"
  assert r.size == 4 and r.overflowed == 4
  assert r.observe(_marker(incarnation=8, epoch=5, restored=-1)) == ["e", "f", "g", "h"]
  assert r.counters() == {"retained": 8, "dropped_durable": 0, "resent": 4,
                          "maybe_duplicates": 3, "overflowed": 4, "left_to_writer": 0,
                          "kept": 0}


def test_nothing_is_kept_for_a_replay_that_does_not_checkpoint():
  r = retention_lib.Retention(10)
  _batch(r, ["a"], _marker(epoch=0))
  assert r.observe(_marker(epoch=0, checkpointing=False)) == [] and r.size == 0
  r.add(["b"] * 100)
  assert r.size == 0 and r.overflowed == 0 and not r.active
  # A restarted replay that checkpoints: kept again from then on.
  assert _batch(r, [], _marker(incarnation=8, epoch=0)) == [] and r.active
  r.add(["c"])
  assert r.size == 1


def _settle(flusher, timeout_s=60.0):
  """Flushes until a marker read after everything written was confirmed is applied."""
  deadline = time.monotonic() + timeout_s
  applied = flusher.retention.incarnation, None
  reads = 0
  while time.monotonic() < deadline:
    was_reading = flusher._reading is not None  # pylint: disable=protected-access
    flusher.flush(lambda: False)
    if was_reading and flusher._reading is None:  # pylint: disable=protected-access
      reads += 1
      if reads >= 2:     # the second read followed a flush of everything before it
        return applied
    time.sleep(0.02)
  raise AssertionError("no marker read within %.0f s" % timeout_s)


def _all_items(client):
  """Every item of the replay table once (sampled, then deleted): Counter of priorities."""
  seen = collections.Counter()
  while client.server_info()[replay_layout.REPLAY_TABLE].current_size:
    keys = {}
    for sample in client.sample(replay_layout.REPLAY_TABLE, 16, emit_timesteps=False):
      keys[int(np.asarray(sample.info.key).reshape(-1)[0])] = float(
          np.asarray(sample.info.priority).reshape(-1)[0])
    seen.update(keys.values())
    client.mutate_priorities(replay_layout.REPLAY_TABLE, deletes=list(keys))
  return seen


@pytest.mark.timeout(240)
def test_an_actor_resends_to_a_restored_replay_what_its_checkpoint_lacks(tmp_path,
                                                                         replay_children):
  """A real replay (start_server, checkpoints by durability.checkpoint as keep_serving
  makes them), the actor's writer and ReplayFlush with retention: items written, a
  checkpoint, more items, the server stopped and started again from the checkpoint on the
  same port, more items: the restored server holds every item written exactly once
  (priorities are unique), the ones after the checkpoint resent by the actor. The lost
  server is a child process (`python -m paac_tf.commands.apex_replay`), SIGKILLed (a host
  lost; tests/replay_child.py); the restored one is in this process, stopped once the
  actor's writer is closed."""
  gin.parse_config(["ReplayLayout.n_step = 3"])
  observation_spec, action_spec = environment.specs("CartPole-v1")
  layout = replay_layout.ReplayLayout(observation_spec, action_spec)
  settings = replay.apex_replay(capacity=10_000, learning_starts=1, error_buffer=1e7)
  checkpoint_dir = str(tmp_path / "replay_checkpoint")
  port = replay_child.free_port()
  address = "127.0.0.1:%d" % port
  start = lambda: replay.start_server(layout, port=port, checkpoint_dir=checkpoint_dir,
                                      settings=settings, checkpoint_interval_s=10)
  # `layout` and `settings` by gin. Its marker says it checkpoints (the actor keeps what it
  # writes), but not within the test: the one checkpoint is the test's, below.
  lost = replay_children.start([
      "paac_tf.commands.apex_replay", "--port=%d" % port, "--env_name=CartPole-v1",
      "--checkpoint_dir=%s" % checkpoint_dir, "--checkpoint_interval_s=3600",
      "--gin_bindings=ReplayLayout.n_step = %d" % layout.n_step,
      "--gin_bindings=apex_replay.capacity = %d" % settings["capacity"],
      "--gin_bindings=apex_replay.learning_starts = %d" % settings["learning_starts"],
      "--gin_bindings=apex_replay.error_buffer = %r" % settings["error_buffer"]], address)
  restarted, restart = {}, None
  env = environment.make_environment("CartPole-v1", num_envs=4, num_workers=0, seed=0)
  client = reverb.Client(address)
  writer = replay_layout.TransitionWriter(client, layout, 4, chunk_length=4, retain=True)
  retention = retention_lib.Retention(10_000)
  flusher = replay_flush.ReplayFlush(writer, client, address, 60, layout, retention=retention,
                                  mark_interval_s=0.0)
  builder = n_step.NStepBuilder(4, n=layout.n_step, gamma=0.9)
  rng = np.random.default_rng(0)
  state = {"ts": env.reset(), "written": 0}

  def play(steps):
    for _ in range(steps):
      ts = state["ts"]
      action = rng.integers(0, 2, 4)
      ids = writer.observation_ids(ts.step_type)
      t = builder.step(ts.step_type, ts.reward, ts.discount, action, ids=ids)
      priorities = 1.0 + state["written"] + np.arange(len(t.env), dtype=np.float64)
      state["written"] += writer.write(ts.step_type, ts.observation, t, priorities).items
      flusher.flush(lambda: False)
      state["ts"] = env.step(action)

  try:
    play(30)
    _settle(flusher)
    before = state["written"]
    assert retention.size == before > 50
    marker = durability.read(client)
    assert marker.checkpointing and marker.durable == -1
    marker, _ = durability.checkpoint(client, marker)       # holds the first `before` items
    play(30)
    _settle(flusher)
    assert retention.dropped_durable == before               # durable: no longer kept
    after_checkpoint = state["written"] - before
    assert retention.size == after_checkpoint > 50
    play(3)         # confirmed or not, not tagged yet when the server goes
    replay_children.kill(lost)
    # Restored from the checkpoint 3 s later, while the actor waits for it (its writer
    # blocks on unconfirmed items, its probe fails: `ReplayFlush._wait_for_server`).
    restart = threading.Timer(3.0, lambda: restarted.update(server=start()))
    restart.start()
    play(40)
    restart.join()
    assert flusher.reconnects == 1
    marker_now = durability.read(client)
    assert marker_now.incarnation != marker.incarnation
    assert marker_now.restored == marker.epoch - 2 and marker_now.epoch > marker.epoch
    _settle(flusher)
    writer.flush(everything=True, timeout_ms=60_000)
    counters = retention.counters()
    assert counters["resent"] >= after_checkpoint and counters["left_to_writer"] > 0
    items = _all_items(client)
    assert set(items) == set(1.0 + np.arange(state["written"]))     # nothing lost
    assert max(items.values()) == 1       # each once (`maybe_duplicates` only bounds it)
  finally:
    flusher.close()
    writer.close()
    env.close()
    if restart is not None:
      restart.cancel()
      restart.join()
    if "server" in restarted:
      restarted["server"].stop()


@pytest.mark.timeout(120)
def test_an_actor_keeps_nothing_for_a_replay_that_does_not_checkpoint():
  """A replay without periodic checkpoints says so in its marker: the actor's writer stops
  making records (no memory held for items that would never become durable)."""
  gin.parse_config(["ReplayLayout.n_step = 3"])
  observation_spec, action_spec = environment.specs("CartPole-v1")
  layout = replay_layout.ReplayLayout(observation_spec, action_spec)
  settings = replay.apex_replay(capacity=10_000, learning_starts=1, error_buffer=1e7)
  server = replay.start_server(layout, settings=settings)
  address = "127.0.0.1:%d" % server.port
  client = reverb.Client(address)
  env = environment.make_environment("CartPole-v1", num_envs=2, num_workers=0, seed=0)
  writer = replay_layout.TransitionWriter(client, layout, 2, chunk_length=4, retain=True)
  retention = retention_lib.Retention(10_000)
  flusher = replay_flush.ReplayFlush(writer, client, address, 60, layout, retention=retention,
                                     mark_interval_s=0.0)
  builder = n_step.NStepBuilder(2, n=layout.n_step, gamma=0.9)
  try:
    assert not durability.read(client).checkpointing
    ts = env.reset()
    deadline = time.monotonic() + 60
    steps = 0
    while (retention.active or steps < 20) and time.monotonic() < deadline:
      action = np.zeros(2, np.int64)
      t = builder.step(ts.step_type, ts.reward, ts.discount, action,
                       ids=writer.observation_ids(ts.step_type))
      writer.write(ts.step_type, ts.observation, t, np.ones(len(t.env)))
      flusher.flush(lambda: False)
      ts = env.step(action)
      steps += 1
    assert not retention.active and not writer.keep_items
    assert retention.size == 0 and writer.take_kept() == []
  finally:
    flusher.close()
    writer.close()
    env.close()
    server.stop()
