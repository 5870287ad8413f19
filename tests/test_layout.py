"""The package's import structure: one direction of imports, no cycle.

Layers, from the bottom (a module may import its own layer or the layers below it, never
one above):
  0  paac_tf.errors, paac_tf.reference_scores         plain helpers and data
  1  paac_tf.envs, paac_tf.networks, paac_tf.runtime  environments, Keras models, run support
  2  paac_tf.agents, paac_tf.policies                 each algorithm's math and compiled
                                                      steps; exported policies
  3  paac_tf.runners                                  the PAAC loop, the Ape-X processes
  4  entry points: paac_tf (the public API), paac_tf.train / export / evaluate,
     paac_tf.apex_* process commands, paac_tf.configurables, paac_tf.tools
Every import counts, those inside functions too. No module below layer 4 imports an entry
point, and the import graph between modules has no cycle.
"""
import ast
import os

import pytest

PACKAGE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "paac_tf")

LAYERS = (
    (0, ("paac_tf.errors", "paac_tf.reference_scores")),
    (1, ("paac_tf.envs", "paac_tf.networks", "paac_tf.runtime")),
    (2, ("paac_tf.agents", "paac_tf.policies")),
    (3, ("paac_tf.runners",)),
)
ENTRY_LAYER = 4


def layer_of(module):
  for layer, prefixes in LAYERS:
    if any(module == p or module.startswith(p + ".") for p in prefixes):
      return layer
  return ENTRY_LAYER


def package_modules():
  """{module name: file path} of every module in paac_tf."""
  out = {}
  for base, _, files in os.walk(PACKAGE_DIR):
    for name in files:
      if not name.endswith(".py"):
        continue
      path = os.path.join(base, name)
      rel = os.path.relpath(path, os.path.dirname(PACKAGE_DIR))[:-3].replace(os.sep, ".")
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


def test_no_import_cycle():
  assert find_cycle(import_graph()) is None


def test_the_checks_catch_what_they_should():
  """The checks themselves, on small made-up graphs."""
  assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
  assert find_cycle({"a": {"b"}, "b": set()}) is None
  assert upward_imports({"paac_tf.envs.x": {"paac_tf.runners.y"}}) == [
      "paac_tf.envs.x (layer 1) imports paac_tf.runners.y (layer 3)"]
  assert upward_imports({"paac_tf.runners.y": {"paac_tf.envs.x"}}) == []
  assert layer_of("paac_tf.train") == ENTRY_LAYER
  assert layer_of("paac_tf.tools.compare") == ENTRY_LAYER


@pytest.mark.parametrize("module", ["paac_tf.agents.paac.agent", "paac_tf.runners.paac.train_loop"])
def test_graph_sees_function_level_imports(module):
  graph = import_graph()
  assert graph[module], module
