"""Synthetic Ape-X actors by the hundred on hosts of network namespaces:
`python -m tools.apex.scale --actors=8,32,128,360` (root: `ip netns`).

The hosts are those of the cluster tests (`tests/cluster_hosts.py`: one namespace per
host, 10.213.0.1 the head, joined by veth pairs to a bridge; nothing routes outside
10.213.0.0/24). For each number of actors N:
  head     the replay (`tools.apex.synthetic serve`, the Ape-X tables, no rate limiter) on
           10.213.0.1:8000, the learner-like sampler (batch 512, priority updates, weights
           published every 10 batches) and a probe (`cluster_hosts probe`: the replay's
           counters every 0.5 s);
  a1, a2   the N synthetic actors (`tools.apex.synthetic actors`), threads of
           ceil(N / threads_per_process) processes (at least one per host), each actor
           paced at `rate` agent steps/s (the paper: 50,000 frames/s / 360 actors / 4 =
           34.7) and pulling the weights every 100 agent steps (400 frames).
All processes get ready (TensorFlow loaded, recording made, weights fetched), then start
their timed window of `seconds` together (a go file). With `--launcher=ray` the actors
are Ray actors of a Ray cluster on the hosts and the replay has a host of its own
(`tools/apex/scale_ray.py`); `--replay_loss_s` then loses that host mid-window and
restores it from its checkpoint. Results per N: offered and achieved
inserts/s, samples/s, the actors' write latency, the sampler's wait for a batch (the
learner's stall), CPU used by each part. Every process, namespace and directory is removed
afterwards, on failure too.
"""
import importlib.util
import json
import math
import os
import shutil
import sys
import tempfile
import time

from absl import app
from absl import flags

from paac_tf import errors
from tools.apex import measurements as apex_measurements
from tools.apex import scale_ray as apex_scale_ray
from tools import REPO

PAPER_RATE = 50_000 / 360 / 4   # agent steps/s of one Ape-X actor


def _cluster_hosts():
  """tests/cluster_hosts.py (the tests' hosts; tests/ is not a package)."""
  spec = importlib.util.spec_from_file_location(
      "cluster_hosts", os.path.join(REPO, "tests", "cluster_hosts.py"))
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def split_actors(count, threads_per_process, hosts=2):
  """Actors per process: ceil(count / threads_per_process) processes, at least one per
  host (when there are that many actors), as even as possible."""
  processes = max(min(hosts, count), math.ceil(count / threads_per_process))
  return [count // processes + (1 if i < count % processes else 0) for i in range(processes)]


def window_rate(records, start, end, key):
  """Rate of counter `key` between times `start` and `end`, from the probe's records
  (the first and last readings inside the window)."""
  inside = [r for r in records if key in r and start <= r["t"] <= end]
  if len(inside) < 2 or inside[-1]["t"] <= inside[0]["t"]:
    return None
  return (inside[-1][key] - inside[0][key]) / (inside[-1]["t"] - inside[0]["t"])


def _cpu(pids):
  return apex_measurements.cpu_seconds(pids)


def one_run(hosts, ch, count, rate, seconds, threads_per_process, layout_name, work_dir,
            setup_timeout_s=600.0, partition_s=0.0, launcher="plain", replay_loss_s=0.0,
            checkpoint_interval_s=10.0, cut_after_checkpoint_s=0.0):
  """N synthetic actors, the sampler and the replay for one window; returns the results.
  With `partition_s`, host a2 (half the actors' processes) is cut off for that long from
  a third of the window on (its link down). With `replay_loss_s` (Ray launcher), the
  replay host is lost 40% into the window and restored that long after; with
  `cut_after_checkpoint_s` too, it is lost that long after the next checkpoint the replay
  completes from then on (so that the lost server holds items its checkpoint does not)."""
  run_dir = os.path.join(work_dir, "n%d" % count)
  os.makedirs(run_dir)
  replay_host = "replay" if launcher == "ray" else "head"
  address = "%s:%d" % (hosts.hosts[replay_host], ch.REPLAY_PORT)
  go = os.path.join(run_dir, "go")
  python = [os.path.join(ch.BIN, "python"), "-m"]
  serve = python + ["tools.apex.synthetic", "serve", "port=%d" % ch.REPLAY_PORT,
                    "layout_name=%s" % layout_name, "capacity=2000000"]
  if replay_loss_s > 0:
    serve += ["checkpoint_dir=%s" % os.path.join(hosts.dir, "replay", "checkpoint"),
              "checkpoint_interval_s=%g" % checkpoint_interval_s, "audit=1"]
  procs = {}
  try:
    procs["replay"] = hosts.popen(replay_host, serve, os.path.join(run_dir, "replay.log"),
                                  cwd=REPO)
    probe_log = os.path.join(run_dir, "probe.log")
    procs["probe"] = hosts.popen("head", python + ["tests.cluster_hosts", "probe", address],
                                 probe_log, cwd=REPO)
    if replay_loss_s > 0:    # the replay's counters on its own host, at the cut
      procs["replay_probe"] = hosts.popen(replay_host, python + [
          "tests.cluster_hosts", "probe", "127.0.0.1:%d" % ch.REPLAY_PORT],
          os.path.join(run_dir, "replay_probe.log"), cwd=REPO)
    procs["sampler"] = hosts.popen("head", python + [
        "tools.apex.synthetic", "sampler", "address=%s" % address,
        "layout_name=%s" % layout_name, "seconds=%g" % seconds,
        "ready_file=%s" % os.path.join(run_dir, "sampler.ready"), "go_file=%s" % go,
        "json=%s" % os.path.join(run_dir, "sampler.json")],
        os.path.join(run_dir, "sampler.log"), cwd=REPO)
    split = split_actors(count, threads_per_process)

    def actor_args(i, n):
      # With a replay loss, every item carries an id (tools/apex/audit.py).
      audit = {"first_index": sum(split[:i]), "audit": 1} if replay_loss_s > 0 else {}
      return dict({"address": address, "layout_name": layout_name, "count": n, "rate": rate,
                   "seconds": seconds, "seed": i,
                   "ready_file": os.path.join(run_dir, "actors%d.ready" % i), "go_file": go},
                  **audit)
    if launcher == "ray":
      procs["driver"] = apex_scale_ray.start_actors(hosts, ch, run_dir, split, actor_args)
    for i, n in enumerate(split if launcher == "plain" else []):
      procs["actors%d" % i] = hosts.popen("a%d" % (1 + i % 2), python + [
          "tools.apex.synthetic", "actors"] + ["%s=%s" % a for a in actor_args(i, n).items()]
          + ["json=%s" % os.path.join(run_dir, "actors%d.json" % i)],
          os.path.join(run_dir, "actors%d.log" % i), cwd=REPO)
    ready = ["sampler.ready"] + ["actors%d.ready" % i for i in range(len(split))]
    deadline = time.monotonic() + setup_timeout_s
    while not all(os.path.exists(os.path.join(run_dir, r)) for r in ready):
      dead = [k for k, p in procs.items() if p.poll() is not None]
      if dead or time.monotonic() > deadline:
        raise RuntimeError("Setup of %d actors failed (%s): see %s" % (
            count, dead or "timeout", run_dir))
      time.sleep(0.5)
    pids = {k: p.pid for k, p in procs.items()}
    cpu0 = {k: _cpu([pid]) for k, pid in pids.items()}
    start = time.time()
    with open(go, "w") as f:
      f.write("go")
    partition = loss = None
    if replay_loss_s > 0:
      time.sleep(0.4 * seconds)
      if cut_after_checkpoint_s > 0:
        done = apex_scale_ray.wait_for_checkpoint(os.path.join(run_dir, "replay.log"),
                                                  3 * checkpoint_interval_s + 120)
        time.sleep(cut_after_checkpoint_s)
      loss = apex_scale_ray.lose_replay(hosts, os.path.join(run_dir, "replay_probe.log"))
      if cut_after_checkpoint_s > 0:
        loss["after_checkpoint_done"] = loss["cut"] - done
      time.sleep(max(0.0, loss["cut"] + replay_loss_s - time.time()))
      restored_at, procs["replay_restored"] = apex_scale_ray.restore_replay(
          hosts, serve, os.path.join(run_dir, "replay_restored.log"))
    if partition_s > 0:
      time.sleep(seconds / 3.0)
      hosts.set_link("a2", False)
      partition = [time.time()]
      time.sleep(partition_s)
      hosts.set_link("a2", True)
      partition.append(time.time())
    deadline = time.monotonic() + seconds + 120
    workers = [k for k in procs if k.startswith(("actors", "driver"))] + ["sampler"]
    while any(procs[k].poll() is None for k in workers):
      if time.monotonic() > deadline:
        raise RuntimeError("%d actors: processes did not end (see %s)" % (count, run_dir))
      time.sleep(0.5)
    cpu = {"replay": None if loss else _cpu([pids["replay"]]) - cpu0["replay"]}
    # The replay's counters once every actor has flushed: what it confirmed in all.
    final = apex_scale_ray.read_counters(hosts, ch, "head", address)
    if replay_loss_s > 0:    # every id the replay holds, counted exactly (then drained)
      hosts.run("head", python + ["tools.apex.audit", "drain", address,
                                  os.path.join(run_dir, "audit.json")], timeout=900)
    # A worker failed if it wrote no results (its exit status is kept in the row).
    failed = [k for k in ["actors%d" % i for i in range(len(split))] + ["sampler"]
              if not os.path.exists(os.path.join(run_dir, k + ".json"))]
    if failed:
      raise RuntimeError("%d actors: %s failed (see %s)" % (count, failed, run_dir))
  except Exception:
    # The hosts' directory goes with them: keep this run's logs for a look.
    kept = tempfile.mkdtemp(prefix="apex_scale_failed_n%d_" % count)
    shutil.copytree(run_dir, kept, dirs_exist_ok=True)
    print("logs kept in %s" % kept, file=sys.stderr)
    raise
  finally:
    for p in procs.values():
      if p.poll() is None:
        p.kill()
      p.wait(timeout=60)
  row = collect(run_dir, count, len(split), rate, start, seconds, cpu["replay"])
  row["exit_codes"] = {k: procs[k].returncode for k in workers}
  row.update(launcher=launcher, seconds=seconds)
  if partition:
    row.update(partition_effects(run_dir, partition, start + seconds))
  if not loss:    # (a restored server counts its inserts anew: loss_effects counts them)
    row.update(items_inserted=final["inserts"],
               items_lost=lost_items(row["items_created"], final["inserts"]))
  if loss:
    row.update(apex_scale_ray.loss_effects(run_dir, loss, restored_at, final, start + seconds),
               loss_at_s=loss["cut"] - start, checkpoint_interval_s=checkpoint_interval_s)
    if cut_after_checkpoint_s > 0:
      row.update(cut_after_checkpoint_s=cut_after_checkpoint_s,
                 cut_s_after_checkpoint_done=loss["after_checkpoint_done"])
    row.update(apex_scale_ray.audit_effects(run_dir, loss["cut"], restored_at))
  return row


def lost_items(created, inserted):
  """Items the actors created that the replay never confirmed."""
  return int(created) - int(inserted)


def partition_effects(run_dir, partition, end):
  """What the partition [cut, healed] (time.time()) cost: items lost (created by the
  actors, never inserted: the probe's last count), the sampler's batches before, during
  and after it."""
  with open(os.path.join(run_dir, "probe.log")) as f:
    records = [json.loads(line) for line in f if line.startswith("{")]
  inserted = max(r.get("inserts", 0) for r in records)
  created = 0
  for name in os.listdir(run_dir):
    if name.startswith("actors") and name.endswith(".json"):
      with open(os.path.join(run_dir, name)) as f:
        created += json.load(f)["items"]
  with open(os.path.join(run_dir, "sampler.json")) as f:
    times = json.load(f)["batch_times"]
  cut, healed = partition
  start = min(r["t"] for r in records)
  return {"partition_s": healed - cut,
          "inserts_per_second_before": window_rate(records, start, cut, "inserts"),
          "inserts_per_second_during": window_rate(records, cut, healed, "inserts"),
          "inserts_per_second_after": window_rate(records, healed, end, "inserts"),
          "items_created": created, "items_inserted": inserted,
          "items_lost": lost_items(created, inserted),
          "batches_before": sum(t < cut for t in times),
          "batches_during": sum(cut <= t < healed for t in times),
          "batches_after": sum(healed <= t <= end for t in times)}


def collect(run_dir, count, processes, rate, start, seconds, replay_cpu_s=None):
  """One run's results from what its processes wrote in `run_dir` (the probe's log, the
  actors' and the sampler's JSON); `start`: time.time() of the go file."""
  with open(os.path.join(run_dir, "probe.log")) as f:
    records = [json.loads(line) for line in f if line.startswith("{")]
  actors = []
  for i in range(processes):
    with open(os.path.join(run_dir, "actors%d.json" % i)) as f:
      actors.append(json.load(f))
  with open(os.path.join(run_dir, "sampler.json")) as f:
    sampler = json.load(f)
  steps = sum(a["steps"] for a in actors)
  created = sum(a["items"] for a in actors)
  window = max(a["seconds"] for a in actors)
  end = start + seconds
  write_p99 = max(a["write_s"]["p99"] or 0 for a in actors)
  write_p50 = sorted(a["write_s"]["p50"] or 0 for a in actors)[len(actors) // 2]
  return {
      "actors": count, "processes": processes, "rate_per_actor": rate,
      "offered_steps_per_second": count * rate,
      "actor_steps_per_second": steps / window,
      "inserts_per_second": window_rate(records, start, end, "inserts"),
      "samples_per_second": window_rate(records, start, end, "samples"),
      "sampler_batches_per_second": sampler["batches"] / sampler["seconds"],
      "sampler_wait_s": sampler["wait_s"],
      "sampler_stall_fraction": sampler["wait_total_s"] / sampler["seconds"],
      "priority_update_s": sampler["priority_update_s"],
      "write_s_p50": write_p50, "write_s_p99": write_p99,
      "write_s_max": max(a["write_s"].get("max") or 0 for a in actors),
      "weight_pulls_per_second": sum(a["pulls"] for a in actors) / window,
      "weight_pulls_done": sum(a["pulled"] for a in actors),
      "weight_pulls": sum(a["pulls"] for a in actors),
      "replay_cpu_cores": None if replay_cpu_s is None else replay_cpu_s / seconds,
      "actors_cpu_cores": sum(a["cpu_seconds"] for a in actors) / window,
      "sampler_cpu_cores": sampler["cpu_seconds"] / sampler["seconds"],
      "items_created": created,
      "actor_errors": sum((a["errors"] for a in actors), []),
      "process_rss_bytes": [a.get("rss_bytes") for a in actors],
      "loadavg": list(os.getloadavg())}


def run(counts, rate=PAPER_RATE, seconds=30.0, threads_per_process=45, layout_name="atari",
        partition_s=0.0, launcher="plain", replay_loss_s=0.0, checkpoint_interval_s=10.0,
        cut_after_checkpoint_s=0.0):
  """One window per number of actors on the same hosts; returns the result rows."""
  ch = _cluster_hosts()
  reason = ch.unavailable()
  if reason:
    raise RuntimeError("apex_scale: " + reason)
  ch.sweep()
  hosts = ch.Hosts()
  rows = []
  try:
    for name in ("head", "a1", "a2"):
      hosts.add(name)
    if launcher == "ray":
      apex_scale_ray.start_cluster(hosts)
    for count in counts:
      rows.append(one_run(hosts, ch, int(count), rate, seconds, threads_per_process,
                          layout_name, hosts.dir, partition_s=partition_s,
                          launcher=launcher, replay_loss_s=replay_loss_s,
                          checkpoint_interval_s=checkpoint_interval_s,
                          cut_after_checkpoint_s=cut_after_checkpoint_s))
      print(json.dumps(rows[-1]), flush=True)
  finally:
    left = hosts.close()
    if left:
      print("left behind: %s" % left, file=sys.stderr)
  return rows


_f = apex_measurements.grouped   # a table cell


def scale_table(rows):
  """The rows as markdown: one line per number of actors."""
  lines = ["| actors | processes | offered steps/s | actor steps/s | inserts/s | samples/s "
           "| write p50 / p99 ms | sampler wait p50 / p99 ms | weight pulls started/s "
           "| pulls done | replay / actors / sampler CPU cores | load avg |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
  for r in rows:
    lines.append("| %d | %d | %s | %s | %s | %s | %s / %s | %s / %s | %s | %d of %d "
                 "| %s / %s / %s | %.1f |" % (
                     r["actors"], r["processes"], _f(r["offered_steps_per_second"]),
                     _f(r["actor_steps_per_second"]), _f(r["inserts_per_second"]),
                     _f(r["samples_per_second"]), _f(1000 * r["write_s_p50"], 1),
                     _f(1000 * r["write_s_p99"]), _f(1000 * r["sampler_wait_s"]["p50"]),
                     _f(1000 * r["sampler_wait_s"]["p99"]),
                     _f(r["weight_pulls_per_second"], 1), r["weight_pulls_done"],
                     r["weight_pulls"], _f(r["replay_cpu_cores"], 2),
                     _f(r["actors_cpu_cores"], 2), _f(r["sampler_cpu_cores"], 2),
                     r["loadavg"][0]))
  return "\n".join(lines) + "\n"


def plot(series, path):
  """Offered vs achieved inserts/s, samples/s, CPU cores and the sampler's stall against
  N, one line style per launcher: `series` is {launcher: rows}."""
  # Lazy: matplotlib is the optional [plot] extra, loaded only to draw a figure.
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use("Agg")
  # Lazy: pyplot after matplotlib.use() (above) has chosen the backend.
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
  fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
  for (launcher, rows), style in zip(sorted(series.items()), ("-", "--")):
    n = [r["actors"] for r in rows]
    left.plot(n, [r["offered_steps_per_second"] for r in rows], "k:", label=(
        "offered steps/s" if style == "-" else None))
    left.plot(n, [r["inserts_per_second"] or 0 for r in rows], "o" + style, color="C0",
              label="inserts/s (%s)" % launcher)
    left.plot(n, [r["samples_per_second"] or 0 for r in rows], "s" + style, color="C1",
              label="samples/s, batch 512 (%s)" % launcher)
    for key, marker, color, name in (
        ("replay_cpu_cores", "o", "C0", "replay CPU cores"),
        ("actors_cpu_cores", "s", "C1", "actors' CPU cores"),
        ("sampler_cpu_cores", "^", "C2", "sampler CPU cores"),
        ("sampler_stall_fraction", "x", "C3", "sampler stall fraction")):
      right.plot(n, [r[key] for r in rows], marker + style, color=color,
                 label="%s (%s)" % (name, launcher))
  left.set_xscale("log")
  left.set_yscale("log")
  left.set_xlabel("synthetic actors")
  left.set_ylabel("per second")
  left.legend(fontsize=7)
  right.set_xscale("log")
  right.set_xlabel("synthetic actors")
  right.legend(fontsize=7)
  fig.suptitle("Ape-X replay at scale, synthetic actors as plain processes and as Ray actors "
               "(2 cores; conditions in scale.md, scale_ray.md)")
  fig.tight_layout()
  fig.savefig(path, dpi=90)
  plt.close(fig)


def memory_note(rows):
  """What one process per actor would take, from the groups' resident memory."""
  sizes = sorted(b for r in rows for b in r.get("process_rss_bytes", []) if b)
  if not sizes:
    return ""
  mb = sizes[len(sizes) // 2] / 1e6
  return ("Resident memory of an actor-group process (Ray worker with TensorFlow, Reverb, the "
          "recording and the Atari network; %d processes measured): median %s MB, %s to %s "
          "MB. One Ray actor process per synthetic actor would take about %s GB for 360 "
          "actors, so the actors run as threads of a few Ray actors.\n" % (
              len(sizes), _f(mb), _f(sizes[0] / 1e6), _f(sizes[-1] / 1e6),
              _f(360 * mb / 1e3)))


FLAGS = flags.FLAGS


def _define_flags():
  flags.DEFINE_list("actors", ["8", "32", "128", "360"], "Numbers of synthetic actors.")
  flags.DEFINE_float("rate", PAPER_RATE, "Agent steps/s of each actor.")
  flags.DEFINE_float("seconds", 30.0, "Length of each window.")
  flags.DEFINE_integer("threads_per_process", 45, "Synthetic actors per process.")
  flags.DEFINE_float("partition_s", 0.0, "Cut host a2 (half the actors) off for this long "
                     "from a third of each window on (0: no partition).")
  flags.DEFINE_enum("launcher", "plain", ["plain", "ray"], "plain: the actors' processes "
                    "started with `ip netns exec`; ray: Ray actors on a Ray cluster of the "
                    "hosts (tools/apex/scale_ray.py).")
  flags.DEFINE_float("replay_loss_s", 0.0, "With --launcher=ray: lose the replay host 40%% "
                     "into each window and restore it from its checkpoint this long after.")
  flags.DEFINE_float("checkpoint_interval_s", 10.0, "The replay's checkpoint period with "
                     "--replay_loss_s.")
  flags.DEFINE_float("cut_after_checkpoint_s", 0.0, "With --replay_loss_s: lose the replay "
                     "host this long after the first checkpoint it completes from 40%% into "
                     "the window on (0: at 40%%), so that the lost server holds items its "
                     "checkpoint does not (faults.json's 'replay_loss_after_checkpoint').")
  flags.DEFINE_string("conditions", "", "What else ran meanwhile (for the markdown), e.g. "
                      "'training run paused'.")
  flags.DEFINE_string("out_dir", None, "Write scale.json (scale_ray.json; faults.json with "
                      "a fault and --launcher=ray) and saturation.png here.")


def main(argv):
  errors.refuse_arguments(argv)
  try:
    counts = [int(c) for c in FLAGS.actors]
  except ValueError:
    raise errors.UserError("--actors takes integers, got %s" % FLAGS.actors) from None
  if not counts or min(counts) < 1 or FLAGS.rate <= 0 or FLAGS.seconds <= 0:
    raise errors.UserError("--actors, --rate and --seconds must be positive.")
  if FLAGS.replay_loss_s > 0 and FLAGS.launcher != "ray":
    raise errors.UserError("--replay_loss_s needs --launcher=ray (the replay's own host).")
  if FLAGS.cut_after_checkpoint_s < 0 or (FLAGS.cut_after_checkpoint_s > 0
                                          and FLAGS.replay_loss_s <= 0):
    raise errors.UserError("--cut_after_checkpoint_s must be >= 0 and needs --replay_loss_s.")
  # The next checkpoint begins `checkpoint_interval_s` after one completed (the log line
  # is seen within about 0.5 s): it must not begin before the replay's processes are killed.
  if FLAGS.cut_after_checkpoint_s and (FLAGS.cut_after_checkpoint_s + apex_scale_ray.KILL_AFTER_S
                                       + 0.5 > FLAGS.checkpoint_interval_s):
    raise errors.UserError(
        "--cut_after_checkpoint_s + %g s must be below --checkpoint_interval_s - 0.5: the "
        "replay's next checkpoint would begin before its processes are killed."
        % apex_scale_ray.KILL_AFTER_S)
  # Lazy: apex_capacity loads TensorFlow, which this driver does not need before here.
  from tools.apex import capacity as apex_capacity  # pylint: disable=import-outside-toplevel
  load0 = os.getloadavg()
  try:
    rows = run(counts, FLAGS.rate, FLAGS.seconds, FLAGS.threads_per_process,
               partition_s=FLAGS.partition_s, launcher=FLAGS.launcher,
               replay_loss_s=FLAGS.replay_loss_s,
               checkpoint_interval_s=FLAGS.checkpoint_interval_s,
               cut_after_checkpoint_s=FLAGS.cut_after_checkpoint_s)
  except RuntimeError as e:
    raise errors.UserError(str(e)) from None
  if FLAGS.out_dir:
    command = "python -m tools.apex.scale " + " ".join(sys.argv[1:])
    provenance = dict(apex_capacity.provenance([load0, os.getloadavg()]), command=command)
    if FLAGS.conditions:    # instead of the default "shared with a training run"
      provenance.update(machine="%d cores" % os.cpu_count(), conditions=FLAGS.conditions)
    write_results(FLAGS.out_dir, rows, provenance)


def write_results(out_dir, rows, provenance):
  """scale.json/md (plain launcher) or scale_ray.json/md, and saturation.png with every
  launcher's rows found in `out_dir`; with a fault and the Ray launcher, faults.json/md
  instead (one entry per kind of fault, kept across runs)."""
  os.makedirs(out_dir, exist_ok=True)
  fault = ("replay_loss_after_checkpoint" if rows[0].get("cut_after_checkpoint_s") else
           "replay_loss" if rows[0].get("replay_loss_s") else
           "partition" if rows[0].get("partition_s") else None)
  if fault and rows[0]["launcher"] == "ray":
    path = os.path.join(out_dir, "faults.json")
    faults = {}
    if os.path.exists(path):
      with open(path) as f:
        faults = json.load(f)
    faults[fault] = dict(rows[0], **provenance)
    with open(path, "w") as f:
      json.dump(faults, f, indent=2)
    with open(os.path.join(out_dir, "faults.md"), "w") as f:
      f.write(apex_scale_ray.faults_markdown(faults))
    return
  name = "scale_ray" if rows[0]["launcher"] == "ray" else "scale"
  with open(os.path.join(out_dir, name + ".json"), "w") as f:
    json.dump(dict(provenance, rows=rows), f, indent=2)
  with open(os.path.join(out_dir, name + ".md"), "w") as f:
    f.write("# Synthetic Ape-X actors at scale (%s launcher)\n\n`%s`, measured %s on %s%s, "
            "commit %s, load average %.1f -> %.1f.\n\n" % (
                rows[0]["launcher"], provenance["command"], provenance["date"],
                provenance["machine"], apex_scale_ray.conditions(provenance), provenance["commit"],
                provenance["loadavg"][0][0],
                provenance["loadavg"][1][0])
            + scale_table(rows) + "\n" + memory_note(rows))
    capacity = os.path.join(out_dir, "capacity.json")
    if os.path.exists(capacity):
      with open(capacity) as c:
        f.write("\n" + apex_scale_ray.plan_check(rows, json.load(c)))
  series = {}
  for launcher, other in (("plain", "scale.json"), ("ray", "scale_ray.json")):
    if os.path.exists(os.path.join(out_dir, other)):
      with open(os.path.join(out_dir, other)) as f:
        series[launcher] = [r for r in json.load(f)["rows"] if not r.get("partition_s")]
  plot(series, os.path.join(out_dir, "saturation.png"))


def cli():
  _define_flags()
  app.run(main, flags_parser=errors.parse_flags)


if __name__ == "__main__":
  cli()
