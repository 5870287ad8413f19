"""The plumbing of the Ape-X processes, without a replay server: their command lines (entry
points paac_tf.commands.apex_replay / apex_actor / apex_learner), run directories, stop requests,
actor seeds and settings read from the gin configuration."""
import ast
import os
import re
import signal
import subprocess
import time

import gin
import pytest

from conftest import REPO, run_module
from paac_tf import errors
from paac_tf.runners import train_eval
from paac_tf.runners.apex import actor as actor_lib
from paac_tf.runners.apex import learner as learner_lib
from paac_tf.runners.apex import launcher
from paac_tf.bookkeeping import config
from paac_tf.bookkeeping import root_dirs
from paac_tf.bookkeeping import signals

train_eval.load_configurables()   # the configurables the configs name

ENTRY_POINTS = ("paac_tf.commands.apex_replay", "paac_tf.commands.apex_actor",
                "paac_tf.commands.apex_learner")


@pytest.fixture(autouse=True)
def clean_gin():
  gin.clear_config()
  yield
  gin.clear_config()


@pytest.mark.parametrize("module", ENTRY_POINTS)
def test_entry_points_answer_help_and_refuse_missing_flags(module):
  help_proc = run_module(module, "--helpshort", timeout=120)
  assert "--gin_file" in help_proc.stdout + help_proc.stderr, help_proc.stderr[-2000:]
  proc = run_module(module, timeout=120)
  assert proc.returncode == 2, proc.stderr[-2000:]
  assert proc.stderr.strip().splitlines()[-1].startswith("error: Give --"), proc.stderr[-2000:]


def test_command_lines_live_in_entry_points_only():
  """No runner module defines flags or runs as a program (nor hands over to itself)."""
  runners = os.path.join(REPO, "paac_tf", "runners")
  for base, _, files in os.walk(runners):
    for name in files:
      if not name.endswith(".py"):
        continue
      path = os.path.join(base, name)
      with open(path, encoding="utf-8") as f:
        text = f.read()
      assert '__name__ == "__main__"' not in text, path
      imported = {alias.name for node in ast.walk(ast.parse(text)) if isinstance(
          node, ast.ImportFrom) and node.module == "absl" for alias in node.names}
      assert "flags" not in imported, path


def test_prepare_root_dir_creates_checks_and_reports(tmp_path, monkeypatch):
  nested = tmp_path / "a" / "b"
  assert root_dirs.prepare_root_dir(str(nested)) == str(nested)
  assert nested.is_dir()
  (nested / "kept").write_text("x")
  assert root_dirs.prepare_root_dir(str(nested) + "/") == str(nested)   # existing: as is
  assert (nested / "kept").read_text() == "x"
  monkeypatch.setenv("HOME", str(tmp_path))
  assert root_dirs.prepare_root_dir("~/c") == str(tmp_path / "c")
  blocker = tmp_path / "file"
  blocker.write_text("x")
  with pytest.raises(errors.UserError, match="Cannot write to --root_dir .*file/run"):
    root_dirs.prepare_root_dir(str(blocker / "run"))


def test_stop_request_of_a_managed_process_ignores_sigint():
  previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
  stop = signals.StopRequest(ignore_sigint=True)
  try:
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    signal.raise_signal(signal.SIGINT)
    assert not stop.requested and not stop.wait(0.01)
    signal.raise_signal(signal.SIGTERM)
    assert stop.requested and stop.wait(0.01) and stop.signal_name == "SIGTERM"
    signal.raise_signal(signal.SIGTERM)   # a second one is only noted
    assert stop.requested
  finally:
    stop.restore()
  assert {sig: signal.getsignal(sig) for sig in previous} == previous


def test_a_second_signal_hurries_and_never_interrupts():
  stop = signals.StopRequest()
  try:
    signal.raise_signal(signal.SIGINT)
    assert stop.requested and not stop.hurry and stop.signal_name == "SIGINT"
    signal.raise_signal(signal.SIGTERM)   # no KeyboardInterrupt: a save is never cut short
    signal.raise_signal(signal.SIGTERM)
    assert stop.hurry and stop.signal_name == "SIGINT"
  finally:
    stop.restore()


def test_a_signal_before_the_run_began_calls_before_run_after_it_is_only_noted():
  called = []
  stop = signals.StopRequest(before_run=called.append)
  try:
    signal.raise_signal(signal.SIGTERM)
    assert called == ["SIGTERM"] and stop.requested
  finally:
    stop.restore()
  stop = signals.StopRequest(before_run=called.append)
  try:
    stop.begin_run()
    signal.raise_signal(signal.SIGINT)
    assert called == ["SIGTERM"] and stop.requested and stop.signal_name == "SIGINT"
  finally:
    stop.restore()


def test_stop_on_signals_shares_the_one_in_force_or_installs_one_for_the_block():
  previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
  assert signals.current() is None
  with signals.stop_on_signals() as outer:
    assert signals.current() is outer
    with signals.stop_on_signals() as inner:
      assert inner is outer
    assert signal.getsignal(signal.SIGTERM) == outer._handle  # pylint: disable=protected-access
    signal.raise_signal(signal.SIGTERM)
    assert outer.requested
  assert signals.current() is None
  assert {sig: signal.getsignal(sig) for sig in previous} == previous


def test_children_shielded_start_with_the_stop_signals_blocked_and_none_is_lost():
  got = []
  previous = signal.signal(signal.SIGTERM, lambda signum, frame: got.append(signum))
  try:
    with signals.children_shielded():
      child = subprocess.Popen(["sleep", "30"])
      os.kill(os.getpid(), signal.SIGTERM)   # pending here, or taken by another thread
    deadline = time.monotonic() + 5
    while not got and time.monotonic() < deadline:
      time.sleep(0.01)
    assert got == [signal.SIGTERM]
    with open("/proc/%d/status" % child.pid) as f:
      blocked = int(re.search(r"^SigBlk:\s*([0-9a-f]+)", f.read(), re.M).group(1), 16)
    assert blocked & (1 << (signal.SIGTERM - 1)) and blocked & (1 << (signal.SIGINT - 1))
    child.terminate()   # blocked: it goes on
    with pytest.raises(subprocess.TimeoutExpired):
      child.wait(timeout=0.5)
  finally:
    signal.signal(signal.SIGTERM, previous)
    child.kill()
    child.wait()


def test_actor_seeds_differ_per_actor_and_restart():
  assert actor_lib.actor_seed(0, 0) == 7919
  assert actor_lib.actor_seed(3, 1, start=2) == 3000 + 2 * 7919 + 2 * 104729
  seeds = {actor_lib.actor_seed(5, i, start=k) for i in range(8) for k in range(4)}
  assert len(seeds) == 32


def test_settings_come_from_gin_else_from_the_function_defaults():
  assert config.configured_or_default(actor_lib.apex_actor, "num_envs") == 16
  assert config.configured_or_default(launcher.run_local, "num_actors") == 2
  gin.parse_config(["apex_actor.num_envs = 8", "apex_learner.batch_size = 64"])
  assert config.configured_or_default(actor_lib.apex_actor, "num_envs") == 8
  assert config.configured_or_default(learner_lib.apex_learner, "batch_size") == 64
  assert config.configured_or_default(learner_lib.apex_learner, "prefetch") == 2


def test_env_name_comes_from_the_flag_else_from_gin():
  with pytest.raises(errors.UserError, match="No environment"):
    config.env_name_or_configured(None)
  gin.parse_config(["train_eval.env_name = 'CartPole-v1'"])
  assert config.env_name_or_configured(None) == "CartPole-v1"
  assert config.env_name_or_configured("Pong") == "Pong"
