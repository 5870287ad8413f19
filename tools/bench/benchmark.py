r"""Measures speed on this machine, each loop side by side with its limits, in one run.

  python -m tools.bench.benchmark --quick            # about eight minutes
  python -m tools.bench.benchmark --output_dir=results/benchmark
  python -m tools.bench.benchmark --quick --parts=precision,tf_agents

Parts, each in its own subprocess (so that peak RSS is per part and one part cannot slow
another), the PAAC ones in `benchmark_parts.py`, each built and called as the training loop
(paac_tf/runners/sync/train_loop.py, Algorithm 1 of the PAAC paper) builds and calls it:
(a) Atari env-only agent steps/s with random actions, vector and portable paths;
(b) action selection alone: one rollout's t_max batched forward passes and its bootstrap
values, per agent step at batch n_e; (c) the train step alone (`update.train_step`),
samples/s at batch n_e * t_max, arch_nips and arch_nature, with and without XLA; (d) the
full PAAC training loop, agent steps/s; (d') that loop and (a), (b), (c) again in one
process, in alternating segments for several rounds, each round's ratio loop / serial
bound and their median (the parts of one round are seconds apart, so a drift of a shared
machine's speed, which moves separate measurements by 10-30%, affects all four alike);
(f) 'precision': bfloat16 against float32 for PAAC's act and train step (arch_nips and
arch_nature) and Ape-X's actor and learner steps, alternating in one process, and how
much bfloat16 Q-values change the priorities' ranking (`precision_measurements.py`);
(g) 'tf_agents': the TF-Agents baseline (ParallelPyEnvironment, its driver and replay
buffer feeding PAAC's train step) beside this project's environments and loop, alternating
in one process (`tf_agents_baseline.py`); (e) Ape-X
(`tools.apex.benchmark.measure`: the actors' emulator alone, actors writing to a real
Reverb server, the learner sampling from it, its train step alone, bytes per stored
transition, peak RSS per process). Besides, the time a user cares about most, read from
the committed runs under --results_dir (`ablation.time_to_score`; archive/ left out): per
config, the frames and wall minutes each Pong run took to a training average of 18, with
its machine note ('-' and its best average for a run that never got there).
The tables (`benchmark_tables.py`) give the full PAAC loop as a ratio of the
serial bound 1 / (1/env + 1/act + 1/train) of (a), (b), (c), and of (a) alone, and
round by round from (d'); Ape-X's
actors per process as a ratio of the emulator alone on one core, and its learner as a
ratio of its train step alone; bfloat16 / float32 per step; this project's loop and
environments as ratios of the TF-Agents baseline's.
The PAAC parts measure the game, n_e, n_w and t_max that the PAAC config binds
(`--gin_file`, default atari.gin; `--game`, `--num_envs`, `--t_max` override them).
Machines are shared and vary from run to run: compare ratios from one run, not figures
across runs. benchmark.json and benchmark.md record the command, the commit of the source
measured (`source_commit`) and the UTC times of the run.
"""
import json
import os
import platform
import resource
import subprocess
import sys
import time

from absl import app
from absl import flags
from gin import config_parser

from paac_tf import errors
from paac_tf.bookkeeping import config
from tools.reports import ablation
from tools.bench import benchmark_parts
from tools.bench import benchmark_tables
from tools import REPO


summarize = benchmark_tables.summarize

FLAGS = flags.FLAGS
flags.DEFINE_bool("quick", False, "About eight minutes: fewer sizes, shorter timings.")
flags.DEFINE_string("output_dir", None, "Writes benchmark.json and benchmark.md there.")
flags.DEFINE_string("gin_file", "atari.gin", "PAAC config of the PAAC parts: their game, n_e, "
                    "n_w and t_max are its bindings unless given below.")
flags.DEFINE_string("game", None, "Atari game (default: the PAAC config's train_eval.env_name).")
flags.DEFINE_integer("num_envs", None, "n_e of the act / train / loop parts (default: the PAAC "
                     "config's paac.num_envs).")
flags.DEFINE_integer("t_max", None, "Rollout length (default: the PAAC config's).")
flags.DEFINE_string("apex_gin_file", "apex_atari.gin", "Ape-X config of the 'apex' part.")
flags.DEFINE_list("parts", None, "Only these parts (default: all): %s." % ", ".join(
    ("env", "act", "train", "loop", "interleaved", "precision", "tf_agents", "apex")))
flags.DEFINE_string("results_dir", "results", "Committed runs read for the frames and wall "
                    "minutes to a Pong training average of 18 per config (empty: skip).")
flags.DEFINE_string("part", None, "Internal: run one part and print its JSON.")
flags.DEFINE_string("args", "{}", "Internal: JSON arguments of --part.")


# What the PAAC parts take from the PAAC config: {setting: (configurable, parameter)}.
CONFIG_SETTINGS = {"game": ("train_eval", "env_name"), "num_envs": ("paac", "num_envs"),
                   "num_workers": ("paac", "num_workers"), "t_max": ("paac", "t_max")}


def source_commit():
  """The commit of the paac_tf source that runs (short hash, '+dirty' if its files differ
  from it), or None outside a git checkout."""
  def git(*args):
    try:
      proc = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                            timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
      return None
    return proc.stdout.strip() if proc.returncode == 0 else None
  commit = git("rev-parse", "--short", "HEAD")
  if commit and git("status", "--porcelain", "--", "paac_tf"):
    commit += "+dirty"
  return commit


class _LiteralDelegate:
  """Gin parser delegate: keeps `@refs` and `%macros` as text (no setting used here is one)."""

  def configurable_reference(self, scoped_configurable_name, evaluate):
    return "@%s%s" % (scoped_configurable_name, "()" if evaluate else "")

  def macro(self, macro_name):
    return "%" + macro_name


def config_settings(gin_file):
  """{game, num_envs, num_workers, t_max} as the PAAC config `gin_file` binds them (its
  includes read first). Read with gin's parser alone, not its registry: this process does
  not import TensorFlow. UserError if the config lacks one of them."""
  bound = {}

  def read(name, including_dir=None):
    near = os.path.join(including_dir, name) if including_dir else None
    path = near if near and os.path.isfile(near) else config.resolve_gin_file(name)
    with open(path, encoding="utf-8") as f:
      try:
        statements = list(config_parser.ConfigParser(f, _LiteralDelegate()))
      except SyntaxError as e:
        raise errors.ConfigError("Bad gin configuration %s: %s" % (path, e)) from None
    for statement in statements:
      if isinstance(statement, config_parser.IncludeStatement):
        read(statement.filename, os.path.dirname(path))
      elif isinstance(statement, config_parser.BindingStatement) and not statement.scope:
        bound[(statement.selector.split(".")[-1], statement.arg_name)] = statement.value

  read(gin_file)
  missing = [".".join(b) for b in CONFIG_SETTINGS.values() if b not in bound]
  if missing:
    raise errors.ConfigError("%s binds no %s: give a PAAC Atari config such as atari.gin."
                             % (gin_file, ", ".join(missing)))
  return {setting: bound[binding] for setting, binding in CONFIG_SETTINGS.items()}


def _peak_rss_mb():
  own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
  children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
  return (own + children) / 1024.0


def part_apex(game, quick, gin_file="apex_atari.gin", **overrides):
  """Ape-X: see tools/apex/benchmark.py (overrides: num_actors, *_seconds)."""
  # Lazy: a part's module (TensorFlow, Reverb, TF-Agents) loads only in the subprocess that runs the
  # part.
  from tools.apex import benchmark as apex_benchmark  # pylint: disable=import-outside-toplevel
  return apex_benchmark.measure(quick=quick, game=game, gin_file=gin_file, **overrides)


def part_precision(**kwargs):
  """bfloat16 against float32: see tools/bench/precision_measurements.py."""
  # Lazy: a part's module (TensorFlow, Reverb, TF-Agents) loads only in the subprocess that runs the
  # part.
  from tools.bench import precision_measurements  # pylint: disable=import-outside-toplevel
  return precision_measurements.part_precision(**kwargs)


def part_tf_agents(**kwargs):
  """The TF-Agents baseline: see tools/bench/tf_agents_baseline.py."""
  # Lazy: a part's module (TensorFlow, Reverb, TF-Agents) loads only in the subprocess that runs the
  # part.
  from tools.bench import tf_agents_baseline  # pylint: disable=import-outside-toplevel
  return tf_agents_baseline.part_tf_agents(**kwargs)


PARTS = {"env": benchmark_parts.part_env, "act": benchmark_parts.part_act,
         "train": benchmark_parts.part_train, "loop": benchmark_parts.part_loop,
         "interleaved": benchmark_parts.part_interleaved, "precision": part_precision,
         "tf_agents": part_tf_agents, "apex": part_apex}


def _run_part(name, **kwargs):
  cmd = [sys.executable, "-m", "tools.bench.benchmark", "--part=" + name,
         "--args=" + json.dumps(kwargs)]
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800, cwd=REPO)
  lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
  if proc.returncode != 0 or not lines:
    result = {"error": (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]}
  else:
    result = json.loads(lines[-1])
  result.update({"part": name, **kwargs})
  label = " ".join("%s=%s" % kv for kv in kwargs.items() if kv[0] not in ("seconds", "game"))
  shown = {k: (round(v, 1) if isinstance(v, float) else v) for k, v in result.items()
           if k not in kwargs and k != "part" and (
               name != "apex" or k.endswith(("_per_second", "error")) or k.startswith("skip"))
           and not isinstance(v, (dict, list))}
  print("  %-6s %-60s %s" % (name, label, shown), flush=True)
  return result


def run_all(quick, game, num_envs, num_workers, t_max, apex_gin_file="apex_atari.gin",
            parts=None, results_dir="results"):
  """Runs the benchmark's parts (`parts`: their names, None: all); returns their results,
  and the frames and wall minutes to a Pong training average of 18 of the runs in
  `results_dir` (ablation.time_to_score)."""
  s = 6 if quick else 20
  def wanted(name):
    return parts is None or name in parts
  results = []
  print("Benchmarking on %s (%d cores)..." % (platform.processor() or platform.machine(),
                                            os.cpu_count()))
  env_sizes = [num_envs] if quick else [16, 32, 64]
  for backend in ("vector", "portable") if wanted("env") else ():
    for n in env_sizes:
      results.append(_run_part("env", game=game, backend=backend, num_envs=n,
                               num_workers=num_workers, seconds=s))
  nets = ["arch_nips"] if quick else ["arch_nips", "arch_nature"]
  for net in nets:
    for jit in (False, True):
      if wanted("act"):
        results.append(_run_part("act", game=game, network=net, jit=jit, num_envs=num_envs,
                                 t_max=t_max, seconds=s))
      if wanted("train"):
        results.append(_run_part("train", game=game, network=net, jit=jit, num_envs=num_envs,
                                 t_max=t_max, seconds=s))
  if wanted("loop"):
    results.append(_run_part("loop", game=game, num_envs=num_envs, num_workers=num_workers,
                             t_max=t_max, seconds=2 * s))
  if wanted("interleaved"):
    results.append(_run_part("interleaved", game=game, num_envs=num_envs,
                             num_workers=num_workers, t_max=t_max,
                             num_rounds=2 if quick else 7, seconds=3 if quick else 4))
  if wanted("precision"):
    results.append(_run_part("precision", game=game, num_envs=num_envs, t_max=t_max,
                             apex_batch_size=512, apex_act_batch_size=32,
                             num_rounds=3 if quick else 7, seconds=1 if quick else 3))
  if wanted("tf_agents"):
    results.append(_run_part("tf_agents", game=game, num_envs=num_envs,
                             num_workers=num_workers, t_max=t_max,
                             num_rounds=2 if quick else 5, seconds=3 if quick else 6))
  if wanted("apex"):
    results.append(_run_part("apex", game=game, quick=quick, gin_file=apex_gin_file))
  if results_dir:
    results.append(ablation.time_to_score(results_dir))
  return results


def main(argv):
  del argv
  if FLAGS.part:
    result = PARTS[FLAGS.part](**json.loads(FLAGS.args))
    result["peak_rss_mb"] = _peak_rss_mb()
    print(json.dumps(result))
    return
  start = time.time()
  _refuse_to_overwrite(FLAGS.output_dir)
  commit = source_commit()
  settings = config_settings(FLAGS.gin_file)
  for name in ("game", "num_envs", "t_max"):
    if getattr(FLAGS, name) is not None:
      settings[name] = getattr(FLAGS, name)
  unknown = sorted(set(FLAGS.parts or ()) - set(PARTS))
  if unknown:
    raise errors.UserError("Unknown --parts %s; choose from %s."
                           % (", ".join(unknown), ", ".join(PARTS)))
  results = run_all(FLAGS.quick, settings["game"], settings["num_envs"],
                    settings["num_workers"], settings["t_max"], FLAGS.apex_gin_file,
                    FLAGS.parts, FLAGS.results_dir)
  if FLAGS.output_dir:   # the measurements first: they survive a failure below
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    with open(os.path.join(FLAGS.output_dir, "benchmark.json"), "w") as f:
      json.dump({"results": results}, f, indent=2)
  table, summary = summarize(results, settings["num_envs"])
  print()
  print(table)
  report = {"machine": {"cpus": os.cpu_count(), "processor": platform.processor(),
                        "platform": platform.platform(), "python": platform.python_version()},
            "quick": FLAGS.quick, "wall_time_s": time.time() - start, "results": results,
            "summary": summary, "command": " ".join(["python -m tools.bench.benchmark"] +
                                                    sys.argv[1:]),
            "commit": commit, "started_utc": _utc(start), "finished_utc": _utc(time.time())}
  if FLAGS.output_dir:
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    with open(os.path.join(FLAGS.output_dir, "benchmark.json"), "w") as f:
      json.dump(report, f, indent=2)
    with open(os.path.join(FLAGS.output_dir, "benchmark.md"), "w") as f:
      f.write("Generated by `%s` at commit %s on %s (%d cores), %s to %s UTC.\n\n" % (
          report["command"], commit or "unknown", platform.platform(), os.cpu_count(),
          report["started_utc"], report["finished_utc"]))
      f.write(table)
    print("Wrote %s/benchmark.json and benchmark.md" % FLAGS.output_dir)


def _refuse_to_overwrite(output_dir):
  """An earlier benchmark in output_dir is the user's: archived first, never overwritten."""
  path = os.path.join(output_dir or "", "benchmark.json")
  if not output_dir or not os.path.exists(path):
    return
  try:
    with open(path) as f:
      commit = json.load(f).get("commit") or "unknown"
  except (OSError, ValueError, AttributeError):
    commit = "unknown"
  folder = os.path.normpath(output_dir)
  raise errors.UserError(
      "%s holds a benchmark (commit %s): not overwritten. Archive it first (python -m "
      "tools.campaign.archive_run %s --results_dir=%s --archived_name=%s_%s --superseded_by=%s "
      "--reason=...) or choose another --output_dir." % (
          path, commit, os.path.basename(folder), os.path.dirname(folder) or ".",
          os.path.basename(folder), commit, os.path.basename(folder)))


def _utc(seconds):
  return time.strftime("%Y-%m-%d %H:%M", time.gmtime(seconds))


if __name__ == "__main__":
  app.run(main, flags_parser=errors.parse_flags)
