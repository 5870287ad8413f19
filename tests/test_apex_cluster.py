"""Ape-X on a real multi-host Ray cluster on this machine (`tests/cluster_hosts.py`): three
hosts, each a network namespace with an address of its own, each a Ray node started with
the commands of docs/apex.md ("Run on a cluster"), token authentication on:
  head    10.213.0.1  `ray start --head --port=6379`; learner and replay run here
  actors  10.213.0.2  `ray start --address=10.213.0.1:6379 --resources='{"apex_actor": 8}'`
  spare   10.213.0.3  the same
The run is started in the head's namespace with docs/apex.md's command
(`train_eval.ray_address="auto"`, `run_ray.replay_port=8000`, actors asking for
`apex_actor`), so the two actors go one to each actor host (SPREAD):
  - CartPole is learned (the least exploring episodes' last 100 average >= 475), every
    connection to the replay's port in every namespace goes to 10.213.0.1:8000 (the replay
    node's own address), none to loopback; the link of the host that holds the last
    actor is down for 20 s mid-run (a partition): its actor waits and goes on (or is
    restarted), the learner goes on sampling meanwhile (the other host's actor inserts),
    the run ends. The last actor plays every episode of the stop criterion (its
    environments alone explore with epsilon <= 0.01), so the run cannot end while it is
    cut off, however fast it learns: the partition is mid-run by construction;
  - the learner's process is killed: one `error:` line; the command rerun resumes from
    the learner's checkpoint;
  - the `actors` host is lost (every process in its namespace killed): its actor is
    restarted on `spare`, the run ends.
Each prints what it measured (recovery times; docs/apex.md#measured-on-a-cluster). A
probe in the head's namespace (`python -m tests.cluster_hosts probe`) reads the replay's
counters every 0.5 s. Marked `cluster`: `make test-cluster`, the second step of .ci/run;
skipped without root or `ip netns`. No process, namespace or directory is left after."""
import ast
import json
import os
import re
import threading
import time

import psutil
import pytest

from conftest import read_text
import cluster_hosts

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPLAY = "%s1:%d" % (cluster_hosts.SUBNET, cluster_hosts.REPLAY_PORT)
# docs/apex.md's command for the head, with CartPole's config.
TRAIN = ["python", "-m", "paac_tf.train", "--gin_file=apex_cartpole.gin",
         '--gin_bindings=train_eval.launcher="ray"',
         '--gin_bindings=train_eval.ray_address="auto"',
         "--gin_bindings=run_ray.replay_port=%d" % cluster_hosts.REPLAY_PORT,
         "--gin_bindings=run_ray.actor_options={'resources': {'apex_actor': 1}}"]
ROLES = ("ray::LearnerRole", "ray::ActorRole", "ray::ReplayRole")
PARTITION_S = 20

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("no_new_children")]


@pytest.fixture(scope="module")
def hosts():
  """The three hosts with their Ray nodes; afterwards nothing of them is left."""
  reason = cluster_hosts.unavailable()
  if reason:
    pytest.skip("multi-host cluster tests: " + reason)
  cluster_hosts.sweep()
  made = cluster_hosts.Hosts()
  try:
    start = time.monotonic()
    for name in ("head", "actors", "spare"):
      made.add(name)
    made.start_head()
    for name in ("actors", "spare"):
      made.join(name)
    print("cluster of 3 hosts up in %.0f s" % (time.monotonic() - start))
    yield made
  finally:
    left = made.close()
  assert not left, "left behind: %s" % left


class _Log:
  """A command's log as it grows: each line with the time.time() it was first seen (read
  every 0.25 s on a thread; Ray's colour codes removed)."""

  def __init__(self, path):
    self.path, self.lines = path, []
    self._offset, self._partial = 0, b""
    self._lock, self._stop = threading.Lock(), threading.Event()
    self._thread = threading.Thread(target=self._follow, daemon=True)
    self._thread.start()

  def _follow(self):
    while not self._stop.wait(0.25):
      self.poll()

  def poll(self):
    with self._lock:
      try:
        with open(self.path, "rb") as f:
          f.seek(self._offset)
          data = f.read()
      except OSError:
        return
      self._offset += len(data)
      now = time.time()
      *complete, self._partial = (self._partial + data).split(b"\n")
      self.lines += [(now, re.sub(r"\x1b\[[0-9;]*m", "", line.decode(errors="replace")))
                     for line in complete]

  def find(self, pattern, after=0.0):
    """[(time seen, match)] of the lines matching `pattern` seen at or after `after`."""
    self.poll()
    with self._lock:
      return [(t, m) for t, m in ((t, re.search(pattern, line)) for t, line in self.lines)
              if m and t >= after]

  def first(self, pattern, after=0.0):
    found = self.find(pattern, after)
    return found[0] if found else None

  def text(self):
    self.poll()
    with self._lock:
      return "\n".join(line for _, line in self.lines)

  def close(self):
    self._stop.set()
    self._thread.join()


class _Run:
  """The training command in the head's namespace, its log and the replay probe."""

  def __init__(self, hosts, tmp_path, name, root, extra=(), probe=False):
    self.hosts = hosts
    self.process = hosts.popen("head", TRAIN + ["--root_dir=%s" % root] + list(extra),
                               tmp_path / ("%s.log" % name), cwd=REPO)
    self.log = _Log(tmp_path / ("%s.log" % name))
    self.probe_path = tmp_path / ("%s_probe.jsonl" % name)
    self.probe = None
    if probe:     # from the start: it waits for the replay's port
      self.probe = hosts.popen("head", ["python", "-m", "tests.cluster_hosts", "probe",
                                        REPLAY], self.probe_path, cwd=REPO)

  def wait_for(self, pattern, timeout_s, what, count=1, after=0.0):
    """The `count`-th line matching `pattern` (time seen, match); fails early if the
    command exits."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
      found = self.log.find(pattern, after)
      if len(found) >= count:
        return found[count - 1]
      if self.process.poll() is not None:
        raise AssertionError("the command exited (%s) while waiting for %s:\n%s" % (
            self.process.returncode, what, self.log.text()[-5000:]))
      time.sleep(0.5)
    raise AssertionError("timed out waiting for %s:\n%s" % (what, self.log.text()[-5000:]))

  def placement(self):
    """{'replay': HOST:PORT, 'learner': IP, 'actors': {index: IP}} from the launcher's log."""
    # e.g. "replay 10.213.0.1:8000 (pid 5); learner on node ab12 (10.213.0.1, pid 6); actors
    # on 0: node cd34 (10.213.0.2, pid 7), 1: ..."
    _, m = self.wait_for(r"Ape-X on Ray: replay (\S+) \(pid \d+\); learner on node \S+ "
                         r"\(([^,)]+)[^)]*\); actors on (.*)\.$", 300, "the placement")
    actors = {int(i): ip for i, ip in re.findall(r"(\d+): node \S+ \(([^,)]+)", m.group(3))}
    return {"replay": m.group(1), "learner": m.group(2), "actors": actors}

  def records(self):
    """The probe's readings of the replay table's counters."""
    out = []
    for line in read_text(self.probe_path).splitlines():
      try:
        record = json.loads(line)
      except ValueError:
        continue
      if "inserts" in record:
        out.append(record)
    return out

  def finish(self, timeout_s):
    """Waits for the command (killed past `timeout_s`); returns its log's text."""
    try:
      self.process.wait(timeout=timeout_s)
    finally:
      self.stop()
    return self.log.text()

  def stop(self):
    for p in (self.process, self.probe):
      if p is not None and p.poll() is None:
        p.kill()
        p.wait()
    self.log.close()


def _report(what, **measured):
  """Prints what a test measured (with the machine's load), one JSON line."""
  measured["load_1min"] = os.getloadavg()[0]
  print("cluster measured %s: %s" % (what, json.dumps(measured, default=str)))


def _result(text):
  match = re.search(r"Result: (\{.*\})", text)
  assert match, text[-5000:]
  return ast.literal_eval(match.group(1).replace("nan", "None"))


def _role_processes(hosts):
  """(host, pid, title) of the run's Ray actor processes in any host."""
  found = []
  for name in hosts.hosts:
    for pid in hosts.pids(name):
      try:
        title = (psutil.Process(pid).cmdline() or [""])[0]
      except psutil.Error:
        continue
      if title.startswith(ROLES):
        found.append((name, pid, title))
  return found


def _assert_run_actors_gone(hosts):
  deadline = time.monotonic() + 30
  while _role_processes(hosts) and time.monotonic() < deadline:
    time.sleep(0.5)
  assert not _role_processes(hosts), _role_processes(hosts)


def _rate(records, key, start, end):
  """Mean increase of `key` per second between the first and last reading in [start, end]."""
  inside = [r for r in records if start <= r["t"] <= end]
  if len(inside) < 2:
    return None
  return (inside[-1][key] - inside[0][key]) / (inside[-1]["t"] - inside[0]["t"])


def _longest_pause(records, key, start, end):
  """The longest time between two readings that saw `key` grow, over the pauses that
  overlap [start, end] (0.5 s: no pause the probe could see)."""
  grew = [b["t"] for a, b in zip(records, records[1:]) if b[key] > a[key]]
  pauses = [b - a for a, b in zip(grew, grew[1:]) if b >= start and a <= end]
  return max(pauses, default=0.0)


def _at(records, key, t):
  """`key` in the last reading at or before `t`."""
  before = [r[key] for r in records if r["t"] <= t]
  return before[-1] if before else records[0][key]


def _first_after(records, key, t):
  """The time of the first reading after `t` with `key` above 0 (None if none)."""
  return next((r["t"] for r in records if r["t"] > t and r[key] > 0), None)


def _actor_items(text):
  """{actor index: items written} from the actors' last log lines."""
  return {int(i): int(n) for i, n in re.findall(
      r"INFO:absl:Actor (\d+) stopped \([^)]*\) after \d+ agent steps, (\d+) items", text)}


def _check_replay_connections(hosts, placement):
  """Every established TCP connection to the replay's port, in every namespace, goes to the
  replay node's own address (10.213.0.1), none to loopback: the learner's from the head,
  each actor's from its host's address. Returns {host: connections}."""
  port = ":%d" % cluster_hosts.REPLAY_PORT
  by_host = {name: hosts.connections(name) for name in hosts.hosts}
  loopback = [(n, c) for n, cs in by_host.items() for c in cs
              if c[0].startswith(("127.", "::1")) or c[1].startswith(("127.", "::1"))]
  assert not loopback, loopback
  clients = {n: [c for c in cs if c[1].endswith(port)] for n, cs in by_host.items()}
  for name, conns in clients.items():
    for local, peer, _, _ in conns:
      assert peer == REPLAY and local.startswith(hosts.hosts[name] + ":"), (name, conns)
  assert any("LearnerRol" in c[2] for c in clients["head"]), by_host
  for index, ip in placement["actors"].items():
    name = [n for n, a in hosts.hosts.items() if a == ip][0]
    assert any("ActorRole" in c[2] for c in clients[name]), (index, name, by_host)
  served = {c[1].rsplit(":", 1)[0] for c in by_host["head"] if c[0] == REPLAY}
  assert served == {hosts.hosts["head"]} | set(placement["actors"].values()), by_host
  return by_host


@pytest.mark.timeout(1500)
def test_actors_on_two_hosts_learn_cartpole_through_the_replay_address_across_a_partition(
    hosts, tmp_path):
  start = time.monotonic()
  run = _Run(hosts, tmp_path, "learn", os.path.join(hosts.dir, "learn"), probe=True)
  try:
    placement = run.placement()
    assert placement["replay"] == REPLAY and placement["learner"] == hosts.hosts["head"]
    assert sorted(placement["actors"].values()) == [hosts.hosts["actors"],
                                                    hosts.hosts["spare"]], placement
    run.wait_for(r"acting with the weights", 300, "both actors acting", count=2)
    time.sleep(5)
    connections = _check_replay_connections(hosts, placement)
    time.sleep(10)                      # the probe's baseline
    # The last actor: its environments play the low-epsilon episodes the run stops on.
    cut = max(placement["actors"])
    cut_host = [n for n, ip in hosts.hosts.items() if ip == placement["actors"][cut]][0]
    down = time.time()
    hosts.set_link(cut_host, False)
    try:
      time.sleep(PARTITION_S)
    finally:
      hosts.set_link(cut_host, True)
    up = time.time()
    resumed, how = run.wait_for(
        r"answers again after (\d+) s .*; actor %d goes on\.|Actor %d runs again on node" % (
            cut, cut), 300, "actor %d back after the partition" % cut, after=down)
    time.sleep(2)
    after = hosts.connections(cut_host)
    text = run.finish(1200)
  finally:
    run.stop()
  elapsed = time.monotonic() - start
  assert run.process.returncode == 0, text[-5000:]
  result = _result(text)
  assert result["reason"] == "target", result
  assert result["average_return_low_epsilon"] >= 475.0, result
  records = run.records()
  assert records and records[-1]["t"] > up, "the probe read nothing after the partition"
  items = _actor_items(text)
  lost = (sum(items.values()) - records[-1]["inserts"]) if len(items) == 2 else None
  stall = _longest_pause(records, "samples", down, resumed)
  learning = _rate(records, "samples", down + 1, up)
  assert learning, "the learner did not sample while host %s was cut off" % cut_host
  before = _rate(records, "inserts", down - 10, down)
  during = _rate(records, "inserts", down + 1, up)
  short = before * (resumed - down) - (_at(records, "inserts", resumed) -
                                       _at(records, "inserts", down))
  _report("learn and partition", seconds=elapsed, result=result, connections=connections,
          cut_actor=cut, cut_host=cut_host, partition_s=PARTITION_S,
          back_seen_after_link_up_s=resumed - up, back_seen_after_link_down_s=resumed - down,
          actor_waited_s=how.group(1) and int(how.group(1)), back_by=how.group(0),
          inserts_per_s_before=before, inserts_per_s_during=during,
          inserts_short_of_the_rate_before=short, learner_longest_pause_s=stall,
          learner_steps_per_s_before=_rate(records, "samples", down - 10, down) / 64.0,
          learner_steps_per_s_during=learning / 64.0,
          items_written_minus_inserted=lost,
          cut_host_connections_before=connections[cut_host],
          cut_host_connections_after=after)
  _assert_run_actors_gone(hosts)


@pytest.mark.timeout(900)
def test_killed_learner_then_the_rerun_resumes_from_its_checkpoint(hosts, tmp_path):
  root = os.path.join(hosts.dir, "resume")
  bindings = ["--gin_bindings=apex_learner.checkpoint_interval=3000"]
  run = _Run(hosts, tmp_path, "first", root, bindings)
  try:
    run.wait_for(r"Saved checkpoint \S*ckpt-\d+", 400, "a checkpoint")
    learners = [p for h, p, t in _role_processes(hosts) if t.startswith("ray::LearnerRole")]
    assert len(learners) == 1 and learners[0] in hosts.pids("head"), _role_processes(hosts)
    killed = time.time()
    psutil.Process(learners[0]).kill()
    text = run.finish(120)
  finally:
    run.stop()
  exited = time.time()
  assert run.process.returncode == 2, text[-5000:]
  errors = [line for line in text.splitlines() if line.startswith("error: ")]
  assert len(errors) == 1 and "The learner (Ray actor apex_learner" in errors[0], errors
  assert "run the same command again to resume" in errors[0]
  _assert_run_actors_gone(hosts)

  state = read_text(os.path.join(root, "train", "checkpoint"))
  checkpoint = int(re.search(r'model_checkpoint_path: "\S*ckpt-(\d+)"', state).group(1))
  rerun = _Run(hosts, tmp_path, "rerun", root, bindings + [
      "--gin_bindings=train_eval.total_steps=%d" % (checkpoint + 4000)], probe=True)
  try:
    resumed_at, resumed = rerun.wait_for(
        r"Resuming at agent step (\d+) \(learner step (\d+)", 400, "the resume")
    text = rerun.finish(400)
  finally:
    rerun.stop()
  assert rerun.process.returncode == 0, text[-5000:]
  records = rerun.records()
  inserting, sampling = (_first_after(records, key, killed) for key in ("inserts", "samples"))
  assert inserting and sampling, records[-5:]
  items = _actor_items(text)
  assert int(resumed.group(1)) >= checkpoint, (resumed.group(0), checkpoint)
  result = _result(text)
  assert result["reason"] == "done" and result["agent_steps"] >= checkpoint + 4000, result
  assert result["updates"] > int(resumed.group(2)), result
  _report("learner kill", command_exit_after_s=exited - killed,
          resumed_at_agent_step=int(resumed.group(1)), checkpoint=checkpoint,
          resume_line_seen_after_s=resumed_at - killed, first_insert_after_s=inserting - killed,
          first_sample_after_s=sampling - killed, result=result,
          items_written_minus_inserted=(sum(items.values()) - records[-1]["inserts"]
                                        if len(items) == 2 else None))
  _assert_run_actors_gone(hosts)


@pytest.mark.timeout(900)
def test_lost_actor_host_its_actor_is_restarted_on_the_spare_host(hosts, tmp_path):
  """Last in this file: the `actors` host stays down."""
  # No early stop on learning CartPole: the run goes on to its 150,000 agent steps.
  run = _Run(hosts, tmp_path, "loss", os.path.join(hosts.dir, "loss"),
             ["--gin_bindings=train_eval.total_steps=150000",
              "--gin_bindings=apex_learner.stop_at_average_return=None"])
  try:
    placement = run.placement()
    lost = [i for i, ip in placement["actors"].items() if ip == hosts.hosts["actors"]]
    assert len(lost) == 1, placement
    run.wait_for(r"acting with the weights", 300, "both actors acting", count=2)
    time.sleep(5)
    killed = time.time()
    pids = hosts.kill("actors")
    died_at, _ = run.wait_for(r"Actor %d died \(.*\); running it again" % lost[0], 300,
                              "actor %d's death noticed" % lost[0], after=killed)
    again_at, again = run.wait_for(r"Actor %d runs again on node (\S+) \(pid (\d+)\)" % lost[0],
                                   300, "actor %d restarted" % lost[0], after=killed)
    pid = int(again.group(2))
    deadline = time.monotonic() + 300
    while not any(c[3] == pid and c[1] == REPLAY for c in hosts.connections("spare")):
      assert time.monotonic() < deadline and run.process.poll() is None, (
          "the restarted actor (pid %d) never connected from `spare`: %s\n%s" % (
              pid, hosts.connections("spare"), run.log.text()[-5000:]))
      time.sleep(0.25)
    connected_at = time.time()
    acting_at, _ = run.wait_for(r"\(ActorRole pid=%d, ip=%s\).*acting with the weights" % (
        pid, re.escape(hosts.hosts["spare"])), 300, "the restarted actor acting", after=killed)
    text = run.finish(600)
  finally:
    run.stop()
  assert run.process.returncode == 0, text[-5000:]
  result = _result(text)
  assert result["reason"] == "done" and result["agent_steps"] >= 150000, result
  assert result["actor_restarts"] >= 1, result
  assert not hosts.pids("actors")
  _report("node loss", processes_killed=len(pids), lost_actor=lost[0],
          death_noticed_after_s=died_at - killed, restarted_on_spare_after_s=again_at - killed,
          connected_from_spare_after_s=connected_at - killed,
          acting_line_seen_after_s=acting_at - killed, result=result)
  _assert_run_actors_gone(hosts)
