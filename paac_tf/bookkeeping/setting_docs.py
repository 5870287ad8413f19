"""Every gin setting of the package, read from the code: each configurable's gin name, the
module that defines it, its group, and its settings with their defaults and meanings.

  train_eval.load_configurables()            # the caller registers them first
  for c in setting_docs.configurables():
    for s in c.settings:
      print(s.binding, s.default_text, s.meaning)   # paac.t_max 5 steps per rollout; ...
  print("\n".join(setting_docs.listing(setting_docs.configurables())))   # after a parse

A setting is what gin binds and writes in a run's operative config: a parameter of a
configurable that its denylist (or allowlist) leaves to gin and that has a default
(`gin.REQUIRED`: it must be bound); a parameter without a default is the caller's to give.
Its meaning is its entry in the docstring's `Args:` or `Attributes:` section (Google style:
`name: meaning`, `a, b: meaning` for parameters that share one), on one line ('' where
there is none). Old names that `config.moved` / `config.removed` refuse are not settings.

The group is what a setting configures, taken from where its configurable lives: the
package of its module, a layer's subpackage where it is in one ('algorithms.paac',
'runners.apex'), else the layer ('runners', 'envs', 'networks'); its title is the first
phrase of that package's docstring. Plain data for tools/codegen/config_reference.py (which writes
docs/configuration.md) and for `python -m paac_tf.train --list_settings` (`listing`: each
setting with its value under the parsed configuration); this module registers nothing
itself and imports no layer above it.
"""
import dataclasses
import inspect
import re
import sys
from typing import Any, Tuple

import gin

from paac_tf import errors
from paac_tf.bookkeeping import checks
from paac_tf.bookkeeping import config

PACKAGE = config.PACKAGE
# The layers from the run down to its books (tests/test_layout.py): the order of the groups;
# a group of a layer not named here comes last.
LAYER_ORDER = ("runners", "algorithms", "envs", "networks", "policies", "bookkeeping")
SECTIONS = ("Args:", "Attributes:")
REQUIRED = "required"   # the default text of a `gin.REQUIRED` parameter
_ENTRY = re.compile(r"^([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*:\s*(.*)$")


@dataclasses.dataclass(frozen=True)
class Setting:
  """One parameter gin binds: `configurable`.`name` (e.g. 'paac' and 't_max')."""
  configurable: str
  name: str
  default: Any      # gin.REQUIRED where it must be bound
  meaning: str      # on one line; '' where the docstring has none

  @property
  def binding(self):
    """'paac.t_max': what a gin file or --gin_bindings binds."""
    return "%s.%s" % (self.configurable, self.name)

  @property
  def required(self):
    return self.default is gin.REQUIRED

  @property
  def default_text(self):
    """The default as a gin file writes it ('5', "'arch_nips'", '(64, 64)', 'None'), or
    'required'."""
    return REQUIRED if self.required else _literal(self.default, self.binding)


def _literal(value, name):
  """`value` as gin reads it back (`config.gin_literal`, a tuple without its trailing
  comma); its repr where gin has no literal for it."""
  if isinstance(value, tuple) and len(value) != 1:
    return "(%s)" % ", ".join(_literal(v, name) for v in value)
  try:
    return config.gin_literal(value, name)
  except errors.ConfigError:   # e.g. an object: no default of the package's is one
    return repr(value)


@dataclasses.dataclass(frozen=True)
class Configurable:
  """A gin configurable of the package: its gin `name` (what a binding starts with), the
  `module` that defines it, its `group`, its `settings` in signature order and its gin
  `namespace` (an algorithm's, e.g. 'apex' for `apex_network`, or the module's path)."""
  name: str
  module: str
  group: str
  settings: Tuple[Setting, ...]
  namespace: str = ""


def parameter_meanings(doc):
  """{parameter: meaning on one line} from the entries of the docstring's `Args:` and
  `Attributes:` sections: `name: meaning` or `a, b: meaning` lines, an entry continued on
  the lines indented below it; a section ends at a line indented as its heading or less."""
  entries = []           # [names, [text parts]]
  heading = indent = None
  for line in inspect.cleandoc(doc or "").splitlines():
    text = line.strip()
    depth = len(line) - len(line.lstrip())
    if text in SECTIONS:
      heading, indent = depth, None
      continue
    if heading is None or not text:
      continue
    if depth <= heading:
      heading = None
      continue
    indent = depth if indent is None else indent
    match = _ENTRY.match(text) if depth == indent else None
    if match:
      entries.append(([n.strip() for n in match.group(1).split(",")], [match.group(2)]))
    elif depth > indent and entries:
      entries[-1][1].append(text)
  return {name: " ".join(" ".join(parts).split()) for names, parts in entries
          for name in names}


def _is_package(module):
  return hasattr(sys.modules.get(module), "__path__")


def group_of(module):
  """The group of a configurable defined in `module`: 'algorithms.paac' for
  paac_tf.algorithms.paac.settings, 'runners' for paac_tf.runners.train_eval, '' for a
  module of paac_tf itself."""
  parts = module.split(".")[1:]
  if not _is_package(module):
    parts = parts[:-1]
  return ".".join(parts[:2])


def group_package(group):
  """The package of `group`: 'paac_tf.algorithms.paac'."""
  return ".".join([PACKAGE] + ([group] if group else []))


def group_title(group):
  """The first phrase of the group's package docstring, up to its first colon (else its first
  line), e.g. 'PAAC (Clemente et al. 2017)'; '' where the package has none."""
  doc = inspect.getdoc(sys.modules.get(group_package(group))) or ""
  first = " ".join(doc.split("\n\n")[0].split())
  return first.split(":")[0].strip() if ":" in first else doc.partition("\n")[0].strip()


def _group_key(group):
  layer = group.partition(".")[0]
  return (LAYER_ORDER.index(layer) if layer in LAYER_ORDER else len(LAYER_ORDER), group)


def configurables():
  """Every registered configurable of the package (`Configurable`), by group (the layers
  from the run down, `LAYER_ORDER`), then by name."""
  found = []
  for c in config.package_configurables():
    meanings = parameter_meanings(inspect.getdoc(c.wrapped))
    settings = tuple(Setting(c.name, p.name, p.default, meanings.get(p.name, ""))
                     for p in config.settable_parameters(c))
    module = c.wrapped.__module__
    found.append(Configurable(c.name, module, group_of(module), settings, c.module or ""))
  return sorted(found, key=lambda c: (_group_key(c.group), c.name.lower()))


def value_text(setting):
  """The setting's value under the parsed gin configuration (its default where nothing binds
  it), as a gin file writes it, or 'required'."""
  value = config.configured(setting.binding, setting.default)
  return REQUIRED if value is gin.REQUIRED else _literal(value, setting.binding)


def setting_line(setting, allowed=None):
  """'  paac.num_envs = 16  # the number of ...; default 32; allows an integer >= 1': the
  value in force, the meaning, the default where the value is another, and what the
  setting's check (`checks.Check`) allows, `allowed`, where it declares one."""
  value = value_text(setting)
  notes = [setting.meaning.rstrip(".")] if setting.meaning else []
  if value != setting.default_text:
    notes.append("default %s" % setting.default_text)
  if allowed:
    notes.append("allows %s" % allowed)
  return "  %s = %s%s" % (setting.binding, value, "  # " + "; ".join(notes) if notes else "")


def listing(found):
  """Lines that list the settings of the configurables `found` (`configurables()`), a heading
  per group (its title and package), then `setting_line` each, with the words of the checks
  the signatures declare (`checks.declared`)."""
  declared = checks.declared()
  lines, group = [], None
  for configurable in found:
    if not configurable.settings:
      continue
    if configurable.group != group or not lines:
      group = configurable.group
      package = group_package(group).replace(".", "/") + "/"
      title = group_title(group)
      lines += ["", "%s (%s):" % (title, package) if title else package + ":"]
    for s in configurable.settings:
      check = declared.get(s.binding)
      lines.append(setting_line(s, check.allowed if check else None))
  return lines
