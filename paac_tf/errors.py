"""User-facing errors: each is reported as one clear line and a non-zero exit."""
import os
import sys

from absl import app
from absl import flags
from absl import logging


class UserError(Exception):
  """Bad input or a state the user must fix; the entry points print it without a traceback."""


class ConfigError(UserError):
  """A gin file or binding is missing, malformed or unknown."""


class CheckpointMismatchError(UserError):
  """A root_dir holds a run made with another configuration."""


class TrainingDivergedError(UserError):
  """NaN or Inf appeared in the loss or gradients."""


def user_message(error):
  """The error's text on one line (runs of whitespace as one space; the error's type name
  if it has no text), without the "In call to configurable ..." lines that gin appends to
  exceptions raised inside configurables."""
  lines = [line for line in str(error).splitlines()
           if not line.strip().startswith("In call to configurable")]
  return " ".join(" ".join(lines).split()) or type(error).__name__


def exit_now(status):
  """Flushes the logs and standard streams, then ends the process at once: a command that
  has closed everything skips the interpreter's teardown of TensorFlow and gRPC, which
  takes seconds (3.5 s measured on a busy 2-core machine) or waits on calls pending on a
  lost server."""
  logging.flush()
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(status)  # pylint: disable=protected-access


def refuse_arguments(argv):
  """Raises a UserError if a command that takes flags only got positional arguments
  (absl's argv[1:])."""
  if len(argv) > 1:
    raise UserError("Unexpected arguments: %s" % " ".join(argv[1:]))


class _UserErrorHandler(app.ExceptionHandler):
  """Reports a UserError that ends an absl app as one line `error: ...` and exit status 2
  (no traceback)."""

  def wants(self, exc):
    return isinstance(exc, UserError)

  def handle(self, exc):
    sys.stdout.flush()
    sys.stderr.write("error: %s\n" % user_message(exc))
    exit_now(2)


def parse_flags(argv):
  """Every entry point's flag parser: `app.run(main, flags_parser=errors.parse_flags)`.

  absl's flag parsing, with an unknown flag or a malformed value reported as one line
  `error: ...` and exit status 2 (absl's own parser prints a FATAL line and usage and
  exits 1); and a UserError that ends the program reported the same way (an absl exception
  handler, installed here: the program's main runs with no frame of this module above it).
  """
  if not any(isinstance(h, _UserErrorHandler) for h in app.EXCEPTION_HANDLERS):
    app.install_exception_handler(_UserErrorHandler())
  try:
    return flags.FLAGS(argv)
  except flags.Error as e:
    sys.stderr.write("error: %s (--helpshort lists the flags)\n" % user_message(e))
    exit_now(2)
