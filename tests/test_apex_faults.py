"""Ape-X replay-server faults, with real processes (replay, actor and learner as the
multi-host commands start them) and real signals, on CartPole:
  - no replay server: actor and learner retry with backoff, one log line per retry, then
    give up with one `error:` line and exit status 3 after `server_timeout_s`;
  - a replay that comes up late is waited for; one that is SIGKILLed and restarted on the
    same port (from its checkpoint) is reconnected to: the actor's items reach the new
    server and the learner samples it again;
  - a learner that is SIGKILLed and rerun resumes from its checkpoint while the actor
    waits for it; once the replay is gone for good, the learner saves a checkpoint and
    gives up after `server_timeout_s`, and a waiting actor still stops on SIGTERM;
  - a rate-limited actor still stops when the learner publishes `done`.
Every test checks that no process it started is left behind."""
import ast
import datetime
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import read_text

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")
GIN = "--gin_file=apex_cartpole.gin"


pytestmark = [pytest.mark.usefixtures("no_new_children"), pytest.mark.system]


class _Processes:
  """Started programs, killed (and reaped) at the end of the test whatever happens."""

  def __init__(self, tmp_path):
    self.tmp_path = tmp_path
    self.started = []

  def start(self, name, args):
    log_path = self.tmp_path / ("%s.log" % name)
    with open(log_path, "ab") as log:
      process = subprocess.Popen([sys.executable, "-m", *args], cwd=REPO, env=ENV, stdout=log,
                                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    process.log_path = log_path
    self.started.append(process)
    return process

  def kill_all(self):
    for p in self.started:
      if p.poll() is None:
        p.kill()
        p.wait()


@pytest.fixture
def processes(tmp_path):
  procs = _Processes(tmp_path)
  yield procs
  procs.kill_all()




def _wait_for(predicate, timeout_s, what, watch=()):
  """Polls `predicate` until true; fails early if a watched process exits."""
  deadline = time.monotonic() + timeout_s
  while time.monotonic() < deadline:
    value = predicate()
    if value:
      return value
    for p in watch:
      if p.poll() is not None:
        raise AssertionError("%s exited (%s) while waiting for %s:\n%s" % (
            p.args[2], p.returncode, what, read_text(p.log_path)[-4000:]))
    time.sleep(0.5)
  raise AssertionError("timed out waiting for %s:\n%s" % (what, "\n".join(
      "--- %s\n%s" % (p.args[2], read_text(p.log_path)[-3000:]) for p in watch)))


def _free_port():
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
    sock.bind(("127.0.0.1", 0))
    return sock.getsockname()[1]


def _assert_port_free(port):
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
    assert sock.connect_ex(("127.0.0.1", port)) != 0, "port %d still accepts connections" % port


def _result(log_text):
  match = re.search(r"Result: (\{.*\})", log_text)
  assert match, log_text[-4000:]
  return ast.literal_eval(match.group(1).replace("nan", "None"))


def _actor_args(address, *bindings):
  return ["paac_tf.commands.apex_actor", "--replay_address=%s" % address, "--actor_index=0",
          "--num_actors=1", GIN] + ["--gin_bindings=%s" % b for b in bindings]


def _learner_args(address, root_dir, *bindings):
  return ["paac_tf.commands.apex_learner", "--replay_address=%s" % address,
          "--root_dir=%s" % root_dir, GIN] + ["--gin_bindings=%s" % b for b in bindings]


def _retries(text, address):
  """[(attempt, delay_s)] of the 'not reachable ... retrying' lines for `address`."""
  pattern = r"Replay server at %s not reachable \(attempt (\d+)\); retrying in ([\d.]+) s" % (
      re.escape(address))
  return [(int(a), float(d)) for a, d in re.findall(pattern, text)]


@pytest.mark.timeout(180)
def test_actor_and_learner_retry_with_backoff_then_give_up_without_a_replay(processes, tmp_path):
  port = _free_port()   # nothing listens there
  address = "127.0.0.1:%d" % port
  timeout = "server_timeout_s=6"
  actor = processes.start("actor", _actor_args(address, "apex_actor." + timeout))
  learner = processes.start("learner", _learner_args(address, tmp_path / "run",
                                                     "apex_learner." + timeout))
  for p in (actor, learner):
    p.wait(timeout=150)
    text = read_text(p.log_path)
    assert p.returncode == 3, text[-4000:]
    # Backoff 1, 2, then what is left of the 6 s; one log line per retry.
    retries = _retries(text, address)
    assert [a for a, _ in retries] == list(range(1, len(retries) + 1)), retries
    assert retries[:2] == [(1, 1.0), (2, 2.0)] and 3 <= len(retries) <= 4, retries
    # Then one error line, and no traceback.
    errors = [line for line in text.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, text[-4000:]
    match = re.match(r"error: Replay server at %s not reachable for (\d+) s \((\d+) attempts"
                     % re.escape(address), errors[0])
    assert match and 6 <= int(match.group(1)) <= 12, errors[0]
    assert int(match.group(2)) == len(retries) + 1, (errors[0], retries)
    assert "Traceback" not in text, text[-4000:]
  assert "Nothing was trained" in read_text(learner.log_path)
  assert not os.path.exists(tmp_path / "run" / "train" / "checkpoint")


def _server_counts(address):
  """(inserts, samples) completed on the replay table of the server at `address`, or None."""
  import reverb  # pylint: disable=import-outside-toplevel
  try:
    info = reverb.Client(address).server_info(timeout=5)["replay"]
  except Exception:  # pylint: disable=broad-except
    return None
  stats = info.rate_limiter_info
  return stats.insert_stats.completed, stats.sample_stats.completed


def _published_learner_step(address):
  """The learner step of the weights published on the server at `address`, or None."""
  import reverb  # pylint: disable=import-outside-toplevel
  client = reverb.Client(address)
  try:
    if client.server_info(timeout=5)["weights"].current_size == 0:
      return None
    # Flattened item: done, learner_step, variables...
    return int(next(client.sample("weights", 1, emit_timesteps=False)).data[1][0])
  except Exception:  # pylint: disable=broad-except
    return None


def _checkpoint_after(directory, moment):
  """A complete Reverb checkpoint in `directory` begun after `moment` (UTC datetime)."""
  for name in os.listdir(directory) if os.path.isdir(directory) else []:
    match = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)", name)
    if (match and datetime.datetime.fromisoformat(match.group(1)) > moment and
        os.path.exists(os.path.join(directory, name, "DONE"))):
      return name
  return None


def _grows(address, inserts=0, samples=0):
  """A predicate: the server counts more than `inserts` inserts and `samples` samples."""
  def check():
    counts = _server_counts(address)
    return counts if counts and counts[0] > inserts and counts[1] > samples else None
  return check


@pytest.mark.timeout(420)
def test_late_replay_replay_restart_and_learner_restart(processes, tmp_path):
  port = _free_port()
  address = "127.0.0.1:%d" % port
  root = tmp_path / "run"
  replay_args = ["paac_tf.commands.apex_replay", "--port=%d" % port, GIN,
                 "--checkpoint_dir=%s" % (tmp_path / "replay_checkpoint"),
                 "--checkpoint_interval_s=2"]
  retry = "ReplayRetry.max_s=4"   # backoff 1, 2, 4, 4, ... s: shorter waits in this test
  learner_bindings = ("train_eval.total_steps=100000000", "apex_learner.checkpoint_interval=2000",
                      "apex_learner.stop_at_average_return=None", retry)
  # 1. Actor and learner start before the replay: they retry until it is up.
  actor = processes.start("actor", _actor_args(address, retry))
  learner = processes.start("learner", _learner_args(address, root, *learner_bindings))
  _wait_for(lambda: all(len(_retries(read_text(p.log_path), address)) >= 2
                        for p in (actor, learner)),
            150, "two retries of actor and learner", [actor, learner])
  replay = processes.start("replay", replay_args)
  _wait_for(_grows(address, inserts=1000, samples=0), 150,
            "the actor inserting and the learner sampling", [actor, learner, replay])
  # 2. The replay server is SIGKILLed mid-run, then restarted on the same port from its
  # checkpoint: the actor's items reach the new server and the learner samples it again.
  now = datetime.datetime.utcnow().replace(microsecond=0)
  _wait_for(lambda: _checkpoint_after(tmp_path / "replay_checkpoint", now), 30,
            "a replay checkpoint with transitions", [replay])
  replay.send_signal(signal.SIGKILL)
  replay.wait(timeout=10)
  _wait_for(lambda: all("lost the replay server at %s" % address in read_text(p.log_path)
                        for p in (actor, learner)), 60, "both noticing", [actor, learner])
  replay = processes.start("replay_2", replay_args)
  restored = _wait_for(lambda: re.search(r"Replay restored from the checkpoint in .*: (\d+) "
                                         r"transitions", read_text(replay.log_path)),
                       120, "the restore", [replay, actor, learner])
  assert int(restored.group(1)) > 0
  after_restart = _wait_for(lambda: _server_counts(address), 30, "the new server", [replay])
  _wait_for(_grows(address, after_restart[0] + 500, after_restart[1] + 100), 150,
            "inserts and samples on the restarted server", [actor, learner, replay])
  for p in (actor, learner):
    assert re.search(r"Replay server at %s answers again after \d+ s" % re.escape(address),
                     read_text(p.log_path)), read_text(p.log_path)[-3000:]
  # 3. The learner is SIGKILLed and rerun in the same root dir: it resumes from its
  # checkpoint (steps, weights, optimizer) while the actor waits for it.
  _wait_for(lambda: os.path.exists(root / "train" / "checkpoint"), 120, "a learner checkpoint",
            [learner])
  learner.send_signal(signal.SIGKILL)
  learner.wait(timeout=10)
  time.sleep(2)
  assert actor.poll() is None
  learner = processes.start("learner_2", _learner_args(address, root, *learner_bindings,
                                                       "apex_learner.server_timeout_s=8"))
  resumed = _wait_for(lambda: re.search(r"Resuming at agent step (\d+) \(learner step (\d+), "
                                        r"optimizer step (\d+)\)", read_text(learner.log_path)),
                      120, "the learner resuming", [learner, actor])
  agent_step, learner_step, optimizer_step = (int(g) for g in resumed.groups())
  assert agent_step >= 2000 and learner_step > 0 and optimizer_step == learner_step, resumed
  # It trains on from there (weights are published every 10 learner steps).
  _wait_for(lambda: (_published_learner_step(address) or 0) >= learner_step + 30, 150,
            "the rerun learner training", [learner, actor, replay])
  # 4. The replay is SIGKILLed for good: the learner (server_timeout_s 8) saves a
  # checkpoint and gives up with one error line; the actor, still waiting, stops on SIGTERM.
  replay.send_signal(signal.SIGKILL)
  replay.wait(timeout=10)
  learner.wait(timeout=120)
  text = read_text(learner.log_path)
  assert learner.returncode == 3, text[-4000:]
  assert "Learner lost the replay server" in text, text[-4000:]
  # What it learned since the resume is in its latest checkpoint.
  latest = re.search(r'model_checkpoint_path: "ckpt-(\d+)"',
                     read_text(root / "train" / "checkpoint"))
  assert latest and int(latest.group(1)) > agent_step, (latest, agent_step)
  errors = [line for line in text.splitlines() if line.startswith("error: ")]
  assert len(errors) == 1 and errors[0].startswith(
      "error: Replay server at %s not reachable for " % address), text[-4000:]
  assert "Traceback" not in text, text[-4000:]
  _wait_for(lambda: "Actor 0 lost the replay server" in read_text(actor.log_path).split(
      "answers again")[-1], 60, "the actor waiting", [actor])
  actor.send_signal(signal.SIGTERM)
  actor.wait(timeout=30)
  actor_text = read_text(actor.log_path)
  assert actor.returncode == 0 and "stopped (stopped)" in actor_text, actor_text[-3000:]
  assert "Traceback" not in actor_text, actor_text[-4000:]
  _assert_port_free(port)


class _NoStop:
  requested = False


@pytest.mark.timeout(120)
def test_a_rate_limited_actor_stops_when_the_learner_is_done():
  """An actor whose inserts the rate limiter holds (nobody samples: the learner has ended)
  still sees the learner's `done` (in-process: real server, actor and weights)."""
  import threading  # pylint: disable=import-outside-toplevel
  import gin  # pylint: disable=import-outside-toplevel
  from paac_tf.algorithms import registry  # pylint: disable=import-outside-toplevel
  from paac_tf.envs import batched  # pylint: disable=import-outside-toplevel
  from paac_tf.envs import environment  # pylint: disable=import-outside-toplevel
  from paac_tf.networks import dueling_q  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import actor as actor_lib  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import replay as replay_lib  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import replay_layout  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import weights  # pylint: disable=import-outside-toplevel
  import reverb  # pylint: disable=import-outside-toplevel
  gin.parse_config(["apex_network.network = 'mlp'", "apex_network.mlp_units = (32, 32)",
                    "ReplayLayout.n_step = 3"])
  spec, action_spec = environment.specs("CartPole-v1")
  num_actions = batched.num_actions(action_spec)
  layout = replay_layout.ReplayLayout(spec)
  settings = replay_lib.apex_replay(capacity=10_000, learning_starts=50, samples_per_insert=1.0,
                                    error_buffer=2.0)
  server = replay_lib.start_server(layout, settings=settings)
  address = "127.0.0.1:%d" % server.port
  client = reverb.Client(address)
  network = dueling_q.build_q_network(num_actions, spec)
  weights.publish(client, network, learner_step=1)

  def learner_ends():
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:   # the actor is blocked: inserts stop growing
      size = client.server_info()[replay_layout.REPLAY_TABLE].current_size
      time.sleep(1.0)
      if size >= 50 and client.server_info()[replay_layout.REPLAY_TABLE].current_size == size:
        break
    done_at.append(time.monotonic())
    weights.publish(client, network, learner_step=2, done=True)

  done_at = []
  thread = threading.Thread(target=learner_ends, daemon=True)
  try:
    thread.start()
    counters = actor_lib.apex_actor(address, actor_index=0, num_actors=1,
                                    env_name="CartPole-v1", algorithm=registry.get("apex"),
                                    num_envs=4, chunk_length=4, stop=_NoStop())
    stopped_at = time.monotonic()
  finally:
    thread.join(timeout=70)
    server.stop()
    gin.clear_config()
  assert counters["reason"] == "learner done", counters
  assert done_at and stopped_at - done_at[0] < 15, (stopped_at, done_at)
  assert counters["blocked_s"] > 0, counters
