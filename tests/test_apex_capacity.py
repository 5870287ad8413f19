"""tools/apex/capacity.py, tools/apex/synthetic.py and tools/apex/scale.py: their formulas
against hand-computed values, and synthetic actors and the sampler on a real in-process
replay (a few seconds); the tools' whole runs are marked system."""
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from tools.apex import capacity as apex_capacity
from tools.apex import scale as apex_scale
from tools.apex import synthetic as apex_synthetic
import replay_child


def test_rates_and_costs():
  assert apex_capacity.rate(300, 20.0) == 15.0
  assert apex_capacity.rate(5, 0.0) == 0.0
  assert apex_capacity.per_core(1000, 0.25) == 4000.0
  assert apex_capacity.per_core(1, 0.0) == float("inf")
  # 10 MB more for 4,000 more items: 2,500 bytes each.
  assert apex_capacity.bytes_per_item(100_000_000, 110_000_000, 1_000, 5_000) == 2_500.0
  assert apex_capacity.bytes_per_item(1, 2, 5, 5) is None
  # An actor at 50,000 / 360 frames/s pulling every 400 frames: 0.3472 pulls/s.
  assert apex_capacity.pulls_per_second(50_000 / 360, 400) == pytest.approx(0.347222, 1e-5)
  assert apex_capacity.cores_needed(12_500, 5_000) == 2.5


def test_paper_demand():
  demand = apex_capacity.paper_demand()
  assert demand["inserts_per_second"] == 12_500           # 50,000 frames/s / frameskip 4
  assert demand["samples_per_second"] == 512 * 19          # 9,728
  assert demand["pulls_per_second"] == pytest.approx(125.0)   # 50,000 / 400


def test_split_actors():
  assert apex_scale.split_actors(8, 45) == [4, 4]
  assert apex_scale.split_actors(1, 45) == [1]
  assert apex_scale.split_actors(128, 45) == [43, 43, 42]
  assert apex_scale.split_actors(360, 45) == [45] * 8
  assert sum(apex_scale.split_actors(361, 45)) == 361


def test_window_rate():
  records = [{"t": 0.0, "inserts": 0}, {"t": 1.0, "inserts": 100}, {"error": "x", "t": 1.5},
             {"t": 2.0, "inserts": 300}, {"t": 3.0, "inserts": 1000}]
  assert apex_scale.window_rate(records, 1.0, 2.0, "inserts") == 200.0
  assert apex_scale.window_rate(records, 0.5, 3.0, "inserts") == 450.0
  assert apex_scale.window_rate(records, 2.5, 2.9, "inserts") is None


def test_percentiles():
  assert apex_synthetic.percentiles(list(range(101))) == {"p50": 50.0, "p99": 99.0}
  assert apex_synthetic.percentiles([]) == {"p50": None, "p99": None}


def test_table_formats_results():
  row = {"layout": "atari", "capacity": 2_000_000, "size": 1000, "evicting": False,
         "inserts_per_second": 2000.0, "inserts_per_server_cpu_second": 18000.0,
         "inserts_per_client_cpu_second": 2500.0, "samples_per_second": 9000.0,
         "samples_per_server_cpu_second": 40000.0, "samples_per_sampler_cpu_second": 9000.0,
         "rss_bytes_per_item": 2345.6}
  results = {"replay": [row], "weights": {
      "weights_bytes": 6_750_876, "pulls_per_second": 40.0, "server_cpu_s_per_pull": 0.005,
      "puller_cpu_s_per_pull": 0.015, "paper_pulls_per_second_per_actor": 0.347,
      "paper_bytes_per_second_per_actor": 2.3e6},
      "date": "d", "commit": "c", "machine": "m", "loadavg": [[1, 2, 3], [2, 3, 4]]}
  text = apex_capacity.table(results)
  assert "| atari | 2,000,000 | 1,000 | no | 2,000 | 18,000 | 2,500 | 9,000 |" in text
  assert "| 2,346 |" in text and "| bytes per pull | 6,750,876 |" in text
  assert "load average 1.00/2.00/3.00 -> 2.00/3.00/4.00" in text


@pytest.fixture(scope="module")
def server():
  from paac_tf.runners.apex import replay   # pylint: disable=import-outside-toplevel
  settings = replay.apex_replay(capacity=10_000, learning_starts=1, error_buffer=1e15)
  server = replay.start_server(apex_synthetic.make_layout("mujoco"), settings=settings)
  yield "127.0.0.1:%d" % server.port
  server.stop()


def test_synthetic_actors_write_real_items_at_their_rate(server):
  """Two paced synthetic actors through the real TransitionWriter: items that the layout
  unpacks, at about their rate; the sampler samples them and updates priorities."""
  import reverb   # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import replay_layout   # pylint: disable=import-outside-toplevel
  layout = apex_synthetic.make_layout("mujoco")
  recording = apex_synthetic.record("mujoco", steps=50)
  actors = [apex_synthetic.SyntheticActor(reverb.Client(server), server, layout, recording,
                                          50.0, offset=i) for i in range(2)]
  apex_synthetic.run_until(actors, threading.Event(), time.monotonic() + 2.0,
                            grace_s=28.0)
  for a in actors:
    assert a.error is None
    assert 70 <= a.steps <= 110       # 50 steps/s for 2 s
    assert a.items >= a.steps - 2 * layout.n_step - 2
    a.writer.flush(everything=True, timeout_ms=10_000)
    a.close()
  client = reverb.Client(server)
  info = client.server_info()[replay_layout.REPLAY_TABLE]
  assert info.current_size == sum(a.items for a in actors)
  item = next(client.sample(replay_layout.REPLAY_TABLE, 1, emit_timesteps=False)).data
  unpacked = layout.unpack_np({"frames": item[0], "transition": item[1]})
  assert unpacked["frames"].shape == (layout.window, apex_synthetic.MUJOCO_OBSERVATION)
  assert 1 <= unpacked["next_offset"] <= layout.n_step
  sampler = apex_synthetic.run_sampler(server, "mujoco", 1.0, batch_size=32)
  assert sampler["batches"] >= 1 and sampler["published"] >= 1
  after = client.server_info()[replay_layout.REPLAY_TABLE].rate_limiter_info.sample_stats
  assert after.completed >= 32 * (sampler["batches"] + 2)


def test_cli_usage_error():
  proc = subprocess.run([sys.executable, "-m", "tools.apex.synthetic", "bogus"],
                        capture_output=True, text=True, check=False,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert proc.returncode == 2
  assert proc.stderr.strip().splitlines()[-1].startswith("error: usage")
  proc = subprocess.run([sys.executable, "-m", "tools.apex.scale", "--actors=a,b"],
                        capture_output=True, text=True, check=False)
  assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1].startswith("error:")


@pytest.mark.system
def test_capacity_tool_quick(tmp_path):
  proc = subprocess.run([sys.executable, "-m", "tools.apex.capacity", "--quick",
                         "--out_dir=%s" % tmp_path], capture_output=True, text=True,
                        check=False, timeout=600)
  assert proc.returncode == 0, proc.stderr[-3000:]
  results = json.loads((tmp_path / "capacity.json").read_text())
  assert [r["layout"] for r in results["replay"]] == ["atari", "atari", "mujoco"]
  assert all(r["inserts"] > 0 and r["samples_per_second"] > 0 for r in results["replay"])
  assert results["weights"]["weights_bytes"] > 1e6
  assert np.isfinite(results["loadavg"][0][0])
  assert "| bytes per pull |" in (tmp_path / "capacity.md").read_text()


def test_scale_table():
  row = {"actors": 8, "processes": 2, "offered_steps_per_second": 277.8,
         "actor_steps_per_second": 192.8, "inserts_per_second": 186.8,
         "samples_per_second": None, "write_s_p50": 0.00025, "write_s_p99": 0.0254,
         "sampler_wait_s": {"p50": 0.229, "p99": 1.36}, "weight_pulls_per_second": 1.83,
         "weight_pulls_done": 40, "weight_pulls": 55, "replay_cpu_cores": 0.067,
         "actors_cpu_cores": 0.257, "sampler_cpu_cores": 0.24, "loadavg": [6.79, 5, 4]}
  line = apex_scale.scale_table([row]).splitlines()[-1]
  assert line == ("| 8 | 2 | 278 | 193 | 187 | - | 0.2 / 25 | 229 / 1,360 | 1.8 | 40 of 55 "
                  "| 0.07 / 0.26 / 0.24 | 6.8 |")


@pytest.mark.cluster
def test_scale_tool_on_namespaces(tmp_path):
  """Two synthetic actors on the namespace hosts: a row with inserts and samples, the
  table and plot written, no namespace left."""
  reason = apex_scale._cluster_hosts().unavailable()   # pylint: disable=protected-access
  if reason:
    pytest.skip(reason)
  def namespaces():
    return set(subprocess.run(["ip", "netns", "list"], capture_output=True,
                              text=True).stdout.split())
  before = namespaces()
  proc = subprocess.run([sys.executable, "-m", "tools.apex.scale", "--actors=2",
                         "--seconds=5", "--out_dir=%s" % tmp_path], capture_output=True,
                        text=True, check=False, timeout=900)
  assert proc.returncode == 0, proc.stderr[-3000:]
  rows = json.loads((tmp_path / "scale.json").read_text())["rows"]
  assert rows[0]["actors"] == 2 and rows[0]["inserts_per_second"] > 0
  assert rows[0]["samples_per_second"] > 0 and rows[0]["replay_cpu_cores"] > 0
  assert (tmp_path / "saturation.png").stat().st_size > 0
  assert "| 2 | 2 |" in (tmp_path / "scale.md").read_text()
  assert namespaces() <= before


def test_partition_effects(tmp_path):
  assert apex_scale.lost_items(1000, 990) == 10
  readings = [(1, 10), (2, 20), (3, 30), (4, 35), (6, 40), (8, 70), (9, 95)]
  (tmp_path / "probe.log").write_text(
      "".join('{"t": %d, "inserts": %d}\n' % r for r in readings)
      + '{"t": 5, "error": "unavailable"}\n')
  (tmp_path / "actors0.json").write_text(json.dumps({"items": 60}))
  (tmp_path / "actors1.json").write_text(json.dumps({"items": 40}))
  (tmp_path / "sampler.json").write_text(json.dumps({"batch_times": [1, 2, 4, 5, 7, 8, 20]}))
  effects = apex_scale.partition_effects(str(tmp_path), [3.0, 6.0], 10.0)
  assert effects == {"partition_s": 3.0, "inserts_per_second_before": 10.0,
                     "inserts_per_second_during": 10 / 3,
                     "inserts_per_second_after": 55 / 3,
                     "items_created": 100, "items_inserted": 95,
                     "items_lost": 5, "batches_before": 2, "batches_during": 2,
                     "batches_after": 2}


def test_lost_replay_is_waited_for_and_restored(tmp_path, replay_children):
  """A synthetic actor and the sampler go on after their replay server is killed and
  started again on its port from its checkpoint (the real replay's `keep_serving`
  checkpoints): the actor's writes wait and reconnect (replay_flush.ReplayFlush), the sampler
  reconnects; the restored server holds the checkpoint's items and gets the rest: what
  the lost server confirmed after the checkpoint is written again by the actor's retention
  (nothing lost; duplicates at most as counted). The lost server is a child process,
  SIGKILLed (a host lost; tests/replay_child.py), the restored one in this process (it
  starts at once) is stopped once the actor and the sampler are done."""
  import reverb   # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import durability   # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import replay   # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import replay_layout   # pylint: disable=import-outside-toplevel
  layout = apex_synthetic.make_layout("mujoco")
  settings = replay.apex_replay(capacity=10_000, learning_starts=1, error_buffer=1e15)
  port, checkpoints = replay_child.free_port(), str(tmp_path / "checkpoint")
  address = "127.0.0.1:%d" % port
  # The same settings as `settings`. Its marker says it checkpoints (actors keep what they
  # write), but not within the test: the one checkpoint is the test's, below.
  lost = replay_children.start(replay_child.synthetic_serve(
      port, "mujoco", settings["capacity"], checkpoints, checkpoint_interval_s=3600), address)
  server, actor, thread, sampler = None, None, None, None
  stop = threading.Event()
  try:
    actor = apex_synthetic.SyntheticActor(reverb.Client(address), address, layout,
                                          apex_synthetic.record("mujoco", steps=50), 40.0)
    thread = threading.Thread(target=actor.run, args=(stop, time.monotonic() + 12.0))
    thread.start()
    sampled = {}
    # 18 s: the sampler notices the SIGKILL at once and probes again 1, 3, then 7 s later
    # (`replay_client.ReplayRetry`), the last after the restore 3 s after the loss: it must
    # still be sampling then, and after it.
    sampler = threading.Thread(target=lambda: sampled.update(apex_synthetic.run_sampler(
        address, "mujoco", 18.0, batch_size=8, server_timeout_s=60)))
    sampler.start()
    time.sleep(2.0)
    saved = reverb.Client(address).server_info()[replay_layout.REPLAY_TABLE].current_size
    client = reverb.Client(address)
    durability.checkpoint(client, durability.read(client))    # as keep_serving makes them
    time.sleep(1.0)        # the actor goes on writing, into the server about to be lost
    lost_server_held = client.server_info()[replay_layout.REPLAY_TABLE].current_size
    replay_children.kill(lost)
    time.sleep(3.0)        # long enough for the actor to block on the lost server
    server = replay.start_server(layout, port=port, checkpoint_dir=checkpoints,
                                 settings=settings, checkpoint_interval_s=10)
    restored = reverb.Client(address).server_info()[replay_layout.REPLAY_TABLE].current_size
    thread.join(timeout=60)
    sampler.join(timeout=60)
    assert not thread.is_alive() and not sampler.is_alive()
    assert actor.error is None
    assert actor.flusher.reconnects == 1
    assert restored >= saved > 0
    held = reverb.Client(address).server_info()[replay_layout.REPLAY_TABLE].current_size
    kept = actor.flusher.counters()
    assert lost_server_held > restored     # confirmed after the checkpoint: resent
    assert kept["resent"] >= lost_server_held - restored
    assert actor.items <= held <= actor.items + kept["maybe_duplicates"]
    assert len(sampled["reconnect_times"]) == 1
    assert any(t > sampled["reconnect_times"][0] for t in sampled["batch_times"])
  finally:
    stop.set()
    for t in (thread, sampler):    # writers and readers done before the server stops
      if t is not None:
        t.join(timeout=60)
    if actor is not None:
      actor.close()
    if server is not None:
      server.stop()


@pytest.mark.cluster
def test_scale_tool_with_ray_on_namespaces(tmp_path):
  """Four synthetic actors as Ray actors on a Ray cluster of the namespace hosts: every
  item created is inserted, the sampler samples, the table is written."""
  reason = apex_scale._cluster_hosts().unavailable()   # pylint: disable=protected-access
  if reason:
    pytest.skip(reason)
  proc = subprocess.run([sys.executable, "-m", "tools.apex.scale", "--actors=4",
                         "--seconds=6", "--launcher=ray", "--threads_per_process=2",
                         "--out_dir=%s" % tmp_path], capture_output=True, text=True,
                        check=False, timeout=900)
  assert proc.returncode == 0, proc.stderr[-3000:]
  row = json.loads((tmp_path / "scale_ray.json").read_text())["rows"][0]
  assert row["launcher"] == "ray" and row["actors"] == 4 and row["processes"] == 2
  assert row["actor_steps_per_second"] > 0 and row["samples_per_second"] > 0
  assert row["items_created"] > 0 and row["items_inserted"] == row["items_created"]
  assert row["actor_errors"] == [] and all(b > 1e8 for b in row["process_rss_bytes"])
  assert "| 4 | 2 |" in (tmp_path / "scale_ray.md").read_text()
