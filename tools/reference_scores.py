"""Published reference scores and training budgets, from the CSVs packaged in paac_tf/data.

  from tools import reference_scores as ref
  ref.game_key("PongNoFrameskip-v4")          # -> "Pong"
  ref.atari_scores()["Pong"]["human"]         # -> 14.6
  ref.human_normalized("Pong", 0.0)           # -> 0.586... (a fraction, not %)

Sources of every column are in paac_tf/data/SOURCES.md. The PAAC paper's own scores
(`paac_arch_*_UNVERIFIED` columns) are an unverified transcription: show them only under
`PAAC_PAPER_LABEL`, never as a pass/fail target.
"""
import csv
import functools
import importlib.resources as resources
import io
import pkgutil
import re

ATARI_SCORES_CSV = "atari_scores.csv"
PAPER_BUDGETS_CSV = "paper_budgets.csv"
PAAC_TABLE1_CSV = "paac_paper_table1.csv"
SOURCES_MD = "SOURCES.md"

# Columns of atari_scores.csv.
RANDOM = "random"
HUMAN = "human"
APEX_NOOP = "apex_dqn_noop_starts"
APEX_HUMAN_STARTS = "apex_dqn_human_starts"
SB3_A2C_10M = "sb3_a2c_10M_steps"
RLLIB_APEX_10M = "rllib_apex_10M_steps"
RLLIB_A2C_10M = "rllib_a2c_10M_steps"
PEERS_10M = ((SB3_A2C_10M, "sb3 A2C"), (RLLIB_APEX_10M, "RLlib Ape-X"),
             (RLLIB_A2C_10M, "RLlib A2C"))

# Columns of paac_paper_table1.csv.
GORILA_NOOP = "gorila_noop_starts"
A3C_FF_4DAYS_HUMAN_STARTS = "a3c_ff_4days_human_starts"
PAAC_NIPS_UNVERIFIED = "paac_arch_nips_UNVERIFIED"
PAAC_NATURE_UNVERIFIED = "paac_arch_nature_UNVERIFIED"
PAAC_PAPER_LABEL = "PAAC paper (unverified transcription)"

# Training budgets. One agent step ("timestep" in the PAAC paper) = 4 frames on Atari.
FRAMES_PER_AGENT_STEP = 4
PAAC_PAPER_TIMESTEPS = 115e6          # "about 115M timesteps" (12 h / 15 h on one GPU)
PAAC_PAPER_FRAMES = PAAC_PAPER_TIMESTEPS * FRAMES_PER_AGENT_STEP
PAAC_CODE_TIMESTEPS = 80e6            # the original code's default
PAAC_CODE_FRAMES = PAAC_CODE_TIMESTEPS * FRAMES_PER_AGENT_STEP
PAAC_PAPER_HOURS = {"arch_nips": 12.0, "arch_nature": 15.0}
APEX_PAPER_FRAMES = 22.8e9            # 360 actors, one GPU learner (Ape-X DQN, Atari)
APEX_PAPER_HOURS = 5 * 24.0
APEX_MEDIAN_HNS_NOOP = 4.34           # median human-normalized score, 30 no-op starts
APEX_MEDIAN_HNS_HUMAN_STARTS = 3.58


def _read_data(name):
  """The text of a file in paac_tf/data (works from a wheel, an egg or a source tree)."""
  try:
    return (resources.files("paac_tf") / "data" / name).read_text(encoding="utf-8")
  except (AttributeError, FileNotFoundError, NotADirectoryError, ModuleNotFoundError):
    data = pkgutil.get_data("paac_tf", "data/" + name)
    if data is None:
      raise FileNotFoundError("paac_tf/data/%s is not packaged." % name) from None
    return data.decode("utf-8")


def _parse_float(text):
  text = (text or "").strip()
  return float(text) if text else None


def _read_table(name):
  rows = {}
  for row in csv.DictReader(io.StringIO(_read_data(name))):
    game = row.pop("game").strip()
    rows[game] = {k.strip(): _parse_float(v) for k, v in row.items()}
  return rows


@functools.lru_cache(maxsize=None)
def _atari_scores():
  return _read_table(ATARI_SCORES_CSV)


@functools.lru_cache(maxsize=None)
def _paac_table1():
  return _read_table(PAAC_TABLE1_CSV)


# The papers whose budgets an Atari run is set against (paper_budgets.csv maps each
# algorithm's registry name to one of these; an algorithm it does not name has none).
PAAC_PAPER = "PAAC paper"
APEX_PAPER = "Ape-X paper"


@functools.lru_cache(maxsize=None)
def _paper_budgets():
  return {row["algorithm"]: row["paper"]
          for row in csv.DictReader(io.StringIO(_read_data(PAPER_BUDGETS_CSV)))}


def paper_of(algorithm):
  """The paper (PAAC_PAPER, APEX_PAPER) whose training budget runs of `algorithm` (its
  registry name) are set against, or None."""
  return _paper_budgets().get(str(algorithm or "").lower())


def atari_scores():
  """{game: {column: float or None}} for the 55 games of atari_scores.csv (a copy)."""
  return {g: dict(row) for g, row in _atari_scores().items()}


def paac_paper_table1():
  """{game: {column: float or None}} for the 12 games of the PAAC paper's Table 1 (a copy).

  The `paac_arch_*_UNVERIFIED` columns are unverified; label them `PAAC_PAPER_LABEL`.
  """
  return {g: dict(row) for g, row in _paac_table1().items()}


def sources():
  """The text of paac_tf/data/SOURCES.md (where each column comes from)."""
  return _read_data(SOURCES_MD)


def _key(name):
  return re.sub(r"[^a-z0-9]", "", name.lower())


@functools.lru_cache(maxsize=None)
def _games_by_key():
  return {_key(g): g for g in list(_atari_scores()) + list(_paac_table1())}


def game_key(env_name):
  """The CSV row name for an env name (`Pong`, `PongNoFrameskip-v4`, `ALE/Pong-v5`,
  `space_invaders`), or None if no table has that game."""
  if not env_name:
    return None
  stem = str(env_name).strip()
  if stem.startswith("ALE/"):
    stem = stem[len("ALE/"):]
  stem = re.sub(r"-v\d+$", "", stem)
  stem = re.sub(r"(NoFrameskip|Deterministic)$", "", stem)
  return _games_by_key().get(_key(stem))


def scores_for(env_name):
  """atari_scores.csv's row for `env_name` ({} if the game is not in it)."""
  game = game_key(env_name)
  return dict(_atari_scores().get(game, {})) if game else {}


def paac_table1_for(env_name):
  """paac_paper_table1.csv's row for `env_name` ({} if the game is not in it)."""
  game = game_key(env_name)
  return dict(_paac_table1().get(game, {})) if game else {}


def human_normalized(env_name, score):
  """(score - random) / (human - random) as a fraction, or None without reference scores."""
  row = scores_for(env_name)
  random, human = row.get(RANDOM), row.get(HUMAN)
  if score is None or random is None or human is None or human == random:
    return None
  return (float(score) - random) / (human - random)
