"""Resolves user-facing environment names: Atari games and gymnasium ids.

Atari games are accepted as `Pong`, `PongNoFrameskip-v4` or `ALE/Pong-v5` and
resolve to one `AtariGame`. Anything else must be a gymnasium id: one registered in this
process (by gymnasium, or by a module the user imported first), or gymnasium's
`"module:EnvId"` form, whose module is imported to register `EnvId`. Unknown names fail
fast with the closest valid names.

`resolve` does the check once per name and process: it returns an `Environment`, the typed
value a run passes down (to the environment factory, the loops, the exports) instead of
the name, so that nothing below checks or resolves the name again.

Worker processes start without the parent's imports: `worker_env_id` turns an id that a
module outside gymnasium registered into `"module:EnvId"`, so that `gymnasium.make` in a
worker imports that module (the module of the env's entry point) before making the env.
"""
import dataclasses
import difflib
import functools
import importlib
import re
from typing import Optional

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
  # Lazy: ale-py (its ROMs) only once a name is looked up among the Atari games.
  import ale_py.roms  # pylint: disable=import-outside-toplevel
  return tuple(sorted(ale_py.roms.get_all_rom_ids()))


def gymnasium_ids():
  """The ids registered now (not cached: importing a module may register more)."""
  # Lazy: gymnasium only for a name that is no Atari game (the vector path never needs it).
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


@dataclasses.dataclass(frozen=True)
class Environment:
  """An environment name, checked and resolved (`resolve`).

  Attributes:
    name: the name as given (what run records, exports and logs show; `str()` of it).
    game: the AtariGame it names, or None.
    gymnasium_id: else the gymnasium id (`module:EnvId` as given).
  """
  name: str
  game: Optional[AtariGame] = None
  gymnasium_id: Optional[str] = None

  def __str__(self):
    return self.name

  @property
  def is_atari(self):
    return self.game is not None

  @property
  def resolved(self):
    """What `check_env_name` returns: the AtariGame, or the gymnasium id."""
    return self.game if self.game is not None else self.gymnasium_id


def resolve(name):
  """The `Environment` of `name` (an Environment is returned as it is); a name is checked
  once per process (`check_env_name`; an unknown one raises every time)."""
  if isinstance(name, Environment):
    return name
  return _resolve(name)


@functools.lru_cache(maxsize=None)
def _resolve(name):
  found = check_env_name(name)
  if isinstance(found, AtariGame):
    return Environment(name=name, game=found)
  return Environment(name=name, gymnasium_id=found)


def is_atari(env):
  """Whether `env` (an Environment or a name) is an Atari game (a name is not checked:
  False for anything that is no Atari game)."""
  if isinstance(env, Environment):
    return env.is_atari
  return resolve_atari(str(env)) is not None


def check_env_name(name):
  """Returns an AtariGame or the gymnasium id; raises UnknownEnvironmentError."""
  if not isinstance(name, str) or not name:
    raise UnknownEnvironmentError("Environment name must be a non-empty string, got %r." % (name,))
  if ":" in name:
    _import_registering_module(name)
    return name
  game = resolve_atari(name)
  if game is not None:
    return game
  if name in gymnasium_ids():
    return name
  raise _unknown(name)


def _unknown(name, prefix=""):
  """The UnknownEnvironmentError for `name`, naming the closest valid names."""
  candidates = all_names()
  close = difflib.get_close_matches(_atari_stem(name), candidates, n=5, cutoff=0.5)
  close += [c for c in difflib.get_close_matches(name, candidates, n=5, cutoff=0.5)
            if c not in close]
  hint = ("Closest valid names: %s." % ", ".join(close[:5])) if close else (
      "Use an Atari game such as Pong, PongNoFrameskip-v4 or ALE/Pong-v5, or a gymnasium id "
      "such as CartPole-v1.")
  return UnknownEnvironmentError("%sUnknown environment %r. %s" % (prefix, name, hint))


def _import_registering_module(name):
  """Imports the module of a `"module:EnvId"` name; checks that it registered EnvId."""
  module, _, env_id = name.partition(":")
  if not module or not env_id or ":" in env_id:
    raise UnknownEnvironmentError(
        "Environment name %r has an empty or extra part: use 'module:EnvId', e.g. "
        "'my_package.envs:MyEnv-v0'." % (name,))
  try:
    importlib.import_module(module)
  except ImportError as e:
    raise UnknownEnvironmentError(
        "Cannot import module %r of environment %r (%s: %s). It must be importable from "
        "the current directory or the Python path." % (module, name, type(e).__name__, e)
    ) from None
  if env_id not in gymnasium_ids():
    raise _unknown(env_id, prefix="Module %r did not register %r. " % (module, env_id))


def worker_env_id(env_id):
  """The id that makes `env_id` in a fresh process: `"module:EnvId"` for an env that a
  module outside gymnasium registered (the module of its entry point, which registers it
  when imported), else `env_id` unchanged. `env_id`: a gymnasium id `check_env_name`
  accepted."""
  if ":" in env_id:
    return env_id
  # Lazy: as in gymnasium_ids.
  import gymnasium as gym  # pylint: disable=import-outside-toplevel
  spec = gym.registry.get(env_id)
  entry_point = getattr(spec, "entry_point", None)
  if isinstance(entry_point, str):
    module = entry_point.partition(":")[0]
  else:
    module = getattr(entry_point, "__module__", None)
  if not module or module == "__main__" or module.split(".")[0] in ("gymnasium", "ale_py"):
    return env_id
  return "%s:%s" % (module, env_id)


def same_environment(a, b):
  """Whether the Environments `a` and `b` are one environment: the same Atari game under any
  of its names (`Pong`, `ALE/Pong-v5`), or the same gymnasium id (with or without the
  `module:` that registers it)."""
  if a.is_atari or b.is_atari:
    return a.game == b.game
  return a.gymnasium_id.rpartition(":")[2] == b.gymnasium_id.rpartition(":")[2]


def reward_threshold(env):
  """The `reward_threshold` gymnasium registers for the Environment `env` (the average return
  its spec calls solved), or None if it registers none (e.g. Pendulum-v1, the Atari games)."""
  # Lazy: as in gymnasium_ids.
  import gymnasium as gym  # pylint: disable=import-outside-toplevel
  env_id = env.game.gymnasium_id if env.is_atari else env.gymnasium_id.rpartition(":")[2]
  spec = gym.registry.get(env_id)
  threshold = getattr(spec, "reward_threshold", None)
  return None if threshold is None else float(threshold)
