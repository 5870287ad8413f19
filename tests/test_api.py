"""The public API (`import paac_tf`: train, load_policy, make_env) on real runs: an import
without side effects, the README's From-Python script (shortened by bindings), two
trainings in one process, loading exports, building environments, errors."""
import os
import re
import subprocess
import sys

import gin
import numpy as np
import pytest

from conftest import REPO

import paac_tf
from paac_tf import errors
from paac_tf.bookkeeping import config
from paac_tf.bookkeeping import last_stop

README = os.path.join(REPO, "README.md")
# CartPole in a few seconds: 400 agent steps (5 updates of n_e 16 x t_max 5), in-process.
SHORT = ["train_eval.total_steps=400", "paac.num_workers=0"]


def _operative(result):
  with open(os.path.join(result.root_dir, "operative_config.gin")) as f:
    return f.read()


def test_import_paac_tf_loads_no_tensorflow_and_changes_nothing():
  code = ("import os, sys, paac_tf; print([m for m in ('tensorflow', 'tf_agents', 'gym', 'gin',"
          " 'numpy') if m in sys.modules]); print(os.environ.get('TF_CPP_MIN_LOG_LEVEL'));"
          " print(callable(paac_tf.train), 'tensorflow' in sys.modules)")
  env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
  proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True,
                        text=True, timeout=120)
  assert proc.returncode == 0, proc.stderr
  # Nothing heavy, no TF setting, nothing printed; the API's names resolve without TF too.
  assert proc.stdout.splitlines() == ["[]", "None", "True False"], proc.stdout
  assert proc.stderr == ""


@pytest.mark.timeout(300)
def test_readme_script_runs(tmp_path, capsys):
  text = open(README, encoding="utf-8").read()
  script = re.search(r"```python\n(.*?)```", text[text.index("## From Python"):], re.S).group(1)
  call = 'paac_tf.train(["cartpole.gin"], root_dir="runs/cartpole-notebook")'
  assert call in script
  script = script.replace(call, 'paac_tf.train(["cartpole.gin"], SHORT, root_dir=ROOT)')
  namespace = {"SHORT": SHORT, "ROOT": str(tmp_path / "run")}
  exec(compile(script, README, "exec"), namespace)  # pylint: disable=exec-used
  out = capsys.readouterr().out
  assert re.search(r"^done 400 agent steps, average return \d+\.\d$", out, re.M), out
  assert re.search(r"^one episode of the exported policy: return [1-9]\d*$", out, re.M), out
  result = namespace["result"]
  assert isinstance(result, paac_tf.TrainResult)
  assert (result.agent_steps, result.updates, result.reason) == (400, 5, "done")
  stopped = last_stop.read(result.root_dir)   # the same, for tools: root_dir/last_stop.json
  assert (stopped["reason"], stopped["agent_steps"], stopped["updates"]) == ("done", 400, 5)
  assert stopped["episodes"] == result.episodes and stopped["started"] <= stopped["ended"]
  assert result.episodes > 0 and result.metrics["agent_steps"] == 400
  assert result.root_dir == str(tmp_path / "run")
  assert result.policy_dir == os.path.join(result.root_dir, "policies", "cartpole_v1", "400")
  policy = namespace["policy"]
  assert policy.metadata["env_name"] == "CartPole-v1"
  assert tuple(policy.observation_spec.shape) == (None, 4)


@pytest.mark.timeout(300)
def test_two_trainings_in_one_process_do_not_share_bindings(tmp_path):
  first = paac_tf.train("cartpole.gin", SHORT + ["paac.t_max=4"],
                        root_dir=str(tmp_path / "a"))
  second = paac_tf.train(["cartpole.gin"], SHORT, root_dir=str(tmp_path / "b"))
  assert "paac.t_max = 4" in _operative(first)
  assert "paac.t_max = 5" in _operative(second)
  assert first.updates == 7 and second.updates == 5   # ceil(400 / (16 * t_max))
  # The same root_dir again resumes: nothing left to do at 400 steps.
  again = paac_tf.train(["cartpole.gin"], SHORT, root_dir=second.root_dir)
  assert (again.agent_steps, again.updates) == (400, 5)


@pytest.mark.timeout(300)
def test_load_policy_takes_run_model_and_version_directories(tmp_path):
  result = paac_tf.train(["cartpole.gin"], SHORT, root_dir=str(tmp_path / "run"))
  model_dir = os.path.dirname(result.policy_dir)
  env = paac_tf.make_env("CartPole-v1", num_envs=3, seed=1)
  try:
    time_step = env.reset()
    for path in (result.root_dir, model_dir, result.policy_dir):
      policy = paac_tf.load_policy(path)
      assert policy.policy_dir == result.policy_dir
      actions = policy.action(time_step.observation)
      assert actions.dtype == np.int64 and actions.shape == (3,)
      assert set(actions.tolist()) <= {0, 1}
      # A TimeStep works too, and a greedy export is deterministic.
      np.testing.assert_array_equal(policy.action(time_step), actions)
  finally:
    env.close()
  with pytest.raises(errors.UserError, match="does not exist"):
    paac_tf.load_policy(str(tmp_path / "nowhere"))


def test_make_env_is_trainings_batched_environment():
  with paac_tf.make_env("Pong", num_envs=2) as env:
    time_step = env.reset()
    assert env.batch_size == 2
    assert time_step.observation.shape == (2, 84, 84, 4)
    assert time_step.observation.dtype == np.uint8
    time_step = env.step(np.zeros(2, np.int32))
    assert time_step.reward.shape == (2,)
  with paac_tf.make_env("CartPole-v1", num_envs=2, seed=3) as env:
    a = env.reset().observation
  with paac_tf.make_env("CartPole-v1", num_envs=2, seed=3) as env:
    np.testing.assert_array_equal(env.reset().observation, a)   # seeded: seed + i
  with pytest.raises(errors.UserError, match="no option reward_clip"):
    paac_tf.make_env("Pong", num_envs=1, reward_clip=False)
  with pytest.raises(errors.UserError, match="Pongg"):
    paac_tf.make_env("Pongg", num_envs=1)


def test_train_errors_are_user_errors(tmp_path):
  with pytest.raises(errors.UserError, match="Give a config"):
    paac_tf.train([])
  with pytest.raises(errors.ConfigError, match="atarri.gin.*not found"):
    paac_tf.train("atarri.gin", root_dir=str(tmp_path))
  with pytest.raises(errors.ConfigError, match="num_envz"):
    paac_tf.train("cartpole.gin", ["paac.num_envz=3"], root_dir=str(tmp_path))


@gin.configurable("round_trip")
def _round_trip(x=None):
  """What gin binds to round_trip.x."""
  return x


@pytest.mark.parametrize("value", ["Pong", "it's \"quoted\"", "", 20000, -3, 0.5, 1e-8, True,
                                   False, None, [1, "a", None, [2.5]], (64, 64), (1,),
                                   {"k": [True]}, np.int64(7), np.float64(0.25)])
def test_dict_binding_values_round_trip_through_gin(value):
  try:
    gin.clear_config()
    config.parse([], {"round_trip.x": value})
    back = _round_trip()
  finally:
    gin.clear_config()
  assert back == value
  expected = {np.int64: int, np.float64: float}.get(type(value), type(value))
  assert type(back) is expected  # pylint: disable=unidiomatic-typecheck


def test_dict_binding_values_gin_cannot_write_are_config_errors():
  with pytest.raises(errors.ConfigError, match="not finite"):
    config.binding_lines({"train_eval.total_steps": float("inf")})
  with pytest.raises(errors.ConfigError, match="must be a str, bool, int, float, None"):
    config.binding_lines({"train_eval.env_name": object()})


def test_train_takes_a_dict_of_bindings(tmp_path):
  result = paac_tf.train("cartpole.gin", bindings={
      "train_eval.total_steps": 400, "paac.num_workers": 0,
      "train_eval.env_name": "Acrobot-v1", "paac.mlp_units": [32, 32],
      "paac.export_interval": None}, root_dir=str(tmp_path / "run"))
  assert (result.agent_steps, result.updates, result.reason) == (400, 5, "done")
  operative = _operative(result)
  assert "train_eval.env_name = 'Acrobot-v1'" in operative
  assert "paac.mlp_units = [32, 32]" in operative


def test_unknown_keyword_is_one_user_error_line():
  with pytest.raises(errors.UserError) as raised:
    paac_tf.train("cartpole.gin", total_step=5)
  message = str(raised.value)
  assert message == ("paac_tf.train() takes gin_files, bindings, root_dir, callbacks; unknown "
                     "keyword argument 'total_step' (did you mean "
                     "bindings={'train_eval.total_steps': 5}?).")
  with pytest.raises(errors.UserError, match=r"'root' \(did you mean root_dir='x'\?\)"):
    paac_tf.train("cartpole.gin", root="x")
  with pytest.raises(errors.UserError, match=r"arguments 'env' \(did you mean "
                     r"bindings=\{'train_eval.env_name': 'Pong'\}\?\), 'foo' \(configuration"):
    paac_tf.train("cartpole.gin", foo=1, env="Pong")
  # train_eval's parameters that no binding sets (its denylist: `env`, `config_files`) are
  # never suggested as bindings ('env' above is train_eval's `env` too).
  with pytest.raises(errors.UserError, match=r"'config_files' \(did you mean "
                     r"gin_files=\['x.gin'\]\?\)"):
    paac_tf.train("cartpole.gin", config_files=["x.gin"])
