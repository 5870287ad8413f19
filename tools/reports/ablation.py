"""Ablation report: several published runs of one game side by side, at equal budget.

  python -m tools.reports.ablation --game=Pong --thresholds=-10,0,18 \
      --run="atari.gin=results/pong_paac" --run="atari_fast.gin=results/pong_paac_fast" \
      --output_dir=results/ablation_paac

Each --run is LABEL=FOLDER, a results folder written by tools/campaign/publish_run.py (its
summaries.csv, run_info.json and, if present, eval.json). Writes into --output_dir:
  <game>.png   (or <name>.png, --name) the training average return (last 100 episodes)
               against frames and against wall minutes, one curve per run;
  <game>.md    a table: frames and wall minutes at which each run's training average first
               reached each threshold, its final training average and evaluation score;
  <game>.json  the same numbers.
Curves are cut at --budget_frames (default: the shortest run), so that every run is
compared at the same budget; the table's "final" values are at that budget.
Wall time is training time: pauses between resumed parts (gaps over --max_gap_s between
two summaries) are left out.

With --seeds_dir=results, a --run of a config of its own (atari.gin, atari_fast.gin) is
joined by that config's other seeds of the game found there (seed_runs.by_seed): its row
shows the mean over seeds with their min and max, its curve the mean with a min-max band;
the other rows (single changes, variants) stay single runs.

`time_to_score` reads the same curves from every results folder of one game (archive/
left out) for the benchmark's "wall minutes to 18 on Pong" table (benchmark_tables.py).
"""
import dataclasses
import json
import os
from typing import List, Optional

from absl import app
from absl import flags

from paac_tf import errors
from paac_tf.algorithms import registry
from tools.reports import compare
from tools import reference_scores as ref
from tools import events
from tools.reports import results_table
from tools.reports import run_labels
from tools.reports import run_record
from tools.reports import seed_curves
from tools.reports import seed_runs

RETURN_TAG = events.RETURN_VS_AGENT_STEPS   # step: agent steps
FRAMES_PER_STEP = 4                                          # Atari frameskip


@dataclasses.dataclass
class Curve:
  """A run's training average return against frames and training wall seconds."""
  label: str
  folder: str
  frames: List[float]
  wall_s: List[float]
  returns: List[float]
  eval_score: Optional[float] = None
  eval_std: Optional[float] = None
  command: str = ""


def read_curve(label, folder, max_gap_s=events.PAUSE_S, all_episodes=False):
  """The folder's training return curve as events.training_return_tag picks it (Ape-X's
  near-greedy episodes where recorded); `all_episodes`: the average over all episodes
  always (a time to a score: one low-epsilon episode is no training average)."""
  by_tag = events.read_series(folder, (RETURN_TAG, events.LOW_EPSILON_RETURN_VS_AGENT_STEPS))
  points = by_tag[RETURN_TAG if all_episodes else events.training_return_tag(by_tag)]
  if not points:
    raise errors.UserError("%s/summaries.csv has no %s points." % (folder, RETURN_TAG))
  steps = sorted(points)
  walls = events.training_seconds([points[s][0] for s in steps], max_gap_s)
  curve = Curve(label, folder, [s * FRAMES_PER_STEP for s in steps], walls,
                [points[s][1] for s in steps])
  eval_path = os.path.join(folder, "eval.json")
  if os.path.exists(eval_path):
    with open(eval_path, encoding="utf-8") as f:
      evaluation = json.load(f)
    curve.eval_score = evaluation.get("mean")
    curve.eval_std = evaluation.get("std")
  info_path = os.path.join(folder, "run_info.json")
  if os.path.exists(info_path):
    with open(info_path, encoding="utf-8") as f:
      curve.command = json.load(f).get("command", "")
  return curve


def cut(curve, budget_frames):
  """The curve's points up to `budget_frames`."""
  n = sum(1 for f in curve.frames if f <= budget_frames)
  return dataclasses.replace(curve, frames=curve.frames[:n], wall_s=curve.wall_s[:n],
                             returns=curve.returns[:n])


def first_reach(curve, threshold):
  """(frames, wall minutes) of the first point with average return >= threshold, or None."""
  for f, w, r in zip(curve.frames, curve.wall_s, curve.returns):
    if r >= threshold:
      return f, w / 60.0
  return None


def summarize(curves, thresholds):
  rows = []
  for c in curves:
    reached = {str(t): first_reach(c, t) for t in thresholds}
    rows.append({
        "label": c.label, "folder": c.folder, "command": c.command,
        "frames": c.frames[-1] if c.frames else 0,
        "wall_minutes": c.wall_s[-1] / 60.0 if c.wall_s else 0.0,
        "final_training_average": c.returns[-1] if c.returns else None,
        "best_training_average": max(c.returns) if c.returns else None,
        "reached": {t: ({"frames": r[0], "wall_minutes": r[1]} if r else None)
                    for t, r in reached.items()},
        "eval_score": c.eval_score, "eval_std": c.eval_std,
    })
  return rows


def time_to_score(results_dir, game="Pong", score=18.0, max_gap_s=events.PAUSE_S):
  """The benchmark's 'time_to_score' result: per results folder of `results_dir` (not its
  archive/) with a run of `game` (run_info.json's env_name) and a summaries.csv, the
  frames and training wall minutes at which its training average over all episodes (never
  Ape-X's low-epsilon episodes alone: after a resume their average is of a handful of
  episodes) first reached `score` (None: never; then its best training average says how
  far it got), with its config
  label (run_labels.config_of) and machine note (run_labels.machine_note)."""
  rows = []
  for name, folder, info in run_labels.published_runs(results_dir, events.SUMMARIES_CSV):
    if ref.game_key(info.get("env_name")) != ref.game_key(game):
      continue
    curve = read_curve(name, folder, max_gap_s, all_episodes=True)
    hit = first_reach(curve, score)
    rows.append({"folder": folder, "algorithm": info.get("algorithm"),
                 "config": run_labels.config_of(info)[0],
                 "machine_note": run_labels.machine_note(info),
                 "frames": hit[0] if hit else None, "wall_minutes": hit[1] if hit else None,
                 "run_frames": curve.frames[-1], "run_wall_minutes": curve.wall_s[-1] / 60.0,
                 "best_training_average": max(curve.returns)})
  rows.sort(key=lambda r: (r["config"] or "~", r["frames"] is None, r["frames"] or 0.0,
                           r["folder"]))
  return {"part": "time_to_score", "game": game, "score": score, "results_dir": results_dir,
          "rows": rows}


def _millions(frames):
  return "%.1fM" % (frames / 1e6)


def seed_groups(runs, game, budget_frames, seeds_dir, max_gap_s=events.PAUSE_S):
  """[(label, [Curve], [seed], [SeedRun or None])] for the --runs: a run of a config of its
  own (atari.gin, atari_fast.gin; run_labels.is_headline_config) comes with every other
  seed of its game and config found under `seeds_dir` (seed_runs.by_seed: one run a seed);
  any other run stays alone (seed_runs' seed, or None without `seeds_dir`)."""
  found = seed_runs.find(seeds_dir) if seeds_dir else []
  by_folder = {os.path.realpath(r.folder): r for r in found}
  budget_steps = int(budget_frames // FRAMES_PER_STEP)
  out = []
  for label, folder in runs:
    mine = by_folder.get(os.path.realpath(folder))
    group = []
    if mine is not None and run_labels.is_headline_config(mine.config):
      chosen = seed_runs.by_seed(found, game, mine.config, budget_steps,
                                 mine.algorithm or registry.DEFAULT).runs
      if chosen.get(mine.seed) is not mine:       # this folder stands for its seed
        chosen[mine.seed] = mine
      group = [chosen[s] for s in sorted(chosen)]
    if len(group) <= 1:
      out.append((label, [read_curve(label, folder, max_gap_s)],
                  [mine.seed] if mine else [None], [mine]))
      continue
    curves = [read_curve(label, os.path.relpath(r.folder), max_gap_s) for r in group]
    out.append((label, curves, [r.seed for r in group], group))
  return out


def evaluation_at_budget(run, budget_frames):
  """(RunRecord or None, cell) of a run's (a SeedRun's) evaluation of its policy at the
  budget: 'mean ± sample std' over its episodes, marked run_record.EARLIER_MARK where made
  on env seeds overlapping training's; '-' with the budgets it was evaluated at where it has
  none there (an evaluation of a later policy is no score at this budget)."""
  budget_steps = int(budget_frames // FRAMES_PER_STEP)
  result = run.evaluation_at(budget_steps) if run is not None else None
  if result is not None:
    text = results_table.mean_std_se(result.evaluation, with_se=False)
    if not run_record.seeds_apart(result.evaluation):
      text += " " + run_record.EARLIER_MARK
    return result, text
  others = sorted(run.evaluations()) if run is not None else []
  return None, "- (evaluated at %s frames only)" % ", ".join(
      _millions(s * FRAMES_PER_STEP) for s in others) if others else "- (not evaluated)"


def group_row(label, rows, seeds, runs, budget_frames):
  """The row of several seeds of one config: the mean over seeds and their min and max, per
  column; the evaluation: of each seed's policy at the budget under the protocol (an
  earlier-protocol evaluation is named, not averaged)."""
  budget_steps = int(budget_frames // FRAMES_PER_STEP)
  evaluated = [r.evaluation_at(budget_steps) for r in runs]
  scores = [e.score[0] for e in evaluated if e is not None and
            run_record.seeds_apart(e.evaluation)]
  earlier = [r.name for r, e in zip(runs, evaluated) if e is not None and
             not run_record.seeds_apart(e.evaluation)]
  reached = {}
  for t in rows[0]["reached"]:
    hits = [r["reached"][t] for r in rows if r["reached"][t]]
    reached[t] = {"seeds": len(hits), "of": len(rows),
                  "frames": seed_curves.spread([h["frames"] for h in hits]),
                  "wall_minutes": seed_curves.spread([h["wall_minutes"] for h in hits])}
  spread = lambda key: seed_curves.spread([r[key] for r in rows])
  return {"label": label, "seeds": seeds, "folders": [r["folder"] for r in rows],
          "command": " ; ".join(r["command"] for r in rows), "frames": rows[0]["frames"],
          "budget_frames": budget_frames,
          "wall_minutes": spread("wall_minutes").mean, "reached": reached,
          "final_training_average": spread("final_training_average"),
          "best_training_average": spread("best_training_average"),
          "evaluation_at_budget": seed_curves.spread(scores), "earlier_protocol": earlier,
          "runs": rows}


def _spread_cell(value):
  return "%.1f (%.1f to %.1f)" % (value.mean, value.low, value.high) if value else "-"


def _group_cells(r, thresholds):
  cells = ["%s, seeds %s (mean, min to max)" % (r["label"], ", ".join(map(str, r["seeds"]))),
           _millions(r["frames"]), "%.0f" % r["wall_minutes"]]
  for t in thresholds:
    hit = r["reached"][str(t)]
    cells.append("%d of %d: %s / %.0f" % (hit["seeds"], hit["of"], _millions(
        hit["frames"].mean), hit["wall_minutes"].mean) if hit["seeds"] else "-")
  cells += [_spread_cell(r["final_training_average"]), _spread_cell(r["best_training_average"])]
  evaluation = r["evaluation_at_budget"]
  cells.append("%s, %d of %d seeds evaluated at %s frames (mean ± sample std over seeds)" % (
      evaluation.text(), evaluation.n, len(r["seeds"]), _millions(r["budget_frames"]))
               if evaluation else "- (no seed evaluated at %s frames)" % _millions(
                   r["budget_frames"]))
  if r.get("earlier_protocol"):
    cells[-1] += "; not counted, %s: %s" % (run_record.EARLIER_MARK,
                                            ", ".join(r["earlier_protocol"]))
  return cells


def markdown(game, rows, thresholds, budget_frames, command="python -m tools.reports.ablation",
             seeds_dir=None):
  head = ["run", "frames", "wall min"] + ["to %g: frames / min" % t for t in thresholds] + [
      "final training avg", "best training avg", "evaluation (30 no-op)"]
  grouped = any(len(r.get("seeds") or ()) > 1 for r in rows)
  lines = ["# %s: PAAC runs compared at %s frames" % (game, _millions(budget_frames)), "",
           "Generated by `%s` from the results folders named below; every column at %s "
           "frames: training average = last 100 episodes; '-' = not reached within the "
           "budget. The evaluation: of each run's policy at %s frames, 30 episodes with up "
           "to 30 no-op starts, mean ± sample std over episodes; %s: on env seeds "
           "overlapping training's (before the evaluation protocol of issue 27); a run "
           "evaluated only at other budgets has none here." % (
               command.replace("`", "'"), _millions(budget_frames), _millions(budget_frames),
               run_record.EARLIER_MARK), ""]
  if grouped:
    lines += ["Rows of several seeds (a config of its own, with its other seeds' results "
              "folders): each column the mean over seeds and, in brackets, their min and max; "
              "the thresholds: how many seeds reached it, their mean frames and minutes; the "
              "evaluation: of each seed's policy at the budget, where evaluated. Every other "
              "row is a single run (seed 0).", ""]
  elif seeds_dir:
    lines += ["The rows of a config of its own (atari.gin, atari_fast.gin) show the mean and "
              "the spread over its seeds found under %s once there are several: so far one "
              "seed each. Every other row is a single run (seed 0)." % seeds_dir, ""]
  lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
  for r in rows:
    if len(r.get("seeds") or ()) > 1:
      lines.append("| " + " | ".join(_group_cells(r, thresholds)) + " |")
      continue
    cells = [r["label"], _millions(r["frames"]), "%.0f" % r["wall_minutes"]]
    for t in thresholds:
      hit = r["reached"][str(t)]
      cells.append("%s / %.0f" % (_millions(hit["frames"]), hit["wall_minutes"]) if hit else "-")
    cells.append("%.1f" % r["final_training_average"])
    cells.append("%.1f" % r["best_training_average"])
    cells.append(r["evaluation_cell"])
    lines.append("| " + " | ".join(cells) + " |")
  lines += ["", "Runs:", ""]
  for r in rows:
    for one in r.get("runs") or [r]:
      lines.append("- %s: `%s` (%s)" % (r["label"], one["command"], one["folder"]))
  return "\n".join(lines) + "\n"


def plot(game, groups, thresholds, path):
  # Lazy: matplotlib is the optional [plot] extra, loaded only to draw a figure.
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use("Agg")
  # Lazy: pyplot after matplotlib.use() (above) has chosen the backend.
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
  fig, (ax_f, ax_w) = plt.subplots(1, 2, figsize=(13, 4.8), sharey=True)
  colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
  for i, (label, curves, seeds, _) in enumerate(groups):
    if len(curves) > 1:
      label = "%s (mean of seeds %s, min-max band)" % (label, ", ".join(map(str, seeds)))
    seed_curves.draw(ax_f, curves, label, colors[i % len(colors)])
    seed_curves.draw(ax_w, curves, label, colors[i % len(colors)], x="wall")
  for ax in (ax_f, ax_w):
    for t in thresholds:
      ax.axhline(t, color="0.8", linewidth=0.8, zorder=0)
    ax.grid(alpha=0.3)
  ax_f.set_xlabel("frames (millions)")
  ax_w.set_xlabel("training wall time (minutes, 2-core CPU)")
  ax_f.set_ylabel("training average return (last 100 episodes)")
  ax_f.set_title("%s: return against frames" % game)
  ax_w.set_title("%s: return against wall time" % game)
  ax_f.legend(loc="upper left", fontsize=8)
  fig.tight_layout()
  fig.savefig(path, dpi=110)
  plt.close(fig)


def _jsonable(value):
  if isinstance(value, seed_curves.Spread):
    return dataclasses.asdict(value)
  if isinstance(value, dict):
    return {k: _jsonable(v) for k, v in value.items()}
  if isinstance(value, list):
    return [_jsonable(v) for v in value]
  return value


def run(game, runs, thresholds, output_dir, budget_frames=None, max_gap_s=events.PAUSE_S, name=None,
        seeds_dir=None, command="python -m tools.reports.ablation"):
  """Writes the report; `seeds_dir`: a results directory whose other seeds of the runs'
  configs join them (seed_groups); returns its rows."""
  curves = [read_curve(label, folder, max_gap_s) for label, folder in runs]
  budget = budget_frames or min(c.frames[-1] for c in curves)
  groups = [(label, [cut(c, budget) for c in group], seeds, found)
            for label, group, seeds, found in seed_groups(runs, game, budget, seeds_dir,
                                                           max_gap_s)]
  rows = []
  for label, group, seeds, found in groups:
    summaries = summarize(group, thresholds)
    if len(group) == 1:
      one = found[0] or seed_runs.find_one(group[0].folder)
      result, cell = evaluation_at_budget(one, budget)
      mean, std, _ = (run_record.eval_stats(result.evaluation) if result is not None
                      else (None, None, None))
      rows.append(dict(summaries[0], seeds=seeds, eval_score=mean, eval_std=std,
                       evaluation_cell=cell, earlier_protocol=result is not None and
                       not run_record.seeds_apart(result.evaluation)))
    else:
      rows.append(group_row(label, summaries, seeds, found, budget))
  os.makedirs(output_dir, exist_ok=True)
  stem = os.path.join(output_dir, name or game.lower())
  with open(stem + ".json", "w", encoding="utf-8") as f:
    json.dump({"game": game, "budget_frames": budget, "thresholds": list(thresholds),
               "command": command, "runs": _jsonable(rows)}, f, indent=2)
  with open(stem + ".md", "w", encoding="utf-8") as f:
    f.write(markdown(game, rows, thresholds, budget, command, seeds_dir))
  plot(game, groups, thresholds, stem + ".png")
  return rows


FLAGS = flags.FLAGS


def _define_flags():
  flags.DEFINE_string("game", None, "Game name (title of the figure and file names).")
  flags.DEFINE_multi_string("run", [], "LABEL=RESULTS_FOLDER, repeatable.")
  flags.DEFINE_list("thresholds", [], "Scores to time, e.g. -10,0,18.")
  flags.DEFINE_string("output_dir", "results/ablation_paac", "Where to write.")
  flags.DEFINE_float("budget_frames", None, "Cut every curve here (default: shortest run).")
  flags.DEFINE_float("max_gap_s", 300.0, "Longer gaps between summaries are pauses.")
  flags.DEFINE_string("name", None, "Stem of the output files (default: the game, lowercase).")
  flags.DEFINE_string("seeds_dir", None, "A results directory: a --run of a config of its own "
                      "(atari.gin, atari_fast.gin) is shown with that config's other seeds "
                      "of the game found there (the mean and the spread over seeds).")


def main(argv):
  del argv
  if not FLAGS.game or not FLAGS.run:
    raise errors.UserError("Give --game and at least one --run=LABEL=FOLDER.")
  runs = []
  for spec in FLAGS.run:
    label, sep, folder = spec.partition("=")
    if not sep or not label or not folder:
      raise errors.UserError("--run must be LABEL=FOLDER, got %r." % spec)
    runs.append((label, folder))
  try:
    thresholds = [float(t) for t in FLAGS.thresholds]
  except ValueError as e:
    raise errors.UserError("--thresholds must be numbers: %s" % e) from e
  rows = run(FLAGS.game, runs, thresholds, FLAGS.output_dir, FLAGS.budget_frames,
             FLAGS.max_gap_s, FLAGS.name, FLAGS.seeds_dir,
             compare.command_line(module="tools.reports.ablation"))
  for r in rows:
    final = r["final_training_average"]
    print("%-28s final %.1f" % (r["label"], getattr(final, "mean", final)))
  return 0


if __name__ == "__main__":
  _define_flags()
  app.run(main, flags_parser=errors.parse_flags)
