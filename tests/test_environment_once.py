"""train_eval.env_name is checked and resolved once, where the run starts, into one typed
value (`envs.names.Environment`) that flows down; its specs are learned once per process."""
import gin
import pytest

from paac_tf.envs import batched
from paac_tf.envs import environment
from paac_tf.envs import factory
from paac_tf.envs import names
from paac_tf.runners import train_eval
from paac_tf.bookkeeping import config

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
    config.parse(["cartpole.gin"], ["train_eval.total_steps = 64", "paac.num_envs = 4",
                                    "paac.num_workers = 0"])
    result = train_eval.train_eval(root_dir=str(tmp_path / "run"))
  finally:
    gin.clear_config()
  assert result.agent_steps >= 64
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


@pytest.fixture
def built(monkeypatch):
  """What this process built while the test ran: the seeds of the batched envs
  (`factory.make_batched_env`) and the ids of the gymnasium envs (`gymnasium.make`); the
  caches of resolutions and specs emptied first."""
  import gymnasium  # pylint: disable=import-outside-toplevel
  record = {"batched": [], "gymnasium": []}
  make_batched, make_gym = factory.make_batched_env, gymnasium.make
  monkeypatch.setattr(factory, "make_batched_env", lambda *a, **k: record["batched"].append(
      k.get("seed")) or make_batched(*a, **k))
  monkeypatch.setattr(gymnasium, "make", lambda *a, **k: record["gymnasium"].append(
      a[0]) or make_gym(*a, **k))
  names._resolve.cache_clear()  # pylint: disable=protected-access
  factory._specs.cache_clear()  # pylint: disable=protected-access
  yield record
  names._resolve.cache_clear()  # pylint: disable=protected-access


RUN = ["train_eval.total_steps = %d", "paac.num_envs = 4", "paac.num_workers = 2",
       "train_eval.seed = 7"]


def _train(root_dir, total_steps):
  from paac_tf import api  # pylint: disable=import-outside-toplevel
  return api.train(["cartpole.gin"], [RUN[0] % total_steps] + RUN[1:], root_dir=root_dir)


def test_a_new_run_builds_its_environments_once(built, tmp_path):
  result = _train(str(tmp_path / "run"), 40)
  assert result.agent_steps == 40
  # One batched env (seed 7: environments 7..10, in the worker processes); the checks of the
  # configuration made one gymnasium env for the specs, the run none besides.
  assert built["batched"] == [7] and built["gymnasium"] == ["CartPole-v1"]


def test_a_resumed_run_builds_its_environments_once_seeded_from_its_checkpoint(built, tmp_path):
  root_dir = str(tmp_path / "run")
  _train(root_dir, 40)
  del built["batched"][:], built["gymnasium"][:]
  names._resolve.cache_clear()  # pylint: disable=protected-access
  factory._specs.cache_clear()  # pylint: disable=protected-access
  result = _train(root_dir, 80)
  assert result.agent_steps == 80
  # Built once, seeded from the checkpoint's agent step: 7 + 40 (new episodes on resume).
  assert built["batched"] == [47] and built["gymnasium"] == ["CartPole-v1"]


@pytest.mark.parametrize("env_name", ["CartPole-v1", "Pendulum-v1", "Pong"])
def test_specs_from_the_spaces_are_those_of_the_built_environment(built, env_name):
  specs = environment.specs(env_name)
  assert built["batched"] == [] and len(built["gymnasium"]) == 1   # one gymnasium env only
  env = factory.make_batched_env(env_name, num_envs=2)
  try:
    assert specs == (env.observation_spec(), env.action_spec())
  finally:
    env.close()
