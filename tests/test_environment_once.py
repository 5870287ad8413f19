"""train_eval.env_name is checked and resolved once, where the run starts, into one typed
value (`envs.names.Environment`) that flows down; its specs are learned once per process."""
import gin
import pytest

from paac_tf.envs import batched
from paac_tf.envs import environment
from paac_tf.envs import factory
from paac_tf.envs import names
from paac_tf.runners import train_eval
from paac_tf.runtime import config

pytestmark = pytest.mark.timeout(300)
train_eval.load_configurables()   # the configurables cartpole.gin names (alone, too)


@pytest.fixture
def counted(monkeypatch):
  """The names check_env_name was called with (the resolution cache emptied first)."""
  calls = []
  check = names.check_env_name
  monkeypatch.setattr(names, "check_env_name", lambda name: calls.append(name) or check(name))
  names._resolve.cache_clear()  # pylint: disable=protected-access
  yield calls
  names._resolve.cache_clear()  # pylint: disable=protected-access


def test_the_environment_resolves_once_and_goes_down_typed(counted):
  env = names.resolve("Pong")
  assert env == names.Environment("Pong", game=names.AtariGame("pong", "Pong"))
  assert str(env) == "Pong" and env.is_atari and names.resolve(env) is env
  assert names.resolve("Pong") is env and names.resolve("CartPole-v1").resolved == "CartPole-v1"
  with pytest.raises(names.UnknownEnvironmentError):
    names.resolve("Pongg")
  with pytest.raises(names.UnknownEnvironmentError):   # an unknown name is not remembered
    names.resolve("Pongg")
  assert counted == ["Pong", "CartPole-v1", "Pongg", "Pongg"]
  assert factory.describe_env(env)["rom_id"] == "pong" and counted[-1] == "Pongg"


def test_a_paac_run_checks_its_environment_once(counted, tmp_path):
  gin.clear_config()
  try:
    config.parse(["cartpole.gin"], ["train_eval.total_steps = 64", "paac_train.num_envs = 4",
                                    "paac_train.num_workers = 0"])
    result = train_eval.train_eval(root_dir=str(tmp_path / "run"))
  finally:
    gin.clear_config()
  assert result.env_steps >= 64
  assert counted == ["CartPole-v1"]   # train_eval resolved it; nothing below checked it again


def test_specs_are_learned_once_per_environment(monkeypatch):
  built = []
  make = environment.make_environment
  monkeypatch.setattr(environment, "make_environment",
                      lambda *a, **k: built.append(a[0]) or make(*a, **k))
  env = names.resolve("CartPole-v1")
  first = environment.specs(env)
  assert environment.specs(env) == first and environment.specs("CartPole-v1") == first
  assert batched.num_actions(first[1]) == 2 and tuple(first[0].shape) == (4,)
  assert len(built) <= 1   # none if an earlier test of this process learned them already
