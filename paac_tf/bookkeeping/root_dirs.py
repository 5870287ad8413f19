"""Run directories (--root_dir): created, or checked writable, before a run writes there."""
import os

from paac_tf import errors


def absolute(root_dir):
  """The absolute path of --root_dir (`~` expanded)."""
  return os.path.abspath(os.path.expanduser(root_dir))


def prepare_root_dir(root_dir):
  """Creates root_dir, or checks that an existing one is writable (touching nothing in it);
  returns its absolute path. A UserError says why it cannot be used.

  Processes started together (actors of one run) may create the same directory at once:
  one that another process created meanwhile is accepted.
  """
  root_dir = absolute(root_dir)
  if not os.path.isdir(root_dir):
    try:
      os.makedirs(root_dir, exist_ok=True)
    except OSError as e:
      raise errors.UserError("Cannot write to --root_dir %s (%s). Choose a writable directory."
                             % (root_dir, e.strerror or e)) from None
  if not os.access(root_dir, os.W_OK | os.X_OK):
    raise errors.UserError("Cannot write to --root_dir %s (permission denied). Choose a "
                           "writable directory." % root_dir)
  return root_dir
