"""The two stacks (paac_tf/stacks.py): which Python gets which, setup.py's markers, the
version check, Keras 2 on the current stack, and Ape-X's one-line refusal without Reverb."""
import os
import subprocess
import sys

import gin
import pytest
import setuptools
from packaging.requirements import Requirement

from conftest import REPO
from paac_tf import errors
from paac_tf import stacks
from paac_tf.runners import dispatch


@pytest.mark.parametrize("version, name", [((3, 8), None), ((3, 9), "reference"),
                                           ((3, 11), "reference"), ((3, 12), "current"),
                                           ((3, 13), "current"), ((3, 14), None)])
def test_each_python_gets_its_stack(version, name):
  stack = stacks.stack_for(version + (0,))
  assert (stack.name if stack else None) == name


def _setup_kwargs():
  """setup()'s arguments, read by running setup.py with setuptools.setup captured."""
  captured = {}
  with open(os.path.join(REPO, "setup.py"), encoding="utf-8") as f:
    code = compile(f.read(), "setup.py", "exec")
  cwd, original = os.getcwd(), setuptools.setup
  os.chdir(REPO)   # setup.py opens README.md
  setuptools.setup = captured.update
  try:
    exec(code, {"__name__": "setup", "__file__": "setup.py"})   # pylint: disable=exec-used
  finally:
    setuptools.setup = original
    os.chdir(cwd)
  return captured


def _requirements_for(kwargs, version):
  """{project name: specifier} of setup.py's run-time requirements on Python `version`."""
  environment = {"python_version": "%d.%d" % version}
  out = {}
  for line in kwargs["install_requires"]:
    req = Requirement(line)
    if req.marker is None or req.marker.evaluate(environment):
      out[req.name] = (str(req.specifier), sorted(req.extras))
  return out


@pytest.mark.parametrize("version", [(3, 9), (3, 11), (3, 12), (3, 13)])
def test_setup_markers_give_each_python_its_stack(version):
  kwargs = _setup_kwargs()
  requirements = _requirements_for(kwargs, version)
  if stacks.stack_for(version).name == "reference":
    assert requirements["tensorflow"] == ("==2.15.1", [])
    assert requirements["tf-agents"] == ("==0.19.0", ["reverb"])
    assert "tf-keras" not in requirements
  else:
    assert requirements["tensorflow"][0] in ("<2.22,>=2.20", ">=2.20,<2.22")
    assert "tf-keras" in requirements and "tensorboard" in requirements
    assert "pygame" in requirements
    assert "tf-agents" not in requirements   # requirements-no-deps.txt, with --no-deps


def test_python_requires_spans_both_stacks():
  first, last = stacks.REFERENCE.first_python, stacks.CURRENT.last_python
  assert _setup_kwargs()["python_requires"] == ">=%d.%d,<%d.%d" % (first + (last[0],
                                                                            last[1] + 1))


def test_the_makefile_installs_the_no_deps_requirements_on_the_current_stack():
  with open(os.path.join(REPO, "requirements-no-deps.txt"), encoding="utf-8") as f:
    pinned = [line.strip() for line in f if line.strip() and not line.startswith("#")]
  assert [line.split("==")[0] for line in pinned] == ["tf-agents", "gym", "gym_notices"]
  assert pinned == [requirement for requirement, _ in stacks.UNPINNED]   # the commands' check
  with open(os.path.join(REPO, "Makefile"), encoding="utf-8") as f:
    makefile = f.read()
  assert "pip install --no-deps -r requirements-no-deps.txt" in makefile
  assert '$(PYTHON) -c "import paac_tf"' in makefile   # the version check stops make first


@pytest.mark.parametrize("version, absent, expected", [
    ((3, 12), {"tf_agents"}, ["tf-agents==0.19.0"]),
    ((3, 13), {"gym", "gym_notices"}, ["gym==0.23.0", "gym_notices==0.1.0"]),
    ((3, 12), set(), []),
    ((3, 11), {"tf_agents", "gym"}, [])])   # the reference stack installs them with pip
def test_the_unpinned_requirements_missing_are_named(version, absent, expected):
  def find_spec(module):
    return None if module in absent else object()
  assert stacks.missing_unpinned(version, find_spec) == expected


def test_the_missing_unpinned_message_is_the_command_to_run():
  assert stacks.unpinned_message(["tf-agents==0.19.0", "gym==0.23.0"]) == (
      "Not installed: tf-agents==0.19.0, gym==0.23.0. On Python 3.12-3.13 (the current "
      "stack) they are installed after paac_tf, without their pins: pip install --no-deps "
      "tf-agents==0.19.0 gym==0.23.0 (make does it; docs/install.md).")


# A pip install without the current stack's --no-deps step, on either stack: Python 3.12 as
# the version check sees it and tf-agents unimportable (sys.modules[name] = None hides it from
# importlib.util.find_spec); the process ends before anything loads TensorFlow.
_WITHOUT_TF_AGENTS = ("import runpy, sys; sys.version_info = (3, 12, 0, 'final', 0); "
                      "sys.modules['tf_agents'] = None; ")


@pytest.mark.parametrize("command, flags", [
    ("paac_tf.train", ["--gin_file=cartpole.gin"]),
    ("paac_tf.evaluate", ["--policy_dir=nowhere"]),
    ("paac_tf.export", ["--root_dir=nowhere"])])
def test_a_command_without_tf_agents_on_the_current_stack_is_one_error_line(command, flags,
                                                                            tmp_path):
  code = _WITHOUT_TF_AGENTS + "sys.argv = %r; runpy.run_module(%r, run_name='__main__', " \
      "alter_sys=True)" % ([command] + flags, command)
  proc = subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path), capture_output=True,
                        text=True, timeout=120, check=False)
  assert proc.returncode == 2, proc.stderr[-2000:]
  assert proc.stderr == "error: %s\n" % stacks.unpinned_message(["tf-agents==0.19.0"])
  assert os.listdir(str(tmp_path)) == []   # nothing made


def test_the_api_without_tf_agents_on_the_current_stack_says_what_to_install():
  code = _WITHOUT_TF_AGENTS + (
      "import paac_tf\ntry:\n  paac_tf.train\nexcept ImportError as e:\n  print(e)\n"
      "print('tensorflow' in sys.modules)")
  proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                        timeout=120, check=True)
  assert proc.stdout == "%s\nFalse\n" % stacks.unpinned_message(["tf-agents==0.19.0"])


@pytest.mark.parametrize("version", [(3, 8), (3, 14)])
def test_an_unsupported_python_stops_at_once_naming_both_stacks(version):
  code = "import sys; sys.version_info = (%d, %d, 0, 'final', 0); import paac_tf" % version
  proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                        check=False)
  assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
  assert "Python 3.9-3.11 (reference stack" in proc.stderr
  assert "Python 3.12-3.13 (current stack" in proc.stderr
  assert "this is Python %d.%d" % version in proc.stderr


@pytest.mark.parametrize("version, expected", [((3, 11), None), ((3, 12), "1"), ((3, 13), "1")])
def test_keras_2_is_selected_on_the_current_stack_only(version, expected):
  environ = {}
  stacks.select_keras_2(environ, version)
  assert environ.get(stacks.LEGACY_KERAS) == expected


def test_this_process_runs_keras_2():
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  # Keras 2's Layer has `output_shape`; Keras 3's (TF >= 2.16 without TF_USE_LEGACY_KERAS)
  # does not.
  assert hasattr(tf.keras.layers.Layer, "output_shape"), tf.keras.layers.Layer.__module__


def test_without_reverb_ape_x_is_refused_naming_the_reference_stack(monkeypatch):
  monkeypatch.setattr(stacks, "has_reverb", lambda: False)
  with pytest.raises(errors.UserError) as e:
    stacks.require_reverb("Ape-X", version=(3, 12))
  assert "reference stack: TensorFlow 2.15.1" in str(e.value)
  assert "This is Python 3.12, the current stack, without dm-reverb" in str(e.value)
  assert dispatch.unavailable_configurables()[:2] == ("apex_replay", "ReplayLayout")


# Runs the training command as `python -m paac_tf.train` does, with Reverb unimportable
# (sys.modules[name] = None hides it from importlib.util.find_spec), so both stacks test it.
_WITHOUT_REVERB = ("import runpy, sys; sys.modules['reverb'] = None; sys.argv = %r; "
                   "runpy.run_module('paac_tf.train', run_name='__main__', alter_sys=True)")


@pytest.mark.parametrize("gin_file, binding, name", [
    ("apex_cartpole.gin", None, "Ape-X (train_eval.algorithm = 'apex')"),
    ("cartpole.gin", "train_eval.algorithm='apex_dpg'",
     "Ape-X DPG (train_eval.algorithm = 'apex_dpg')")])
def test_ape_x_without_reverb_is_one_error_line_and_exit_2(tmp_path, gin_file, binding, name):
  root = str(tmp_path / "run")
  argv = ["paac_tf.train", "--gin_file=" + gin_file, "--root_dir=" + root]
  argv += ["--gin_bindings=" + binding] if binding else []
  proc = subprocess.run([sys.executable, "-c", _WITHOUT_REVERB % argv], cwd=REPO,
                        capture_output=True, text=True, timeout=300, check=False)
  assert proc.returncode == 2, proc.stderr[-2000:]
  assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
  last = proc.stderr.strip().splitlines()[-1]
  assert last.startswith("error: %s needs Reverb, which only the reference stack has: "
                         "Python 3.9-3.11" % name), last
  assert not os.path.exists(root)   # refused before the run directory is made


@pytest.mark.reverb
def test_the_replay_runner_configurables_are_the_ones_dispatch_names():
  dispatch.load_configurables()
  registry = gin.config._REGISTRY   # pylint: disable=protected-access
  registered = {c.name for _, c in registry.items()
                if c.wrapped.__module__.startswith("paac_tf.runners.apex.")}
  assert registered == set(dispatch.REPLAY_CONFIGURABLES)
