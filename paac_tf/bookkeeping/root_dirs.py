"""Run directories (--root_dir): created, or checked writable, before a run writes there;
the newest export in one."""
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


POLICIES = "policies"   # root_dir/policies/<model>/<version>/: a run's SavedModels


def newest_export(root_dir):
  """The SavedModel version directory of `root_dir/policies` with the highest version (the
  newest export of a run), or None (no export, or not a run directory). Reads the folders
  only: no TensorFlow, for the API and the evaluation alike (`policies/loading.py`)."""
  base = os.path.join(root_dir, POLICIES)
  found = []
  for model in sorted(os.listdir(base)) if os.path.isdir(base) else []:
    if not os.path.isdir(os.path.join(base, model)):
      continue
    for version in os.listdir(os.path.join(base, model)):
      path = os.path.join(base, model, version)
      if version.isdigit() and os.path.isfile(os.path.join(path, "saved_model.pb")):
        found.append((int(version), path))
  return max(found)[1] if found else None
