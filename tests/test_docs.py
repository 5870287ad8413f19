"""README.md, docs/*.md and tools/README.md: short README, every link and path they name
exists, and the tools' index lists every command of tools/.

Checked in each document: markdown links and images to local files (relative to the
document; `#anchors` against the target's headings), repository paths in inline code
(`paac_tf/...`, `tests/...`, `tools/...`, `results/...`, `docs/...`), test files
(`test_x.py`, in tests/) and configs (`x.gin`, in configs/) named in inline code, and
the modules and scripts of `python -m paac_tf...` / `python -m tools...` /
`python tools/...` commands.
"""
import glob
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO

README = os.path.join(REPO, "README.md")
README_MAX_LINES = 220
README_MAX_WORDS = 1300   # a landing page (issue 55): what, the two commands, the headline
PAGE_MAX_WORDS = 3000     # a docs page, and results/README.md (an index)
DOCUMENTS = [README] + sorted(glob.glob(os.path.join(REPO, "docs", "*.md")))
TOOLS_INDEX = os.path.join(REPO, "tools", "README.md")
CHECKED = DOCUMENTS + [TOOLS_INDEX]   # links, paths and commands checked in each

_FENCE = re.compile(r"^```.*?^```[^\n]*$", re.S | re.M)
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_REPO_PATH = re.compile(r"^(?:paac_tf|tests|tools|results|docs)/[\w./-]*$")
_TEST_FILE = re.compile(r"^test_\w+\.py$")
_GIN_FILE = re.compile(r"^\w+\.gin$")
_MODULE = re.compile(r"python -m ((?:paac_tf|tools)(?:\.[a-z_][a-z0-9_]*)+)")   # not `.X`
_SCRIPT = re.compile(r"python (tools/[\w/]+\.py)")


def _read(path):
  with open(path, encoding="utf-8") as f:
    return f.read()


def _prose(text):
  """The text without fenced or indented code blocks (inline code is kept)."""
  text = _FENCE.sub("", text)
  return "\n".join(line for line in text.splitlines()
                   if not line.startswith(("    ", "\t")))


def _slug(heading):
  """GitHub's anchor for a heading."""
  heading = re.sub(r"[^\w\- ]", "", heading.strip().lower())
  return heading.replace(" ", "-")


def _anchors(path):
  return {_slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", _FENCE.sub("", _read(path)),
                                                 re.M)}


def _module_exists(module):
  base = os.path.join(REPO, *module.split("."))
  return os.path.isfile(base + ".py") or os.path.isfile(os.path.join(base, "__init__.py"))


def _name(path):
  return os.path.relpath(path, REPO)


def test_readme_is_short():
  with open(README, encoding="utf-8") as f:
    lines = f.read().splitlines()
  assert len(lines) < README_MAX_LINES, "README.md has %d lines" % len(lines)


def _words(path):
  return len(_read(path).split())      # as `wc -w` counts them


def test_readme_docs_pages_and_results_index_are_read_in_minutes():
  assert _words(README) <= README_MAX_WORDS, "README.md has %d words" % _words(README)
  for doc in DOCUMENTS[1:] + [os.path.join(REPO, "results", "README.md")]:
    assert _words(doc) <= PAGE_MAX_WORDS, "%s has %d words" % (_name(doc), _words(doc))


def test_docs_folder_is_linked_from_the_readme():
  linked = {os.path.normpath(os.path.join(REPO, t.split("#")[0]))
            for t in _LINK.findall(_prose(_read(README)))}
  for doc in DOCUMENTS[1:]:
    assert doc in linked, "%s is not linked from README.md" % _name(doc)


@pytest.mark.parametrize("doc", CHECKED, ids=_name)
def test_local_links_resolve(doc):
  broken = []
  for target in _LINK.findall(_prose(_read(doc))):
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):      # http:, https:, mailto:
      continue
    path, _, anchor = target.partition("#")
    full = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
    if not os.path.exists(full):
      broken.append(target)
    elif anchor and full.endswith(".md") and anchor not in _anchors(full):
      broken.append(target + " (no such heading)")
  assert not broken, "%s: broken links %s" % (_name(doc), broken)


@pytest.mark.parametrize("doc", CHECKED, ids=_name)
def test_paths_named_in_inline_code_exist(doc):
  missing = []
  for span in _CODE_SPAN.findall(_prose(_read(doc))):
    span = span.strip()
    if _REPO_PATH.match(span):
      path = span
    elif _TEST_FILE.match(span):
      path = os.path.join("tests", span)
    elif _GIN_FILE.match(span):
      path = os.path.join("configs", span)
    else:
      continue
    if not os.path.exists(os.path.join(REPO, path)):
      missing.append(span)
  assert not missing, "%s names paths that do not exist: %s" % (_name(doc), missing)


@pytest.mark.parametrize("doc", CHECKED, ids=_name)
def test_commands_name_existing_modules_and_scripts(doc):
  text = _read(doc)
  missing = [m for m in _MODULE.findall(text) if not _module_exists(m)]
  missing += [s for s in _SCRIPT.findall(text) if not os.path.isfile(os.path.join(REPO, s))]
  assert not missing, "%s runs modules or scripts that do not exist: %s" % (_name(doc),
                                                                            sorted(set(missing)))


def _command_modules():
  """The modules of tools/ that run as commands (`python -m tools.x.y`)."""
  found = []
  for path in sorted(glob.glob(os.path.join(REPO, "tools", "**", "*.py"), recursive=True)):
    if '__name__ == "__main__"' in _read(path):
      found.append(_name(path)[:-3].replace(os.sep, "."))
  return found


def test_tools_index_lists_every_command():
  """tools/README.md has a line `python -m tools.x.y` for each command module of tools/."""
  listed = set(_MODULE.findall(_read(TOOLS_INDEX)))
  commands = _command_modules()
  assert len(commands) > 20, commands          # the walk found the sub-packages
  missing = [m for m in commands if m not in listed]
  assert not missing, "tools/README.md lists no line for %s" % missing


def _readme_script():
  """The README's From-Python script, and the output its closing comment states: its `# `
  lines, each without a note after three spaces ('   (printed by a run here; ...)')."""
  text = _read(README)
  script = re.search(r"```python\n(.*?)```", text[text.index("## From Python"):], re.S).group(1)
  stated = [line[2:].split("   (")[0] for line in script.splitlines() if line.startswith("# ")]
  return script, stated


def test_the_readme_scripts_stated_output_is_what_it_prints_in_form():
  """Each stated line is one the script's prints write: the run's reason, its agent steps (a
  multiple of the n_e 16 x t_max 5 = 80 of an update of cartpole.gin) and its average."""
  script, stated = _readme_script()
  assert len(stated) == 2, stated
  run = re.fullmatch(r"target (\d+) agent steps, average return (\d+\.\d)", stated[0])
  assert run and int(run.group(1)) % 80 == 0 and float(run.group(2)) >= 475.0, stated[0]
  assert stated[1] == "one episode of the exported policy: return 500"
  assert 'print(result.reason, result.agent_steps, "agent steps, average return %.1f"' in script


@pytest.mark.timeout(1200)
@pytest.mark.system   # CartPole trained to its target: `make test-system`
def test_the_readme_script_prints_the_output_it_states(tmp_path):
  """The README's script as a user copies it (unchanged, in a fresh directory): it prints
  the lines its comment states; only the agent steps at which the target is met vary (the
  environments step in worker processes), and the average is at least the target's 475."""
  script, stated = _readme_script()
  path = tmp_path / "readme_script.py"
  path.write_text(script)
  proc = subprocess.run([sys.executable, str(path)], cwd=str(tmp_path), capture_output=True,
                        text=True, timeout=1100, env=dict(os.environ, PYTHONPATH=REPO))
  assert proc.returncode == 0, proc.stderr[-3000:]
  printed = proc.stdout.strip().splitlines()
  assert len(printed) == len(stated), (printed, stated)
  pattern = r"target (\d+) agent steps, average return (\d+\.\d)"
  run, claim = re.fullmatch(pattern, printed[0]), re.fullmatch(pattern, stated[0])
  assert run and claim, (printed, stated)
  assert int(run.group(1)) % 80 == 0 and float(run.group(2)) >= 475.0, printed[0]
  assert printed[1:] == stated[1:]
