"""Ape-X through a real Reverb server: the replay layout, actor priorities, learner updates,
weights, checkpoints and the standalone replay command. No mocks: real envs, real Reverb."""
import collections
import glob
import logging
import os
import signal
import socket
import subprocess
import sys
import time

import gin
import numpy as np
import pytest
import reverb
import tensorflow as tf

from paac_tf import errors
from paac_tf.algorithms import registry
from paac_tf.algorithms.apex import epsilon as epsilon_lib
from paac_tf.algorithms.apex import learner_step as learner_step_lib
from paac_tf.algorithms.apex import losses
from paac_tf.runners.apex import n_step
from paac_tf.envs import batched
from paac_tf.envs import environment
from paac_tf.networks import dueling_q
from paac_tf.runners.apex import actor as actor_lib
from paac_tf.runners.apex import actor_reports
from paac_tf.runners.apex import processes
from paac_tf.runners.apex import replay
from paac_tf.runners.apex import replay_client
from paac_tf.runners.apex import replay_layout
from paac_tf.runners.apex import sampling
from paac_tf.runners.apex import weights

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def clean_gin():
  gin.clear_config()
  yield
  gin.clear_config()


def _fifo_server(layout):
  """A server whose replay table hands back every item once, in insertion order."""
  table = reverb.Table(replay_layout.REPLAY_TABLE, sampler=reverb.selectors.Fifo(),
                       remover=reverb.selectors.Fifo(), max_size=100_000, max_times_sampled=1,
                       rate_limiter=reverb.rate_limiters.MinSize(1),
                       signature=layout.item_signature())
  return reverb.Server([table], checkpointer=replay._NoCheckpointer())  # pylint: disable=protected-access


def _write_random_play(env, layout, client, steps, seed=0, chunk_length=4):
  """Plays random actions through the real n-step builder and writer; returns what each
  item must contain, keyed by its (unique) priority, the count of each (step type,
  discount) played, and the writer."""
  rng = np.random.default_rng(seed)
  num_envs = env.batch_size
  builder = n_step.NStepBuilder(num_envs, n=layout.n_step, gamma=0.9)
  writer = replay_layout.TransitionWriter(client, layout, num_envs, chunk_length=chunk_length)
  seen = [dict() for _ in range(num_envs)]     # stream position -> observation
  expected = {}
  step_types = collections.Counter()
  ts = env.reset()
  for _ in range(steps):
    action = rng.integers(0, env.num_actions, num_envs)
    ids = writer.observation_ids(ts.step_type)
    for e in range(num_envs):
      seen[e][int(ids[e])] = np.array(ts.observation[e])
    t = builder.step(ts.step_type, ts.reward, ts.discount, action, ids=ids)
    prio = np.arange(len(expected) + 1, len(expected) + 1 + len(t.env), dtype=np.float64)
    for i in range(len(t.env)):
      e = int(t.env[i])
      expected[float(prio[i])] = dict(
          obs=seen[e][int(t.start_id[i])], next_obs=seen[e][int(t.next_id[i])],
          action=int(t.action[i]), reward=float(t.reward[i]), discount=float(t.discount[i]),
          k=int(t.length[i]))
    writer.write(ts.step_type, ts.observation, t, prio)
    step_types.update((int(s), float(d)) for s, d in zip(ts.step_type, ts.discount))
    ts = env.step(action)
  writer.flush(everything=True, timeout_ms=60_000)
  writer.close()
  return expected, step_types, writer


def _check_items(client, layout, expected):
  size = client.server_info()[replay_layout.REPLAY_TABLE].current_size
  assert size == len(expected)
  checked = 0
  for sample in client.sample(replay_layout.REPLAY_TABLE, size, emit_timesteps=False,
                              unpack_as_table_signature=True):
    want = expected[sample.info.priority]
    data = layout.unpack_np(sample.data)
    obs, next_obs = layout.observations_np(data["frames"], data["next_offset"])
    np.testing.assert_array_equal(obs, want["obs"])
    np.testing.assert_array_equal(next_obs, want["next_obs"])
    assert data["action"] == want["action"]
    assert data["next_offset"] == want["k"]
    assert data["reward"] == pytest.approx(want["reward"])
    assert data["discount"] == pytest.approx(want["discount"])
    # The TF reconstruction the learner uses agrees with numpy.
    tf_obs, tf_next = layout.observations(data["frames"][None], np.array([data["next_offset"]]))
    np.testing.assert_array_equal(tf_obs.numpy()[0], want["obs"])
    np.testing.assert_array_equal(tf_next.numpy()[0], want["next_obs"])
    checked += 1
  return checked


@pytest.mark.timeout(240)
def test_atari_single_frame_stream_rebuilds_every_observation_exactly():
  # Breakout with episodic life and a short frame limit: random play loses lives (discount
  # 0; how a lost life is marked is the env's contract, see envs/atari_vector.py), ends
  # games (LAST, terminated) and hits the limit (LAST, truncated).
  env = environment.make_environment("Breakout", 2, 1, 3, episodic_life=True,
                                     max_episode_frames=4 * 150)
  try:
    layout = replay_layout.ReplayLayout(env.observation_spec(), n_step=3, single_frames=True)
    assert layout.stack == 4 and layout.frame_shape == (84, 84) and layout.window == 7
    server = _fifo_server(layout)
    client = reverb.Client("127.0.0.1:%d" % server.port)
    expected, step_types, writer = _write_random_play(env, layout, client, 420)
    assert {(0, 1.0), (2, 0.0), (2, 1.0)} <= set(step_types)   # all the cases occurred
    # Each time step stores one 84x84 frame (each FIRST also the S-1 older images of its
    # stack, each LAST n-1 padding copies): ~1 frame per transition, not 4 + 4.
    firsts = sum(c for (t, _), c in step_types.items() if t == 0)
    lasts = sum(c for (t, _), c in step_types.items() if t == 2)
    assert writer.frames_written == 420 * 2 + 3 * firsts + 2 * lasts
    assert writer.frames_written < 1.05 * writer.items_written + (3 + 2) * (firsts + lasts)
    assert _check_items(client, layout, expected) == len(expected) > 700
    server.stop()
  finally:
    env.close()


@pytest.mark.timeout(120)
def test_vector_observation_stream_rebuilds_every_observation_exactly():
  env = environment.make_environment("CartPole-v1", 3, 0, 5)
  try:
    layout = replay_layout.ReplayLayout(env.observation_spec(), n_step=3)
    assert layout.stack == 1 and layout.window == 4 and not layout.single_frames
    server = _fifo_server(layout)
    client = reverb.Client("127.0.0.1:%d" % server.port)
    expected, step_types, _ = _write_random_play(env, layout, client, 150, chunk_length=5)
    assert (2, 0.0) in step_types
    assert _check_items(client, layout, expected) == len(expected) > 300
    server.stop()
  finally:
    env.close()


def test_single_frames_off_stores_whole_observations():
  spec = tf.TensorSpec([84, 84, 4], tf.uint8)
  layout = replay_layout.ReplayLayout(spec, n_step=3, single_frames=False)
  assert layout.stack == 1 and layout.frame_shape == (84, 84, 4) and layout.window == 4


def test_writer_refuses_stacks_that_do_not_shift():
  spec = tf.TensorSpec([2, 2, 3], tf.uint8)
  layout = replay_layout.ReplayLayout(spec, n_step=2)
  server = _fifo_server(layout)
  client = reverb.Client("127.0.0.1:%d" % server.port)
  writer = replay_layout.TransitionWriter(client, layout, 1, chunk_length=2)
  empty = n_step.empty_transitions()
  obs = np.arange(12, dtype=np.uint8).reshape(1, 2, 2, 3)
  writer.write(np.array([n_step.FIRST]), obs, empty, [])
  with pytest.raises(replay_layout.FrameStackError):
    writer.write(np.array([n_step.MID]), obs + 5, empty, [])
  writer.close()
  server.stop()


# --- actor priorities and learner updates ---------------------------------------------------

class _NoStop:
  requested = False


def _cartpole_replay(learning_starts=1):
  gin.parse_config(["apex_network.network = 'mlp'", "apex_network.mlp_units = (32, 32)",
                    "ReplayLayout.n_step = 3"])
  spec, action_spec = environment.specs("CartPole-v1")
  num_actions = batched.num_actions(action_spec)
  layout = replay_layout.ReplayLayout(spec)
  settings = replay.apex_replay(capacity=10_000, learning_starts=learning_starts,
                                samples_per_insert=1.0, error_buffer=1e7)
  server = replay.start_server(layout, settings=settings)
  client = reverb.Client("127.0.0.1:%d" % server.port)
  return server, client, layout, spec, num_actions


def _read_priorities(client, num_samples):
  """key -> priority of items seen in `num_samples` prioritized samples."""
  seen = {}
  for sample in client.sample(replay_layout.REPLAY_TABLE, num_samples, emit_timesteps=False):
    seen[sample.info.key] = sample.info.priority
  return seen


@pytest.mark.timeout(240)
def test_actor_initial_priorities_and_learner_priority_updates(monkeypatch):
  server, client, layout, spec, num_actions = _cartpole_replay()
  acted_with = []   # the epsilons of each of the actor's batched steps
  epsilon_greedy = epsilon_lib.epsilon_greedy

  def recording_epsilon_greedy(q_values, eps, rng):
    acted_with.append(np.array(eps, copy=True))
    return epsilon_greedy(q_values, eps, rng)

  monkeypatch.setattr(epsilon_lib, "epsilon_greedy", recording_epsilon_greedy)
  try:
    # Python's, NumPy's and TensorFlow's seeds: with tf.random.set_seed alone the network's
    # initial weights, hence the episodes' lengths, varied from run to run, and in some runs
    # no low-epsilon environment ended an episode within the 60 steps (the window's check).
    tf.keras.utils.set_random_seed(1)
    network = dueling_q.build_q_network(num_actions, spec)
    weights.publish(client, network, learner_step=7)
    counters = actor_lib.apex_actor(
        "127.0.0.1:%d" % server.port, actor_index=1, num_actors=2, env_name="CartPole-v1",
        algorithm=registry.get("apex"), seed=11, num_envs=4, max_steps=60, chunk_length=4,
        discount=0.99, stop=_NoStop())
    size = client.server_info()[replay_layout.REPLAY_TABLE].current_size
    assert counters["items"] == size > 150
    # Actor 1 of 2 x 4 environments acts with the bottom half of the 8-step ladder, one
    # epsilon per environment: 0.4 ** (1 + 7 i / 7), i = 4..7.
    ladder = [0.4 ** 5, 0.4 ** 6, 0.4 ** 7, 0.4 ** 8]
    assert len(acted_with) == 60
    for eps in acted_with:
      np.testing.assert_allclose(eps, ladder, rtol=1e-12)
    # Its reports carry the median of its epsilons, their minimum and, per episode, the
    # epsilon that played it: the learner's low-epsilon window takes those of its last
    # three environments (0.4 ** 6..8 <= 0.01 < 0.4 ** 5 = 0.01024).
    reports = actor_reports.ActorReports()
    assert reports.drain(client) >= 1
    assert reports.epsilons == {1: pytest.approx(float(np.median(ladder)), rel=1e-6)}
    assert reports.lowest_epsilon == pytest.approx(0.4 ** 8, rel=1e-6)
    assert reports.low_epsilon_window() is reports.low_window
    assert 0 < reports.low_window.total < reports.window.total

    # Initial priority = |R + D max_a Q(s', a) - Q(s, a)| + 1e-6 under the actor's
    # network (the published weights), recomputed here through the learner's TF path.
    checked = 0
    for sample in client.sample(replay_layout.REPLAY_TABLE, 64, emit_timesteps=False,
                                unpack_as_table_signature=True):
      data = layout.unpack({k: np.asarray(v)[None] for k, v in sample.data.items()})
      obs, next_obs = layout.observations(data["frames"], data["next_offset"])
      next_q = network(next_obs)
      target = losses.double_q_targets(data["reward"], data["discount"], next_q, next_q)
      td = target - losses.chosen_q(network(obs), data["action"])
      assert sample.info.priority == pytest.approx(abs(float(td[0])) + 1e-6, rel=1e-4,
                                                   abs=1e-5)
      checked += 1
    assert checked == 64

    # The learner's step changes priorities in Reverb to |TD error| after its update.
    before = _read_priorities(client, 3000)
    target_network = dueling_q.build_q_network(num_actions, spec)
    step = learner_step_lib.ApexLearnerStep(network, target_network, layout, optimizer="adam",
                                            learning_rate=0.01)
    step.build()
    dataset = sampling.replay_dataset("127.0.0.1:%d" % server.port, layout, batch_size=32,
                                       prefetch=1)
    updated, batch_of = {}, {}
    for i, sample in enumerate(dataset.take(4)):
      keys, new_priorities, metrics = step.train(sample)
      assert np.isfinite(metrics["Losses/huber"].numpy())
      updates = dict(zip(keys.numpy().tolist(), new_priorities.numpy().tolist()))
      client.mutate_priorities(replay_layout.REPLAY_TABLE, updates=updates)
      updated.update(updates)
      batch_of.update({k: i for k in updates})
    assert int(step.steps.numpy()) == 4
    after = _read_priorities(client, 3000)
    common_keys = [k for k in updated if k in after and k in before]
    assert len(common_keys) >= 20
    for key in common_keys:   # what the server holds is what the learner wrote
      assert after[key] == pytest.approx(updated[key], rel=1e-6)
    # The first batch saw the actor's own network, so its errors equal the initial ones;
    # after an update they differ.
    later = [k for k in common_keys if batch_of[k] > 0]
    assert len(later) >= 15
    assert all(abs(after[k] - before[k]) > 1e-7 for k in later)
  finally:
    server.stop()


def test_learner_step_syncs_the_target_network_every_period():
  spec = tf.TensorSpec([4], tf.float32)
  layout = replay_layout.ReplayLayout(spec, n_step=3)
  settings = {"network": "mlp", "mlp_units": [8], "head_units": None}
  online = dueling_q.build_q_network(2, spec, settings)
  target = dueling_q.build_q_network(2, spec, settings)
  step = learner_step_lib.ApexLearnerStep(online, target, layout, optimizer="adam",
                                          learning_rate=0.01, target_update_period=3)
  step.build()
  batch = 5
  info = reverb.replay_sample.SampleInfo(
      key=tf.constant(np.arange(batch), tf.uint64), probability=tf.fill([batch], 0.1),
      table_size=tf.fill([batch], 10), priority=tf.ones([batch], tf.float64),
      times_sampled=tf.ones([batch], tf.int32))
  data = {"frames": tf.random.stateless_normal([batch, 4, 4], seed=[1, 2]),
          "transition": tf.constant([[0, 1.0, 0.9, 1], [1, 0.5, 0.0, 2]] * 2 + [[0, 0, 0, 3]])}
  sample = reverb.replay_sample.ReplaySample(info=info, data=data)
  synced = []
  for _ in range(7):
    keys, new_priorities, _ = step.train(sample)
    synced.append(all(np.array_equal(a.numpy(), b.numpy())
                      for a, b in zip(online.variables, target.variables)))
  assert synced == [False, False, True, False, False, True, False]
  assert keys.numpy().tolist() == list(range(batch))
  assert new_priorities.dtype == tf.float64 and new_priorities.shape == (batch,)


def test_weights_round_trip_with_step_and_done_flag():
  server, client, _, spec, num_actions = _cartpole_replay()
  try:
    source = dueling_q.build_q_network(num_actions, spec)
    local = dueling_q.build_q_network(num_actions, spec)
    subscriber = weights.WeightsSubscriber(client, local)
    assert not subscriber.available()
    weights.publish(client, source, learner_step=123)
    assert subscriber.wait(timeout_s=10)
    assert subscriber.fetch() == 123 and not subscriber.done
    for a, b in zip(source.variables, local.variables):
      np.testing.assert_array_equal(a.numpy(), b.numpy())
    weights.publish(client, source, learner_step=124, done=True)
    assert subscriber.fetch() == 124 and subscriber.done
    assert client.server_info()[replay_layout.WEIGHTS_TABLE].current_size == 1
  finally:
    server.stop()


def test_replay_tables_follow_the_configuration():
  server, client, _, _, _ = _cartpole_replay(learning_starts=500)
  try:
    info = client.server_info()
    table = info[replay_layout.REPLAY_TABLE]
    assert table.max_size == 10_000
    assert table.sampler_options.prioritized.priority_exponent == pytest.approx(0.6)
    assert table.remover_options.fifo
    assert table.rate_limiter_info.min_size_to_sample == 500
    assert table.rate_limiter_info.samples_per_insert == pytest.approx(1.0)
    assert info[replay_layout.WEIGHTS_TABLE].max_size == 1
  finally:
    server.stop()


def _replay_size(server):
  return reverb.Client("127.0.0.1:%d" % server.port).server_info()[
      replay_layout.REPLAY_TABLE].current_size


def test_replay_checkpoint_restores_and_an_unreadable_one_starts_empty(tmp_path, caplog):
  """The launcher's resume path (`start_server` with a checkpoint folder): a missing
  checkpoint starts empty; a written one restores the replay's size; a truncated one (a
  crash while writing) does not stop the start: it is moved aside, the replay starts empty
  and an ERROR says why."""
  caplog.set_level(logging.INFO)
  gin.parse_config(["ReplayLayout.n_step = 3"])
  layout = replay_layout.ReplayLayout(environment.specs("CartPole-v1")[0])
  settings = replay.apex_replay(capacity=10_000, learning_starts=1, error_buffer=1e7)
  checkpoint_dir = str(tmp_path / "replay_checkpoint")
  server = replay.start_server(layout, checkpoint_dir=checkpoint_dir, settings=settings)
  assert "No replay checkpoint in %s" % checkpoint_dir in caplog.text
  env = environment.make_environment("CartPole-v1", num_envs=4, num_workers=0, seed=0)
  try:
    client = reverb.Client("127.0.0.1:%d" % server.port)
    expected, _, _ = _write_random_play(env, layout, client, steps=100)
    assert _replay_size(server) == len(expected) > 300
    client.checkpoint()
  finally:
    env.close()
    server.stop()
  server = replay.start_server(layout, checkpoint_dir=checkpoint_dir, settings=settings)
  try:
    assert _replay_size(server) == len(expected)
  finally:
    server.stop()
  # Damage every checkpoint's chunks as a crash during the write would: the data of the
  # first record overwritten (its checksum no longer matches: "corrupted record"), the file
  # cut at half. (A cut alone can fall on a record boundary or inside a header, which Reverb
  # reads as a shorter, clean file: it did once in CI.)
  for chunks in glob.glob(os.path.join(checkpoint_dir, "*", "chunks.tfrecord")):
    with open(chunks, "r+b") as f:
      f.seek(16)
      f.write(b"\xff" * 16)
      f.truncate(os.path.getsize(chunks) // 2)
  caplog.clear()
  server = replay.start_server(layout, checkpoint_dir=checkpoint_dir, settings=settings)
  try:
    assert _replay_size(server) == 0
  finally:
    server.stop()
  aside = glob.glob(checkpoint_dir + ".unreadable-*")
  assert len(aside) == 1 and glob.glob(os.path.join(aside[0], "*", "chunks.tfrecord"))
  assert "cannot be restored" in caplog.text and "The replay starts empty." in caplog.text


def test_processes_refuse_a_replay_of_another_configuration():
  server, client, layout, _, _ = _cartpole_replay()
  try:
    address = "127.0.0.1:%d" % server.port
    assert replay_layout.REPLAY_TABLE in replay_client.check_replay(client, layout, address)
    other = replay_layout.ReplayLayout(tf.TensorSpec([4], tf.float32), n_step=5)
    with pytest.raises(replay_client.ReplayMismatchError, match="same gin config"):
      replay_client.check_replay(client, other, address)
  finally:
    server.stop()
  with pytest.raises(TimeoutError, match="not reachable"):
    replay_client.check_replay(reverb.Client("127.0.0.1:%d" % _free_port()), layout, "x",
                           timeout_s=1)


def test_busy_port_is_refused():
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    with pytest.raises(errors.UserError, match="in use"):
      processes.check_port_free(sock.getsockname()[1])


def _free_port():
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
    sock.bind(("127.0.0.1", 0))
    return sock.getsockname()[1]


def _wait_for_server(address, process, timeout_s=120):
  deadline = time.monotonic() + timeout_s
  while time.monotonic() < deadline:
    assert process.poll() is None, "replay server exited early"
    try:
      return reverb.Client(address).server_info(timeout=2)
    except Exception:  # pylint: disable=broad-except
      time.sleep(0.5)
  raise AssertionError("replay server did not come up")


@pytest.mark.timeout(240)
@pytest.mark.system   # a whole run: `make test-system` (.ci/run's second step)
def test_standalone_replay_command_checkpoints_on_shutdown_and_restores(tmp_path):
  port = _free_port()
  address = "127.0.0.1:%d" % port
  command = [sys.executable, "-m", "paac_tf.commands.apex_replay", "--port=%d" % port,
             "--gin_file=apex_cartpole.gin", "--checkpoint_dir=%s" % (tmp_path / "ckpt")]
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  first = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
  try:
    info = _wait_for_server(address, first)
    assert set(info) == {replay_layout.REPLAY_TABLE, replay_layout.WEIGHTS_TABLE,
                         replay_layout.STATS_TABLE, replay_layout.MARKER_TABLE}
    client = reverb.Client(address)
    for i in range(5):
      client.insert({"actor_index": np.int32(0), "agent_steps": np.int64(i)},
                    priorities={replay_layout.STATS_TABLE: 1.0})
    first.send_signal(signal.SIGTERM)
    output, _ = first.communicate(timeout=60)
    assert first.returncode == 0, output
    assert "Replay checkpoint" in output
  finally:
    if first.poll() is None:
      first.kill()
      first.wait()
  second = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
  try:
    info = _wait_for_server(address, second)
    assert info[replay_layout.STATS_TABLE].current_size == 5   # restored
    second.send_signal(signal.SIGINT)
    output, _ = second.communicate(timeout=60)
    assert second.returncode == 0, output
  finally:
    if second.poll() is None:
      second.kill()
      second.wait()


def test_replay_checkpoint_benchmark_fills_checkpoints_restores_and_extrapolates(tmp_path):
  # tools/bench/replay_checkpoint_benchmark.py, whose figures are the table of
  # results/apex_capacity/README.md.
  from tools.bench import replay_checkpoint_benchmark  # pylint: disable=import-outside-toplevel
  assert replay_checkpoint_benchmark.extrapolate(10.0, 200, 1000) == 50.0
  out = replay_checkpoint_benchmark.measure(["apex_cartpole.gin"], max_items=2000,
                                            recorded_steps=50, work_dir=str(tmp_path))
  assert out["capacity"] == 100_000 and out["items"] >= 2000
  assert out["restored_items"] == out["items"]
  assert out["bytes"] == sum(os.path.getsize(os.path.join(d, f)) for d, _, files in
                             os.walk(tmp_path / "replay_checkpoint") for f in files) > 0
  assert out["bytes_at_capacity"] == pytest.approx(out["bytes"] * 100_000 / out["items"])
