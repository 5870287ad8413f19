"""Ape-X on a Ray cluster (`train_eval.launcher = 'ray'`), with real processes: a cluster
of two simulated nodes on this machine (`ray.cluster_utils.Cluster`, on loopback, token
authentication on), the head offering the learner's resource and the second node the
actors'. `python -m paac_tf.train` joins it as a user's command would:
  - learns CartPole with the actors on the second node, and an actor killed with
    `ray.kill(..., no_restart=False)` is restarted by Ray and goes on; the learner
    evaluates while training, the last evaluation in the command's summary;
  - a learner killed mid-run ends the command with one `error:` line; the command run
    again in the same root_dir resumes from the learner's checkpoint.
After each of these no Ray process is left (cluster shut down, checked with psutil).
Bad launcher settings, and the Ray launcher without Ray installed, give one `error:` line."""
import ast
import importlib.util
import os
import re
import subprocess
import sys
import time

import psutil
import pytest

from conftest import RAY_TEST_TOKEN
from conftest import read_text
from conftest import run_module

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GIN = "--gin_file=apex_cartpole.gin"
# Learner and replay where the resource "apex_learner" is (the head), actors where
# "apex_actor" is (the second node).
PLACEMENT = ["--gin_bindings=train_eval.launcher='ray'",
             "--gin_bindings=run_ray.learner_node=None",
             "--gin_bindings=run_ray.learner_options={'resources': {'apex_learner': 1}}",
             "--gin_bindings=run_ray.replay_options={'resources': {'apex_learner': 1}}",
             "--gin_bindings=run_ray.actor_options={'resources': {'apex_actor': 1}}"]

# One token for the test process: Ray's client keeps the first one it reads.
TOKEN = RAY_TEST_TOKEN

needs_ray = pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                               reason="Ray is not installed: pip install -e '.[ray]'")
pytestmark = pytest.mark.usefixtures("no_new_children")


def _ray_processes(since):
  """Ray's processes (GCS, raylets, workers and their helpers) started after `since`."""
  found = []
  for p in psutil.process_iter(["name", "cmdline", "create_time"]):
    try:
      name, cmd = p.info["name"] or "", " ".join(p.info["cmdline"] or [])
      if p.info["create_time"] < since:
        continue
      if (name in ("raylet", "gcs_server") or name.startswith("ray::") or
          "ray/_private" in cmd or "ray/dashboard" in cmd or "default_worker.py" in cmd):
        found.append(p)
    except psutil.Error:
      continue
  return found


@pytest.fixture
def cluster(monkeypatch):
  """(ray module, Cluster, the actor node): a head (1 CPU, resource apex_learner) and a
  second node (2 CPUs, resource apex_actor); this process is connected to it."""
  since = time.time() - 1
  monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")   # addresses on loopback
  monkeypatch.setenv("RAY_AUTH_MODE", "token")
  monkeypatch.setenv("RAY_AUTH_TOKEN", TOKEN)
  monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
  monkeypatch.setenv("RAY_DEDUP_LOGS", "0")   # every worker's log line reaches the command's log
  import ray  # pylint: disable=import-outside-toplevel
  from ray import cluster_utils  # pylint: disable=import-outside-toplevel
  node = {"node_ip_address": "127.0.0.1", "include_dashboard": False}
  cluster = cluster_utils.Cluster()
  try:
    cluster.add_node(num_cpus=1, resources={"apex_learner": 2}, **node)
    actor_node = cluster.add_node(num_cpus=2, resources={"apex_actor": 2}, **node)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address)
    yield ray, cluster, actor_node
  finally:
    ray.shutdown()
    cluster.shutdown()
    deadline = time.monotonic() + 20
    while _ray_processes(since) and time.monotonic() < deadline:
      time.sleep(0.5)
    left = _ray_processes(since)
    for p in left:   # not to leave them running after the failure below
      if p in psutil.Process().children(recursive=True):
        p.kill()
  assert not left, "Ray processes left: %s" % [(p.pid, p.info["cmdline"]) for p in left]


def _start(root, address, extra, log_path):
  with open(log_path, "ab") as log:
    return subprocess.Popen(
        [sys.executable, "-m", "paac_tf.train", GIN, "--root_dir=%s" % root,
         "--gin_bindings=train_eval.ray_address='%s'" % address] + extra,
        cwd=REPO, env=dict(os.environ, PYTHONUNBUFFERED="1"), stdout=log,
        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def _finish(process, timeout, log_path):
  try:
    process.wait(timeout=timeout)
  finally:
    if process.poll() is None:
      process.kill()
      process.wait()
  return read_text(log_path)


def _wait_for(predicate, timeout_s, what, process, log_path):
  deadline = time.monotonic() + timeout_s
  while time.monotonic() < deadline:
    value = predicate()
    if value:
      return value
    if process.poll() is not None:
      raise AssertionError("the command exited (%s) while waiting for %s:\n%s" % (
          process.returncode, what, read_text(log_path)[-4000:]))
    time.sleep(1.0)
  raise AssertionError("timed out waiting for %s:\n%s" % (what, read_text(log_path)[-4000:]))


def _where(ray, name, namespace, timeout_s=60):
  """{'node_id', 'ip', 'pid'} of the run's Ray actor `name` (None while it does not exist)."""
  try:
    handle = ray.get_actor(name, namespace=namespace)
  except ValueError:
    return None
  try:
    return ray.get(handle.where.remote(), timeout=timeout_s)
  except (ray.exceptions.GetTimeoutError, ray.exceptions.RayActorError):
    return None   # restarting, or killed meanwhile


def _result(text):
  match = re.search(r"Result: (\{.*\})", text)
  assert match, text[-4000:]
  return ast.literal_eval(match.group(1).replace("nan", "None"))


@pytest.mark.cluster   # a multi-node Ray cluster (on loopback): .ci/run's last step
@needs_ray
@pytest.mark.timeout(720)
def test_two_nodes_learn_cartpole_with_actors_on_the_actor_node_and_survive_an_actor_kill(
    cluster, tmp_path):
  from paac_tf.runners.apex import ray_connection  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import ray_run  # pylint: disable=import-outside-toplevel
  ray, cluster, actor_node = cluster
  root = tmp_path / "run"
  log_path = tmp_path / "train.log"
  namespace = ray_connection.namespace_for(root)
  start = time.monotonic()
  evaluation = ["--gin_bindings=apex_learner.eval_interval=25000",
                "--gin_bindings=apex_learner.eval_episodes=2"]
  command = _start(root, cluster.address, PLACEMENT + evaluation, log_path)
  try:
    places = [_wait_for(lambda i=i: _where(ray, ray_run.ACTOR_NAME % i, namespace), 240,
                        "actor %d" % i, command, log_path) for i in range(2)]
    assert [p["node_id"] for p in places] == [actor_node.node_id] * 2, places
    for name in (ray_run.LEARNER_NAME, ray_run.REPLAY_NAME):
      assert _where(ray, name, namespace)["node_id"] == cluster.head_node.node_id, name
    # Mid-run: both actors act with the learner's weights; then actor 0's process dies.
    _wait_for(lambda: read_text(log_path).count("acting with the weights") >= 2, 240,
              "both actors acting", command, log_path)
    time.sleep(10)
    ray.kill(ray.get_actor(ray_run.ACTOR_NAME % 0, namespace=namespace), no_restart=False)
    again = _wait_for(
        lambda: (lambda p: p if p and p["pid"] != places[0]["pid"] else None)(
            _where(ray, ray_run.ACTOR_NAME % 0, namespace, timeout_s=120)),
        180, "actor 0 restarted", command, log_path)
    assert again["node_id"] == actor_node.node_id
    text = _finish(command, 480, log_path)
  finally:
    if command.poll() is None:
      command.kill()
      command.wait()
  elapsed = time.monotonic() - start
  assert command.returncode == 0, text[-4000:]
  result = _result(text)
  assert result["reason"] == "target", result
  assert result["average_return_low_epsilon"] >= 475.0, result
  assert result["actor_restarts"] >= 1, result
  assert re.search(r"Actor 0 died \(.*\); running it again \(restart 1 ", text), text[-4000:]
  # The restarted actor acted again (its new process logged its start).
  assert len(re.findall(r"ActorRole pid=\d+\)\S* INFO:absl:Actor 0/2", text)) >= 2, text[-4000:]
  # The local launcher's outputs: checkpoints, SavedModel, summaries, operative config.
  assert any(n.startswith("ckpt-") for n in os.listdir(root / "train"))
  assert os.listdir(root / "policies" / "cartpole_v1")
  for d in (root / "train", root / "actors" / "actor_0", root / "actors" / "actor_1"):
    assert any(n.startswith("events.out.tfevents") for n in os.listdir(d)), d
  # The learner's evaluations while training, in its Ray worker: in the summaries, and the
  # last one in the result the command's summary prints.
  assert "Eval/AverageReturn" in read_text(root / "train" / "summaries.csv")
  assert re.search(r"  Evaluation at agent step %d: mean return " % result["agent_steps"], text)
  operative = read_text(root / "operative_config.gin")
  assert "train_eval.launcher = 'ray'" in operative and "apex_learner.batch_size" in operative
  # Every process's bindings: the learner's, the replay's and the actors' sections.
  for name in ("learner", "replay", "actor_0, actor_1"):
    assert "# ---- The operative configuration of %s (a process of its own)" % name in operative
  actors = operative.split("of actor_0, actor_1 (a process of its own)")[1]
  assert "apex_actor.num_envs" in actors and "make_environment." in actors
  # Every Ray actor of the run is gone.
  for name in [ray_run.LEARNER_NAME, ray_run.REPLAY_NAME] + [
      ray_run.ACTOR_NAME % i for i in range(2)]:
    assert _where(ray, name, namespace) is None, name
  print("two-node Ray run: %.0f s, result %s" % (elapsed, result))


@pytest.mark.cluster   # a multi-node Ray cluster (on loopback): .ci/run's last step
@needs_ray
@pytest.mark.timeout(600)
def test_killed_learner_then_rerun_resumes_from_its_checkpoint(cluster, tmp_path):
  """Default placement (learner and replay on the command's node, actors spread)."""
  from paac_tf.runners.apex import ray_connection  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import ray_run  # pylint: disable=import-outside-toplevel
  ray, cluster, _ = cluster
  root = tmp_path / "run"
  namespace = ray_connection.namespace_for(root)
  bindings = ["--gin_bindings=train_eval.launcher='ray'",
              "--gin_bindings=apex_learner.checkpoint_interval=3000"]
  first_log = tmp_path / "first.log"
  command = _start(root, cluster.address, bindings, first_log)
  try:
    saved = _wait_for(lambda: re.findall(r"Saved checkpoint \S*ckpt-(\d+)", read_text(first_log)),
                      300, "a checkpoint", command, first_log)
    ray.kill(ray.get_actor(ray_run.LEARNER_NAME, namespace=namespace))
    text = _finish(command, 60, first_log)
  finally:
    if command.poll() is None:
      command.kill()
      command.wait()
  assert command.returncode == 2, text[-4000:]
  errors = [line for line in text.splitlines() if line.startswith("error: ")]
  assert len(errors) == 1 and "The learner (Ray actor apex_learner" in errors[0], errors
  assert "run the same command again to resume" in errors[0]
  for name in [ray_run.LEARNER_NAME, ray_run.REPLAY_NAME] + [
      ray_run.ACTOR_NAME % i for i in range(2)]:
    assert _where(ray, name, namespace) is None, name

  # The checkpoint the rerun resumes from (the manager's newest): the learner may have saved
  # more after the one waited for, before the kill landed; the rerun must go on past it.
  state = read_text(root / "train" / "checkpoint")
  checkpoint = max(int(saved[-1]), int(re.search(r'model_checkpoint_path: "\S*ckpt-(\d+)"',
                                                 state).group(1)))
  second_log = tmp_path / "second.log"
  command = _start(root, cluster.address, bindings + [
      "--gin_bindings=train_eval.total_steps=%d" % (checkpoint + 4000)], second_log)
  text = _finish(command, 300, second_log)
  assert command.returncode == 0, text[-4000:]
  assert re.search(r"Resuming at agent step (\d+)", text), text[-4000:]
  resumed = re.search(r"Resuming at agent step (\d+) \(learner step (\d+)", text)
  assert resumed and int(resumed.group(1)) >= checkpoint, (text[-4000:], checkpoint)
  result = _result(text)
  assert result["reason"] == "done" and result["agent_steps"] >= checkpoint + 4000, result
  assert result["updates"] > int(resumed.group(2)), result


def test_without_ray_the_ray_launcher_says_how_to_install_it(tmp_path):
  """A user without the extra: one error line; the local launcher's modules import."""
  code = ("import runpy, sys; sys.modules['ray'] = None; sys.argv = ['train', %r, %r, %r]; "
          "runpy.run_module('paac_tf.train', run_name='__main__')" % (
              GIN, "--root_dir=%s" % (tmp_path / "run"),
              "--gin_bindings=train_eval.launcher='ray'"))
  result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
  errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
  assert result.returncode == 2 and len(errors) == 1, result.stderr[-3000:]
  assert "needs Ray: pip install -e '.[ray]'" in errors[0], errors


@needs_ray
@pytest.mark.parametrize("bindings, message", [
    (["train_eval.launcher='ray'", "train_eval.algorithm='paac'"],
     "train_eval.launcher = 'ray': choose 'local', or 'ray' for Ape-X"),
    (["train_eval.launcher='ray'", "train_eval.ray_address='127.0.0.1:1'"],
     "No Ray cluster answers at 127.0.0.1:1 (train_eval.ray_address)"),
])
def test_bad_launcher_settings_give_one_error_line(tmp_path, bindings, message):
  result = run_module("paac_tf.train", GIN, "--root_dir=%s" % (tmp_path / "run"),
                      *["--gin_bindings=%s" % b for b in bindings], timeout=120,
                      env={"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"})
  errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
  assert result.returncode == 2 and len(errors) == 1, result.stderr[-3000:]
  assert message in errors[0], errors
  assert "Traceback" not in result.stderr
