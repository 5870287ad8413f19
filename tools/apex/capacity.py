"""What each part of Ape-X holds per CPU core: `python -m tools.apex.capacity`.

Measured with the real layouts (`replay_layout.ReplayLayout`: Atari's single-frame n-step
items, MuJoCo's vector items), the real server (`replay.start_server`, its own process)
and the real client paths (`tools.apex.synthetic`: synthetic actors through
`TransitionWriter`, the learner's dataset and `mutate_priorities` at batch 512):
  replay inserts/s and per server CPU second, for each layout and capacity (Atari at the
    paper's 2M, which a short run only starts to fill, and at a small one, filled and
    evicting: the rates should not depend on capacity);
  replay samples/s with priority updates at batch 512, and per server CPU second;
  bytes per stored transition: the server's RSS growth over the items inserted;
  weights: bytes per pull of the Atari network, server and client CPU per pull, and what a
    pull every 400 frames costs per actor;
  the learner's compiled step at batch 512 (Atari network) on the CPU, batches/s.
The table goes to stdout, --out_dir gets capacity.md and capacity.json (command, commit,
load average, date). The machine's other load is recorded: compare ratios, not absolutes.
"""
import datetime
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from absl import app
from absl import flags
import gin
import reverb

from paac_tf import errors
from paac_tf.networks import dueling_q
from paac_tf.runners.apex import replay_layout
from paac_tf.runners.apex import weights
from tools.apex import measurements as apex_measurements
from tools.apex import synthetic as apex_synthetic

PAPER = {"actors": 360, "frames_per_second": 50_000, "capacity": 2_000_000,
         "batch_size": 512, "weights_period_frames": 400, "frameskip": 4,
         "learner_batches_per_second": 19}   # Horgan et al. 2018: ~19 batches/s of 512


# --- formulas ---------------------------------------------------------------------------
def rate(count, seconds):
  """Events per second."""
  return float(count) / seconds if seconds > 0 else 0.0


def per_core(count, cpu_seconds):
  """Events per CPU second: what one fully used core would do."""
  return float(count) / cpu_seconds if cpu_seconds > 0 else float("inf")


def bytes_per_item(rss_before, rss_after, items_before, items_after):
  """Resident-memory growth per item stored (None if no item was added)."""
  items = items_after - items_before
  return (rss_after - rss_before) / items if items > 0 else None


def pulls_per_second(frames_per_second, period_frames):
  """Weight pulls per second of an actor that pulls every `period_frames` frames."""
  return float(frames_per_second) / period_frames


def cores_needed(demand_per_second, per_core_rate):
  """Cores that a load of `demand_per_second` takes at `per_core_rate` per core."""
  return float(demand_per_second) / per_core_rate


def paper_demand(actors=PAPER["actors"], frames_per_second=PAPER["frames_per_second"],
                 frameskip=PAPER["frameskip"], batch_size=PAPER["batch_size"],
                 learner_batches_per_second=PAPER["learner_batches_per_second"],
                 period_frames=PAPER["weights_period_frames"]):
  """The paper's load on the replay: inserts/s (one transition per agent step), samples/s
  (and priority updates/s) of the learner, weight pulls/s of all actors."""
  return {"inserts_per_second": frames_per_second / frameskip,
          "samples_per_second": batch_size * learner_batches_per_second,
          "pulls_per_second": actors * pulls_per_second(frames_per_second / actors,
                                                         period_frames)}


# --- measurements -----------------------------------------------------------------------
def free_port():
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
    sock.bind(("127.0.0.1", 0))
    return sock.getsockname()[1]


class Server:
  """`tools.apex.synthetic serve` in a process of its own, on a free loopback port."""

  def __init__(self, layout_name, capacity, log_path):
    self.port = free_port()
    self.address = "127.0.0.1:%d" % self.port
    self.proc = subprocess.Popen(
        [sys.executable, "-m", "tools.apex.synthetic", "serve", "port=%d" % self.port,
         "layout_name=%s" % layout_name, "capacity=%d" % capacity],
        stdout=open(log_path, "wb"), stderr=subprocess.STDOUT,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    self.client = reverb.Client(self.address)
    deadline = time.monotonic() + 120
    while True:
      try:
        self.client.server_info(timeout=2)
        return
      except Exception:  # pylint: disable=broad-except  (not up yet)
        if self.proc.poll() is not None or time.monotonic() > deadline:
          self.close()
          raise RuntimeError("The replay server did not start (log: %s)" % log_path) from None
        time.sleep(0.3)

  def counters(self):
    """(inserts, samples, size, server CPU s, server RSS bytes)."""
    table = self.client.server_info(timeout=30)[replay_layout.REPLAY_TABLE]
    return (table.rate_limiter_info.insert_stats.completed,
            table.rate_limiter_info.sample_stats.completed, table.current_size,
            apex_measurements.cpu_seconds([self.proc.pid]),
            apex_measurements.rss(self.proc.pid))

  def close(self):
    self.proc.kill()
    self.proc.wait(timeout=60)


def replay_rates(layout_name, capacity, insert_seconds, sample_seconds, work_dir,
                 writers=2):
  """Inserts (unpaced synthetic actors) then samples (the sampler) on a fresh server."""
  server = Server(layout_name, capacity, os.path.join(work_dir, "server.log"))
  try:
    before = server.counters()
    actors = apex_synthetic.run_actors(server.address, layout_name, writers, 0.0,
                                       insert_seconds, pull_weights=False)
    mid = server.counters()
    sampler = apex_synthetic.run_sampler(server.address, layout_name, sample_seconds)
    after = server.counters()
  finally:
    server.close()
  inserts, server_cpu = mid[0] - before[0], mid[3] - before[3]
  samples, sample_cpu = after[1] - mid[1], after[3] - mid[3]
  evicted = mid[0] > capacity
  return {
      "layout": layout_name, "capacity": int(capacity), "size": int(mid[2]),
      "evicting": bool(evicted), "inserts": int(inserts),
      "inserts_per_second": rate(inserts, actors["seconds"]),
      "inserts_per_server_cpu_second": per_core(inserts, server_cpu),
      "inserts_per_client_cpu_second": per_core(inserts, actors["cpu_seconds"]),
      "samples_per_second": rate(samples, sampler["seconds"]),
      "samples_per_server_cpu_second": per_core(samples, sample_cpu),
      "samples_per_sampler_cpu_second": per_core(samples, sampler["cpu_seconds"]),
      "priority_update_s": sampler["priority_update_s"],
      # Memory: only while nothing is evicted does the growth measure stored items.
      "rss_bytes_per_item": (None if evicted
                             else bytes_per_item(before[4], mid[4], before[2], mid[2])),
      "server_rss_bytes": int(after[4])}


def weights_costs(pulls, work_dir):
  """Bytes per pull of the Atari network and CPU per pull (server and puller)."""
  network = apex_synthetic.atari_network()
  server = Server("atari", 1000, os.path.join(work_dir, "weights_server.log"))
  try:
    weights.publish(server.client, network, 0)
    target = apex_synthetic._Variables(  # pylint: disable=protected-access
        [v for v in apex_synthetic.atari_network().variables])
    subscriber = weights.WeightsSubscriber(reverb.Client(server.address), target)
    subscriber.fetch()
    cpu0, own0, t0 = server.counters()[3], apex_measurements.cpu_seconds([os.getpid()]), \
        time.monotonic()
    for _ in range(int(pulls)):
      subscriber.fetch()
    dt = time.monotonic() - t0
    server_cpu = server.counters()[3] - cpu0
    own_cpu = apex_measurements.cpu_seconds([os.getpid()]) - own0
  finally:
    server.close()
  size = sum(int(v.numpy().nbytes) for v in network.variables)
  per_actor_pulls = pulls_per_second(PAPER["frames_per_second"] / PAPER["actors"],
                                     PAPER["weights_period_frames"])
  return {"weights_bytes": size, "pulls": int(pulls), "pulls_per_second": rate(pulls, dt),
          "server_cpu_s_per_pull": server_cpu / pulls, "puller_cpu_s_per_pull": own_cpu / pulls,
          "paper_pulls_per_second_per_actor": per_actor_pulls,
          "paper_bytes_per_second_per_actor": per_actor_pulls * size}


def learner_rate(seconds, work_dir):
  """The learner's compiled step at batch 512, Atari network of apex_atari.gin, on the
  CPU with its TF threads (apex_measurements.learner_step_rates)."""
  apex_measurements.parse_gin(["apex_atari.gin"], [])
  config_file = os.path.join(work_dir, "config.gin")
  with open(config_file, "w") as f:
    f.write(gin.config_str())
  settings = dueling_q.apex_network()
  intra = apex_measurements.learner_setting("tf_threads")
  rows = apex_measurements.learner_step_rates(
      config_file, work_dir, [PAPER["batch_size"]], [settings["network"]], ["float32"],
      intra, seconds=seconds, rounds=1)
  return rows[0]


def measure(quick=False, atari_capacities=(2_000_000, 10_000), mujoco_capacity=1_000_000,
            insert_seconds=20.0, sample_seconds=15.0, pulls=20, learner_seconds=10.0):
  """All the measurements; returns the results dict."""
  if quick:
    atari_capacities, mujoco_capacity = (2_000, 500), 1_000
    insert_seconds, sample_seconds, pulls, learner_seconds = 2.0, 2.0, 2, 0.0
  work_dir = tempfile.mkdtemp(prefix="apex_capacity_")
  try:
    load = [os.getloadavg()]
    rows = [replay_rates("atari", c, insert_seconds, sample_seconds, work_dir)
            for c in atari_capacities]
    rows.append(replay_rates("mujoco", mujoco_capacity, insert_seconds, sample_seconds,
                             work_dir))
    results = {"replay": rows, "weights": weights_costs(pulls, work_dir)}
    if learner_seconds > 0:
      results["learner"] = learner_rate(learner_seconds, work_dir)
    load.append(os.getloadavg())
  finally:
    shutil.rmtree(work_dir, ignore_errors=True)
  results.update(provenance(load))
  return results


def provenance(load):
  commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=False).stdout.strip()
  return {"command": " ".join(["python -m tools.apex.capacity"] + sys.argv[1:]),
          "commit": commit, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
              timespec="seconds"),
          "cpu_count": os.cpu_count(), "loadavg": [list(x) for x in load],
          "machine": "2 cores shared with a training run at higher priority (run niced)"}


_n = apex_measurements.grouped   # a table cell


def table(results):
  """The results as markdown."""
  lines = ["| layout | capacity | size reached | evicting | inserts/s | inserts/server CPU s "
           "| inserts/writer CPU s | samples/s (batch 512 + priority updates) "
           "| samples/server CPU s | samples/sampler CPU s | RSS bytes/item |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
  for r in results["replay"]:
    lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        r["layout"], _n(r["capacity"]), _n(r["size"]), "yes" if r["evicting"] else "no",
        _n(r["inserts_per_second"]), _n(r["inserts_per_server_cpu_second"]),
        _n(r["inserts_per_client_cpu_second"]), _n(r["samples_per_second"]),
        _n(r["samples_per_server_cpu_second"]), _n(r["samples_per_sampler_cpu_second"]),
        _n(r["rss_bytes_per_item"])))
  w = results["weights"]
  lines += ["", "| weights (Atari network) | value |", "|---|---|",
            "| bytes per pull | %s |" % _n(w["weights_bytes"]),
            "| pulls/s (one puller) | %s |" % _n(w["pulls_per_second"], 1),
            "| server CPU ms per pull | %s |" % _n(1000 * w["server_cpu_s_per_pull"], 1),
            "| puller CPU ms per pull | %s |" % _n(1000 * w["puller_cpu_s_per_pull"], 1),
            "| paper: pulls/s per actor (every 400 frames) | %s |"
            % _n(w["paper_pulls_per_second_per_actor"], 3),
            "| paper: bytes/s per actor | %s |" % _n(w["paper_bytes_per_second_per_actor"])]
  if "learner" in results:
    r = results["learner"]
    lines += ["", "| learner step (batch 512, %s, %s, %s TF threads) | value |" % (
        r["network"], r["precision"], r["intra_op_threads"]), "|---|---|",
              "| batches/s | %s |" % _n(r["batches_per_second"], 2),
              "| batches per CPU second | %s |" % _n(r["batches_per_second"]
                                                       / r["cpu_cores_used"], 2)]
  lines += ["", "Measured %s at commit %s on %s; load average %s -> %s." % (
      results["date"], results["commit"], results["machine"],
      "/".join("%.2f" % x for x in results["loadavg"][0]),
      "/".join("%.2f" % x for x in results["loadavg"][-1]))]
  return "\n".join(lines) + "\n"


FLAGS = flags.FLAGS


def _define_flags():
  flags.DEFINE_bool("quick", False, "Tiny capacities and a few seconds each (a smoke run).")
  flags.DEFINE_string("out_dir", None, "Write capacity.md and capacity.json here.")


def main(argv):
  errors.refuse_arguments(argv)
  results = measure(quick=FLAGS.quick)
  text = table(results)
  print(text)
  if FLAGS.out_dir:
    os.makedirs(FLAGS.out_dir, exist_ok=True)
    with open(os.path.join(FLAGS.out_dir, "capacity.md"), "w") as f:
      f.write("# Ape-X capacity per part\n\n`%s`\n\n" % results["command"] + text)
    with open(os.path.join(FLAGS.out_dir, "capacity.json"), "w") as f:
      json.dump(results, f, indent=2)


def cli():
  _define_flags()
  app.run(main, flags_parser=errors.parse_flags)


if __name__ == "__main__":
  cli()
