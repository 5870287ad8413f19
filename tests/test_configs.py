"""The shipped configs (configs/, package data): each one parses and passes the CLI's
checks in process; and (`make test-system`) each one runs through the CLI from a directory
outside the repository (bare names and `include`s resolve inside the package), shortened by
bindings to a few hundred agent steps."""
import glob
import os

import gin
import pytest

from conftest import REPO, run_module

from paac_tf import errors
from paac_tf.runners import train_eval
from paac_tf.runners import validation
from paac_tf.bookkeeping import config

train_eval.load_configurables()   # the configurables the configs name

SHORT = "--gin_bindings=train_eval.total_steps=%d"
PAAC_SMALL = ("--gin_bindings=paac.num_envs=8", "--gin_bindings=paac.num_workers=1")
APEX_SMALL = ("--gin_bindings=run_local.num_actors=1",
              "--gin_bindings=apex_replay.learning_starts=200",
              "--gin_bindings=apex_replay.capacity=10000")
# Per config: agent steps and the bindings that make the run small; every shipped config
# must be listed here.
RUNS = {
    "atari.gin": (400, PAAC_SMALL),
    "atari_fast.gin": (400, PAAC_SMALL),
    "atari_nature.gin": (400, PAAC_SMALL),
    "atari_paper.gin": (400, PAAC_SMALL),
    "cartpole.gin": (400, PAAC_SMALL),
    "apex_cartpole.gin": (2000, APEX_SMALL),
    "apex_atari.gin": (1000, APEX_SMALL + ("--gin_bindings=apex_actor.num_envs=4",
                                           "--gin_bindings=apex_learner.batch_size=32")),
    "apex_atari_small.gin": (1000, APEX_SMALL + ("--gin_bindings=apex_actor.num_envs=4",
                                                 "--gin_bindings=apex_learner.batch_size=32")),
    "apex_dpg_pendulum.gin": (2000, APEX_SMALL + ("--gin_bindings=apex_learner.batch_size=32",)),
    # HalfCheetah-v5: needs the mujoco extra (pip install -e '.[mujoco]').
    "apex_dpg.gin": (1000, APEX_SMALL + ("--gin_bindings=apex_actor.num_envs=4",
                                         "--gin_bindings=apex_learner.batch_size=32")),
    "apex_dpg_small.gin": (1000, APEX_SMALL + ("--gin_bindings=apex_actor.num_envs=4",
                                               "--gin_bindings=apex_learner.batch_size=32",
                                               "--gin_bindings=apex_replay.samples_per_insert=8.0")),
}


@pytest.mark.parametrize("name", sorted(n for n in RUNS if n.startswith("apex_")))
def test_every_apex_config_checkpoints_its_replay_on_resume(name):
  # A resumed Ape-X run restores its replay (run_local.checkpoint_replay, the launcher's
  # default) unless a config turns it off: none of the shipped ones does.
  from paac_tf.runners.apex import launcher  # pylint: disable=import-outside-toplevel
  gin.clear_config()
  try:
    config.parse([name], [])
    assert config.configured_or_default(launcher.run_local, "checkpoint_replay") is True
  finally:
    gin.clear_config()


@pytest.mark.parametrize("name", sorted(RUNS))
def test_shipped_config_parses_and_passes_every_check_in_process(name):
  # What the CLI checks before it makes a run directory (every bound value against its
  # parameter's check, the algorithm's own, the environment's actions); the whole run of
  # each config, shortened, is test_shipped_config_runs_through_the_cli (`make test-system`).
  gin.clear_config()
  try:
    config.parse([name], [])
    validation.check_bindings()
  finally:
    gin.clear_config()


def test_every_shipped_config_has_a_short_run():
  assert sorted(RUNS) == config.available_configs()
  assert all(os.path.dirname(config.resolve_gin_file(name)) == config.CONFIGS_DIR
             for name in RUNS)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", sorted(RUNS))
@pytest.mark.system   # a whole run: `make test-system` (.ci/run's second step)
def test_shipped_config_runs_through_the_cli(name, tmp_path):
  steps, bindings = RUNS[name]
  root = str(tmp_path / "run")
  proc = run_module("paac_tf.train", "--gin_file=" + name, "--root_dir=" + root,
                    SHORT % steps, *bindings, timeout=300, cwd=str(tmp_path),
                    env={"PYTHONPATH": REPO})
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
  exported = glob.glob(os.path.join(root, "policies", "*", "*", "saved_model.pb"))
  assert exported, os.listdir(root)
  assert int(exported[0].split(os.sep)[-2]) >= steps   # the export's version: its agent step
  with open(os.path.join(root, "operative_config.gin")) as f:
    operative = f.read()
  assert "train_eval.total_steps = %d" % steps in operative
  if name.startswith("atari_"):   # includes atari.gin, found beside it
    assert "train_eval.env_name = 'Pong'" in operative
  if name == "apex_atari_small.gin":   # the learner's TF threads took effect in the launcher
    assert "Learner TF threads: 2 intra-op, 1 inter-op" in proc.stderr, proc.stderr[-3000:]


def test_a_users_include_resolves_beside_the_including_file(tmp_path, monkeypatch):
  (tmp_path / "configs").mkdir()
  (tmp_path / "configs" / "base.gin").write_text(
      "train_eval.env_name = 'CartPole-v1'\ntrain_eval.total_steps = 100\n")
  (tmp_path / "configs" / "mine.gin").write_text(
      "include 'base.gin'\ntrain_eval.total_steps = 200\n")
  (tmp_path / "broken.gin").write_text("include 'nowhere.gin'\n")
  monkeypatch.chdir(tmp_path)          # neither file is in the current directory
  gin.clear_config()
  try:
    config.parse([os.path.join("configs", "mine.gin")], [])
    assert config.configured("train_eval.env_name") == "CartPole-v1"
    assert config.configured("train_eval.total_steps") == 200
    gin.clear_config()
    with pytest.raises(errors.ConfigError, match="nowhere.gin"):   # not an OSError traceback
      config.parse(["broken.gin"], [])
  finally:
    gin.clear_config()
