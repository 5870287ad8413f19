"""results/README.md as an index: the headline medians and one line per run, linked.

The full report (tools/results_table.report: the published and peers' scores beside each
run, its budget against the papers' and where each number came from) goes to a file of its
own beside it (tools/reports/compare.py's --details, results/runs.md); each run's folder holds its
own files (run_info.json, eval.json, summaries.csv, curve.png and, where written, its
README.md).
"""
import urllib.parse

from tools import reference_scores as ref
from tools.reports import results_table as rt
from tools.reports import run_record

TITLE = "# Results: the index"
COLUMNS = ("Results folder", "Config", "Game", "Algorithm", "Score (mean ± sample std, s.e.)",
           "Frames trained", "Ours, human-normalized", "Training time")


def score_text(result):
  """The evaluation's 'mean ± std (s.e.)' (replayed games and the earlier protocol marked),
  else the training average marked as rt.score_cell marks it."""
  if not result.evaluated:
    point = result.training_return
    return "—" if point is None else "%.1f (training average%s)" % (point.value,
                                                                    rt.TRAINING_MARK)
  text = rt.mean_std_se(result.evaluation)
  if not run_record.seeds_apart(result.evaluation):
    text += " (%s)" % rt.EARLIER
  return text


def rows(results, link_base=None):
  out = []
  for r in results:
    hns = rt.percent(r.hns) if r.hns is not None else "—"
    if r.hns is not None and not r.evaluated:
      hns += rt.TRAINING_MARK
    out.append([rt.folder_link(r.folder or r.root, link_base), rt.config_cell(r),
                r.game or r.env_name or "?", run_record.algorithm_name(r.algorithm) or "?",
                score_text(r), rt.frames_cell(r), hns,
                rt.duration(r.wall_time_s) or r.wall_time_text or "?"])
  return out


def index(results, command, archived=(), link_base=None, related=()):
  """The markdown index (str); arguments as rt.report's. `related`: [(link, what)], the
  full report first."""
  lines = [rt.generated_line(command), "", TITLE, "",
           "One line per results folder (per evaluation); each folder holds the run's "
           "command and details (run_info.json), its evaluation (eval.json), its curve and "
           "summaries. Scores: 30 evaluation episodes with up to %d no-op starts. The "
           "papers' budgets: PAAC ~%s timesteps = ~%s frames (the original code: %s "
           "timesteps), Ape-X %s frames." % (
               rt.NOOP_PROTOCOL, rt.human_count(ref.PAAC_PAPER_TIMESTEPS),
               rt.human_count(ref.PAAC_PAPER_FRAMES), rt.human_count(ref.PAAC_CODE_TIMESTEPS),
               rt.human_count(ref.APEX_PAPER_FRAMES)), ""]
  if related:
    lines += ["- [%s](%s): %s." % (link, urllib.parse.quote(link), what)
              for link, what in related] + [""]
  lines += ["## Headline medians", ""] + rt.median_lines(results)
  lines += ["", "## Runs", "", rt.markdown_table(COLUMNS, rows(results, link_base))]
  if any(not r.evaluated for r in results):
    lines += ["", "%s Not evaluated: the average return of recent training episodes, "
              "left out of the medians." % rt.TRAINING_MARK]
  archive = rt.archive_lines(archived, results, link_base)
  if archive:
    lines += [""] + archive
  return "\n".join(lines) + "\n"
