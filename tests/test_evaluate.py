"""Evaluation of exported SavedModels: protocol, unbiased episode selection, eval.json, CLI."""
import json
import os

import numpy as np
import pytest
from tf_agents.specs import array_spec
from tf_agents.trajectories import time_step as ts

from conftest import run_module
import paac_tf
from paac_tf import errors
from paac_tf.algorithms import registry
from paac_tf.networks import actor_critic
from paac_tf.networks import dueling_q
from paac_tf.policies import evaluation
from paac_tf.policies import loading
from paac_tf.policies import saved_model

PAAC, APEX = registry.get("paac"), registry.get("apex")

pytestmark = pytest.mark.timeout(300)

CARTPOLE_SPEC = array_spec.BoundedArraySpec((4,), np.float32, -3.4e38, 3.4e38,
                                            name="observation")
ATARI_SPEC = array_spec.BoundedArraySpec((84, 84, 4), np.uint8, 0, 255, name="observation")
SCHEMA = {"env_name": str, "episodes": int, "returns": list, "mean": float, "std": float,
          "min": float, "max": float, "lengths": list, "policy_dir": str, "train_step": int,
          "epsilon": float, "protocol": str, "wall_time_s": float, "timestamp": str,
          "standard_error": float, "env_seeds": list, "assists": dict}


@pytest.fixture(scope="module")
def cartpole_policy(tmp_path_factory):
  model = actor_critic.build_actor_critic(2, CARTPOLE_SPEC, torso="mlp", mlp_units=(8,))
  base = str(tmp_path_factory.mktemp("policies") / "cartpole_v1")
  return saved_model.save_policy(PAAC, model, CARTPOLE_SPEC, base, 11,
                                 {"env_name": "CartPole-v1", "train_step": 11}, greedy=True)


class _FakeBatchedEnv:
  """Slot i plays episodes of `lengths[i]` steps with reward 1 per step, auto-resetting."""

  def __init__(self, lengths):
    self.lengths = list(lengths)
    self.batch_size = len(lengths)
    self._t = np.zeros(self.batch_size, int)
    self._was_last = np.zeros(self.batch_size, bool)
    self._finished = []

  def action_spec(self):
    return array_spec.BoundedArraySpec((), np.int64, 0, 1)

  def _time_step(self, step_type, reward):
    n = self.batch_size
    return ts.TimeStep(step_type.astype(np.int32), reward.astype(np.float32),
                       np.ones(n, np.float32), np.zeros((n, 4), np.float32))

  def reset(self):
    self._t[:] = 0
    return self._time_step(np.zeros(self.batch_size), np.zeros(self.batch_size))

  def step(self, actions):
    assert len(actions) == self.batch_size
    step_type = np.ones(self.batch_size)
    reward = np.ones(self.batch_size)
    for i in range(self.batch_size):
      if self._was_last[i]:
        self._t[i], step_type[i], reward[i], self._was_last[i] = 0, 0, 0, False
        continue
      self._t[i] += 1
      if self._t[i] == self.lengths[i]:
        step_type[i], self._was_last[i] = 2, True
        self._finished.append((float(self.lengths[i]), int(self.lengths[i])))
    return self._time_step(step_type, reward)

  def pop_finished_episodes(self):
    finished, self._finished = self._finished, []
    return finished


class _ZeroPolicy:

  def actions(self, observations):
    return np.zeros(len(observations), np.int64)


def test_slot_quotas():
  assert evaluation.slot_quotas(30, 16) == [2] * 14 + [1] * 2
  assert evaluation.slot_quotas(5, 5) == [1] * 5
  assert sum(evaluation.slot_quotas(31, 16)) == 31


def test_each_slot_plays_its_fixed_share_so_short_episodes_do_not_dominate():
  # Slot 0 finishes an episode every 2 steps, slot 1 every 9: taking the first 4
  # episodes to finish would give [2, 2, 2, 2]; each slot's first two give 2, 9, 2, 9.
  env = _FakeBatchedEnv([2, 9])
  results = evaluation.run_episodes(_ZeroPolicy(), env, 4, epsilon=0.0)
  assert results == [(2.0, 2), (9.0, 9), (2.0, 2), (9.0, 9)]
  env = _FakeBatchedEnv([3, 1, 7])
  results = evaluation.run_episodes(_ZeroPolicy(), env, 5, epsilon=0.0)
  assert sorted(r for r, _ in results) == [1.0, 1.0, 3.0, 3.0, 7.0]   # quotas 2, 2, 1


def test_eval_json_schema_record_and_no_overwrite(cartpole_policy, tmp_path):
  out = str(tmp_path / "eval")
  summary = evaluation.evaluate(cartpole_policy, episodes=5, num_envs=2, output_dir=out,
                              record="best.gif", verbose=False)
  with open(os.path.join(out, "eval.json")) as f:
    data = json.load(f)
  for key, kind in SCHEMA.items():
    assert isinstance(data[key], kind), (key, data.get(key))
  assert "noop_max" in data and data["noop_max"] is None        # not Atari
  assert data["env_name"] == "CartPole-v1" and data["episodes"] == 5
  assert data["train_step"] == 11 and data["epsilon"] == 0.0 and data["greedy"] is True
  assert data["policy_dir"] == cartpole_policy
  assert len(data["returns"]) == len(data["lengths"]) == 5
  assert data["returns"] == [float(n) for n in data["lengths"]]  # CartPole: +1 per step
  assert data["mean"] == pytest.approx(np.mean(data["returns"]))
  assert data["std"] == pytest.approx(np.std(data["returns"], ddof=1)) and data["std_ddof"] == 1
  assert data["standard_error"] == pytest.approx(np.std(data["returns"], ddof=1) / np.sqrt(5))
  # Seeds apart from training's (below 10**9), recorded; every assist recorded.
  assert data["seed"] == evaluation.EVAL_SEED == 10**9
  assert data["env_seeds"] == [10**9, 10**9 + 1] and "env seeds 1000000000-1000000001" in (
      data["protocol"])
  assert data["assists"] == {"episodic_life": False, "reward_clipping": False,
                             "fire_at_game_start": False, "fire_after_life_loss": False,
                             "trained_with_fire_reset": False, "epsilon": 0.0,
                             "noop_max": None, "max_episode_frames": None,
                             "sticky_actions": None}
  assert (data["min"], data["max"]) == (min(data["returns"]), max(data["returns"]))
  assert "5 episodes over 2 parallel envs" in data["protocol"]
  assert summary["mean"] == data["mean"]
  from PIL import Image  # pylint: disable=import-outside-toplevel
  with Image.open(os.path.join(out, "best.gif")) as gif:
    assert gif.n_frames > 1
  with pytest.raises(errors.UserError, match="exists; pass --overwrite"):
    evaluation.evaluate(cartpole_policy, episodes=2, output_dir=out, verbose=False)
  assert json.load(open(os.path.join(out, "eval.json"))) == data
  again = evaluation.evaluate(cartpole_policy, episodes=2, output_dir=out, overwrite=True,
                            verbose=False)
  assert again["episodes"] == 2


def test_default_output_dir_and_model_dir_resolution(cartpole_policy):
  model_dir = os.path.dirname(cartpole_policy)
  assert loading.resolve_policy_dir(model_dir) == cartpole_policy
  summary = evaluation.evaluate(model_dir, episodes=2, num_envs=2, seed=5, verbose=False)
  assert summary["eval_json"] == os.path.join(cartpole_policy + "-eval", "eval.json")
  assert sorted(os.listdir(model_dir)) == ["11", "11-eval"]   # TF Serving sees no new version


def test_apex_policy_default_epsilon(tmp_path):
  model = dueling_q.build_dueling_q(2, CARTPOLE_SPEC, torso="mlp", mlp_units=(8,))
  path = saved_model.save_policy(APEX, model, CARTPOLE_SPEC, str(tmp_path / "cartpole_v1"), 3,
                                 {"env_name": "CartPole-v1", "train_step": 3})
  summary = evaluation.evaluate(path, episodes=2, num_envs=2, verbose=False)
  assert summary["epsilon"] == summary["default_epsilon"] == APEX.greedy_eval_epsilon == 0.001
  assert summary["algorithm"] == "apex"
  study = evaluation.evaluate(path, episodes=2, num_envs=2, epsilon=0.05, verbose=False,
                              output_dir=str(tmp_path / "study"))
  assert (study["epsilon"], study["default_epsilon"]) == (0.05, 0.001)   # both recorded
  assert evaluation.default_epsilon({"algorithm": "paac", "greedy": False}) == 0.0
  assert evaluation.default_epsilon({"algorithm": "apex", "greedy": False, "epsilon": 0.1}) == 0.0
  # An export that predates its metadata's eval_epsilon: its algorithm's, by name.
  assert evaluation.default_epsilon({"algorithm": "apex", "greedy": True}) == 0.001


def test_atari_noop_protocol_frame_cap_and_gif(tmp_path):
  model = actor_critic.build_actor_critic(6, ATARI_SPEC, torso="arch_nips")
  path = saved_model.save_policy(PAAC, model, ATARI_SPEC, str(tmp_path / "pong"), 1,
                                 {"env_name": "Pong", "train_step": 1,
                                  "preprocessing": {"atari_backend": "vector",
                                                    "max_episode_frames": 108000}})
  summary = evaluation.evaluate(path, episodes=2, num_envs=2, max_episode_frames=160,
                              record=str(tmp_path / "best.gif"), verbose=False)
  assert summary["noop_max"] == 30 and summary["max_episode_frames"] == 160
  assert all(n <= 160 // 4 for n in summary["lengths"])
  assert "up to 30 no-op starts" in summary["protocol"]
  assert "unclipped" in summary["protocol"]
  from PIL import Image  # pylint: disable=import-outside-toplevel
  with Image.open(str(tmp_path / "best.gif")) as gif:
    assert gif.size == (252, 252) and gif.n_frames > 1


def test_no_replay_warning_when_every_episode_ends_at_the_time_cap(tmp_path):
  """Pong cut after 40 frames: every game ends at the cap with score 0 after 10 agent steps,
  the same (score, length) each time, which is the cap's doing, not the same game replayed
  (as CartPole-v1's 500 steps for a policy that keeps the pole up)."""
  model = actor_critic.build_actor_critic(6, ATARI_SPEC, torso="arch_nips")
  path = saved_model.save_policy(PAAC, model, ATARI_SPEC, str(tmp_path / "pong"), 1,
                                 {"env_name": "Pong", "train_step": 1,
                                  "preprocessing": {"atari_backend": "vector"}})
  summary = evaluation.evaluate(path, episodes=4, num_envs=2, max_episode_frames=40,
                                verbose=False)
  assert summary["lengths"] == [10] * 4 and summary["returns"] == [0.0] * 4
  assert summary["capped"] == [True] * 4 and summary["capped_episodes"] == 4
  assert summary["distinct_episodes"] == 1
  assert not summary["replays"] and summary["replay_warning"] is None
  assert "\nwarning:" not in evaluation.format_summary(summary)


def test_fire_assist_as_trained_or_the_policys_own_actions(tmp_path):
  """A policy trained with fire_reset is evaluated with the FIRE assist by default and with
  its own actions only on request; eval.json says which (the env's presses_fire)."""
  model = actor_critic.build_actor_critic(4, ATARI_SPEC, torso="arch_nips")
  path = saved_model.save_policy(PAAC, model, ATARI_SPEC, str(tmp_path / "breakout"), 1,
                                 {"env_name": "Breakout", "train_step": 1,
                                  "preprocessing": {"atari_backend": "vector", "fire_reset": True,
                                                    "max_episode_frames": 108000}})
  assisted = evaluation.evaluate(path, episodes=2, num_envs=2, max_episode_frames=80,
                                 verbose=False)
  own = evaluation.evaluate(path, episodes=2, num_envs=2, max_episode_frames=80, fire_reset=False,
                            output_name="eval_policy_only.json", verbose=False)
  assert assisted["assists"]["fire_at_game_start"] and assisted["assists"]["fire_after_life_loss"]
  assert "FIRE pressed by the environment" in assisted["protocol"]
  assert evaluation.assist_label(assisted) == "FIRE at start and after a lost life"
  assert not own["assists"]["fire_at_game_start"] and own["assists"]["trained_with_fire_reset"]
  assert "no FIRE assist" in own["protocol"]
  assert evaluation.assist_label(own) == "policy's actions only"
  assert sorted(os.listdir(str(tmp_path / "breakout" / "1-eval"))) == [
      "eval.json", "eval_policy_only.json"]
  with pytest.raises(errors.UserError, match="--output_name must be a file name"):
    evaluation.evaluate(path, episodes=1, output_name="../x.json", verbose=False)


def test_a_game_without_fire_was_not_assisted_in_training(tmp_path):
  """MsPacman's action set has no FIRE: fire_reset never pressed it, so its evaluation is
  the policy's own evaluation, not the 'own actions only' variant of an assisted one."""
  model = actor_critic.build_actor_critic(9, ATARI_SPEC, torso="arch_nips")
  path = saved_model.save_policy(PAAC, model, ATARI_SPEC, str(tmp_path / "ms_pacman"), 1,
                                 {"env_name": "MsPacman", "train_step": 1,
                                  "preprocessing": {"atari_backend": "vector", "fire_reset": True,
                                                    "max_episode_frames": 108000}})
  summary = evaluation.evaluate(path, episodes=1, num_envs=1, max_episode_frames=40,
                                verbose=False)
  assert summary["assists"]["fire_at_game_start"] is False
  assert summary["assists"]["trained_with_fire_reset"] is False
  assert evaluation.assist_label(summary) == ""
  assert evaluation.trained_with_fire("Breakout", {"fire_reset": True})
  assert not evaluation.trained_with_fire("Breakout", {})
  assert not evaluation.trained_with_fire("CartPole-v1", {"fire_reset": True})


def test_cli_and_load_policy_take_a_run_directory(tmp_path):
  """A run directory (root_dir/policies/<model>/<version>): its newest export, for
  `python -m paac_tf.evaluate --policy_dir` and `paac_tf.load_policy` alike."""
  model = actor_critic.build_actor_critic(2, CARTPOLE_SPEC, torso="mlp", mlp_units=(8,))
  run = tmp_path / "run"
  base = str(run / "policies" / "cartpole_v1")
  for step in (80, 400, 160):
    newest = saved_model.save_policy(PAAC, model, CARTPOLE_SPEC, base, step,
                                     {"env_name": "CartPole-v1", "train_step": step},
                                     greedy=True)
    if step == 400:
      expected = newest
  assert loading.resolve_policy_dir(str(run)) == expected
  assert paac_tf.load_policy(str(run)).policy_dir == expected
  proc = run_module("paac_tf.evaluate", "--policy_dir=%s" % run, "--episodes=2", timeout=240)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert "CartPole-v1: 2 episodes, mean" in proc.stdout
  with open(os.path.join(expected + "-eval", "eval.json")) as f:
    written = json.load(f)
  assert (written["policy_dir"], written["train_step"]) == (expected, 400)


def test_bad_policy_dirs(tmp_path):
  with pytest.raises(errors.UserError, match="does not exist"):
    evaluation.evaluate(str(tmp_path / "nope"))
  (tmp_path / "empty").mkdir()
  with pytest.raises(errors.UserError, match="is not a SavedModel"):
    evaluation.evaluate(str(tmp_path / "empty"))


def test_cli_runs(cartpole_policy, tmp_path):
  # Bad input exits 2 with one `error:` line, as every entry point (errors.parse_flags).
  proc = run_module("paac_tf.evaluate", "--policy_dir=%s" % cartpole_policy, "--episodes=3",
                    "--output_dir=%s" % (tmp_path / "out"), timeout=240)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert "CartPole-v1: 3 episodes, mean" in proc.stdout
  with open(tmp_path / "out" / "eval.json") as f:
    assert json.load(f)["episodes"] == 3
