r"""Moves a superseded results folder to results/archive/ and regenerates the reports.

  python -m tools.campaign.archive_run beamrider_paac_fast \
      --superseded_by=beamrider_paac_fast_40m --reason="evaluated by the earlier protocol"
  python -m tools.campaign.archive_run benchmark --archived_name=benchmark_c4ea5a7 \
      --superseded_by=benchmark --reason="an earlier full benchmark"

A results folder (run_info.json) or a benchmark's folder (benchmark.json, which
tools/bench/benchmark.py refuses to overwrite). The folder keeps every file; its
run_info.json (made for a benchmark) gains "archive_reason" and "superseded_by", which
results/README.md's archive section shows (tools/reports/compare.py). `--archived_name`
names it in archive/ (default: its name). `--already_archived` writes the why into a folder
archived before this tool existed, which has none. Nothing is overwritten: a folder of
that name already in results/archive/ is an error, as is a superseded_by folder that does
not exist (for a benchmark, the new one is written after the old one is archived, so it
may not exist yet) and an archived folder that already says why. Then the reports over
results/ are regenerated as tools/campaign/publish_run.py does.
"""
import json
import os

from absl import app
from absl import flags

from paac_tf import errors
from tools import REPO
from tools.campaign import publish_run

RUN_INFO = "run_info.json"
BENCHMARK = "benchmark.json"


def _check_name(results_dir, name):
  if os.path.normpath(name) != name or os.sep in name or name in ("archive", ".", ".."):
    raise ValueError("%r is not the name of a folder in %s" % (name, results_dir))


def _read_info(folder):
  """(the folder's run_info.json, False), or ({}, True) for a benchmark's folder (no
  run_info.json)."""
  info_path = os.path.join(folder, RUN_INFO)
  if os.path.isfile(info_path):
    with open(info_path) as f:
      return json.load(f), False
  if os.path.isfile(os.path.join(folder, BENCHMARK)):
    return {}, True
  raise ValueError("%s has neither %s nor %s: not a published results folder" % (
      folder, RUN_INFO, BENCHMARK))


def _with_why(info, results_dir, superseded_by, reason, benchmark):
  if superseded_by and not benchmark and not os.path.isdir(
      os.path.join(results_dir, superseded_by)):
    raise ValueError("superseded_by %r is not a folder in %s" % (superseded_by, results_dir))
  if not reason:
    raise ValueError("an archived folder needs its reason")
  info = dict(info, archive_reason=reason)
  if superseded_by:
    info["superseded_by"] = superseded_by
  return info


def _write_info(folder, info):
  with open(os.path.join(folder, RUN_INFO), "w") as f:
    json.dump(info, f, indent=2)


def archive(results_dir, name, superseded_by, reason, archived_name=None):
  """Moves results_dir/name to results_dir/archive/<archived_name or name> with the why in
  its run_info.json; returns the new path. Raises ValueError (nothing moved) on bad input."""
  _check_name(results_dir, name)
  _check_name(results_dir, archived_name or name)
  source = os.path.join(results_dir, name)
  target = os.path.join(results_dir, "archive", archived_name or name)
  info, benchmark = _read_info(source)
  info = _with_why(info, results_dir, superseded_by, reason, benchmark)
  if os.path.exists(target):
    raise ValueError("%s exists: not overwritten" % target)
  os.makedirs(os.path.dirname(target), exist_ok=True)
  os.rename(source, target)
  _write_info(target, info)
  return target


def add_why(results_dir, name, superseded_by, reason):
  """Writes the why into results_dir/archive/name, archived without one; returns its path.
  Raises ValueError (nothing written) on bad input or a folder that already says why."""
  _check_name(results_dir, name)
  folder = os.path.join(results_dir, "archive", name)
  if not os.path.isdir(folder):
    raise ValueError("%s is not a folder" % folder)
  info, benchmark = _read_info(folder)
  if info.get("archive_reason"):
    raise ValueError("%s already says why it was archived: %r; not overwritten" % (
        folder, info["archive_reason"]))
  _write_info(folder, _with_why(info, results_dir, superseded_by, reason, benchmark))
  return folder


FLAGS = flags.FLAGS


def _define_flags():
  flags.DEFINE_string("superseded_by", None, "The folder that replaces it.")
  flags.DEFINE_string("reason", None, "Why it is archived.")
  flags.DEFINE_string("archived_name", None, "Its name in archive/ (default: its name).")
  flags.DEFINE_boolean("already_archived", False, "The folder is in archive/ already, "
                       "without its why: write it.")
  flags.DEFINE_string("results_dir", os.path.join(REPO, "results"), "The results folders.")
  flags.DEFINE_boolean("no_reports", False, "Leave the reports as they are (regenerate them "
                       "later).")
  flags.mark_flag_as_required("reason")


def main(argv):
  """argv: the program, then the folder under results/ to archive."""
  if len(argv) != 2:
    raise errors.UserError("Give one folder under results/ to archive (got %d)."
                           % (len(argv) - 1))
  name = argv[1]
  try:
    if FLAGS.already_archived:
      if FLAGS.archived_name:
        raise ValueError("--archived_name is for a folder not yet archived")
      target = add_why(FLAGS.results_dir, name, FLAGS.superseded_by, FLAGS.reason)
    else:
      target = archive(FLAGS.results_dir, name, FLAGS.superseded_by, FLAGS.reason,
                       FLAGS.archived_name)
  except ValueError as e:
    raise errors.UserError(str(e)) from None
  print(("wrote why %s was archived into %s" if FLAGS.already_archived else "archived %s -> %s")
        % (name, os.path.join(target, RUN_INFO) if FLAGS.already_archived else target))
  if FLAGS.no_reports:
    return
  if os.path.realpath(FLAGS.results_dir) != os.path.realpath(os.path.join(REPO, "results")):
    print("the reports are made from %s/results only: not regenerated" % REPO)
    return
  publish_run.regenerate_reports()


if __name__ == "__main__":
  _define_flags()
  app.run(main, flags_parser=errors.parse_flags)
