"""`tools/apex/scale.py --launcher=ray`: the synthetic actors as Ray actors on a Ray
cluster of network-namespace hosts, and the loss of the replay host.

The cluster is started as tests/test_apex_cluster.py starts its own (`cluster_hosts.Hosts`:
`ray start --head` on host `head`, `ray start --address=...` on hosts a1 and a2, token
authentication); the replay runs on a host of its own, `replay` (10.213.0.4, not a Ray
node: losing it loses nothing but the replay), the sampler and the probe on the head, as
plain processes as in the plain launcher. A driver (`python -m tools.apex.scale_ray drive
SPEC.json`, in the head's namespace) places one `ActorGroup` Ray actor per group of
`threads_per_process` synthetic actors, alternately on a1 and a2 (each node offers a
resource `host_<name>`), and each runs `apex_synthetic.run_actors` (threads; ready and go
files as in the plain launcher). One Ray actor per synthetic actor would be one process
each: the groups' resident memory (`rss_bytes`) says what that would cost.

Replay loss (`lose_replay`, `restore_replay`): the replay host's link goes down, every
process of it is killed (its counters at the cut: a probe on its loopback); later the link
comes up and the replay is started again with the same command, so it restores its newest
checkpoint (`replay.keep_serving` writes one every `checkpoint_interval_s`).
`loss_effects` counts what was created, confirmed and lost; `audit_effects` counts lost
and duplicated items by their ids (tools/apex/audit.py; exact where the replay and the
audit table hold as many items).
"""
import datetime
import json
import os
import sys
import time

from tools.apex import audit as apex_audit
from tools.apex import measurements as apex_measurements
from tools import REPO

ACTOR_HOSTS = ("a1", "a2")
# The real runner's replay checkpoints (for faults.md).
CHECKPOINT_NOTE = (
    "The real runner checkpoints its replay less often than this measurement: the "
    "one-machine launcher (`run_local.checkpoint_replay`) at the end of a run only, the Ray "
    "launcher not at all (runners/apex/ray_launcher.py), and `python -m "
    "paac_tf.commands.apex_replay` every `--checkpoint_interval_s` (default 0: only at a "
    "clean shutdown). With those settings a lost replay host loses everything its server "
    "accepted since it started; set `--checkpoint_interval_s` on a standalone replay to "
    "bound the loss.")
_f = apex_measurements.grouped   # a table cell


def start_cluster(hosts):
  """Ray's head on `head`, a1 and a2 joined (each with a `host_<name>` resource), the
  replay host `replay` added (no Ray node). The repository goes first on every process's
  PYTHONPATH, so Ray's workers import this checkout's paac_tf and tools."""
  os.environ["PYTHONPATH"] = os.pathsep.join(
      [REPO] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
  hosts.add("replay")
  hosts.start_head()
  for name in ACTOR_HOSTS:
    hosts.join(name, resources=json.dumps({"apex_actor": 8, "host_" + name: 1000}))


def start_actors(hosts, ch, run_dir, split, actor_args):
  """The driver process (in the head's namespace) for groups of `split` actors; each
  group's `run_actors` keyword arguments are `actor_args(i, n)`."""
  spec = os.path.join(run_dir, "driver.json")
  with open(spec, "w") as f:
    json.dump({"groups": [dict(actor_args(i, n), host="host_" + ACTOR_HOSTS[i % 2])
                          for i, n in enumerate(split)], "run_dir": run_dir,
               "ray_address": "%s:%d" % (hosts.hosts[hosts.head], ch.RAY_PORT)}, f)
  return hosts.popen("head", [os.path.join(ch.BIN, "python"), "-m", "tools.apex.scale_ray",
                              "drive", spec], os.path.join(run_dir, "driver.log"), cwd=REPO)


def drive(spec_path):
  """The driver: one Ray actor per group, each group's results in actors<i>.json."""
  import ray  # pylint: disable=import-outside-toplevel  (Ray is an optional extra)
  with open(spec_path) as f:
    spec = json.load(f)
  ray.init(address=spec["ray_address"], logging_level="warning")

  @ray.remote(num_cpus=0, max_restarts=0)
  class ActorGroup:
    """Synthetic actors as threads of one Ray actor process."""

    def run(self, kwargs):
      # Lazy: TensorFlow and Reverb load in the Ray worker, not in the driver.
      from tools.apex import synthetic as apex_synthetic  # pylint: disable=import-outside-toplevel
      result = apex_synthetic.run_actors(**kwargs)
      result["node"] = ray.util.get_node_ip_address()
      return result

  groups, calls = [], []
  for g in spec["groups"]:
    kwargs = {k: v for k, v in g.items() if k != "host"}
    group = ActorGroup.options(resources={g["host"]: 1}).remote()
    groups.append(group)
    calls.append(group.run.remote(kwargs))
  for i, call in enumerate(calls):
    result = ray.get(call)
    with open(os.path.join(spec["run_dir"], "actors%d.json" % i), "w") as f:
      json.dump(result, f)
  print("driver: %d groups done" % len(calls), flush=True)
  sys.stdout.flush()
  os._exit(0)   # as apex_synthetic's roles: no teardown with pulls in flight


def counters(address):
  """Prints the replay table's size and insert count at `address` (one JSON line)."""
  import reverb  # pylint: disable=import-outside-toplevel  (lazy: the driver needs no TF)
  from paac_tf.runners.apex import replay_layout  # pylint: disable=import-outside-toplevel
  table = reverb.Client(address).server_info(timeout=30)[replay_layout.REPLAY_TABLE]
  print(json.dumps({"t": time.time(), "size": int(table.current_size),
                    "inserts": int(table.rate_limiter_info.insert_stats.completed)}),
        flush=True)


def read_counters(hosts, ch, host, address):
  out = hosts.run(host, [os.path.join(ch.BIN, "python"), "-m", "tools.apex.scale_ray",
                         "counters", address], cwd=REPO).stdout
  return json.loads(out.strip().splitlines()[-1])


# What `replay.keep_serving` logs after each completed checkpoint, before its path.
CHECKPOINT_LOGGED = "Replay checkpoint: "
# The replay host's processes are killed this long after its link went down (its counters
# are read meanwhile). A checkpoint it begins in between holds everything it held at the
# cut: `loss_effects` records when its last one began (negative: after the cut).
KILL_AFTER_S = 1.5


def lose_replay(hosts, probe_log):
  """The replay host lost: link down, every process of it killed `KILL_AFTER_S` later. Its counters
  at the cut are the last reading of the probe on its loopback (`probe_log`, read every
  0.5 s: after the link went down nothing could insert). Returns {'cut': t, 'at_cut':
  counters, 'killed': t, 'pids': n}."""
  cut = time.time()
  hosts.set_link("replay", False)
  time.sleep(KILL_AFTER_S)
  pids = hosts.kill("replay")
  with open(probe_log) as f:
    readings = [r for r in (json.loads(line) for line in f if line.startswith("{"))
                if "size" in r]
  at_cut = readings[-1] if readings and readings[-1]["t"] >= cut + 0.5 else None
  if at_cut is None:
    raise RuntimeError("No reading of the replay's counters after the cut: see %s" % probe_log)
  return {"cut": cut, "at_cut": at_cut, "killed": time.time(), "pids": len(pids)}


def checkpoint_times(log_path):
  """When each checkpoint that a replay's log says it completed began (time.time()), oldest
  first: Reverb names a checkpoint's directory by the time its Save began, just before it
  snapshots the tables ('Replay checkpoint: <dir>/2026-12-06T07:00:32.350463778+00:00 ...',
  `replay.keep_serving`). Everything confirmed before that time is inside it."""
  times = []
  with open(log_path, errors="replace") as f:
    for line in f:
      if CHECKPOINT_LOGGED in line:
        stamp = line.split(CHECKPOINT_LOGGED)[1].split()[0].rstrip("/").rsplit("/", 1)[-1]
        day, clock = stamp.split("+")[0].split("T")
        whole, _, fraction = clock.partition(".")
        began = datetime.datetime.strptime(day + "T" + whole, "%Y-%m-%dT%H:%M:%S").replace(
            tzinfo=datetime.timezone.utc).timestamp()
        times.append(began + float("0." + (fraction or "0")))
  return times


def wait_for_checkpoint(log_path, timeout_s):
  """Waits until a replay's log says one more checkpoint completed than when called;
  returns time.time() then (polled every 0.1 s). RuntimeError after `timeout_s`."""
  def completed():
    with open(log_path, errors="replace") as f:
      return sum(CHECKPOINT_LOGGED in line for line in f)
  before, deadline = completed(), time.monotonic() + timeout_s
  while completed() <= before:
    if time.monotonic() > deadline:
      raise RuntimeError("The replay completed no checkpoint in %.0f s: see %s" % (
          timeout_s, log_path))
    time.sleep(0.1)
  return time.time()


def restore_replay(hosts, serve_argv, log_path):
  """The replay host back: link up, the replay started again (restores its checkpoint)."""
  hosts.set_link("replay", True)
  return time.time(), hosts.popen("replay", serve_argv, log_path, cwd=REPO)


def loss_effects(run_dir, loss, restored_at, final, end):
  """What the replay's loss cost. `loss`: `lose_replay`'s result; `final`: the restored
  server's counters after every actor ended. No item is evicted or removed (the capacity
  is far above what is created), so held at the end = created - lost + duplicates, and
  the actors' retentions count the items they resent and, of them, those the restored
  server may have held already (`maybe_duplicates`, an upper bound on duplicates): lost is
  between max(0, created - held) and created - held + maybe_duplicates. Confirmed by the
  lost server after its last checkpoint = its size at the cut - the size restored (what
  the actors had to resend)."""
  created = 0
  reconnects = 0
  kept = {}
  for name in sorted(os.listdir(run_dir)):
    if name.startswith("actors") and name.endswith(".json"):
      with open(os.path.join(run_dir, name)) as f:
        group = json.load(f)
      created += group["items"]
      reconnects += group.get("reconnects", 0)
      for key, value in group.get("retention", {}).items():
        kept[key] = kept.get(key, 0) + value
  with open(os.path.join(run_dir, "sampler.json")) as f:
    sampler = json.load(f)
  restored = restored_size(os.path.join(run_dir, "replay_restored.log"))
  began = checkpoint_times(os.path.join(run_dir, "replay.log"))
  after_checkpoint = loss["at_cut"]["size"] - restored
  missing = created - final["size"]
  maybe_duplicates = kept.get("maybe_duplicates", 0)
  times = sampler["batch_times"]
  resumed = [t for t in times if t >= restored_at]
  return {"replay_loss_s": restored_at - loss["cut"], "items_created": created,
          "held_by_lost_server": loss["at_cut"]["size"], "restored_from_checkpoint": restored,
          "held_at_end": final["size"], "inserted_by_restored_server": final["size"] - restored,
          "confirmed_after_checkpoint": after_checkpoint,
          "lost_server_checkpoints": len(began),
          "last_checkpoint_began_s_before_cut": loss["cut"] - began[-1] if began else None,
          "items_missing": missing, "items_lost_at_least": max(0, missing),
          "items_lost_at_most": max(0, missing + maybe_duplicates),
          "duplicates_at_least": max(0, -missing),
          "retained": kept.get("retained", 0), "resent": kept.get("resent", 0),
          "maybe_duplicates": maybe_duplicates,
          "dropped_durable": kept.get("dropped_durable", 0),
          "retention_overflowed": kept.get("overflowed", 0),
          "left_to_writer": kept.get("left_to_writer", 0),
          "processes_killed": loss["pids"],
          "actor_reconnects": reconnects, "sampler_reconnects": len(sampler["reconnect_times"]),
          "sampler_resumed_s_after_restore": resumed[0] - restored_at if resumed else None,
          "batches_before": sum(t < loss["cut"] for t in times),
          "batches_during": sum(loss["cut"] <= t < restored_at for t in times),
          "batches_after": sum(restored_at <= t <= end for t in times)}


def audit_effects(run_dir, cut, restored_at):
  """The exact count of a replay loss (tools/apex/audit.py): the actors' created ids
  (actors<i>.json) against the ids the replay held at the end (audit.json, drained after
  `final`); lost and duplicated ids by when they were created (`apex_audit.classify`), and
  by actor. {} without audit.json."""
  path = os.path.join(run_dir, "audit.json")
  if not os.path.exists(path):
    return {}
  items, timelines, unconfirmed = {}, {}, {}
  for name in sorted(os.listdir(run_dir)):
    if name.startswith("actors") and name.endswith(".json"):
      with open(os.path.join(run_dir, name)) as f:
        audit = json.load(f).get("audit", {})
      items.update({int(k): v for k, v in audit.get("items", {}).items()})
      timelines.update({int(k): v for k, v in audit.get("timelines", {}).items()})
      unconfirmed.update({int(k): v for k, v in audit.get("left_to_writer", {}).items()})
  with open(path) as f:
    drained = json.load(f)
  c = apex_audit.counts(items, drained["ids"])
  repeated = [i for i, n in c["duplicate_ids"].items() for _ in range(n)]
  lost_by_actor = {}     # actor: [lost, first and last sequence, their times after the cut]
  for value in c["lost_ids"]:
    actor, sequence = apex_audit.split_id(value)
    t = apex_audit.created_at(timelines.get(actor, ()), sequence)
    t = None if t is None else round(t - cut, 1)
    entry = lost_by_actor.setdefault(str(actor), [0, sequence, sequence, t, t])
    entry[0] += 1
    entry[2], entry[4] = sequence, t
  return {"audit_created": c["created"], "audit_held": c["held"],
          "audit_distinct_held": c["distinct_held"], "audit_unknown": c["unknown"],
          "audit_replay_size": drained["replay_size"], "items_lost_exact": c["lost"],
          "duplicates_exact": c["duplicates"],
          "lost_when": apex_audit.classify(c["lost_ids"], timelines, cut, restored_at),
          "duplicates_when": apex_audit.classify(repeated, timelines, cut, restored_at),
          "lost_by_actor": lost_by_actor,
          # Lost ids beyond what their actor's writer had unconfirmed at the cut (0: every
          # lost item can have been in flight); and the replay's items less the audit's (the
          # two tables are separate items, checkpointed one after the other: not 0 when
          # they do not hold the same items).
          "lost_beyond_unconfirmed": sum(max(0, entry[0] - unconfirmed.get(int(a), 0))
                                         for a, entry in lost_by_actor.items())
                                     if unconfirmed else None,
          "replay_minus_audit": drained["replay_size"] - c["held"]}


def _lost_actors(lost_by_actor):
  entries = list(lost_by_actor.values())
  if not entries:
    return "0"
  times = [t for e in entries for t in (e[3], e[4]) if t is not None]
  return "%d / %d / %s to %s" % (len(entries), max(e[0] for e in entries),
                                 _f(min(times), 1) if times else "?",
                                 _f(max(times), 1) if times else "?")


def _when(counts):
  return "%s before the cut / %s during the outage / %s after the restart" % (
      _f(counts["before_cut"]), _f(counts["during_outage"]), _f(counts["after_restore"])) + (
          " / %s at an unknown time" % _f(counts["unknown_time"])
          if counts["unknown_time"] else "")


def restored_size(log_path):
  """Transitions the restarted replay restored (its log's 'Replay restored' line; 0 when
  it started empty)."""
  with open(log_path, errors="replace") as f:
    for line in f:
      if "Replay restored from the checkpoint" in line:
        return int(line.split(": ")[-1].split(" transitions")[0].replace(",", ""))
  return 0


def plan_check(rows, capacity):
  """The plan's per-core costs (capacity.json: each part measured alone, Atari, capacity
  2M) against the rows: CPU each part should have used for what it did, and what it used."""
  replay = next(r for r in capacity["replay"]
                if r["layout"] == "atari" and not r["evicting"])
  pull = capacity["weights"]
  lines = ["| actors | inserts/s | samples/s | pulls done/s | replay cores planned / used "
           "| actors' cores planned / used | sampler cores planned / used |",
           "|---|---|---|---|---|---|---|"]
  for r in rows:
    pulls = r["weight_pulls_done"] / r["seconds"]
    inserts, samples = r["inserts_per_second"] or 0.0, r["samples_per_second"] or 0.0
    planned = (inserts / replay["inserts_per_server_cpu_second"]
               + samples / replay["samples_per_server_cpu_second"]
               + pulls * pull["server_cpu_s_per_pull"])
    actors = inserts / replay["inserts_per_client_cpu_second"] + pulls * pull[
        "puller_cpu_s_per_pull"]
    sampler = samples / replay["samples_per_sampler_cpu_second"]
    lines.append("| %d | %s | %s | %s | %s / %s | %s / %s | %s / %s |" % (
        r["actors"], _f(inserts), _f(samples), _f(pulls, 1), _f(planned, 2),
        _f(r["replay_cpu_cores"], 2), _f(actors, 2), _f(r["actors_cpu_cores"], 2),
        _f(sampler, 2), _f(r["sampler_cpu_cores"], 2)))
  return ("Planned from capacity.md's per-core costs (%s inserts and %s samples per replay "
          "CPU second, %s inserts per writer CPU second, %s samples per sampler CPU second, "
          "%s / %s ms of replay / puller CPU per weight pull) for what each part did:\n\n" % (
              _f(replay["inserts_per_server_cpu_second"]),
              _f(replay["samples_per_server_cpu_second"]),
              _f(replay["inserts_per_client_cpu_second"]),
              _f(replay["samples_per_sampler_cpu_second"]),
              _f(1000 * pull["server_cpu_s_per_pull"], 1),
              _f(1000 * pull["puller_cpu_s_per_pull"], 1))
          + "\n".join(lines) + "\n")


def _lost(r):
  """The lost items' bounds (a number when they meet)."""
  if r["items_lost_at_least"] == r["items_lost_at_most"]:
    return _f(r["items_lost_at_least"])
  return "%s to %s" % (_f(r["items_lost_at_least"]), _f(r["items_lost_at_most"]))


def conditions(provenance):
  """'; <what else ran>' for a results header, or '' (`--conditions`)."""
  return "; " + provenance["conditions"] if provenance.get("conditions") else ""


def faults_markdown(faults):
  """faults.md from faults.json's rows (each with its provenance)."""
  measured = sorted({(r["machine"], conditions(r)) for r in faults.values()})
  where = ("Measured on %s%s" % measured[0] if len(measured) == 1 else
           "Measured under the conditions each command states")
  return ("# Faults with synthetic actors at scale (Ray launcher)\n\n%s (results in "
          "faults.json).\n\n" % where + faults_table(faults, CHECKPOINT_NOTE))


def faults_table(faults, checkpoint_note):
  """faults.md's body from faults.json's {'partition': row, 'replay_loss': row,
  'replay_loss_after_checkpoint': row}."""
  lines = []
  p = faults.get("partition")
  if p:
    lines += ["## Partition of half the actors", "",
              "`%s`: %d synthetic actors as Ray actors (%d groups), host a2's link down "
              "for %.1f s a third into the %g s window (%d actors cut off)." % (
                  p["command"], p["actors"], p["processes"], p["partition_s"], p["seconds"],
                  p["actors"] // 2), "", "| | value |", "|---|---|",
              "| items created by the actors | %s |" % _f(p["items_created"]),
              "| items inserted by the replay | %s |" % _f(p["items_inserted"]),
              "| items lost | %s |" % _f(p["items_lost"]),
              "| sampler batches before / during / after the cut | %d / %d / %d |" % (
                  p["batches_before"], p["batches_during"], p["batches_after"]),
              "| longest write + flush of an actor | %.1f s |" % p["write_s_max"],
              "| actor errors | %d |" % len(p["actor_errors"]), ""]
  for key, heading in REPLAY_LOSSES:
    if faults.get(key):
      lines += replay_loss_section(faults[key], heading, checkpoint_note)
  return "\n".join(lines)


# faults.json's replay-loss rows and their headings in faults.md.
REPLAY_LOSSES = (("replay_loss", "Replay host lost and restored"),
                 ("replay_loss_after_checkpoint",
                  "Replay host lost a set time after a checkpoint, and restored"))


def replay_loss_section(r, heading, checkpoint_note):
  """faults.md's lines for one replay-loss row (`one_run` with `replay_loss_s`)."""
  timing = ""
  if r.get("cut_after_checkpoint_s"):
    timing = (" (%.1f s after the replay's log said a checkpoint completed, "
              "`--cut_after_checkpoint_s`)" % r["cut_s_after_checkpoint_done"])
  lines = ["## %s" % heading, "",
           "`%s`: %d synthetic actors as Ray actors; at %.0f s into the %g s window%s the "
           "replay host's link goes down and its %d processes are killed; %.1f s after "
           "the cut the link is up and the replay is started again from its checkpoint "
           "directory (checkpoints every %g s)." % (
               r["command"], r["actors"], r["loss_at_s"], r["seconds"], timing,
               r["processes_killed"], r["replay_loss_s"], r["checkpoint_interval_s"]),
           "", "| | value |", "|---|---|",
           "| items created by the actors | %s |" % _f(r["items_created"]),
           "| held by the lost server at the cut | %s |" % _f(r["held_by_lost_server"]),
           "| restored from its last checkpoint | %s |" % _f(r["restored_from_checkpoint"]),
           "| inserted into the restored server | %s |" % _f(r["inserted_by_restored_server"]),
           "| held at the end | %s |" % _f(r["held_at_end"]),
           "| confirmed by the lost server after its last checkpoint | %s |" % _f(
               r["confirmed_after_checkpoint"])]
  if r.get("lost_server_checkpoints") is not None:
    began = r["last_checkpoint_began_s_before_cut"]
    lines.append("| checkpoints the lost server completed / the last began .. s before the "
                 "cut | %d / %s |" % (r["lost_server_checkpoints"],
                                      "-" if began is None else _f(began, 1)))
  lines += ["| unconfirmed at the cut, left to Reverb's writers to send again | %s |" % _f(
                r["left_to_writer"]),
            "| resent by the actors' retention | %s |" % _f(r["resent"]),
            "| of them possibly held already (an upper bound on duplicates) | %s |" % _f(
                r["maybe_duplicates"]),
            "| dropped by the retention's bound | %s |" % _f(r["retention_overflowed"]),
            "| created - held at the end | %s |" % _f(r["items_missing"]),
            "| items lost%s | %s |" % (
                " (bounds from these counts)" if "items_lost_exact" in r else "", _lost(r))]
  if "items_lost_exact" in r:
    lines += ["| ids created / held at the end (distinct) / held, not created | %s / %s "
              "(%s) / %s |" % (_f(r["audit_created"]), _f(r["audit_held"]),
                               _f(r["audit_distinct_held"]), _f(r["audit_unknown"])),
              "| items lost, by their ids (created, not held) | %s |" % _f(
                  r["items_lost_exact"]),
              "| of them created | %s |" % _when(r["lost_when"]),
              "| actors that lost items / the most one lost / created from .. to .. s "
              "after the cut | %s |" % _lost_actors(r["lost_by_actor"])]
    if r.get("lost_beyond_unconfirmed") is not None:
      lines += ["| lost beyond what each actor's writer had unconfirmed at the cut | %s |"
                % _f(r["lost_beyond_unconfirmed"]),
                "| replay items - audit items at the end (0: the ids count the replay "
                "exactly) | %s |" % _f(r["replay_minus_audit"])]
    lines += ["| duplicates, by their ids (copies beyond the first) | %s |" % _f(
                  r["duplicates_exact"]),
              "| of them created | %s |" % _when(r["duplicates_when"])]
  lines += ["| actor reconnects / sampler reconnects | %d / %d |" % (
                r["actor_reconnects"], r["sampler_reconnects"]),
            "| sampler's first batch after the restart | %s s |" % _f(
                r["sampler_resumed_s_after_restore"], 1),
            "| sampler batches before / during / after the outage | %d / %d / %d |" % (
                r["batches_before"], r["batches_during"], r["batches_after"]),
            "| actor errors | %d |" % len(r["actor_errors"]), "",
            "Held at the end = created - lost + duplicates; each actor keeps what it wrote "
            "until a completed checkpoint holds it and writes it again into a replay "
            "restarted from an older checkpoint (runners/apex/retention.py), counting "
            "what it resent and, of that, what the restored server may have held already "
            "(confirmed while the checkpoint ran, or around the restart). So the items "
            "lost are between max(0, created - held) and created - held + that bound. "
            + ("Every item also carries an id (its actor's number and its sequence in it) "
               "into an audit table checkpointed with the replay (tools/apex/audit.py); "
               "drained at the end, it counts the items lost and duplicated by their ids, "
               "exactly where the two tables hold as many items (here %s audit items "
               "against %s replay items at the end). " % (
                   _f(r["audit_held"]), _f(r["audit_replay_size"]))
               if "items_lost_exact" in r else "")
            + checkpoint_note, ""]
  return lines


if __name__ == "__main__":
  if sys.argv[1:2] == ["drive"] and len(sys.argv) == 3:
    drive(sys.argv[2])
  elif sys.argv[1:2] == ["counters"] and len(sys.argv) == 3:
    counters(sys.argv[2])
  else:
    print("error: usage: python -m tools.apex.scale_ray drive SPEC.json | counters HOST:PORT",
          file=sys.stderr)
    sys.exit(2)
