"""The benchmark's tables: its parts' results (benchmark.py) as Markdown, each loop beside
its limits, and the summary numbers of benchmark.json; and the frames and wall minutes to a
Pong training average of 18 per config, of the committed runs (`ablation.time_to_score`'s
result)."""

# Parts with a table of their own (after the table of rates).
OWN_TABLES = ("interleaved", "precision", "tf_agents", "time_to_score")


# The name of the training loop's row (and its summary key: "loop").
LOOP = "Algorithm 1"
# The summary key of the same loop in benchmarks made before the loop was Algorithm 1 alone
# (their loop part had env groups and an overlapped learner as options): results/ keeps them.
EARLIER_LOOP_KEY = "loop groups=1 overlap_learner=False"


def loop_name(r):
  """The name of a 'loop' part's row: LOOP, or an earlier benchmark's options."""
  if "num_groups" in r:
    return "groups=%d overlap_learner=%s" % (r["num_groups"], r.get("overlap_learner"))
  return LOOP


def loop_summary(summary):
  """The training loop's {steps_per_s, vs_bound, vs_env} of a benchmark's summary (an
  earlier benchmark's: its plain loop's), or None."""
  return summary.get("loop") or summary.get(EARLIER_LOOP_KEY)


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
  lines = []
  for r in results:
    if "error" in r or "skipped" in r:
      lines.append("| %s %s | %s | |" % (r["part"], _label(r), r.get("error") or r.get("skipped")))
      continue
    if r["part"] in OWN_TABLES:
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
  if lines:
    lines[:0] = ["| measurement | rate | peak RSS (MB) |", "|---|---:|---:|"]
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
        name = loop_name(r)
        ratio = r["steps_per_s"] / bound
        summary["loop" + (" " + name if name != LOOP else "")] = {
            "steps_per_s": r["steps_per_s"], "vs_bound": ratio,
            "vs_env": r["steps_per_s"] / env["steps_per_s"]}
        lines.append("| %s | %.0f | %.2f | %.2f |" % (name, r["steps_per_s"], ratio,
                                                     r["steps_per_s"] / env["steps_per_s"]))
  interleaved = _find(results, "interleaved")
  if interleaved:
    interleaved_lines, summary["interleaved"] = _interleaved_table(interleaved)
    lines += [""] + interleaved_lines
  for part, table in (("precision", _precision_table), ("tf_agents", _baseline_table),
                      ("time_to_score", time_to_score_table)):
    r = _find(results, part)
    if r:
      part_lines, summary[part] = table(r)
      lines += [""] + part_lines
  apex = _find(results, "apex")
  if apex and "skipped" not in apex:
    apex_lines, summary["apex"] = _apex_table(apex)
    lines += [""] + apex_lines
  while lines and not lines[0]:
    lines.pop(0)
  return "\n".join(lines) + "\n", summary


PRECISION_ROWS = (("paac_act arch_nips", "PAAC act, arch_nips", "obs/s"),
                  ("paac_train arch_nips", "PAAC train step, arch_nips", "samples/s"),
                  ("paac_act arch_nature", "PAAC act, arch_nature", "obs/s"),
                  ("paac_train arch_nature", "PAAC train step, arch_nature", "samples/s"),
                  ("apex_act", "Ape-X actor act, arch_nature dueling", "obs/s"),
                  ("apex_learner", "Ape-X learner step, arch_nature dueling", "samples/s"))


def _precision_table(r):
  """bfloat16 / float32 per step, and the priorities' agreement."""
  batch = {"paac_act": r["num_envs"], "paac_train": r["num_envs"] * r["t_max"],
           "apex_act": r["apex_act_batch_size"], "apex_learner": r["apex_batch_size"]}
  lines = [
      "bfloat16 (Keras `mixed_bfloat16`) against float32, alternating in one process over %d "
      "rounds of %s s each (`precision_measurements.py`); ratios > 1: bfloat16 is faster. "
      "'auto' picks %s on this machine." % (r["num_rounds"], r["seconds"], r.get("auto")),
      "", "| step | batch | float32 | bfloat16 | bf16 / f32 (rounds) | per CPU second |",
      "|---|---:|---:|---:|---:|---:|"]
  summary = {}
  for key, name, unit in PRECISION_ROWS:
    x = r["rates"].get(key)
    if x is None:
      continue
    lines.append("| %s | %d | %.0f %s | %.0f %s | **%.2f** (%.2f-%.2f) | %.2f |" % (
        name, batch[key.split()[0]], x["float32"], unit, x["mixed_bfloat16"], unit,
        x["ratio"], x["ratio_min"], x["ratio_max"], x["cpu_ratio"]))
    summary[key] = {"bf16_vs_f32": x["ratio"], "bf16_vs_f32_per_cpu_second": x["cpu_ratio"]}
  p = r["priorities"]
  lines += ["", "Ape-X priorities |TD error| + eps of one batch of %d replay items built from "
            "real %s frames, float32 against bfloat16 Q-values (the same freshly initialised "
            "network): Spearman rank correlation **%.4f**, top-10%% overlap **%.2f**, mean "
            "absolute difference %.2f%% of the mean priority." % (
                p["batch_size"], r.get("game"), p["spearman"], p["top_overlap"],
                100 * p["mean_abs_difference_vs_mean"])]
  summary["priorities"] = p
  return lines, summary


def _baseline_table(r):
  """This project's environments and loop as ratios of the TF-Agents baseline's."""
  m = r["median"]
  lines = [
      "The TF-Agents baseline (`tf_agents_baseline.py`: ParallelPyEnvironment of %d gymnasium "
      "%s envs, one process each; PAAC's update through DynamicStepDriver and "
      "TFUniformReplayBuffer) beside this project's environments (n_w %d) and loop, "
      "alternating in one process, %d rounds of %s s; agent steps/s." % (
          r["num_envs"], r.get("game"), r["num_workers"], len(r["rounds"]), r["seconds"]),
      "", "| round | TF-Agents env | vector env | portable env | TF-Agents loop | PAAC loop "
      "| loop / TF-Agents loop |", "|---|---:|---:|---:|---:|---:|---:|"]
  rows = [(str(i), x) for i, x in enumerate(r["rounds"], 1)] + [("median", m)]
  for name, x in rows:
    lines.append("| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %s |" % (
        name, x["baseline_env"], x["vector_env"], x["portable_env"], x["baseline_loop"],
        x["loop"], ("**%.2f**" if name == "median" else "%.2f") % x["loop_vs_baseline_loop"]))
  lines += ["", "Medians: vector env / TF-Agents env %.2f, portable env / TF-Agents env %.2f." % (
      m["vector_env_vs_baseline_env"], m["portable_env_vs_baseline_env"])]
  summary = {k: m[k] for k in ("loop_vs_baseline_loop", "vector_env_vs_baseline_env",
                               "portable_env_vs_baseline_env")}
  return lines, summary


def time_to_score_table(r):
  """config | results folder | frames and wall minutes to the score | machine note, from
  ablation.time_to_score's rows; a run that never got there: '-', with its best average."""
  lines = ["Frames and wall minutes to a %s training average (last 100 episodes) of %g, per "
           "config, from the committed runs under %s/ (`ablation.time_to_score`: their "
           "summaries.csv; pauses over 5 minutes between resumed parts left out; archive/ "
           "left out). Wall minutes depend on the machine and its load: see the note." % (
               r["game"], r["score"], r["results_dir"]),
           "", "| config | results folder | frames to %g | wall minutes to %g | machine note |"
           % (r["score"], r["score"]), "|---|---|---:|---:|---|"]
  summary = {}
  for row in r["rows"]:
    if row["frames"] is not None:
      frames, minutes = "%.1fM" % (row["frames"] / 1e6), "**%.0f**" % row["wall_minutes"]
    else:
      frames = "- (best %.1f in %.1fM)" % (row["best_training_average"], row["run_frames"] / 1e6)
      minutes = "- (%.0f min run)" % row["run_wall_minutes"]
    lines.append("| %s | %s | %s | %s | %s |" % (row["config"] or "?", row["folder"], frames,
                                                 minutes, row["machine_note"] or ""))
    summary[row["folder"]] = row["wall_minutes"]
  return lines, summary


def _interleaved_table(r):
  """The loop against its serial bound, round by round, all measured in one process."""
  m = r["median"]
  lines = [
      "The same loop and the three parts of its bound measured again in one "
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
  """Ape-X's rates beside their limits (see tools/apex/benchmark.py)."""
  g = lambda key: r.get(key, float("nan"))   # pylint: disable=unnecessary-lambda-assignment
  mb = lambda key: g(key) / 2 ** 20          # pylint: disable=unnecessary-lambda-assignment
  n = r.get("num_actors", 1)
  per_actor = g("actor_agent_steps_per_second") / n
  lines = [
      "Ape-X on %s, %s actor process(es) of %s environments, %s (replay: %s; networks: "
      "%s)." % (r.get("env_name"), n, r.get("emulator_num_envs"), r.get("layout"),
                "rate limiter off", r.get("precision", "float32")),
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
