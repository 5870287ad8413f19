r"""A PNG of a run's TensorBoard: TensorBoard's own page, served on loopback and drawn by
headless Chromium (Debian's `chromium` package), with the cards whose tags match a regex.

  python -m tools.reports.tensorboard_screenshot RUN_DIR --output=docs/images/x.png \
      --tag_filter='Eval/AverageReturn|Metrics_vs_EnvironmentSteps/AverageReturn'

docs/images/tensorboard_eval.png is this command on a CartPole run with evaluation every
10,000 agent steps (`python -m paac_tf.train --gin_file=cartpole.gin --root_dir=RUN_DIR
--gin_bindings=paac.eval_interval=10000`, 58 s on 2 shared cores): Eval/* beside the training
average, both against agent steps. The charts are drawn as SVG (TensorBoard's `forceSVG`
flag): with WebGL, headless Chromium drew the lines in 1 of 5 tries.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

from absl import app
from absl import flags

from paac_tf import errors

# Flags for a root user on a machine with no network but loopback (no sandbox, no background
# connections); --virtual-time-budget lets the page fetch and draw before the shot.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync",
                  "--virtual-time-budget=30000"]


def free_port():
  """A free TCP port on loopback."""
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def page_url(port, tag_filter):
  """The time-series dashboard with SVG charts and the cards of `tag_filter`."""
  query = urllib.parse.urlencode({"forceSVG": "true", "tagFilter": tag_filter})
  return "http://127.0.0.1:%d/?%s#timeseries" % (port, query)


def wait_for_tags(port, timeout_s=60.0):
  """Waits until TensorBoard has read the run's scalars (its tags endpoint lists some)."""
  deadline = time.monotonic() + timeout_s
  while time.monotonic() < deadline:
    try:
      with urllib.request.urlopen(
          "http://127.0.0.1:%d/data/plugin/scalars/tags" % port, timeout=5) as response:
        if len(response.read()) > 10:
          return
    except OSError:
      pass
    time.sleep(1.0)
  raise errors.UserError("TensorBoard served no scalars within %.0f s" % timeout_s)


def screenshot(logdir, output, tag_filter, window_size="1500,640", chromium="chromium"):
  """Serves `logdir` with TensorBoard and writes the PNG of its page to `output`."""
  port = free_port()
  board = subprocess.Popen([sys.executable, "-m", "tensorboard.main", "--logdir", logdir,
                            "--host", "127.0.0.1", "--port", str(port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  profile = tempfile.mkdtemp(prefix="chromium-")
  try:
    wait_for_tags(port)
    subprocess.run([chromium] + CHROMIUM_FLAGS + [
        "--user-data-dir=" + profile, "--window-size=" + window_size,
        "--screenshot=" + os.path.abspath(output), page_url(port, tag_filter)],
                   check=True, timeout=180, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
  finally:
    board.terminate()
    board.wait(timeout=30)
    shutil.rmtree(profile, ignore_errors=True)


# --- command line -------------------------------------------------------------------------

def _define_flags():
  flags.DEFINE_string("output", None, "Where to write the PNG.", required=True)
  flags.DEFINE_string("tag_filter", "Eval/AverageReturn|Metrics_vs_EnvironmentSteps/AverageReturn",
                      "TensorBoard's tag filter (a regex): the cards shown.")
  flags.DEFINE_string("window_size", "1500,640", "The browser window: width,height.")
  flags.DEFINE_string("chromium", "chromium", "The Chromium program.")


def main(argv):
  FLAGS = flags.FLAGS  # pylint: disable=invalid-name
  if len(argv) != 2:
    raise errors.UserError("Give one run directory (its train/ holds the events).")
  run_dir = argv[1]
  logdir = os.path.join(run_dir, "train")
  if not os.path.isdir(logdir):
    raise errors.UserError("%s has no train/ folder of TensorBoard events" % run_dir)
  if shutil.which(FLAGS.chromium) is None:
    raise errors.UserError("no %s program (Debian: apt-get install chromium)" % FLAGS.chromium)
  screenshot(logdir, FLAGS.output, FLAGS.tag_filter, FLAGS.window_size, FLAGS.chromium)
  print("Wrote %s" % FLAGS.output)


if __name__ == "__main__":
  _define_flags()
  app.run(main, flags_parser=errors.parse_flags)
