"""Resolves user-facing environment names: Atari games and gymnasium ids.

Atari games are accepted as `Pong`, `PongNoFrameskip-v4` or `ALE/Pong-v5` and
resolve to one `AtariGame`. Anything else must be a registered gymnasium id.
Unknown names fail fast with the closest valid names.
"""
import dataclasses
import difflib
import functools
import re

from paac_tf import errors


class UnknownEnvironmentError(errors.UserError, ValueError):
  """The environment name is neither an Atari game nor a gymnasium id."""


@dataclasses.dataclass(frozen=True)
class AtariGame:
  rom_id: str     # ale-py's ROM id, e.g. "pong", "space_invaders"
  name: str       # CamelCase, e.g. "Pong", "SpaceInvaders"

  @property
  def gymnasium_id(self):
    return "ALE/%s-v5" % self.name


def _camel_to_snake(name):
  return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _snake_to_camel(rom_id):
  return "".join(part.capitalize() for part in rom_id.split("_"))


@functools.lru_cache(maxsize=None)
def atari_rom_ids():
  import ale_py.roms  # pylint: disable=import-outside-toplevel
  return tuple(sorted(ale_py.roms.get_all_rom_ids()))


@functools.lru_cache(maxsize=None)
def gymnasium_ids():
  import gymnasium as gym  # pylint: disable=import-outside-toplevel
  return tuple(sorted(gym.registry.keys()))


def _atari_stem(name):
  """`Pong`, `PongNoFrameskip-v4`, `ALE/Pong-v5`, `pong` -> `Pong`/`pong` stem."""
  stem = name
  if stem.startswith("ALE/"):
    stem = stem[len("ALE/"):]
  stem = re.sub(r"-v\d+$", "", stem)
  stem = re.sub(r"(NoFrameskip|Deterministic)$", "", stem)
  return stem


def resolve_atari(name):
  """Returns the AtariGame for `name`, or None if it does not name an Atari game."""
  stem = _atari_stem(name)
  if not stem or not re.fullmatch(r"[A-Za-z0-9_]+", stem):
    return None
  rom_id = stem if stem.islower() else _camel_to_snake(stem)
  if rom_id in atari_rom_ids():
    return AtariGame(rom_id=rom_id, name=_snake_to_camel(rom_id))
  return None


def all_names():
  games = [_snake_to_camel(r) for r in atari_rom_ids()]
  return games + [g for g in gymnasium_ids() if not g.startswith("ALE/")]


def check_env_name(name):
  """Returns an AtariGame or the gymnasium id; raises UnknownEnvironmentError."""
  if not isinstance(name, str) or not name:
    raise UnknownEnvironmentError("Environment name must be a non-empty string, got %r." % (name,))
  game = resolve_atari(name)
  if game is not None:
    return game
  if name in gymnasium_ids():
    return name
  candidates = all_names()
  close = difflib.get_close_matches(_atari_stem(name), candidates, n=5, cutoff=0.5)
  close += [c for c in difflib.get_close_matches(name, candidates, n=5, cutoff=0.5)
            if c not in close]
  hint = ("Closest valid names: %s." % ", ".join(close[:5])) if close else (
      "Use an Atari game such as Pong, PongNoFrameskip-v4 or ALE/Pong-v5, or a gymnasium id "
      "such as CartPole-v1.")
  raise UnknownEnvironmentError("Unknown environment %r. %s" % (name, hint))
