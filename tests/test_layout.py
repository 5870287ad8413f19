"""The package's import structure: one direction of imports, no cycle.

Layers, from the bottom (a module may import its own layer or the layers below it, never
one above):
  0  paac_tf.errors, paac_tf.stacks                   user-facing errors, which stack runs
  1  paac_tf.envs, paac_tf.networks, paac_tf.bookkeeping  environments, Keras models, run books
  2  paac_tf.algorithms                               the algorithm seam (registry, base) and
                                                      one package per algorithm: its settings,
                                                      model, loss or learner step, policy
                                                      outputs (no loop: the runners own it)
  3  paac_tf.policies                                 exported policies
  4  paac_tf.runners                                  train_eval, validation, dispatch (which
                                                      runner trains an algorithm), the harness
                                                      (run directory, checkpoints, cadence),
                                                      the synchronous runner (sync/: PAAC's
                                                      loop) and the Ape-X processes (replay,
                                                      actors, learner)
  5  entry points: paac_tf (the public API), paac_tf.commands (Ape-X's process programs:
     apex_replay / apex_actor / apex_learner), paac_tf.train /
     export / evaluate / plot (`python -m` runs the command)
  6  tools (the lab beside the package, not installed; tools/README.md lists its commands):
     tools.reports, tools.bench, tools.apex, tools.campaign, tools.codegen and the readers
     they share (tools.events, tools.reference_scores); it imports paac_tf, and nothing in
     paac_tf imports it
The layers above 2 reach an algorithm only through the registry (by name, at run time).
Every import counts, those inside functions too. No module below layer 5 imports an entry
point, and the import graph between modules has no cycle.
"""
import ast
import os
import re

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE_DIR = os.path.join(REPO, "paac_tf")
PACKAGE_DIRS = (PACKAGE_DIR, os.path.join(REPO, "tools"))   # the package, then the lab

LAYERS = (
    (0, ("paac_tf.errors", "paac_tf.stacks")),
    (1, ("paac_tf.envs", "paac_tf.networks", "paac_tf.bookkeeping")),
    (2, ("paac_tf.algorithms",)),
    (3, ("paac_tf.policies",)),
    (4, ("paac_tf.runners",)),
    (6, ("tools",)),
)
ENTRY_LAYER = 5


def layer_of(module):
  for layer, prefixes in LAYERS:
    if any(module == p or module.startswith(p + ".") for p in prefixes):
      return layer
  return ENTRY_LAYER


def package_modules():
  """{module name: file path} of every module in paac_tf and tools."""
  out = {}
  for package_dir in PACKAGE_DIRS:
    for base, _, files in os.walk(package_dir):
      for name in files:
        if not name.endswith(".py"):
          continue
        path = os.path.join(base, name)
        rel = os.path.relpath(path, REPO)[:-3].replace(os.sep, ".")
        out[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = path
  return out


def imports_of(path, modules):
  """The paac_tf modules that the file at `path` imports (anywhere in it)."""
  with open(path, encoding="utf-8") as f:
    tree = ast.parse(f.read(), path)
  found = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
      # `from a.b import c`: c is a module if a.b.c is one, else a name in a.b.
      names = [node.module + "." + alias.name if node.module + "." + alias.name in modules
               else node.module for alias in node.names]
    else:
      continue
    found.update(n for n in names if n in modules)
  return found


def import_graph():
  modules = package_modules()
  return {name: imports_of(path, modules) - {name} for name, path in modules.items()}


def find_cycle(graph):
  """One import cycle as a list of modules, or None."""
  state = {}

  def visit(node, stack):
    state[node] = "open"
    stack.append(node)
    for dep in sorted(graph.get(node, ())):
      if state.get(dep) == "open":
        return stack[stack.index(dep):] + [dep]
      if dep not in state:
        cycle = visit(dep, stack)
        if cycle:
          return cycle
    state[node] = "done"
    stack.pop()
    return None

  for node in sorted(graph):
    if node not in state:
      cycle = visit(node, [])
      if cycle:
        return cycle
  return None


def upward_imports(graph):
  return sorted("%s (layer %d) imports %s (layer %d)" % (m, layer_of(m), d, layer_of(d))
                for m, deps in graph.items() for d in deps if layer_of(d) > layer_of(m))


def test_no_upward_import():
  assert upward_imports(import_graph()) == []


def test_every_layer_names_modules_that_exist():
  """No phantom package: each prefix of LAYERS is a module or package of the tree."""
  modules = package_modules()
  assert [p for _, prefixes in LAYERS for p in prefixes if p not in modules] == []


def test_the_package_never_imports_the_lab():
  graph = import_graph()
  assert sorted("%s imports %s" % (m, d) for m, deps in graph.items() if not
                m.startswith("tools") for d in deps if d.startswith("tools")) == []


def test_no_import_cycle():
  assert find_cycle(import_graph()) is None


def test_the_checks_catch_what_they_should():
  """The checks themselves, on small made-up graphs."""
  assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
  assert find_cycle({"a": {"b"}, "b": set()}) is None
  assert upward_imports({"paac_tf.envs.x": {"paac_tf.runners.y"}}) == [
      "paac_tf.envs.x (layer 1) imports paac_tf.runners.y (layer 4)"]
  assert upward_imports({"paac_tf.algorithms.paac.z": {"paac_tf.runners.y"}}) == [
      "paac_tf.algorithms.paac.z (layer 2) imports paac_tf.runners.y (layer 4)"]
  assert upward_imports({"paac_tf.algorithms.paac.z": {"paac_tf.policies.y"}}) == [
      "paac_tf.algorithms.paac.z (layer 2) imports paac_tf.policies.y (layer 3)"]
  assert layer_of("paac_tf.algorithms.registry") == 2
  assert upward_imports({"paac_tf.runners.y": {"paac_tf.algorithms.paac.z"}}) == []
  assert upward_imports({"paac_tf.runners.y": {"paac_tf.envs.x"}}) == []
  assert layer_of("paac_tf.train") == ENTRY_LAYER
  assert layer_of("paac_tf.commands.apex_actor") == ENTRY_LAYER
  assert layer_of("tools.reports.compare") == 6
  assert upward_imports({"paac_tf.api": {"tools.reports.compare"}}) == [
      "paac_tf.api (layer 5) imports tools.reports.compare (layer 6)"]


@pytest.mark.parametrize("module,imported", [("paac_tf", "paac_tf.api"),
                                             ("paac_tf.envs.factory", "paac_tf.envs.atari_vector")])
def test_graph_sees_function_level_imports(module, imported):
  """paac_tf/__init__.py imports the API inside a function only (PEP 562); the factory
  imports each backend when asked for it."""
  graph = import_graph()
  assert imported in graph[module], (module, graph[module])


_DIRECTIVE = re.compile(r"(pylint:\s*[\w-]+=[\w,-]+|noqa(:\s*[\w,]+)?)")


def _reason(comment):
  """A comment's text without lint directives ('' if it is only directives)."""
  return _DIRECTIVE.sub("", comment).strip(" #()")


def lazy_imports_without_a_reason(path):
  """[(line, text)] of the imports inside functions of the file that no comment explains:
  none on the import's line, nor on the comment and import lines just above it."""
  with open(path, encoding="utf-8") as f:
    source = f.read()
  lines = source.splitlines()
  found = []
  for node in ast.walk(ast.parse(source, path)):
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
      continue
    for sub in ast.walk(node):
      if not isinstance(sub, (ast.Import, ast.ImportFrom)):
        continue
      k, explained = sub.lineno - 1, False
      while k >= 0 and not explained:
        text = lines[k].strip()
        is_import = text.startswith(("import ", "from "))
        if not (is_import or text.startswith("#")) and k != sub.lineno - 1:
          break
        comment = text[text.index("#"):] if "#" in text else ""
        explained = bool(_reason(comment))
        k -= 1
      if not explained:
        found.append((sub.lineno, lines[sub.lineno - 1].strip()))
  return found


def test_imports_inside_functions_say_why_they_are_lazy():
  """Imports go at the top of a module unless a comment says why one must be lazy (the
  tools and commands included)."""
  unexplained = []
  for module, path in sorted(package_modules().items()):
    unexplained += ["%s:%d %s" % (module, line, text)
                    for line, text in lazy_imports_without_a_reason(path)]
  assert unexplained == []


def test_the_lazy_import_check_reads_comments(tmp_path):
  path = tmp_path / "m.py"
  path.write_text("def f():\n  import os  # pylint: disable=import-outside-toplevel\n"
                  "  # Lazy: heavy.\n  import sys  # pylint: disable=import-outside-toplevel\n"
                  "  import json  # noqa: F401  (optional)\n")
  assert lazy_imports_without_a_reason(str(path)) == [
      (2, "import os  # pylint: disable=import-outside-toplevel")]
