r"""Learning curves from TensorBoard events: average return against frames and wall time.

  python -m tools.reports.plot runs/pong_paac runs/pong_apex --output=curve.png
  python -m tools.reports.plot runs/pong_paac --csv=results/pong_paac/scalars.csv

Each RUN is a run directory (or a folder of them); several runs share one figure,
labelled from their run_config.json (else their directory names). The x axes:
- frames: `Metrics_vs_EnvironmentSteps/AverageReturn` against agent steps x 4 (Atari;
  other envs: agent steps);
- wall time: the same points against the run's time (gaps between resumes excluded).
The papers' budgets (PAAC: ~460M frames / 12-15 h; Ape-X: 22.8B frames / 5 days) are
drawn as vertical lines when inside the axis, else stated in the legend.

`--csv` writes every scalar summary of one run as `step,wall_time,tag,value` rows.
Needs matplotlib (`pip install -e '.[plot]'`).
"""
import dataclasses
import os
import sys
from typing import List, Optional

from absl import app
from absl import flags

from paac_tf import errors
from tools import reference_scores as ref
from tools import events
from tools.reports import results_table
from tools.reports import run_record

X_CHOICES = ("frames", "wall_time", "both")


@dataclasses.dataclass
class RunCurve:
  """One run's return curve."""
  label: str
  root: str
  algorithm: Optional[str]
  network: Optional[str]
  atari: bool
  x_steps: List[float]        # frames (Atari) or agent steps
  wall_hours: List[float]
  returns: List[float]


def load_runs(paths):
  """[(RunDir, RunEvents)] for the runs under `paths` (a run given twice counts once)."""
  if not paths:
    raise errors.UserError("Give one or more run directories.")
  seen, runs = set(), []
  for path in paths:
    found = [r for r in events.find_run_dirs(path)
             if r.event_dir and events.event_files(r.event_dir)]
    if not found:
      raise errors.UserError("%s: no TensorBoard event files (%s) under it."
                             % (path, events.EVENT_FILE_PATTERN))
    for run in found:
      key = os.path.realpath(run.event_dir)
      if key not in seen:
        seen.add(key)
        runs.append((run, events.read_run_events(run.event_dir)))
  return runs


def make_curves(runs):
  """Curves (return vs frames / wall time), labelled uniquely."""
  curves = []
  for run, run_events in runs:
    config = run.run_config
    atari = run_record.is_atari(config.get("env_name"))
    tag = run_events.training_return_tag()
    points = run_events.series(tag)
    scale = ref.FRAMES_PER_AGENT_STEP if atari else 1
    curves.append(RunCurve(
        label=events.run_label(config, run.root) + (
            " (low-epsilon episodes)" if tag == events.LOW_EPSILON_RETURN_VS_AGENT_STEPS
            else ""), root=run.root,
        algorithm=config.get("algorithm"), network=config.get("network"), atari=atari,
        x_steps=[p.step * scale for p in points],
        wall_hours=[run_events.elapsed_s(p.wall_time) / 3600.0 for p in points],
        returns=[p.value for p in points]))
  _make_labels_unique(curves)
  return curves


def _make_labels_unique(curves):
  """Appends the run directory's name (then more of its path, then a number) to clashes."""
  base = [c.label for c in curves]
  for depth in (1, 2, 3):
    labels = [c.label for c in curves]
    if len(set(labels)) == len(labels):
      return
    for c, label in zip(curves, base):
      if base.count(label) > 1:
        parts = os.path.normpath(c.root).split(os.sep)
        c.label = "%s (%s)" % (label, "/".join(parts[-depth:]))
  labels = [c.label for c in curves]
  for i, c in enumerate(curves):
    if labels.count(c.label) > 1:
      c.label = "%s #%d" % (c.label, i + 1)


def _budgets(curves, axis):
  """[(x value, text)] of the papers' budgets relevant to these runs, on `axis`."""
  papers = {ref.paper_of(c.algorithm) for c in curves if c.atari}
  networks = {str(c.network or "") for c in curves if ref.paper_of(c.algorithm) == ref.PAAC_PAPER}
  out = []
  if ref.PAAC_PAPER in papers:
    if axis == "frames":
      out.append((ref.PAAC_PAPER_FRAMES, "PAAC paper: ~%s frames (~%s steps)" % (
          results_table.human_count(ref.PAAC_PAPER_FRAMES),
          results_table.human_count(ref.PAAC_PAPER_TIMESTEPS))))
    else:
      known = networks & set(ref.PAAC_PAPER_HOURS) or set(ref.PAAC_PAPER_HOURS)
      for network in sorted(known):
        hours = ref.PAAC_PAPER_HOURS[network]
        out.append((hours, "PAAC paper, %s: %g h (its GPU)" % (network, hours)))
  if ref.APEX_PAPER in papers:
    if axis == "frames":
      out.append((ref.APEX_PAPER_FRAMES, "Ape-X paper: %s frames" %
                  results_table.human_count(ref.APEX_PAPER_FRAMES)))
    else:
      out.append((ref.APEX_PAPER_HOURS, "Ape-X paper: %g days (360 actors)" %
                  (ref.APEX_PAPER_HOURS / 24)))
  return out


def _mark_budgets(ax, budgets, x_max, scale):
  """Vertical lines for budgets within the axis; legend-only notes for the others.

  `budgets` are in the curves' units; the axis shows them divided by `scale`.
  """
  for i, (value, text) in enumerate(budgets):
    if x_max and value <= x_max * 1.05:
      ax.axvline(value / scale, label=text, color="0.3", linewidth=1.0,
                 linestyle=(0, (4, 2 + 2 * i)))
    else:
      reached = " (curves reach %s of it)" % results_table.percent(x_max / value) if x_max else ""
      ax.plot([], [], " ", label="%s: off the axis%s" % (text, reached))


def _wall_unit(max_hours):
  """(divisor from hours, axis name) for a wall-time axis reaching `max_hours`."""
  if max_hours < 2:
    return 1 / 60.0, "minutes"
  if max_hours < 72:
    return 1.0, "hours"
  return 24.0, "days"


def plot(curves, output, x="both", title=None):
  """Draws the curves to `output` (PNG, or any format matplotlib knows by extension)."""
  if x not in X_CHOICES:
    raise errors.UserError("--x must be one of %s, got %r." % (", ".join(X_CHOICES), x))
  try:
    # Lazy: matplotlib is the optional [plot] extra, loaded only to draw a figure.
    import matplotlib  # pylint: disable=import-outside-toplevel
    matplotlib.use("Agg")
    # Lazy: pyplot after matplotlib.use() (above) has chosen the backend.
    import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
    from matplotlib import ticker  # pylint: disable=import-outside-toplevel
  except ImportError:
    raise errors.UserError("Plotting needs matplotlib: pip install -e '.[plot]'.") from None
  drawn = [c for c in curves if c.returns]
  if not drawn:
    raise errors.UserError("No run has %s summaries to plot (runs: %s)." % (
        events.RETURN_VS_AGENT_STEPS, ", ".join(c.root for c in curves)))
  missing = [c.label for c in curves if not c.returns]

  axes_kinds = ["frames", "wall_time"] if x == "both" else [x]
  fig, axes = plt.subplots(1, len(axes_kinds), figsize=(6.4 * len(axes_kinds), 5.4),
                           squeeze=False)
  colors = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
  all_atari = all(c.atari for c in drawn)
  any_atari = any(c.atari for c in drawn)
  for ax, kind in zip(axes[0], axes_kinds):
    if kind == "frames":
      x_max = max(max(c.x_steps) for c in drawn)
      scale = 1.0
      ax.set_xlabel("frames (agent steps x 4)" if all_atari else
                    "frames (Atari) / agent steps (other envs)" if any_atari else "agent steps")
      ax.xaxis.set_major_formatter(ticker.FuncFormatter(
          lambda v, _: results_table.human_count(v) if v else "0"))
    else:
      x_max = max(max(c.wall_hours) for c in drawn)
      scale, unit = _wall_unit(x_max)
      ax.set_xlabel("wall time (%s)" % unit)
    for i, c in enumerate(drawn):
      xs = c.x_steps if kind == "frames" else [h / scale for h in c.wall_hours]
      ax.plot(xs, c.returns, label=c.label, color=colors[i % len(colors)], linewidth=1.4)
    _mark_budgets(ax, _budgets(drawn, kind), x_max, scale)
    ax.set_ylabel("average training return")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.14),
              frameon=False)
  fig.suptitle(title or default_title(drawn))
  if missing:
    fig.text(0.01, 0.01, "Not plotted (no %s): %s" % (events.RETURN_VS_AGENT_STEPS,
                                                       ", ".join(missing)), fontsize="small")
  output = os.path.abspath(os.path.expanduser(output))
  os.makedirs(os.path.dirname(output), exist_ok=True)
  try:
    fig.savefig(output, dpi=110, bbox_inches="tight")
  except ValueError as e:   # unknown extension
    raise errors.UserError("Cannot write %s: %s" % (output, e)) from None
  finally:
    plt.close(fig)
  return output


def default_title(curves):
  labels = sorted({c.label for c in curves})
  text = "Learning curves: " + ", ".join(labels)
  return text if len(text) <= 90 else "Learning curves (%d runs)" % len(curves)


# --- command line -------------------------------------------------------------------------

def _define_flags():
  flags.DEFINE_string("output", None, "The figure to write (e.g. curve.png).")
  flags.DEFINE_enum("x", "both", list(X_CHOICES), "x axis: frames, wall_time, or both "
                    "(two panels).")
  flags.DEFINE_string("title", None, "Figure title (default: the runs' labels).")
  flags.DEFINE_string("csv", None, "Write all scalar summaries of the (one) run to this CSV: "
                      "step,wall_time,tag,value.")


def main(argv):
  FLAGS = flags.FLAGS  # pylint: disable=invalid-name
  paths = argv[1:]
  if not paths:
    raise errors.UserError("Give one or more run directories, e.g. "
                           "`python -m tools.reports.plot runs/pong_paac --output=curve.png`.")
  if not FLAGS.output and not FLAGS.csv:
    raise errors.UserError("Nothing to do: give --output=curve.png and/or --csv=out.csv.")
  runs = load_runs(paths)
  if FLAGS.csv:
    if len(runs) != 1:
      raise errors.UserError("--csv writes one run's summaries; %d runs were found (%s)."
                             % (len(runs), ", ".join(r.root for r, _ in runs)))
    rows = events.write_csv(runs[0][1], FLAGS.csv)
    print("Wrote %d rows to %s" % (rows, FLAGS.csv))
  if FLAGS.output:
    path = plot(make_curves(runs), FLAGS.output, x=FLAGS.x, title=FLAGS.title)
    print("Wrote %s" % path)
  sys.stdout.flush()


if __name__ == "__main__":
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  _define_flags()
  app.run(main, flags_parser=errors.parse_flags)
