r"""Measures speed on this machine, each loop side by side with its limits, in one run.

  python -m paac_tf.tools.benchmark --quick            # about four minutes
  python -m paac_tf.tools.benchmark --output_dir=results/benchmark

Parts, each in its own subprocess (so that peak RSS is per part and one part cannot slow
another): (a) Atari env-only agent steps/s with random actions, vector and portable paths;
(b) compiled action selection alone, observations/s at batch n_e; (c) compiled train step
alone, samples/s at batch n_e * t_max, arch_nips and arch_nature, with and without XLA;
(d) the full PAAC training loop, agent steps/s, plain and pipelined; (d') the plain loop
and (a), (b), (c) again in one process, in alternating segments for several rounds, each
round's ratio loop / serial bound and their median (the parts of one round are seconds
apart, so a drift of a shared machine's speed, which moves separate measurements by 10-30%,
affects all four alike); (e) Ape-X
(`paac_tf.tools.apex_benchmark.measure`: the actors' emulator alone, actors writing to a real
Reverb server, the learner sampling from it, its train step alone, bytes per stored
transition, peak RSS per process). The table gives the full PAAC loop as a ratio of the
serial bound 1 / (1/env + 1/act + 1/train) of (a), (b), (c), and of (a) alone, and
round by round from (d'); act and train are called as the loop calls them (concrete
functions, no per-call argument matching); Ape-X's
actors per process as a ratio of the emulator alone on one core, and its learner as a
ratio of its train step alone.
The PAAC parts measure the game, n_e, n_w and t_max that the PAAC config binds
(`--gin_file`, default atari.gin; `--game`, `--num_envs`, `--t_max` override them).
Machines are shared and vary from run to run: compare ratios from one run, not figures
across runs.
"""
import json
import os
import platform
import resource
import subprocess
import sys
import time

from absl import flags

from paac_tf import errors

FLAGS = flags.FLAGS
flags.DEFINE_bool("quick", False, "About four minutes: fewer sizes, shorter timings.")
flags.DEFINE_string("output_dir", None, "Writes benchmark.json and benchmark.md there.")
flags.DEFINE_string("gin_file", "atari.gin", "PAAC config of the PAAC parts: their game, n_e, "
                    "n_w and t_max are its bindings unless given below.")
flags.DEFINE_string("game", None, "Atari game (default: the PAAC config's train_eval.env_name).")
flags.DEFINE_integer("num_envs", None, "n_e of the act / train / loop parts (default: the PAAC "
                     "config's paac_train.num_envs).")
flags.DEFINE_integer("t_max", None, "Rollout length (default: the PAAC config's).")
flags.DEFINE_string("apex_gin_file", "apex_atari.gin", "Ape-X config of the 'apex' part.")
flags.DEFINE_string("part", None, "Internal: run one part and print its JSON.")
flags.DEFINE_string("args", "{}", "Internal: JSON arguments of --part.")


# What the PAAC parts take from the PAAC config: {setting: (configurable, parameter)}.
CONFIG_SETTINGS = {"game": ("train_eval", "env_name"), "num_envs": ("paac_train", "num_envs"),
                   "num_workers": ("paac_train", "num_workers"),
                   "t_max": ("paac_train", "t_max")}


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
  from gin import config_parser  # pylint: disable=import-outside-toplevel
  from paac_tf.runtime import config  # pylint: disable=import-outside-toplevel
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


def _timed(fn, seconds, warmup=3):
  """Calls fn() (returning a count of items) for `seconds`; returns items per second."""
  for _ in range(warmup):
    fn()
  count, start = 0, time.perf_counter()
  while time.perf_counter() - start < seconds:
    count += fn()
  return count / (time.perf_counter() - start)


# --- parts (each runs in a fresh subprocess) -------------------------------------------
def _random_steps(env):
  """A callable stepping all of `env`'s environments with random actions; returns the
  number of agent steps taken."""
  import numpy as np  # pylint: disable=import-outside-toplevel
  rng = np.random.default_rng(0)
  num_envs = int(env.batch_size)

  def step():
    env.step(rng.integers(0, env.num_actions, size=num_envs))
    return num_envs
  return step


def part_env(game, backend, num_envs, num_workers, seconds):
  from paac_tf.envs import environment  # pylint: disable=import-outside-toplevel
  env = environment.make_environment(game, num_envs, num_workers, 0, atari_backend=backend)
  env.reset()
  try:
    return {"steps_per_s": _timed(_random_steps(env), seconds)}
  finally:
    env.close()


def _agent(game, network, jit):
  import numpy as np  # pylint: disable=import-outside-toplevel
  from tf_agents.specs import array_spec  # pylint: disable=import-outside-toplevel
  from paac_tf.agents.paac import agent as agent_lib  # pylint: disable=import-outside-toplevel
  from paac_tf.networks import actor_critic  # pylint: disable=import-outside-toplevel
  del game
  spec = array_spec.BoundedArraySpec((84, 84, 4), np.uint8, 0, 255)
  model = actor_critic.build_actor_critic(6, spec, torso=network)
  return agent_lib.PaacAgent(model, total_updates=10 ** 6, jit_compile=jit)


def _act_calls(agent, num_envs):
  """A callable running `act_packed` on a random batch as the loop calls it (its concrete
  function, rollout.concrete_function); returns the number of observations."""
  from paac_tf.runners.paac import rollout  # pylint: disable=import-outside-toplevel
  import numpy as np  # pylint: disable=import-outside-toplevel
  obs = np.random.default_rng(0).integers(0, 256, (num_envs, 84, 84, 4), dtype=np.uint8)
  act = rollout.concrete_function(agent.act_packed, obs)
  return lambda: len(act(obs).numpy())


def _train_calls(agent, num_envs, t_max):
  """A callable running `train_packed` on a random rollout of t_max steps from num_envs
  envs, as the loop calls it; returns the number of samples."""
  from paac_tf.runners.paac import rollout  # pylint: disable=import-outside-toplevel
  import numpy as np  # pylint: disable=import-outside-toplevel
  rng = np.random.default_rng(0)
  shape = (t_max, num_envs)
  step_data = np.stack([rng.choice([-1.0, 0.0, 1.0], shape), np.ones(shape), np.zeros(shape),
                        np.zeros(shape)]).astype(np.float32)
  batch = (rng.integers(0, 256, shape + (84, 84, 4), dtype=np.uint8),
           rng.integers(0, 6, shape), step_data, np.zeros((t_max + 1, num_envs), np.float32))
  train = rollout.concrete_function(agent.train_packed, *batch)

  def call():
    train(*batch).numpy()
    return t_max * num_envs
  return call


def part_act(game, network, jit, num_envs, seconds):
  return {"obs_per_s": _timed(_act_calls(_agent(game, network, jit), num_envs), seconds)}


def part_train(game, network, jit, num_envs, t_max, seconds):
  agent = _agent(game, network, jit)
  return {"samples_per_s": _timed(_train_calls(agent, num_envs, t_max), seconds)}


def _loop(game, num_envs, num_workers, t_max, network, num_groups=1, overlap_learner=False):
  """(env, agent, runner, update): the training loop on a fresh agent; `update()` runs one
  update and returns its agent steps."""
  from paac_tf.agents.paac import agent as agent_lib  # pylint: disable=import-outside-toplevel
  from paac_tf.runners.paac import rollout  # pylint: disable=import-outside-toplevel
  from paac_tf.envs import environment  # pylint: disable=import-outside-toplevel
  from paac_tf.networks import actor_critic  # pylint: disable=import-outside-toplevel
  env = environment.make_environment(game, num_envs, num_workers, 0, num_groups=num_groups)
  try:
    model = actor_critic.build_actor_critic(env.num_actions, env.observation_spec(), network)
    agent = agent_lib.PaacAgent(model, total_updates=10 ** 6)
    runner = rollout.RolloutRunner(env, agent, t_max, overlap_learner=overlap_learner)
  except BaseException:
    env.close()
    raise

  def update():
    float(runner.run_update()["Losses/total"])
    return runner.steps_per_update
  return env, agent, runner, update


def part_loop(game, num_envs, num_workers, t_max, num_groups, overlap_learner, seconds,
              network="arch_nips"):
  env, _, _, update = _loop(game, num_envs, num_workers, t_max, network, num_groups,
                            overlap_learner)
  try:
    return {"steps_per_s": _timed(update, seconds, warmup=5)}
  finally:
    env.close()


def part_interleaved(game, num_envs, num_workers, t_max, num_rounds, seconds,
                     network="arch_nips"):
  """The PAAC loop and the three parts of its serial bound, measured in one process in
  alternating segments (env alone, act alone, train alone, loop; `num_rounds` times,
  `seconds` each) on the same env and agent, through the loop's call paths: a machine
  whose speed drifts affects each round's four rates alike. Returns each round's rates,
  bound and ratio, and their medians."""
  import numpy as np  # pylint: disable=import-outside-toplevel
  env, agent, runner, update = _loop(game, num_envs, num_workers, t_max, network)
  try:
    env_steps = _random_steps(env)
    act = _act_calls(agent, num_envs)
    train = _train_calls(agent, num_envs, t_max)
    per_round = []
    for _ in range(int(num_rounds)):
      env.reset()
      rates = {"env": _timed(env_steps, seconds), "act": _timed(act, seconds),
               "train": _timed(train, seconds)}
      runner.start()     # the env was stepped outside the runner: begin from a reset
      rates["loop"] = _timed(update, seconds, warmup=2)
      rates["bound"] = 1.0 / (1.0 / rates["env"] + 1.0 / rates["act"] + 1.0 / rates["train"])
      rates["ratio"] = rates["loop"] / rates["bound"]
      per_round.append(rates)
  finally:
    env.close()
  median = {k: float(np.median([r[k] for r in per_round])) for k in per_round[0]}
  return {"rounds": per_round, "median": median,
          "ratio_min": min(r["ratio"] for r in per_round),
          "ratio_max": max(r["ratio"] for r in per_round)}


def part_apex(game, quick, gin_file="apex_atari.gin", **overrides):
  """Ape-X: see paac_tf/tools/apex_benchmark.py (overrides: num_actors, *_seconds)."""
  from paac_tf.tools import apex_benchmark  # pylint: disable=import-outside-toplevel
  return apex_benchmark.measure(quick=quick, game=game, gin_file=gin_file, **overrides)


PARTS = {"env": part_env, "act": part_act, "train": part_train, "loop": part_loop,
         "interleaved": part_interleaved, "apex": part_apex}


def _run_part(name, **kwargs):
  cmd = [sys.executable, "-m", "paac_tf.tools.benchmark", "--part=" + name,
         "--args=" + json.dumps(kwargs)]
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
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
           and k != "rounds"}
  print("  %-6s %-60s %s" % (name, label, shown), flush=True)
  return result


def run_all(quick, game, num_envs, num_workers, t_max, apex_gin_file="apex_atari.gin"):
  s = 6 if quick else 20
  results = []
  print("Benchmarking on %s (%d cores)..." % (platform.processor() or platform.machine(),
                                            os.cpu_count()))
  env_sizes = [num_envs] if quick else [16, 32, 64]
  for backend in ("vector", "portable"):
    for n in env_sizes:
      results.append(_run_part("env", game=game, backend=backend, num_envs=n,
                               num_workers=num_workers, seconds=s))
  nets = ["arch_nips"] if quick else ["arch_nips", "arch_nature"]
  for net in nets:
    for jit in (False, True):
      results.append(_run_part("act", game=game, network=net, jit=jit, num_envs=num_envs,
                               seconds=s))
      results.append(_run_part("train", game=game, network=net, jit=jit, num_envs=num_envs,
                               t_max=t_max, seconds=s))
  loops = [(1, False), (2, False)] if quick else [(1, False), (2, False), (2, True)]
  for groups, overlap in loops:
    results.append(_run_part("loop", game=game, num_envs=num_envs, num_workers=num_workers,
                             t_max=t_max, num_groups=groups, overlap_learner=overlap,
                             seconds=2 * s))
  results.append(_run_part("interleaved", game=game, num_envs=num_envs,
                           num_workers=num_workers, t_max=t_max,
                           num_rounds=2 if quick else 7, seconds=3 if quick else 4))
  results.append(_run_part("apex", game=game, quick=quick, gin_file=apex_gin_file))
  return results


def _find(results, part, **match):
  for r in results:
    if r["part"] == part and all(r.get(k) == v for k, v in match.items()) and "error" not in r:
      return r
  return None


def summarize(results, num_envs):
  """The table: each loop as a ratio of its limits."""
  env = _find(results, "env", backend="vector", num_envs=num_envs)
  act = _find(results, "act", network="arch_nips", jit=False)
  train = _find(results, "train", network="arch_nips", jit=False)
  lines = ["| measurement | rate | peak RSS (MB) |", "|---|---:|---:|"]
  for r in results:
    if "error" in r or "skipped" in r:
      lines.append("| %s %s | %s | |" % (r["part"], _label(r), r.get("error") or r.get("skipped")))
      continue
    if r["part"] == "interleaved":
      continue     # its own table below
    if r["part"] == "apex":
      lines.append("| apex %s actors=%s | %.0f actor frames/s, %.1f learner batches/s | %.0f |" % (
          r.get("env_name", ""), r.get("num_actors"), r.get("actor_frames_per_second", 0.0),
          r.get("learner_batches_per_second", 0.0), r.get("peak_rss_mb", float("nan"))))
      continue
    rate_key = next(k for k in r if k.endswith("_per_s"))
    lines.append("| %s %s | %.0f %s | %.0f |" % (r["part"], _label(r), r[rate_key],
                                                rate_key.replace("_per_s", "/s"),
                                                r.get("peak_rss_mb", float("nan"))))
  summary = {}
  if env and act and train:
    bound = 1.0 / (1.0 / env["steps_per_s"] + 1.0 / act["obs_per_s"] +
                   1.0 / train["samples_per_s"])
    summary["serial_bound_steps_per_s"] = bound
    lines += ["", "Serial bound 1 / (1/env + 1/act + 1/train) = %.0f agent steps/s "
              "(env %.0f, act %.0f, train %.0f; arch_nips, n_e %d, no XLA)." % (
                  bound, env["steps_per_s"], act["obs_per_s"], train["samples_per_s"], num_envs),
              "", "| PAAC loop | steps/s | / serial bound | / emulator alone |",
              "|---|---:|---:|---:|"]
    for r in results:
      if r["part"] == "loop" and "steps_per_s" in r:
        name = "groups=%d overlap_learner=%s" % (r["num_groups"], r["overlap_learner"])
        ratio = r["steps_per_s"] / bound
        summary["loop " + name] = {"steps_per_s": r["steps_per_s"], "vs_bound": ratio,
                                   "vs_env": r["steps_per_s"] / env["steps_per_s"]}
        lines.append("| %s | %.0f | %.2f | %.2f |" % (name, r["steps_per_s"], ratio,
                                                     r["steps_per_s"] / env["steps_per_s"]))
  interleaved = _find(results, "interleaved")
  if interleaved:
    interleaved_lines, summary["interleaved"] = _interleaved_table(interleaved)
    lines += [""] + interleaved_lines
  apex = _find(results, "apex")
  if apex and "skipped" not in apex:
    apex_lines, summary["apex"] = _apex_table(apex)
    lines += [""] + apex_lines
  return "\n".join(lines) + "\n", summary


def _interleaved_table(r):
  """The loop against its serial bound, round by round, all measured in one process."""
  m = r["median"]
  lines = [
      "The same loop (groups=1) and the three parts of its bound measured again in one "
      "process, in alternating segments of %s s (env alone, act alone, train alone, loop), "
      "%d rounds, through the loop's call paths: a drift of the machine's speed affects each "
      "round's four rates alike." % (r.get("seconds"), len(r["rounds"])),
      "",
      "| round | env steps/s | act obs/s | train samples/s | serial bound | loop steps/s "
      "| loop / bound |", "|---|---:|---:|---:|---:|---:|---:|"]
  for i, x in enumerate(r["rounds"], 1):
    lines.append("| %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.2f |" % (
        i, x["env"], x["act"], x["train"], x["bound"], x["loop"], x["ratio"]))
  lines.append("| median | %.0f | %.0f | %.0f | %.0f | %.0f | **%.2f** |" % (
      m["env"], m["act"], m["train"], m["bound"], m["loop"], m["ratio"]))
  summary = {"loop_vs_bound_median": m["ratio"], "loop_vs_bound_min": r["ratio_min"],
             "loop_vs_bound_max": r["ratio_max"], "loop_steps_per_s_median": m["loop"],
             "bound_steps_per_s_median": m["bound"]}
  return lines, summary


def _apex_table(r):
  """Ape-X's rates beside their limits (see paac_tf/tools/apex_benchmark.py)."""
  g = lambda key: r.get(key, float("nan"))   # pylint: disable=unnecessary-lambda-assignment
  mb = lambda key: g(key) / 2 ** 20          # pylint: disable=unnecessary-lambda-assignment
  n = r.get("num_actors", 1)
  per_actor = g("actor_agent_steps_per_second") / n
  lines = [
      "Ape-X on %s, %s actor process(es) of %s environments, %s (replay: %s)." % (
          r.get("env_name"), n, r.get("emulator_num_envs"), r.get("layout"),
          "rate limiter off"),
      "",
      "| Ape-X | measured | limit | ratio |", "|---|---:|---:|---:|",
      "| actor, per process | %.0f agent steps/s (%.0f frames/s) | emulator alone on one core: "
      "%.0f steps/s | %.2f |" % (per_actor, per_actor * r.get("frames_per_agent_step", 1),
                                   g("emulator_agent_steps_per_second"),
                                   g("actor_vs_emulator_per_core")),
      "| actor, per CPU second | %.0f agent steps | emulator alone: %.0f steps | %.2f |" % (
          g("actor_agent_steps_per_cpu_second"), g("emulator_agent_steps_per_cpu_second"),
          g("actor_vs_emulator_per_cpu_second")),
      "| actor vs its serial bound, per CPU second | %.0f agent steps | emulator + action "
      "selection alone (%.0f obs per CPU second at batch %s): %.0f steps = %.2f of the "
      "emulator | %.2f |" % (
          g("actor_agent_steps_per_cpu_second"), g("act_observations_per_cpu_second"),
          r.get("act_batch_size"), g("actor_serial_bound_per_cpu_second"),
          g("actor_serial_bound_vs_emulator"), g("actor_vs_serial_bound_per_cpu_second")),
      "| actor vs its full serial bound, per CPU second | %.0f agent steps | emulator + action "
      "selection + replay writes alone (%.0f agent steps of n-step transitions, priorities "
      "and Reverb writes per CPU second): %.0f steps = %.2f of the emulator | %.2f |" % (
          g("actor_agent_steps_per_cpu_second"), g("write_agent_steps_per_cpu_second"),
          g("actor_full_bound_per_cpu_second"), g("actor_full_bound_vs_emulator"),
          g("actor_vs_full_bound_per_cpu_second")),
      "| all actors | %.0f agent steps/s, %.0f frames/s, %.0f inserts/s (%.2f cores) | | |" % (
          g("actor_agent_steps_per_second"), g("actor_frames_per_second"),
          g("inserts_per_second"), g("actor_cpu_cores_used")),
      "| learner, sampling from Reverb | %.2f batches/s (%.0f samples/s; Reverb: %.0f "
      "samples/s) | train step alone: %.2f batches/s | %.2f |" % (
          g("learner_batches_per_second"), g("learner_samples_per_second"),
          g("replay_samples_per_second"), g("train_step_batches_per_second"),
          g("learner_vs_train_step")),
      "| bytes per stored transition | %.0f (replay RSS growth), %.0f (Reverb checkpoint) | "
      "%.0f if each item copied its frames; one frame: %.0f | |" % (
          g("replay_rss_bytes_per_item"), g("replay_checkpoint_bytes_per_item"),
          g("item_bytes_if_frames_copied"), g("raw_frame_bytes")),
      "| peak RSS (MB) | replay %.0f, largest actor %.0f, learner %.0f | | |" % (
          mb("replay_peak_rss_bytes"), mb("actor_peak_rss_bytes"), mb("learner_peak_rss_bytes")),
  ]
  summary = {k: r[k] for k in ("actor_vs_emulator_per_core", "actor_vs_emulator_per_cpu_second",
                               "actor_serial_bound_vs_emulator",
                               "actor_vs_serial_bound_per_cpu_second",
                               "actor_full_bound_vs_emulator",
                               "actor_vs_full_bound_per_cpu_second",
                               "learner_vs_train_step") if k in r}
  return lines, summary


def _label(r):
  skip = ("part", "game", "seconds", "peak_rss_mb", "error", "skipped")
  return " ".join("%s=%s" % (k, v) for k, v in r.items()
                  if k not in skip and not k.endswith("_per_s") and not isinstance(v, dict))


def main(argv):
  del argv
  if FLAGS.part:
    result = PARTS[FLAGS.part](**json.loads(FLAGS.args))
    result["peak_rss_mb"] = _peak_rss_mb()
    print(json.dumps(result))
    return
  start = time.time()
  settings = config_settings(FLAGS.gin_file)
  for name in ("game", "num_envs", "t_max"):
    if getattr(FLAGS, name) is not None:
      settings[name] = getattr(FLAGS, name)
  results = run_all(FLAGS.quick, settings["game"], settings["num_envs"],
                    settings["num_workers"], settings["t_max"], FLAGS.apex_gin_file)
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
            "summary": summary, "command": " ".join(["python -m paac_tf.tools.benchmark"] +
                                                    sys.argv[1:])}
  if FLAGS.output_dir:
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    with open(os.path.join(FLAGS.output_dir, "benchmark.json"), "w") as f:
      json.dump(report, f, indent=2)
    with open(os.path.join(FLAGS.output_dir, "benchmark.md"), "w") as f:
      f.write("Generated by `%s` on %s (%d cores).\n\n" % (report["command"],
                                                          platform.platform(), os.cpu_count()))
      f.write(table)
    print("Wrote %s/benchmark.json and benchmark.md" % FLAGS.output_dir)


if __name__ == "__main__":
  errors.run_cli(main)
