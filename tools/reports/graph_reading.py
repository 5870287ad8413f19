r"""Reads values off a published line graph (a PNG): the curve's value at given x positions.

  python -m tools.reports.graph_reading /tmp/qbert_learning_graph.png \
      --x_range=0,8e7 --y_range=-5000,20000 --at=5e6,1e7,1.5e7,2e7 \
      --output=results/qbert_original/original_curve.csv

The axis box is found in the image: its frame is the longest dark horizontal and vertical
lines (a matplotlib plot's spines). --x_range and --y_range are the data values at the
frame's edges, read by eye from the tick labels; the dotted grid lines inside the frame
(found by their grey dots) are checked to lie at equal steps between the edges, else the
calibration is refused. Pixels map to values linearly: column c -> x_low + (c - left) /
(right - left) * (x_high - x_low), row r -> y_high - (r - top) / (bottom - top) * (y_high
- y_low). At each --at value the tool takes the image column it falls in and the column on each side
(leaving out a grid line's column: its dots cross the band) and reads, among their pixels
inside the frame:
- line: the curve's pixels (saturated blue: blue >= 200, red and green <= 100): their
  median row (the value reported), and the rows of their extremes (the curve's width and
  any vertical stroke through that column);
- fill: the light band around the curve (red = green, blue >= 240; its extremes);
- outer: the grey traces around the band (red = green >= 120, blue 3-60 above them and
  <= 215).
One pixel is (y_high - y_low) / (bottom - top) in value and (x_high - x_low) / (right -
left) in x: both are written beside the values. Needs Pillow.
"""
import csv
import dataclasses
import os

import numpy as np
from absl import app
from absl import flags

from paac_tf import errors

DARK = 100                 # a frame pixel: red + green + blue below this
GRID_SHARE = 0.08          # a dotted grid line: grey pixels along this share of the frame
WINDOW = 1                 # columns read: the one of x and WINDOW on each side (not grid lines)
COLUMNS = ("x", "value", "line_low", "line_high", "fill_low", "fill_high", "outer_low",
           "outer_high", "column_px", "median_row_px", "value_per_px", "x_per_px")


@dataclasses.dataclass(frozen=True)
class Frame:
  left: int
  right: int
  top: int
  bottom: int


def load(path):
  """The image as an int array rows x columns x 3 (RGB)."""
  try:
    # Lazy: Pillow may be missing: the UserError below says how to install it.
    from PIL import Image  # pylint: disable=import-outside-toplevel
  except ImportError:
    raise errors.UserError("Reading a graph needs Pillow (pip install pillow).") from None
  try:
    with Image.open(path) as image:
      return np.asarray(image.convert("RGB")).astype(int)
  except OSError as e:
    raise errors.UserError("Cannot read the image %s (%s)." % (path, e)) from None


def find_frame(rgb):
  """The axis box: the outermost rows and columns at least half dark."""
  dark = rgb.sum(axis=-1) < DARK
  rows = np.nonzero(dark.sum(axis=1) >= 0.5 * rgb.shape[1])[0]
  cols = np.nonzero(dark.sum(axis=0) >= 0.5 * rgb.shape[0])[0]
  if len(rows) < 2 or len(cols) < 2:
    raise errors.UserError("No axis frame found (no long dark lines in the image).")
  return Frame(left=int(cols[0]), right=int(cols[-1]), top=int(rows[0]), bottom=int(rows[-1]))


def _grey(rgb):
  r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
  return (abs(r - g) <= 2) & (abs(g - b) <= 2) & (r >= 60) & (r <= 160)


def grid_lines(rgb, frame):
  """(columns, rows) inside the frame holding dotted grey grid lines: those with grey
  pixels (red = green = blue, 60-160: the dots, darker than a band's antialiased edge)
  along at least GRID_SHARE of the frame's inside."""
  inside = rgb[frame.top + 2:frame.bottom - 1, frame.left + 2:frame.right - 1]
  grey = _grey(inside)
  cols = [frame.left + 2 + i for i, n in enumerate(grey.sum(axis=0))
          if n >= GRID_SHARE * grey.shape[0]]
  rows = [frame.top + 2 + i for i, n in enumerate(grey.sum(axis=1))
          if n >= GRID_SHARE * grey.shape[1]]
  return cols, rows


def check_grid(positions, low, high, what):
  """UserError unless the grid lines split [low, high] in equal steps (within 2 px: the
  lines and the frame are antialiased)."""
  inner = sorted(p for p in positions if low < p < high)
  if not inner:
    return
  ticks = [low] + inner + [high]
  steps = np.diff(ticks)
  if steps.max() - steps.min() > 2.0:
    raise errors.UserError("The %s grid lines (%s) are not evenly spaced between the frame's "
                           "edges %d and %d: check the calibration." % (what, inner, low, high))


def classify(rgb):
  """(line, fill, outer) boolean masks of the curve, its light band and the grey traces."""
  r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
  line = (b >= 200) & (r <= 100) & (g <= 100)
  fill = (abs(r - g) <= 3) & (b >= 240) & (r >= 120) & (r <= 235)
  outer = (abs(r - g) <= 3) & (b - r >= 3) & (b - r <= 60) & (b <= 215) & (r >= 120)
  return line, fill, outer


def read(rgb, x_range, y_range, at, frame=None):
  """[{COLUMNS: value}] at each x of `at`."""
  frame = frame or find_frame(rgb)
  cols, rows = grid_lines(rgb, frame)
  check_grid(cols, frame.left, frame.right, "vertical")
  check_grid(rows, frame.top, frame.bottom, "horizontal")
  (x_low, x_high), (y_low, y_high) = x_range, y_range
  x_per_px = (x_high - x_low) / (frame.right - frame.left)
  value_per_px = (y_high - y_low) / (frame.bottom - frame.top)
  value = lambda row: y_high - (row - frame.top) * value_per_px
  masks = classify(rgb)
  out = []
  for x in at:
    if not x_low <= x <= x_high:
      raise errors.UserError("--at %g is outside --x_range %g to %g." % (x, x_low, x_high))
    column = int(round(frame.left + (x - x_low) / x_per_px))
    window = [c for c in range(column - WINDOW, column + WINDOW + 1) if c not in cols]
    found = [frame.top + 1 + np.nonzero(m[frame.top + 1:frame.bottom, window])[0]
             for m in masks]
    if not len(found[0]):
      raise errors.UserError("No curve pixel in column %d (x = %g)." % (column, x))
    line, fill, outer = found[0], np.concatenate(found[:2]), np.concatenate(found)
    median_row = float(np.median(line))
    out.append({"x": x, "value": value(median_row),            # each band holds the line
                "line_low": value(line.max()), "line_high": value(line.min()),
                "fill_low": value(fill.max()), "fill_high": value(fill.min()),
                "outer_low": value(outer.max()), "outer_high": value(outer.min()),
                "column_px": column, "median_row_px": median_row,
                "value_per_px": value_per_px, "x_per_px": x_per_px})
  return out


def write_csv(points, path):
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  with open(path, "w", newline="", encoding="utf-8") as f:
    writer = csv.DictWriter(f, fieldnames=COLUMNS)
    writer.writeheader()
    for p in points:
      writer.writerow({k: ("%.6g" % v if isinstance(v, float) else v) for k, v in p.items()})


def read_csv(path):
  """The points of write_csv as [{COLUMNS: float}]."""
  with open(path, newline="", encoding="utf-8") as f:
    return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


# --- command line -------------------------------------------------------------------------

def _pair(text, name):
  try:
    low, high = (float(v) for v in text.split(","))
  except (ValueError, AttributeError):
    raise errors.UserError("--%s must be LOW,HIGH (numbers), got %r." % (name, text)) from None
  if not low < high:
    raise errors.UserError("--%s: LOW must be below HIGH, got %r." % (name, text))
  return low, high


def _define_flags():
  flags.DEFINE_string("x_range", None, "LOW,HIGH: x at the frame's left and right edges.")
  flags.DEFINE_string("y_range", None, "LOW,HIGH: y at the frame's bottom and top edges.")
  flags.DEFINE_list("at", [], "x values to read the curve at.")
  flags.DEFINE_string("output", None, "CSV to write (else printed).")


def main(argv):
  FLAGS = flags.FLAGS  # pylint: disable=invalid-name
  if len(argv) != 2:
    raise errors.UserError("Give one image, e.g. `python -m tools.reports.graph_reading "
                           "graph.png --x_range=0,8e7 --y_range=-5000,20000 --at=5e6`.")
  try:
    at = [float(v) for v in FLAGS.at]
  except ValueError as e:
    raise errors.UserError("--at must be numbers: %s" % e) from None
  if not at:
    raise errors.UserError("Give --at, the x values to read.")
  points = read(load(argv[1]), _pair(FLAGS.x_range, "x_range"), _pair(FLAGS.y_range, "y_range"),
                at)
  for p in points:
    print("x %-10g value %8.0f  line %.0f to %.0f  fill %.0f to %.0f  outer %.0f to %.0f" % (
        p["x"], p["value"], p["line_low"], p["line_high"], p["fill_low"], p["fill_high"],
        p["outer_low"], p["outer_high"]))
  if FLAGS.output:
    write_csv(points, FLAGS.output)
    print("Wrote %s" % FLAGS.output)
  return 0


if __name__ == "__main__":
  _define_flags()
  app.run(main, flags_parser=errors.parse_flags)
