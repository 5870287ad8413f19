"""Hosts of a real multi-host cluster on this machine, for tests/test_apex_cluster.py.

Each host is a Linux network namespace with an address of its own (10.213.0.1 the head,
.2, .3 the others), joined to a bridge in the head's namespace by a veth pair (one end in
each namespace: the machine's own namespace, its interfaces and routes are not touched;
no namespace has a route beyond 10.213.0.0/24, so nothing leaves them), loopback up in
each. Every host has a home and a Ray temp dir of its own (HOME, RAY_TMPDIR), as separate
machines would, and runs a Ray node started with the commands of docs/apex.md ("Run on a
cluster"): `ray get-auth-token --generate` on the head, the token copied to the others,
`RAY_AUTH_MODE=token`, `ray start --head --port=6379` and `ray start --address=H:6379
--resources='{"apex_actor": 8}'` (plus each node's `--node-ip-address` and `--temp-dir`).
Namespaces are named pxc<pid>-<host> (the creating process's pid: `sweep` removes those of
crashed runs); `close` kills every process in them (by pid, never `ray stop`, which would
stop every Ray of the machine), deletes them and their directory.

`python -m tests.cluster_hosts probe HOST:PORT`, run inside the head's namespace, prints
one JSON line every 0.5 s with the replay table's counters (inserts, samples, size), or
the error of a read that failed.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

PREFIX = "pxc"
SUBNET = "10.213.0."
RAY_PORT = 6379
REPLAY_PORT = 8000        # docs/apex.md's run_ray.replay_port: each namespace has its own ports
BIN = os.path.dirname(sys.executable)   # the venv's bin: `ray` and `python`


def unavailable():
  """Why namespaces cannot be made here (None if they can)."""
  if os.geteuid() != 0:
    return "needs root (network namespaces and veth pairs); CI runs as root"
  if shutil.which("ip") is None:
    return "needs `ip` (iproute2) for `ip netns`"
  if not os.path.exists(os.path.join(BIN, "ray")):
    return "needs Ray's `ray` command in %s: pip install -e '.[ray]'" % BIN
  probe = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
  if probe.returncode != 0:
    return "`ip netns` does not work here: %s" % probe.stderr.strip()
  return None


def _ip(*args, check=True):
  return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def _netns_pids(ns):
  out = _ip("netns", "pids", ns, check=False).stdout.split()
  return [int(p) for p in out if p.isdigit()]


def _alive(pid):
  """True unless `pid` is gone or a zombie."""
  try:
    with open("/proc/%d/stat" % pid) as f:
      return f.read().rsplit(")", 1)[1].split()[0] != "Z"
  except (OSError, IndexError):
    return False


def kill_pids(pids, timeout_s=20.0):
  """SIGKILLs `pids` and waits until each is gone; returns those still alive."""
  for pid in pids:
    try:
      os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
      pass
  deadline = time.monotonic() + timeout_s
  alive = [p for p in pids if _alive(p)]
  while alive and time.monotonic() < deadline:
    time.sleep(0.1)
    alive = [p for p in alive if _alive(p)]
  return alive


def _delete_namespace(ns):
  """Kills the processes of namespace `ns`, deletes it; returns the pids that survived."""
  left = kill_pids(_netns_pids(ns))
  _ip("netns", "delete", ns, check=False)
  return left


def sweep():
  """Deletes the namespaces (and directories) of earlier runs whose process is gone."""
  listed = _ip("netns", "list", check=False).stdout.split("\n")
  for line in listed:
    match = re.match(r"(%s(\d+)-\w+)" % PREFIX, line)
    if match and not _alive(int(match.group(2))):
      _delete_namespace(match.group(1))
  for name in os.listdir(tempfile.gettempdir()):
    match = re.match(r"%s(\d+)-" % PREFIX, name)
    if match and not _alive(int(match.group(1))):
      shutil.rmtree(os.path.join(tempfile.gettempdir(), name), ignore_errors=True)


class Hosts:
  """The namespaces of one test run, their Ray nodes and their links."""

  def __init__(self):
    self.tag = "%s%d" % (PREFIX, os.getpid())
    # Short: Ray's Unix sockets live under each host's temp dir (108-byte path limit).
    self.dir = tempfile.mkdtemp(prefix=self.tag + "-")
    self.hosts = {}     # name -> address
    self.head = None

  # --- the network ----------------------------------------------------------------------
  def namespace(self, name):
    return "%s-%s" % (self.tag, name)

  def add(self, name):
    """A new host `name`: its namespace, address and link to the bridge; returns the
    address. The first host is the head: the bridge is in its namespace."""
    ns, address = self.namespace(name), SUBNET + str(len(self.hosts) + 1)
    _ip("netns", "add", ns)
    self.hosts[name] = address
    _ip("-n", ns, "link", "set", "lo", "up")
    if self.head is None:
      self.head = name
      _ip("-n", ns, "link", "add", "br0", "type", "bridge")
      _ip("-n", ns, "addr", "add", address + "/24", "dev", "br0")
      _ip("-n", ns, "link", "set", "br0", "up")
    else:
      head_ns, port = self.namespace(self.head), "to-" + name
      _ip("-n", head_ns, "link", "add", port, "type", "veth", "peer", "name", "veth0",
          "netns", ns)
      _ip("-n", head_ns, "link", "set", port, "master", "br0")
      _ip("-n", head_ns, "link", "set", port, "up")
      _ip("-n", ns, "addr", "add", address + "/24", "dev", "veth0")
      _ip("-n", ns, "link", "set", "veth0", "up")
    home = os.path.join(self.dir, name)
    os.makedirs(os.path.join(home, ".ray"))
    return address

  def set_link(self, name, up):
    """Brings host `name`'s link (its end of the veth pair) down or up."""
    _ip("-n", self.namespace(name), "link", "set", "veth0", "up" if up else "down")

  def pids(self, name):
    """The processes that run in host `name`'s namespace."""
    return _netns_pids(self.namespace(name))

  def connections(self, name, port=REPLAY_PORT):
    """[(local 'IP:PORT', peer 'IP:PORT', process name, pid)] of the established TCP
    connections to or from `port` in host `name`'s namespace (IPv4-mapped IPv6 as IPv4)."""
    out = self.run(name, ["ss", "-tnpH", "state", "established"]).stdout
    found = []
    for line in out.splitlines():
      fields = line.split()
      if len(fields) < 4:
        continue
      local, peer = (re.sub(r"^\[(?:::ffff:)?(.*)\]", r"\1", f) for f in fields[2:4])
      if local.endswith(":%d" % port) or peer.endswith(":%d" % port):
        process = re.search(r'\(\("([^"]*)",pid=(\d+)', line)
        found.append((local, peer) + ((process.group(1), int(process.group(2))) if process
                                      else ("", None)))
    return found

  # --- processes in a host ----------------------------------------------------------------
  def env(self, name, **extra):
    """The environment of host `name`'s processes: its own home (~/.ray/auth_token) and
    Ray temp dir, token authentication, the venv's commands first on PATH."""
    home = os.path.join(self.dir, name)
    env = dict(os.environ, HOME=home, RAY_TMPDIR=home, RAY_AUTH_MODE="token",
               RAY_USAGE_STATS_ENABLED="0", RAY_DEDUP_LOGS="0", TF_CPP_MIN_LOG_LEVEL="2",
               PYTHONUNBUFFERED="1", PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    for key in ("RAY_ADDRESS", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
      env.pop(key, None)
    env.update(extra)
    return env

  def command(self, name, argv):
    return ["ip", "netns", "exec", self.namespace(name), *argv]

  def run(self, name, argv, timeout=120, check=True, **kwargs):
    proc = subprocess.run(self.command(name, argv), env=self.env(name), capture_output=True,
                          text=True, timeout=timeout, **kwargs)
    if check and proc.returncode != 0:
      raise AssertionError("%s on %s failed (%d):\n%s%s" % (
          " ".join(argv), name, proc.returncode, proc.stdout[-2000:], proc.stderr[-3000:]))
    return proc

  def popen(self, name, argv, log_path, cwd=None):
    with open(log_path, "ab") as log:
      return subprocess.Popen(self.command(name, argv), env=self.env(name), cwd=cwd,
                              stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

  # --- Ray nodes -------------------------------------------------------------------------
  def _node_flags(self, name):
    return ["--node-ip-address=%s" % self.hosts[name],
            "--temp-dir=%s" % os.path.join(self.dir, name, "ray")]

  def start_head(self):
    """The token (on the head, copied to every host's ~/.ray) and the head node."""
    self.run(self.head, ["ray", "get-auth-token", "--generate"])
    token = os.path.join(self.dir, self.head, ".ray", "auth_token")
    for name in self.hosts:
      if name != self.head:
        shutil.copy(token, os.path.join(self.dir, name, ".ray", "auth_token"))
    self._ray_start(self.head, ["--head", "--port=%d" % RAY_PORT])

  def join(self, name, resources='{"apex_actor": 8}'):
    """Host `name` joins the head's cluster as a Ray node offering `resources`."""
    self._ray_start(name, ["--address=%s:%d" % (self.hosts[self.head], RAY_PORT),
                           "--resources=%s" % resources])

  def _ray_start(self, name, args, attempts=3):
    """`ray start ARGS` on host `name`. `ray start` gives up when its raylet has not
    registered within 30 s (a fixed limit, reached on a machine loaded by other test
    runs): then every process it left on the host is killed and it is tried again."""
    argv = ["ray", "start"] + args + self._node_flags(name)
    for attempt in range(1, attempts + 1):
      proc = self.run(name, argv, timeout=240, check=False)
      if proc.returncode == 0:
        return
      kill_pids(self.pids(name))
      shutil.rmtree(os.path.join(self.dir, name, "ray"), ignore_errors=True)
      print("%s on %s failed (attempt %d of %d): %s" % (
          " ".join(argv), name, attempt, attempts, proc.stderr.strip().splitlines()[-1:]))
    raise AssertionError("%s on %s failed %d times:\n%s%s" % (
        " ".join(argv), name, attempts, proc.stdout[-2000:], proc.stderr[-3000:]))

  def kill(self, name):
    """Kills every process of host `name` (its Ray node: raylet, workers, agents) at once;
    returns the pids killed."""
    pids = self.pids(name)
    left = kill_pids(pids)
    assert not left, "processes of %s still alive: %s" % (name, left)
    return pids

  def close(self):
    """Kills every process of every host, deletes the namespaces and the directory;
    returns what is left: [pid or namespace]."""
    left = []
    for name in reversed(list(self.hosts)):
      left += _delete_namespace(self.namespace(name))
    listed = {line.split()[0] for line in _ip("netns", "list", check=False).stdout.splitlines()
              if line.strip()}
    left += sorted(listed & {self.namespace(n) for n in self.hosts})
    shutil.rmtree(self.dir, ignore_errors=True)
    if os.path.exists(self.dir):
      left.append(self.dir)
    return left


def probe(address, interval_s=0.5):
  """Prints the replay table's counters every `interval_s` until killed. The Reverb client
  is made once the port accepts connections: gRPC's reconnect backoff would otherwise
  delay the first reading of a server that comes up late."""
  import reverb  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.apex import replay_layout  # pylint: disable=import-outside-toplevel
  host, port = address.rsplit(":", 1)
  client = None
  while True:
    now = time.time()
    try:
      if client is None:
        socket.create_connection((host, int(port)), timeout=2).close()
        client = reverb.Client(address)
      table = client.server_info(timeout=2)[replay_layout.REPLAY_TABLE]
      record = {"t": now, "inserts": int(table.rate_limiter_info.insert_stats.completed),
                "samples": int(table.rate_limiter_info.sample_stats.completed),
                "size": int(table.current_size)}
    except Exception as e:  # pylint: disable=broad-except  (gRPC errors vary)
      record = {"t": now, "error": str(e).splitlines()[0][:200] if str(e) else repr(e)}
    print(json.dumps(record), flush=True)
    time.sleep(max(0.0, interval_s - (time.time() - now)))


if __name__ == "__main__":
  if sys.argv[1:2] == ["probe"] and len(sys.argv) == 3:
    probe(sys.argv[2])
  else:
    sys.exit("usage: python -m tests.cluster_hosts probe HOST:PORT")
