"""The command line of a markdown report generated over one results directory.

  python -m tools.reports.games results --output=results/games.md [--overwrite] [--reps=N]
  python -m tools.reports.seeds results --output=results/seeds.md [--overwrite] [--reps=N]

One argument, the results directory; the report is printed and, with --output, written
there: a file this tool did not generate (its first line is not the report's marker) is
replaced only with --overwrite, and that is checked before anything is computed.
--reps: the bootstrap replications of the intervals (tools/reports/aggregates.py), for the
reports that draw intervals (a report without any has no such flag).
"""
import os
import sys

from absl import flags

from paac_tf import errors
from tools.reports import aggregates
from tools.reports import compare


def define_flags(intervals=True):
  """The report's flags; `intervals`: it draws bootstrap intervals (--reps)."""
  flags.DEFINE_string("output", None, "Write the markdown here (e.g. results/games.md).")
  flags.DEFINE_boolean("overwrite", False, "Replace --output even if this tool did not "
                       "generate it.")
  if intervals:
    flags.DEFINE_integer("reps", aggregates.REPS, "Bootstrap replications of the intervals.")


def main(argv, module, marker, build):
  """Runs a report: build(results_dir, command, output or None, reps) -> markdown (reps:
  None for a report defined without intervals)."""
  FLAGS = flags.FLAGS  # pylint: disable=invalid-name
  if len(argv) != 2 or not os.path.isdir(argv[1]):
    raise errors.UserError("Give one results directory, e.g. `python -m %s results "
                           "--output=results/report.md`%s." % (module, "" if len(argv) != 2
                                                                else " (%s is not one)" % argv[1]))
  reps = FLAGS.reps if "reps" in FLAGS else None
  if reps is not None and reps < 1:
    raise errors.UserError("--reps must be at least 1, got %d." % reps)
  output = os.path.abspath(FLAGS.output) if FLAGS.output else None
  if output:
    compare.check_writable(output, FLAGS.overwrite, marker=marker)
  text = build(argv[1], compare.command_line(module=module), output, reps)
  sys.stdout.write(text)
  if output:
    compare.write_report(text, output, FLAGS.overwrite, marker=marker)
  return 0
