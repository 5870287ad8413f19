"""The algorithm seam (paac_tf/algorithms/): one object per algorithm, looked up by name.

What makes an algorithm lives in its package (paac_tf/algorithms/<name>/); everything else
asks the registry for the algorithm object, so no module outside an algorithm's package
names an algorithm in its code (as tests/test_layout.py enforces the layers). Docstrings,
comments and a configurable's gin `module=` (the names of existing configs) do not count.
"""
import ast
import os

import pytest

from paac_tf import errors
from paac_tf.algorithms import base
from paac_tf.algorithms import registry
from test_layout import PACKAGE_DIR, package_modules

# Where an algorithm's name may appear in code: its own package, and the registry's lines.
REGISTRY_FILE = os.path.join(PACKAGE_DIR, "algorithms", "registry.py")
# Tools that still name an algorithm, and why (not yet looked up through the registry).
NOT_YET = {
    "tools.bench.benchmark": "'apex' is a benchmark part's name (--parts=apex), as "
                             "results/benchmark records it",
    "tools.bench.benchmark_tables": "reads the benchmark's 'apex' part",
    "tools.reports.readme_glance": "the README's headline rows: the published results of "
                                   "PAAC, Ape-X and Ape-X DPG, by the names the run records "
                                   "give them (run_record.algorithm_name)",
}


def _docstrings(tree):
  out = set()
  for node in ast.walk(tree):
    if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
      body = node.body
      if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        out.add(id(body[0].value))
  return out


def _gin_module_names(tree):
  """The `module=` strings of configurable decorators (gin names, not algorithms)."""
  return {id(k.value) for node in ast.walk(tree) if isinstance(node, ast.Call)
          for k in node.keywords if k.arg == "module" and isinstance(k.value, ast.Constant)}


def names_in_code(path, algorithm_names):
  """[(line, name)] of string constants in the file's code that are an algorithm's name."""
  with open(path, encoding="utf-8") as f:
    tree = ast.parse(f.read(), path)
  skip = _docstrings(tree) | _gin_module_names(tree)
  return sorted((node.lineno, node.value) for node in ast.walk(tree)
                if isinstance(node, ast.Constant) and isinstance(node.value, str)
                and node.value.lower() in algorithm_names and id(node) not in skip)


def _own_package(path, name):
  return path.startswith(os.path.join(PACKAGE_DIR, "algorithms", name) + os.sep)


def test_no_module_outside_an_algorithms_package_names_an_algorithm():
  algorithm_names = set(registry.BUILTIN)
  found = []
  for module, path in sorted(package_modules().items()):
    if path == REGISTRY_FILE or module in NOT_YET:
      continue
    for line, name in names_in_code(path, algorithm_names):
      if not _own_package(path, name.lower()):
        found.append("%s:%d names %r" % (os.path.relpath(path, PACKAGE_DIR), line, name))
  assert found == []


def test_the_check_finds_names_in_code_only(tmp_path):
  path = tmp_path / "m.py"
  path.write_text('"""Trains paac."""\nimport gin\n\n\n@gin.configurable(module="paac")\n'
                  'def f(algorithm):\n  """apex"""\n  return algorithm == "apex"\n')
  assert names_in_code(str(path), {"paac", "apex"}) == [(8, "apex")]


def test_the_registry_holds_one_object_per_algorithm():
  for name in registry.BUILTIN:
    algorithm = registry.get(name)
    assert isinstance(algorithm, base.Algorithm) and algorithm.name == name
    assert registry.get(name) is algorithm and registry.reference(algorithm) == name
    assert registry.record(algorithm) == {"algorithm": name}
    assert algorithm.output_names[0] == "action"
  assert registry.names()[:len(registry.BUILTIN)] == tuple(registry.BUILTIN)
  with pytest.raises(errors.UserError, match="Unknown algorithm 'dqn'; known: 'paac', 'apex'"):
    registry.get("dqn")
  with pytest.raises(errors.UserError, match="Cannot import module 'no_such_module'"):
    registry.get("no_such_module:dqn")


def test_an_algorithm_from_elsewhere_registers_once_and_is_found_by_its_module():
  class Made(base.Algorithm):
    name = "made_up_for_the_seam_test"

  made = registry.register(Made())
  assert registry.register(made) is made
  with pytest.raises(ValueError, match="registered already"):
    registry.register(Made())
  assert registry.names()[-1] == made.name
  assert registry.reference(made) == "test_algorithm_seam:" + made.name
  assert registry.record(made) == {"algorithm": made.name,
                                   "algorithm_module": "test_algorithm_seam"}
  assert registry.get("test_algorithm_seam:" + made.name) is made
