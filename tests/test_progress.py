"""bookkeeping/progress.py: a tqdm bar on an interactive stream, absl log lines elsewhere."""
import io
import logging

from paac_tf.bookkeeping import progress as progress_lib


class _Terminal(io.StringIO):
  def isatty(self):
    return True


def test_terminal_gets_a_tqdm_bar_with_the_average_return():
  stream = _Terminal()
  progress = progress_lib.Progress(1000, start_step=100, stream=stream)
  assert progress.tty
  assert not progress.update(150, 0.0)                # not due yet
  assert progress.update(400, 12.5, force=True)
  progress.close()
  text = stream.getvalue()
  assert "\r" in text                                  # redrawn in place
  assert "40%" in text and "400/1.00k" in text, text  # 400 of 1000 agent steps
  assert "avg return 12.50" in text, text
  assert progress.steps_per_second > 0


def test_overshooting_steps_fill_the_bar_without_passing_it():
  stream = _Terminal()
  progress = progress_lib.Progress(1000, stream=stream)
  progress.update(1040, 1.0, force=True)             # Ape-X actors overshoot total_steps
  progress.close()
  assert "1.00k/1.00k" in stream.getvalue() and "100%" in stream.getvalue()


def test_non_terminal_output_gets_log_lines(caplog):
  stream = io.StringIO()
  assert not progress_lib.interactive(stream)
  progress = progress_lib.Progress(1000, start_step=0, log_interval_s=30.0, stream=stream)
  with caplog.at_level(logging.INFO, logger="absl"):
    assert progress.update(250, -3.0, force=True)
    assert not progress.update(260, -3.0)             # within log_interval_s
  progress.close()
  assert stream.getvalue() == ""
  lines = [r.getMessage() for r in caplog.records if "steps 250/1000" in r.getMessage()]
  assert len(lines) == 1 and "(25.0%)" in lines[0] and "avg return -3.00" in lines[0], lines


def test_outside_a_notebook_is_not_a_notebook():
  assert not progress_lib.in_notebook()
