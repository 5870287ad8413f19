r"""Moves a superseded results folder to results/archive/ and regenerates the reports.

  python -m paac_tf.tools.archive_run beamrider_paac_fast \
      --superseded_by=beamrider_paac_fast_40m --reason="evaluated by the earlier protocol"

The folder keeps every file; its run_info.json gains "archive_reason" and "superseded_by",
which results/README.md's archive section shows (paac_tf/tools/compare.py). Nothing is
overwritten: a folder of that name already in results/archive/ is an error, as is a
superseded_by folder that does not exist. Then the reports over results/ are regenerated as
paac_tf/tools/publish_run.py does.
"""
import argparse
import json
import os
import sys

from paac_tf.tools import publish_run


def archive(results_dir, name, superseded_by, reason):
  """Moves results_dir/name to results_dir/archive/name with the why in its run_info.json;
  returns the new path. Raises ValueError (nothing moved) on a bad name."""
  source = os.path.join(results_dir, name)
  target = os.path.join(results_dir, "archive", name)
  if os.path.normpath(name) != name or os.sep in name or name in ("archive", ".", ".."):
    raise ValueError("%r is not the name of a folder in %s" % (name, results_dir))
  if not os.path.isfile(os.path.join(source, "run_info.json")):
    raise ValueError("%s has no run_info.json: not a published results folder" % source)
  if superseded_by and not os.path.isdir(os.path.join(results_dir, superseded_by)):
    raise ValueError("superseded_by %r is not a folder in %s" % (superseded_by, results_dir))
  if not reason:
    raise ValueError("an archived folder needs its reason")
  if os.path.exists(target):
    raise ValueError("%s exists: not overwritten" % target)
  info_path = os.path.join(source, "run_info.json")
  with open(info_path) as f:
    info = json.load(f)
  info["archive_reason"] = reason
  if superseded_by:
    info["superseded_by"] = superseded_by
  os.makedirs(os.path.dirname(target), exist_ok=True)
  os.rename(source, target)
  with open(os.path.join(target, "run_info.json"), "w") as f:
    json.dump(info, f, indent=2)
  return target


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("name", help="The folder under results/ to archive.")
  parser.add_argument("--superseded_by", default=None, help="The folder that replaces it.")
  parser.add_argument("--reason", required=True, help="Why it is archived.")
  parser.add_argument("--results_dir", default=os.path.join(publish_run.REPO, "results"))
  parser.add_argument("--no_reports", action="store_true",
                      help="Leave the reports as they are (regenerate them later).")
  args = parser.parse_args(argv)
  try:
    target = archive(args.results_dir, args.name, args.superseded_by, args.reason)
  except ValueError as e:
    print("error: %s" % e, file=sys.stderr)
    return 2
  print("archived %s -> %s" % (args.name, target))
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
