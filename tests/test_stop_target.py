"""Stop-at-return targets belong to their environment (paac_tf/bookkeeping/stop_target.py):
the pure decision, the recording of a config's environment by `config.parse`, the check."""
import collections

import gin
import pytest

import paac_tf
from paac_tf.envs import names
from paac_tf.runners import train_eval
from paac_tf.bookkeeping import config
from paac_tf.bookkeeping import stop_target
from paac_tf.bookkeeping import summaries

CARTPOLE = names.Environment("CartPole-v1", gymnasium_id="CartPole-v1")
CARTPOLE_MODULE = names.Environment("gymnasium.envs:CartPole-v1",
                                    gymnasium_id="gymnasium.envs:CartPole-v1")
ACROBOT = names.Environment("Acrobot-v1", gymnasium_id="Acrobot-v1")
PENDULUM = names.Environment("Pendulum-v1", gymnasium_id="Pendulum-v1")
INVERTED = names.Environment("InvertedPendulum-v5", gymnasium_id="InvertedPendulum-v5")
PONG = names.Environment("Pong", game=names.AtariGame("pong", "Pong"))
PONG_V4 = names.Environment("PongNoFrameskip-v4", game=names.AtariGame("pong", "Pong"))


@pytest.mark.parametrize("configured,target_env,run_env,threshold,expected", [
    # No target configured: none, whatever the environments.
    (None, CARTPOLE, ACROBOT, -100.0, (None, "none configured")),
    # The config's own environment: its target.
    (490.0, CARTPOLE, CARTPOLE, 475.0, (490.0, "the config's, for CartPole-v1")),
    (490, CARTPOLE_MODULE, CARTPOLE, None, (490.0, "the config's, for gymnasium.envs:CartPole-v1")),
    (18.0, PONG_V4, PONG, None, (18.0, "the config's, for PongNoFrameskip-v4")),
    # Bound for the run's own environment (the command line's binding).
    (18.0, None, PONG, None, (18.0, "bound for this run's environment, Pong")),
    # Another environment: its reward_threshold, or no target.
    (-200.0, PENDULUM, INVERTED, 950.0,
     (950.0, "InvertedPendulum-v5's reward_threshold; the config's -200.0 is for Pendulum-v1")),
    (475.0, CARTPOLE, PENDULUM, None,
     (None, "Pendulum-v1 has no reward_threshold; the config's 475.0 is for CartPole-v1")),
    (490.0, CARTPOLE, PONG, None,
     (None, "Pong has no reward_threshold; the config's 490.0 is for CartPole-v1")),
])
def test_decide(configured, target_env, run_env, threshold, expected):
  assert stop_target.decide(configured, target_env, run_env, threshold) == expected


def test_reward_threshold_is_gymnasiums():
  assert names.reward_threshold(CARTPOLE) == 475.0
  assert names.reward_threshold(CARTPOLE_MODULE) == 475.0
  assert names.reward_threshold(INVERTED) == 950.0
  assert names.reward_threshold(PENDULUM) is None


def test_for_run_resolves_names_and_logs_the_target(caplog):
  caplog.set_level("INFO", logger="absl")
  target = stop_target.for_run(-200.0, "Pendulum-v1", "InvertedPendulum-v5")
  assert target.value == 950.0
  assert target.start_line == ("Stop target: 950.0 (InvertedPendulum-v5's reward_threshold; "
                               "the config's -200.0 is for Pendulum-v1)")
  assert target.start_line in caplog.text
  assert stop_target.for_run(490.0, "CartPole-v1", "CartPole-v1").value == 490.0
  assert stop_target.for_run(475.0, "CartPole-v1", "Pendulum-v1").start_line == (
      "No stop target (Pendulum-v1 has no reward_threshold; the config's 475.0 is for "
      "CartPole-v1)")


def _window(returns, size=4):
  window = summaries.EpisodeWindow(size)
  window.add([(r, 10) for r in returns])
  return window


def test_reached_needs_a_full_window_and_says_a_first_check():
  target = stop_target.StopTarget(10.0, "the config's, for CartPole-v1")
  assert not target.reached(_window([20.0, 20.0, 20.0]))      # 3 of 4 episodes: no check
  assert target.checks == 0
  full = _window([20.0, 20.0, 20.0, 20.0])
  assert target.reached(full)
  assert target.stop_line(full) == (
      "Reached the stop target: the last 4 episodes average 20.00 >= 10.0 (the config's, for "
      "CartPole-v1); met at the first check, as soon as 4 episodes had finished: a target met "
      "before any learning shows may be meant for another environment")
  later = stop_target.StopTarget(10.0, "x")
  assert not later.reached(_window([0.0, 0.0, 0.0, 0.0]))
  assert later.reached(_window([10.0, 10.0, 10.0, 10.0]))
  assert later.stop_line(full) == (
      "Reached the stop target: the last 4 episodes average 20.00 >= 10.0 (x)")
  assert not stop_target.StopTarget(None, "none configured").reached(full)


def _recorded(gin_files, bindings):
  """{configurable: (stop_at_average_return, target_env_name)} after config.parse."""
  train_eval.load_configurables()
  gin.clear_config()
  config.parse(gin_files, bindings)
  out = collections.OrderedDict()
  for name in ("paac", "apex_learner"):
    out[name] = (config.configured(name + ".stop_at_average_return"),
                 config.configured(name + ".target_env_name", "unbound"))
  gin.clear_config()
  return out


def test_parse_records_the_environment_of_each_configs_target():
  assert _recorded(["cartpole.gin"], [])["paac"] == (475.0, "CartPole-v1")
  assert _recorded(["apex_cartpole.gin"], [])["apex_learner"] == (475.0, "CartPole-v1")
  assert _recorded(["apex_dpg_pendulum.gin"], [])["apex_learner"] == (-200.0, "Pendulum-v1")
  # Another environment bound: the target stays the config's environment's.
  assert _recorded(["apex_dpg_pendulum.gin"], ['train_eval.env_name="InvertedPendulum-v5"'])[
      "apex_learner"] == (-200.0, "Pendulum-v1")
  # A target bound with the run's environment (the campaign's Pong run): for that one.
  assert _recorded(["atari.gin"], ["paac.stop_at_average_return=18.0"])[
      "paac"] == (18.0, None)
  assert _recorded(["cartpole.gin"], ['train_eval.env_name="Acrobot-v1"',
                                      "settings.paac.stop_at_average_return=-90"])[
      "paac"] == (-90, None)
  # Both bound: as bound.
  assert _recorded(["cartpole.gin"], ['train_eval.env_name="Acrobot-v1"',
                                      "paac.stop_at_average_return=-90",
                                      'paac.target_env_name="CartPole-v1"'])[
      "paac"] == (-90, "CartPole-v1")
  # atari.gin's target: for Pong, the game it names (atari_fast.gin includes it).
  assert _recorded(["atari.gin"], [])["paac"] == (18.0, "Pong")
  assert _recorded(["atari_fast.gin"], ['train_eval.env_name="Breakout"'])[
      "paac"] == (18.0, "Pong")
  # No target anywhere: nothing recorded.
  assert _recorded(["apex_atari.gin"], [])["apex_learner"] == (None, "unbound")


JACKPOT = "tests.custom_env_module:Jackpot-v0"   # 1-step episodes of return 1000
PAAC_SHORT = {"train_eval.total_steps": 800, "paac.num_workers": 0}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("env_name,line", [
    # cartpole.gin's 475 is for CartPole: Jackpot's first 100 episodes (3 updates) meet it.
    (JACKPOT, "No stop target (%s has no reward_threshold; the config's 475.0 is for "
              "CartPole-v1)." % JACKPOT),
    # Acrobot has a reward_threshold: that is the target.
    ("Acrobot-v1", "Stop target: -100.0 (Acrobot-v1's reward_threshold; the config's 475.0 "
                   "is for CartPole-v1)."),
])
def test_paac_on_another_environment_does_not_stop_on_the_configs_target(tmp_path, caplog,
                                                                         env_name, line):
  caplog.set_level("INFO", logger="absl")
  result = paac_tf.train("cartpole.gin", {**PAAC_SHORT, "train_eval.env_name": env_name},
                         root_dir=str(tmp_path / "run"))
  assert (result.reason, result.agent_steps) == ("done", 800)
  assert line in caplog.text
  assert "Reached the stop target" not in caplog.text


@pytest.mark.timeout(300)
def test_a_target_bound_with_the_runs_environment_is_for_it_and_a_first_check_says_so(
    tmp_path, caplog):
  caplog.set_level("INFO", logger="absl")
  result = paac_tf.train("cartpole.gin", {**PAAC_SHORT, "train_eval.env_name": JACKPOT,
                                          "paac.stop_at_average_return": 999.0},
                         root_dir=str(tmp_path / "run"))
  # 16 environments x 5 steps an update, an episode every other step (the step after one
  # ends starts the next): 40 episodes an update, the window of 100 full at the 3rd.
  assert (result.reason, result.agent_steps, result.updates) == ("target", 240, 3)
  assert "Stop target: 999.0 (bound for this run's environment, %s)." % JACKPOT in caplog.text
  assert ("Reached the stop target: the last 100 episodes average 1000.00 >= 999.0 (bound for "
          "this run's environment, %s); met at the first check, as soon as 100 episodes had "
          "finished" % JACKPOT) in caplog.text
