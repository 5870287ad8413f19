"""The Bazel BUILD file covers every module and test and names only files that exist.

Debian's bazel cannot fetch its rules offline here, so this checks the BUILD file itself.
"""
import os
import re
import subprocess
import sys

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
  proc = subprocess.run([sys.executable, "-m", "tools.gen_build", "--check"],
                        cwd=REPO, capture_output=True, text=True)
  assert proc.returncode == 0, proc.stdout + proc.stderr
