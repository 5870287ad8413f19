"""The Bazel BUILD file covers every module and test and names only files that exist; and
the wheel that `pip wheel .` builds ships the configs.

Debian's bazel cannot fetch its rules offline here, so this checks the BUILD file itself.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

from conftest import REPO


def _build_text():
  with open(os.path.join(REPO, "BUILD")) as f:
    return f.read()


def _rules(text):
  return re.findall(r'(py_library|py_binary|py_test)\(\s*name = "([^"]+)",\s*srcs = \[([^\]]*)\]',
                    text)


def test_every_module_and_test_has_a_target():
  text = _build_text()
  srcs_by_kind = {}
  for kind, _, srcs in _rules(text):
    for src in re.findall(r'"([^"]+)"', srcs):
      srcs_by_kind.setdefault(kind, set()).add(src)
  for base, dirs, files in os.walk(os.path.join(REPO, "paac_tf")):
    dirs[:] = [d for d in dirs if d != "__pycache__"]
    for f in files:
      if f.endswith(".py"):
        rel = os.path.relpath(os.path.join(base, f), REPO)
        assert rel in srcs_by_kind["py_library"], "no py_library for %s" % rel
  for f in os.listdir(os.path.join(REPO, "tests")):
    if f.startswith("test_") and f.endswith(".py"):
      assert "tests/" + f in srcs_by_kind["py_test"], "no py_test for tests/%s" % f
  for entry in ("train", "export", "evaluate"):
    assert "paac_tf/%s.py" % entry in srcs_by_kind["py_binary"], entry


def test_every_target_names_existing_files_and_known_deps():
  text = _build_text()
  rules = _rules(text)
  names = {name for _, name, _ in rules}
  assert len(names) == len(rules), "duplicate target names"
  for _, _, srcs in rules:
    for src in re.findall(r'"([^"]+)"', srcs):
      assert os.path.isfile(os.path.join(REPO, src)), src
  for dep in re.findall(r'"\:([^"]+)"', text):
    assert dep in names, "unknown dep :%s" % dep


def test_build_is_up_to_date_with_the_tree():
  proc = subprocess.run([sys.executable, "-m", "tools.codegen.gen_build", "--check"],
                        cwd=REPO, capture_output=True, text=True)
  assert proc.returncode == 0, proc.stdout + proc.stderr


def _source_copy(destination):
  """The files of the working tree that git tracks or would (not the ignored ones: no
  build/, *.egg-info, .venv), but results/ (the runs' records, not the package), copied to
  `destination`: a wheel built there leaves the repository untouched."""
  listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard",
                           "-z"], cwd=REPO, capture_output=True, text=True, check=True)
  for rel in filter(None, listed.stdout.split("\0")):
    source = os.path.join(REPO, rel)
    if rel.startswith("results/") or not os.path.isfile(source):   # (deleted, not staged)
      continue
    os.makedirs(os.path.join(destination, os.path.dirname(rel)), exist_ok=True)
    shutil.copy2(source, os.path.join(destination, rel))


@pytest.mark.timeout(600)   # (about 6 s on 2 cores: no build isolation, nothing fetched)
def test_the_wheel_ships_the_configs_and_an_install_finds_them(tmp_path):
  """`pip wheel .`: the top-level configs/ go into the wheel as the package data
  paac_tf/configs/*.gin (setup.py's package_dir), and a wheel installed elsewhere resolves
  a bare config name inside itself, from a directory that is not the repository."""
  made_by_builds = lambda: {f for f in os.listdir(REPO)
                            if f in ("build", "dist") or f.endswith(".egg-info")}
  before = made_by_builds()
  source, wheels, target, elsewhere = (tmp_path / d for d in ("src", "wheels", "site", "cwd"))
  for d in (source, wheels, target, elsewhere):
    d.mkdir()
  _source_copy(str(source))
  build = subprocess.run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps",
                          "--no-build-isolation", "-w", str(wheels)],
                         cwd=str(source), capture_output=True, text=True, timeout=300)
  assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
  built = [f for f in os.listdir(wheels) if f.endswith(".whl")]
  assert len(built) == 1 and built[0].startswith("paac_tf-"), built
  wheel = os.path.join(str(wheels), built[0])
  with zipfile.ZipFile(wheel) as archive:
    names = set(archive.namelist())
  shipped = sorted(os.path.basename(p) for p in glob.glob(os.path.join(REPO, "configs", "*.gin")))
  assert "atari.gin" in shipped
  assert not ["paac_tf/configs/" + c for c in shipped if "paac_tf/configs/" + c not in names]
  assert not [n for n in names if n.startswith("configs/")]   # not a top-level package
  assert "paac_tf/algorithms/paac/settings.py" in names and "paac_tf/train.py" in names

  install = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--target",
                            str(target), wheel], capture_output=True, text=True, timeout=300)
  assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
  code = ("import paac_tf; from paac_tf.bookkeeping import config; "
          "print(paac_tf.__file__); print(config.resolve_gin_file('atari.gin'))")
  proc = subprocess.run([sys.executable, "-c", code], cwd=str(elsewhere), capture_output=True,
                        text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(target)))
  assert proc.returncode == 0, proc.stderr[-3000:]
  package_file, resolved = proc.stdout.strip().splitlines()[-2:]
  site = os.path.realpath(str(target))
  assert os.path.realpath(package_file).startswith(site + os.sep), package_file
  assert os.path.realpath(resolved) == os.path.join(site, "paac_tf", "configs", "atari.gin")
  with open(resolved) as installed, open(os.path.join(REPO, "configs", "atari.gin")) as ours:
    assert installed.read() == ours.read()
  assert made_by_builds() == before   # no build/, dist/ nor *.egg-info made in the repository
