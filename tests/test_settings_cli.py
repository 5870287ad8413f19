"""Every setting findable from the command line: `python -m paac_tf.train --list_settings`
lists a config's settings with their values, and a binding of no setting is one `error:`
line naming the closest settings (real subprocesses, as a user runs them)."""
import os
import re

import pytest

from conftest import run_module

from paac_tf.algorithms import registry
from paac_tf.bookkeeping import setting_docs
from paac_tf.runners import train_eval

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def documented():
  """{binding: Setting} of every setting of the package."""
  train_eval.load_configurables()
  return {s.binding: s for c in setting_docs.configurables() for s in c.settings}


def _listed(stdout):
  """{binding: the rest of its line} of a --list_settings output."""
  return dict(re.findall(r"^  (\S+) = (.*)$", stdout, re.M))


def test_list_settings_prints_each_setting_of_the_config_with_its_value(tmp_path, documented):
  root = tmp_path / "run"
  proc = run_module("paac_tf.train", "--gin_file=cartpole.gin", "--list_settings",
                    "--gin_bindings=paac.t_max=7", "--root_dir=%s" % root, timeout=300)
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert not root.exists()                          # nothing trained, nothing written
  listed = _listed(proc.stdout)
  header = proc.stdout.splitlines()[0]
  assert header.startswith("The %d settings of cartpole.gin for PAAC (train_eval.algorithm "
                           "= 'paac')" % len(listed)), header
  # Every setting of PAAC and of the run, none of the other algorithms' or their runner's.
  for binding in documented:
    family = binding.partition(".")[0]
    if family in ("paac", "train_eval", "make_environment"):
      assert binding in listed, binding
    if family in ("ApexLearnerStep", "ApexDpgLearnerStep", "apex_actor", "run_ray",
                  "apex_network", "apex_precision", "dpg_networks"):
      assert binding not in listed, binding
  # The value in force (the binding's, the config's, the code's default), the meaning, the
  # default where the value is another, and what the setting's check allows.
  t_max = documented["paac.t_max"]
  assert listed["paac.t_max"] == "7  # %s; default 5; allows an integer >= 1" % (
      t_max.meaning.rstrip("."))
  assert listed["paac.num_envs"].startswith("16  # ") and "default 32" in listed["paac.num_envs"]
  assert listed["paac.gamma"].startswith("0.99  # ") and "default" not in listed["paac.gamma"]
  assert listed["train_eval.env_name"].startswith("'CartPole-v1'  # the environment")
  # The algorithms as the registry has them, not as typed in a docstring (its built-in ones:
  # another test of this process may have registered one of its own).
  assert listed["train_eval.algorithm"].endswith(
      "allows one of %s" % ", ".join(repr(n) for n in registry.BUILTIN))
  assert len(registry.BUILTIN) >= 3


def test_list_settings_of_an_apex_config_lists_its_learner_and_actors(documented):
  proc = run_module("paac_tf.train", "--gin_file=apex_cartpole.gin", "--list_settings",
                    timeout=300)
  assert proc.returncode == 0, proc.stderr[-2000:]
  listed = _listed(proc.stdout)
  assert "for Ape-X (train_eval.algorithm = 'apex')" in proc.stdout.splitlines()[0]
  for binding in documented:
    family = binding.partition(".")[0]
    if family in ("ApexLearnerStep", "apex_actor", "apex_learner", "train_eval",
                  "apex_network", "apex_precision"):
      assert binding in listed, binding
    if family in ("paac", "ApexDpgLearnerStep"):
      assert binding not in listed, binding


def test_help_names_list_settings_and_the_registered_algorithms():
  proc = run_module("paac_tf.train", "--help", timeout=300)   # absl's --help exits 1
  assert "--list_settings" in proc.stdout
  assert "train_eval.algorithm   a registered algorithm: %s" % ", ".join(
      repr(n) for n in registry.BUILTIN) in proc.stdout


@pytest.mark.parametrize("binding, expected", [
    ("paac.num_envz=8",
     "error: paac.num_envz (--gin_bindings): paac has no setting num_envz; did you mean "
     "paac.num_envs or "),
    # A setting of a configurable that moved: the name it has now does not exist either.
    ("paac_train.num_envz=8",
     "error: paac_train.num_envz (--gin_bindings): paac_train's settings are paac's now, "
     "which has no setting num_envz; did you mean paac.num_envs or "),
    ("paacc.num_envs=8",
     "error: paacc.num_envs (--gin_bindings): no configurable is named paacc; did you mean "
     "paac.num_envs or "),
    ("train_eval.algoritm='apex'",
     "error: train_eval.algoritm (--gin_bindings): train_eval has no setting algoritm; did "
     "you mean train_eval.algorithm or ")])
def test_a_binding_of_no_setting_is_one_error_line_with_the_closest(tmp_path, binding,
                                                                     expected):
  proc = run_module("paac_tf.train", "--gin_file=cartpole.gin", "--root_dir=%s" % tmp_path,
                    "--gin_bindings=" + binding, timeout=300)
  assert proc.returncode == 2, proc.stderr[-2000:]
  lines = proc.stderr.strip().splitlines()
  assert [line for line in lines if line.startswith(("error:", "Traceback"))] == lines[-1:]
  assert lines[-1].startswith(expected), lines[-1]
  assert lines[-1].endswith("--list_settings`, docs/configuration.md).")
  assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("binding, expected", [
    ("run_local.seed=3",
     "error: run_local.seed (--gin_bindings): this setting was removed: the run's seed is "
     "train_eval.seed."),
    ("apex_learner.seed=3",
     "error: apex_learner.seed (--gin_bindings): this setting was removed: the run's seed is "
     "train_eval.seed."),
    ("run_ray.address='auto'",
     "error: run_ray.address (--gin_bindings): this setting was removed: the Ray cluster is "
     "train_eval.ray_address.")])
def test_a_binding_of_what_the_caller_passes_is_refused_naming_the_setting(tmp_path, binding,
                                                                            expected):
  # The launchers' seed and cluster come from train_eval: a binding of them was never read.
  proc = run_module("paac_tf.train", "--gin_file=apex_cartpole.gin",
                    "--root_dir=%s" % tmp_path, "--gin_bindings=" + binding, timeout=300)
  assert proc.returncode == 2, proc.stderr[-2000:]
  assert proc.stderr.strip().splitlines()[-1] == expected
  assert os.listdir(tmp_path) == []


def test_a_gin_file_binding_of_no_setting_names_the_file(tmp_path):
  config = tmp_path / "mine.gin"
  config.write_text("include 'cartpole.gin'\npaac.learning_rat = 0.01\n")
  proc = run_module("paac_tf.train", "--gin_file=%s" % config, "--list_settings", timeout=300)
  assert proc.returncode == 2, proc.stderr[-2000:]
  assert proc.stderr.strip().splitlines()[-1].startswith(
      "error: paac.learning_rat (%s): paac has no setting learning_rat; did you mean "
      "paac.learning_rate" % config), proc.stderr[-2000:]
