"""Which config made a run (a short label), and which results folders are archived.

A run's config label is its run_info.json's "config" when it has one (tools/campaign/publish_run.py
--config; e.g. a run made with atari.gin plus bindings equal to atari_fast.gin's is
labelled "atari_fast.gin"); else it is derived from the run's command: its --gin_file
names, then its --gin_bindings as `parameter=value`, leaving out the bindings that only set
the budget, the stopping score, the game or the run directory (IGNORED_BINDINGS):

  python -m paac_tf.train --gin_file=atari.gin --root_dir=runs/x    -> atari.gin
  ... --gin_file=atari.gin --gin_bindings=train_eval.total_steps=2500000 \
      --gin_bindings=paac.entropy_coef=0.01     -> atari.gin + entropy_coef=0.01
  a command without --gin_file                                      -> None (unknown)

A label without bindings (one config file) is a headline config: compare's headline
medians are per algorithm and such a config; variants ("atari.gin + ...") are listed in the
table but are in no headline.

Superseded results folders live under results/archive/ (ARCHIVE_DIR): compare leaves them
out of its table and medians and lists them, one line each, with the "archive_reason" and
"superseded_by" of their run_info.json. The saved state of unfinished campaign runs
(results/campaign_state/, STATE_DIR) is left out too, and not listed.
"""
import json
import os
import re
import shlex

MAIN_CONFIGS = ("atari.gin", "atari_fast.gin", "apex_atari.gin")
# `configurable.parameter` bindings that set only the budget, stopping, game or directory
# (PAAC's under both its names: `paac.*`, and `paac_train.*` in the commands of runs made
# before the paac.* namespace, which results/ keeps).
IGNORED_BINDINGS = ("train_eval.total_steps", "train_eval.env_name", "train_eval.root_dir",
                    "paac.stop_at_average_return", "apex_learner.stop_at_average_return",
                    "paac.target_env_name", "apex_learner.target_env_name",
                    "paac_train.stop_at_average_return", "paac_train.target_env_name")
IGNORED_PARAMETERS = ("root_dir",)
ARCHIVE_DIR = "archive"
# The newest checkpoints and summaries of unfinished campaign runs (`python -m
# tools.campaign.campaign save`): runs to resume, not results; left out like the archive,
# and listed nowhere.
STATE_DIR = "campaign_state"
SEPARATOR = " + "
_FLAG = re.compile(r"^--?(gin_file|gin_bindings)(?:=(.*))?$", re.S)


def _tokens(command):
  try:
    return shlex.split(command, comments=True)
  except ValueError:     # unbalanced quotes: split on whitespace
    return command.split()


def _unquote(value):
  value = value.strip()
  if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
    return value[1:-1]
  return value


def command_settings(command):
  """([gin file basenames], [(binding key, value)]) named by a training command; a binding
  given again (a resumed part) keeps its first position and its last value."""
  files, bindings = [], {}
  tokens = _tokens(command or "")
  i = 0
  while i < len(tokens):
    match = _FLAG.match(tokens[i])
    i += 1
    if not match:
      continue
    value = match.group(2)
    if value is None and i < len(tokens):
      value, i = tokens[i], i + 1
    if not value:
      continue
    if match.group(1) == "gin_file":
      name = os.path.basename(value)
      if name not in files:
        files.append(name)
      continue
    for binding in value.splitlines():
      key, sep, bound = binding.partition("=")
      if sep and key.strip():
        bindings[key.strip()] = _unquote(bound)
  return files, list(bindings.items())


def _ignored(key):
  selector = key.split("/")[-1]                       # without a gin scope
  parts = selector.split(".")
  return (".".join(parts[-2:]) in IGNORED_BINDINGS or parts[-1] in IGNORED_PARAMETERS)


def config_label(command):
  """The config label a training command implies (module docstring), or None."""
  files, bindings = command_settings(command)
  if not files:
    return None
  kept = [(key, value) for key, value in bindings if not _ignored(key)]
  short = [key.split("/")[-1].split(".")[-1] for key, _ in kept]
  names = [s if short.count(s) == 1 else key for s, (key, _) in zip(short, kept)]
  return SEPARATOR.join(files + ["%s=%s" % (n, v) for n, (_, v) in zip(names, kept)])


def config_of(info, command=None):
  """(label, explicit): run_info's "config" (explicit), else the label of its command (or
  of `command`, e.g. a command.txt), else (None, False)."""
  info = info or {}
  if info.get("config"):
    return str(info["config"]), True
  return config_label(info.get("command") or command or ""), False


def is_headline_config(label):
  """A config of its own (one config file, no bindings): compare gives it a headline."""
  return bool(label) and SEPARATOR not in label


def machine_note(info):
  """run_info's "machine_note" (how loaded the machine was), else its hardware without the
  platform string, else ''."""
  info = info or {}
  if info.get("machine_note"):
    return str(info["machine_note"])
  hardware = info.get("hardware")
  return re.sub(r"\s*\([^)]*\)\s*$", "", str(hardware)) if hardware else ""


def archived_below(path, top):
  """Whether `path` lies in an ARCHIVE_DIR (or STATE_DIR) folder strictly below `top`."""
  rel = os.path.relpath(os.path.realpath(path), os.path.realpath(top))
  if rel.startswith(os.pardir):
    return False
  return bool({ARCHIVE_DIR, STATE_DIR} & set(rel.split(os.sep)))


def published_runs(results_dir, with_file=None):
  """(name, folder, run_info) of each run folder directly under `results_dir` (one with a
  run_info.json, and `with_file` too if given), sorted by name; the archive and the
  campaign state left out."""
  found = []
  for name in sorted(os.listdir(results_dir)) if os.path.isdir(results_dir) else ():
    folder = os.path.join(results_dir, name)
    info_path = os.path.join(folder, "run_info.json")
    if name in (ARCHIVE_DIR, STATE_DIR) or not os.path.isfile(info_path) or (
        with_file and not os.path.isfile(os.path.join(folder, with_file))):
      continue
    with open(info_path, encoding="utf-8") as f:
      found.append((name, folder, json.load(f)))
  return found


def archive_dirs(top):
  """The ARCHIVE_DIR folders strictly below `top`, outermost only, sorted."""
  found = []
  for dirpath, dirnames, _ in os.walk(top):
    dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
    if ARCHIVE_DIR in dirnames:
      found.append(os.path.join(dirpath, ARCHIVE_DIR))
      dirnames.remove(ARCHIVE_DIR)
  return found


def archive_reason(info):
  """The why of an archived folder, from its run_info.json: (reason or None, superseded_by
  or None)."""
  info = info or {}
  return (info.get("archive_reason") or None, info.get("superseded_by") or None)
