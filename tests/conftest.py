"""Shared test set-up: quiet TF logs, the repo root on sys.path, helpers for CLI runs."""
import os
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
  sys.path.insert(0, REPO)


def run_module(module, *args, timeout=600, env=None, cwd=REPO):
  """Runs `python -m module args` as a user would; returns the CompletedProcess."""
  full_env = dict(os.environ)
  full_env.update(env or {})
  return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, env=full_env,
                        capture_output=True, text=True, timeout=timeout)
