"""Ape-X as real processes on loopback: the one-command launcher learns CartPole with two
actors and a learner, survives an actor being SIGKILLed, stops cleanly on SIGINT, and the
multi-host commands (replay, actor, learner as separate programs) work together.
Every test checks that no process it caused is left behind (also the launcher's actors,
which are not this process's children) and that the port is free."""
import ast
import os
import re
import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest

from conftest import read_text

from paac_tf.bookkeeping import last_stop

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")


pytestmark = [pytest.mark.usefixtures("no_new_children"), pytest.mark.system]


def _start(args, log_path):
  log = open(log_path, "wb")
  return subprocess.Popen([sys.executable, "-m", *args], cwd=REPO, env=ENV, stdout=log,
                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)




def _wait_for(predicate, timeout_s, what, process=None, log_path=None):
  deadline = time.monotonic() + timeout_s
  while time.monotonic() < deadline:
    value = predicate()
    if value:
      return value
    if process is not None and process.poll() is not None:
      raise AssertionError("process exited (%s) while waiting for %s:\n%s"
                           % (process.returncode, what, read_text(log_path)[-4000:]))
    time.sleep(0.5)
  raise AssertionError("timed out waiting for %s:\n%s" % (what, read_text(log_path)[-4000:]))


def _actors_of(launcher):
  """{actor index: psutil.Process} of the launcher's live actor children."""
  found = {}
  try:
    children = psutil.Process(launcher.pid).children()
  except psutil.NoSuchProcess:
    return found
  for child in children:
    try:
      cmd = child.cmdline()
    except psutil.Error:
      continue
    if "paac_tf.commands.apex_actor" in cmd:
      index = int(next(a for a in cmd if a.startswith("--actor_index=")).split("=")[1])
      found[index] = child
  return found


def _result(log_text):
  match = re.search(r"Result: (\{.*\})", log_text)
  assert match, log_text[-4000:]
  return ast.literal_eval(match.group(1).replace("nan", "None"))


def _reverb_lines(log_text):
  """The tables named by Reverb's "Sampler and server are owned by the same process" lines,
  one per line (which samplers print it and how often: runners/apex/replay.py)."""
  return re.findall(r"Sampler and server are owned by the same process \(\d+\) so Table (\S+) ",
                    log_text)


def _port(log_text):
  return int(re.search(r"Reverb server on port (\d+)", log_text).group(1))


def _assert_port_free(port):
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
    assert sock.connect_ex(("127.0.0.1", port)) != 0, "port %d still accepts connections" % port


def _assert_gone(processes):
  """Every process seen during the test has exited (same pid and start time)."""
  deadline = time.monotonic() + 10
  alive = []
  for p in processes:
    try:
      p.wait(timeout=max(0.1, deadline - time.monotonic()))
    except psutil.TimeoutExpired:
      alive.append(p)
    except psutil.NoSuchProcess:
      pass
  assert not alive, "left behind: %s" % [(p.pid, p.cmdline()) for p in alive]


@pytest.mark.timeout(480)
def test_two_actors_and_a_learner_solve_cartpole_and_survive_an_actor_kill(tmp_path):
  root = tmp_path / "run"
  log_path = tmp_path / "train.log"
  launcher = _start(["paac_tf.train", "--gin_file=apex_cartpole.gin", "--root_dir=%s" % root],
                    log_path)
  seen = []
  try:
    launcher_ps = psutil.Process(launcher.pid)
    seen.append(launcher_ps)
    actors = _wait_for(lambda: (lambda a: a if len(a) == 2 else None)(_actors_of(launcher)),
                       120, "two actors", launcher, log_path)
    seen.extend(actors.values())
    # Mid-run: actor 0 acts with the learner's weights. It is killed this early (not at its
    # first throughput line, 30 s in) so that its replacement, a new process importing
    # TensorFlow, comes up well before the learner reaches its target (after a kill at that
    # line the learner can reach it within seconds, before the replacement logs anything).
    actor0_log = root / "actors" / "actor_0.log"
    _wait_for(lambda: "answers; acting" in read_text(actor0_log), 180, "actor 0 acting",
              launcher, log_path)
    time.sleep(2)   # it writes transitions
    victim = actors[0]
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=10)
    replacement = _wait_for(
        lambda: (lambda a: a.get(0) if a.get(0) and a[0].pid != victim.pid else None)(
            _actors_of(launcher)), 30, "actor 0 restarted", launcher, log_path)
    seen.append(replacement)
    assert actors[1].is_running()   # the other actor and the learner carry on
    launcher.wait(timeout=420)
    text = read_text(log_path)
    assert launcher.returncode == 0, text[-4000:]
  finally:
    if launcher.poll() is None:
      launcher.kill()
      launcher.wait()
  result = _result(text)
  assert result["reason"] == "target", result
  # Only the learner samples the server of its own process: its replay pipeline (no new one
  # per second while the replay fills) and its drains of the actors' reports.
  tables = _reverb_lines(text)
  assert set(tables) <= {"replay", "actor_stats"} and tables.count("replay") <= 2, tables
  assert last_stop.read(str(root))["reason"] == "target"
  assert result["average_return_low_epsilon"] >= 475.0, result
  assert result["actor_restarts"] >= 1, result
  assert re.search(r"Actor 0 \(pid %d\) exited with status -9; restarting it" % victim.pid, text)
  assert "=== start 2 of actor 0" in read_text(root / "actors" / "actor_0.log")
  # Learning went on across the kill: the replacement acted with weights the learner
  # published after its start.
  second_start = read_text(root / "actors" / "actor_0.log").split("=== start 2")[1]
  acting = re.search(r"answers; acting with the weights of learner step (\d+)", second_start)
  assert acting and int(acting.group(1)) > 0, second_start[-2000:]
  # Outputs: checkpoint, SavedModel, TensorBoard summaries of learner and actors.
  assert any(n.startswith("ckpt-") for n in os.listdir(root / "train"))
  assert os.listdir(root / "policies" / "cartpole_v1")
  for d in (root / "train", root / "actors" / "actor_0", root / "actors" / "actor_1"):
    assert any(n.startswith("events.out.tfevents") for n in os.listdir(d)), d
  # The run's operative config holds every process's bindings: the learner's (this
  # process: the replay's too) and, in a section, the actors' (both the same).
  operative = read_text(root / "operative_config.gin")
  assert "apex_learner.batch_size" in operative and "apex_replay.capacity" in operative
  actors = operative.split("# ---- The operative configuration of actor_0, actor_1 (a process "
                           "of its own)")[1]
  assert "apex_actor.num_envs = " in actors and "make_environment.reward_clipping" in actors
  _assert_gone(seen)
  _assert_port_free(_port(text))


@pytest.mark.timeout(240)
def test_sigint_stops_learner_actors_and_server_cleanly(tmp_path):
  root = tmp_path / "run"
  log_path = tmp_path / "train.log"
  launcher = _start(["paac_tf.train", "--gin_file=apex_cartpole.gin", "--root_dir=%s" % root,
                     "--gin_bindings=train_eval.total_steps=10000000"], log_path)
  seen = []
  try:
    seen.append(psutil.Process(launcher.pid))
    actors = _wait_for(lambda: (lambda a: a if len(a) == 2 else None)(_actors_of(launcher)),
                       120, "two actors", launcher, log_path)
    seen.extend(actors.values())
    _wait_for(lambda: all("Actor %d/2" % i in read_text(root / "actors" / ("actor_%d.log" % i))
                          for i in range(2)), 150, "actors acting", launcher, log_path)
    time.sleep(3)
    launcher.send_signal(signal.SIGINT)
    launcher.wait(timeout=90)
    text = read_text(log_path)
    assert launcher.returncode == 0, text[-4000:]
  finally:
    if launcher.poll() is None:
      launcher.kill()
      launcher.wait()
  result = _result(text)
  assert result["reason"] == "signal" and result["actor_restarts"] == 0, result
  assert "restarting" not in text
  assert any(n.startswith("ckpt-") for n in os.listdir(root / "train"))
  _assert_gone(seen)
  _assert_port_free(_port(text))


def _free_port():
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
    sock.bind(("127.0.0.1", 0))
    return sock.getsockname()[1]


@pytest.mark.timeout(300)
def test_multi_host_commands_replay_actor_learner_as_separate_programs(tmp_path):
  port = _free_port()
  address = "127.0.0.1:%d" % port
  gin = "--gin_file=apex_cartpole.gin"
  replay = _start(["paac_tf.commands.apex_replay", "--port=%d" % port, gin],
                  tmp_path / "replay.log")
  actor = learner = None
  try:
    actor = _start(["paac_tf.commands.apex_actor", "--replay_address=%s" % address,
                    "--actor_index=0", "--num_actors=1", gin], tmp_path / "actor.log")
    learner = _start(["paac_tf.commands.apex_learner", "--replay_address=%s" % address,
                      "--root_dir=%s" % (tmp_path / "run"), gin,
                      "--gin_bindings=train_eval.total_steps=6000",
                      "--gin_bindings=apex_learner.low_epsilon=0.005"], tmp_path / "learner.log")
    learner.wait(timeout=240)
    text = read_text(tmp_path / "learner.log")
    assert learner.returncode == 0, text[-4000:]
    result = _result(text)
    assert result["reason"] == "done" and result["agent_steps"] >= 6000, result
    assert result["updates"] > 0, result
    # Episodes of the environments at epsilon <= 0.005 (0.4 ** 6..8 of the 8-step ladder).
    assert result["low_epsilon"] == 0.005 and result["average_return_low_epsilon"] > 0, result
    # The learner's final `done` weights stop the actor on its next refresh.
    actor.wait(timeout=60)
    actor_text = read_text(tmp_path / "actor.log")
    assert actor.returncode == 0 and "stopped (learner done)" in actor_text, actor_text[-3000:]
    assert replay.poll() is None   # the replay server keeps serving until told to stop
    replay.send_signal(signal.SIGTERM)
    replay.wait(timeout=60)
    assert replay.returncode == 0
    # No process samples a server of its own: none prints Reverb's in-process line.
    for name in ("replay.log", "actor.log", "learner.log"):
      assert _reverb_lines(read_text(tmp_path / name)) == [], name
  finally:
    for p in (learner, actor, replay):
      if p is not None and p.poll() is None:
        p.kill()
        p.wait()
  _assert_port_free(port)


@pytest.mark.timeout(300)
def test_rerun_in_the_same_root_dir_resumes_from_the_checkpoint(tmp_path):
  """The learner resumes its steps, weights and optimizer; the replay is checkpointed at the
  end and restored by the rerun (run_local.checkpoint_replay, on by default)."""
  root = tmp_path / "run"
  results = []
  for run in range(2):
    # Actors report steps while the learner starts (and, on the rerun, restores), so a run
    # overshoots its bound; the rerun's bound leaves room beyond the rate limiter's error
    # buffer (~2,000 inserts before it blocks the actors) for learner steps.
    total = 5000 if run == 0 else results[0][0]["agent_steps"] + 8000
    log_path = tmp_path / ("train_%d.log" % total)
    launcher = _start(["paac_tf.train", "--gin_file=apex_cartpole.gin", "--root_dir=%s" % root,
                       "--gin_bindings=train_eval.total_steps=%d" % total], log_path)
    try:
      launcher.wait(timeout=240)
    finally:
      if launcher.poll() is None:
        launcher.kill()
        launcher.wait()
    text = read_text(log_path)
    assert launcher.returncode == 0, text[-4000:]
    results.append((_result(text), text))
  (first, first_text), (second, text) = results
  assert first["reason"] == "done" and first["agent_steps"] >= 5000, first
  assert "Replay restored" not in first_text
  # The restored server's durability marker is read back in its process: one line.
  assert "durability" not in _reverb_lines(first_text)
  assert _reverb_lines(text).count("durability") == 1, _reverb_lines(text)
  # Steps, weights and optimizer state come back (Adam steps once per learner step).
  assert "Resuming at agent step %d (learner step %d, optimizer step %d)" % (
      first["agent_steps"], first["updates"], first["updates"]) in text
  restored = re.search(r"Replay restored from the checkpoint in .*replay_checkpoint: (\d+) "
                       r"transitions, 1 weights item", text)
  assert restored and int(restored.group(1)) > 1000, text[-4000:]
  assert second["reason"] == "done" and second["agent_steps"] >= first["agent_steps"] + 8000, second
  assert second["updates"] > first["updates"], (first, second)
  assert second["episodes"] > first["episodes"]
