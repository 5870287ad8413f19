"""tools/codegen/config_reference.py and paac_tf/bookkeeping/setting_docs.py: docs/configuration.md
is what the tool writes from the code, every setting in it has a meaning and its real
default, and the docstring parsing and the grouping on made-up input."""
import ast
import collections
import dataclasses
import os
import subprocess
import sys

import gin
import pytest

from paac_tf.algorithms.paac import settings as paac_settings
from paac_tf.bookkeeping import checks
from paac_tf.bookkeeping import setting_docs
from paac_tf.runners import train_eval
from tools.codegen import config_reference

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE = os.path.join(REPO, config_reference.OUTPUT)


@pytest.fixture(scope="module")
def listed():
  """{binding: Setting} of every configurable of the package, all of them registered."""
  train_eval.load_configurables()
  return {s.binding: s for c in setting_docs.configurables() for s in c.settings}


def _read_reference():
  with open(REFERENCE, encoding="utf-8") as f:
    return f.read()


def test_the_committed_reference_is_what_the_tool_writes():
  assert _read_reference() == config_reference.reference_text(), (
      "docs/configuration.md is out of date: run `%s`." % config_reference.COMMAND)


def test_every_setting_has_a_meaning(listed):
  assert sorted(b for b, s in listed.items() if not s.meaning) == [], (
      "give these parameters a `name: meaning` line in their configurable's docstring "
      "(Args: or Attributes:)")


def test_known_settings_appear_with_their_real_defaults(listed):
  text = _read_reference()
  assert "| `paac.t_max` | `5` |" in text
  assert "| `paac.num_envs` | `32` |" in text
  assert "| `train_eval.env_name` | `required` |" in text
  for field in dataclasses.fields(paac_settings.PaacSettings):   # Python literals, as gin's
    binding = "paac." + field.name
    assert listed[binding].default_text == repr(field.default), binding
    assert "| `%s` | `%s` |" % (binding, repr(field.default)) in text


def _configurables_in_the_source():
  """Counter {module: functions and classes} of paac_tf/ that a `configurable` decorator
  (gin's or checks', called or not) registers."""
  found = collections.Counter()
  for base, _, files in os.walk(os.path.join(REPO, "paac_tf")):
    for name in files:
      if not name.endswith(".py"):
        continue
      path = os.path.join(base, name)
      module = os.path.relpath(path, REPO)[:-len(".py")].replace(os.sep, ".")
      with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
      for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and any(
            getattr(getattr(d, "func", d), "attr", None) == "configurable"
            for d in node.decorator_list):
          found[module.removesuffix(".__init__")] += 1
  return found


@pytest.mark.usefixtures("listed")
def test_every_configurable_in_the_source_is_listed():
  """The listing is gin's registry after `load_configurables`: a configurable in a module it
  does not import would be missing from the reference."""
  listed_modules = collections.Counter(c.module for c in setting_docs.configurables())
  assert listed_modules == _configurables_in_the_source()


def test_every_checked_setting_is_listed(listed):
  """Every parameter of the package that declares what it allows (validation's checks) is
  in the reference (checks a test registers elsewhere are not the package's)."""
  own = [b for b in checks.declared() if gin.get_configurable(
      b.rpartition(".")[0]).__module__.startswith("paac_tf.")]
  assert own and sorted(set(own) - set(listed)) == []


def test_what_gin_does_not_bind_is_not_listed(listed):
  # Denylisted, without a default (the caller gives it), and old names config.moved and
  # config.removed refuse.
  for binding in ("train_eval.config_files", "train_eval.env", "apex_actor.seed",
                  "train_eval.root_dir", "make_environment.env_name",
                  "make_environment.num_groups", "paac.overlap_learner"):
    assert binding not in listed
  assert not [b for b in listed if b.startswith(("paac_train.", "PaacAgent."))]


def test_parameter_meanings_read_args_and_attributes_entries():
  doc = """Does a thing.

  Args:
    alpha: the first,
      continued here.
    beta, gamma: shared.
    delta:
      on the next line.
  Returns:
    epsilon: not a parameter.

  Attributes:
    zeta: an attribute.
  """
  assert setting_docs.parameter_meanings(doc) == {
      "alpha": "the first, continued here.", "beta": "shared.", "gamma": "shared.",
      "delta": "on the next line.", "zeta": "an attribute."}
  assert setting_docs.parameter_meanings("No sections; `alpha`: prose.") == {}
  assert setting_docs.parameter_meanings(None) == {}


def test_groups_come_from_the_module_path():
  assert setting_docs.group_of("paac_tf.algorithms.paac.settings") == "algorithms.paac"
  assert setting_docs.group_of("paac_tf.runners.apex.learner") == "runners.apex"
  assert setting_docs.group_of("paac_tf.runners.train_eval") == "runners"
  assert setting_docs.group_of("paac_tf.envs.environment") == "envs"
  assert setting_docs.group_package("algorithms.paac") == "paac_tf.algorithms.paac"


@pytest.mark.usefixtures("listed")
def test_the_groups_are_in_layer_order_with_titles():
  groups = list(dict.fromkeys(c.group for c in setting_docs.configurables()))
  assert groups[0] == "runners" and groups.index("algorithms.paac") < groups.index("envs")
  assert setting_docs.group_title("algorithms.paac") == "PAAC (Clemente et al. 2017)"
  assert setting_docs.group_title("envs") == "Batched environments"


def test_check_fails_on_a_stale_reference(tmp_path):
  stale = tmp_path / "configuration.md"
  stale.write_text(_read_reference().replace("| `paac.t_max` | `5` |", "| `paac.t_max` | `6` |"),
                   encoding="utf-8")
  done = subprocess.run([sys.executable, "-m", "tools.codegen.config_reference", "--check",
                         "--output=%s" % stale], cwd=REPO, capture_output=True, text=True,
                        timeout=120)
  assert done.returncode == 1 and "tools.codegen.config_reference" in done.stderr, done.stderr
