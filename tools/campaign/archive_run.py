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
import argparse
import json
import os
import sys

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


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("name", help="The folder under results/ to archive.")
  parser.add_argument("--superseded_by", default=None, help="The folder that replaces it.")
  parser.add_argument("--reason", required=True, help="Why it is archived.")
  parser.add_argument("--archived_name", default=None,
                      help="Its name in archive/ (default: its name).")
  parser.add_argument("--already_archived", action="store_true",
                      help="The folder is in archive/ already, without its why: write it.")
  parser.add_argument("--results_dir", default=os.path.join(publish_run.REPO, "results"))
  parser.add_argument("--no_reports", action="store_true",
                      help="Leave the reports as they are (regenerate them later).")
  args = parser.parse_args(argv)
  try:
    if args.already_archived:
      if args.archived_name:
        raise ValueError("--archived_name is for a folder not yet archived")
      target = add_why(args.results_dir, args.name, args.superseded_by, args.reason)
    else:
      target = archive(args.results_dir, args.name, args.superseded_by, args.reason,
                       args.archived_name)
  except ValueError as e:
    print("error: %s" % e, file=sys.stderr)
    return 2
  print(("wrote why %s was archived into %s" if args.already_archived else "archived %s -> %s")
        % (args.name, os.path.join(target, RUN_INFO) if args.already_archived else target))
  if args.no_reports:
    return 0
  if os.path.realpath(args.results_dir) != os.path.realpath(os.path.join(publish_run.REPO,
                                                                         "results")):
    print("the reports are made from %s/results only: not regenerated" % publish_run.REPO)
    return 0
  publish_run.regenerate_reports()
  return 0


if __name__ == "__main__":
  sys.exit(main())
