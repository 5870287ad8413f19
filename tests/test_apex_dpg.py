"""Ape-X DPG as the Ape-X DQN agent is tested: its learner step on a hand-made batch (targets
from the target networks, priorities, which loss moves which network, the target updates,
the actor's element-wise clip), actors' priorities and the learner's write-back through a
real Reverb server, a resumed run, its export and evaluation, and the configurations it
refuses. The pure math (losses, noise, networks) is tests/test_apex_dpg_math.py's."""
import ast
import collections
import json
import os
import re

import gin
import gymnasium as gym
import numpy as np
import pytest
import reverb
import tensorflow as tf
from gymnasium import spaces
from tf_agents.specs import tensor_spec

import paac_tf
from conftest import run_module
from paac_tf import api
from paac_tf import errors
from paac_tf.algorithms import registry
from paac_tf.algorithms.apex_dpg import exploration
from paac_tf.envs import environment
from paac_tf.runners import train_eval
from paac_tf.runners.apex import actor as actor_lib
from paac_tf.runners.apex import replay
from paac_tf.runners.apex import replay_layout
from paac_tf.runners.apex import sampling
from paac_tf.runners.apex import weights

train_eval.load_configurables()

# Test environments with Box actions that Ape-X DPG cannot take (no finite bounds; integers).
REFUSED_BOXES = {
    "PaacTestDpgUnbounded-v0": (spaces.Box(-np.inf, np.inf, (1,), np.float32),
                                "Unbounded action space"),
    "PaacTestDpgIntegerBox-v0": (spaces.Box(-2, 2, (1,), np.int64), "Non-float action space"),
}


class _BoxEnv(gym.Env):
  """Pendulum-like observations; the action space of REFUSED_BOXES[env_id]."""

  def __init__(self, env_id):
    self.observation_space = spaces.Box(-1.0, 1.0, (3,), np.float32)
    self.action_space = REFUSED_BOXES[env_id][0]

  def reset(self, *, seed=None, options=None):
    super().reset(seed=seed)
    return np.zeros(3, np.float32), {}

  def step(self, action):
    return np.zeros(3, np.float32), 0.0, False, False, {}


for _env_id in REFUSED_BOXES:
  if _env_id not in gym.registry:
    gym.register(_env_id, entry_point=_BoxEnv, kwargs={"env_id": _env_id})

pytestmark = pytest.mark.timeout(240)

DPG = registry.get("apex_dpg")
OBSERVATION_SPEC = tf.TensorSpec([3], tf.float32, name="observation")
ACTION_SPEC = tensor_spec.BoundedTensorSpec([1], tf.float32, -2.0, 2.0, name="action")
SMALL_NETWORKS = ["dpg_networks.actor_units = (16, 16)", "dpg_networks.critic_units = (32, 32)"]
ADAM_BETA2 = 0.999   # Keras' default, which ApexDpgLearnerStep keeps


@pytest.fixture(autouse=True)
def clean_gin():
  gin.clear_config()
  yield
  gin.clear_config()


# --- the learner step on a hand-made batch ---------------------------------------------------

def _learner_step(*bindings, n_step=3):
  """The algorithm's learner step for a Pendulum-like (3,) -> Box(-2, 2, (1,)) problem."""
  gin.parse_config(SMALL_NETWORKS + ["ReplayLayout.n_step = %d" % n_step, *bindings])
  layout = replay_layout.ReplayLayout(OBSERVATION_SPEC, ACTION_SPEC)
  return DPG.make_learner_step(ACTION_SPEC, OBSERVATION_SPEC, layout, seed=3), layout


Batch = collections.namedtuple("Batch", "sample keys obs next_obs action reward discount weights")


def _hand_made_batch(layout, batch=8, seed=0, beta=0.4):
  """A ReplaySample of `batch` items as the replay holds them (layout.item_signature), and
  what each item means, decoded here without the layout's TF code."""
  rng = np.random.default_rng(seed)
  frames = rng.normal(size=(batch, layout.window, 3)).astype(np.float32)
  action = rng.uniform(-2.0, 2.0, (batch, 1)).astype(np.float32)
  reward = rng.normal(0.0, 3.0, batch).astype(np.float32)
  # n-step transitions: full (k = n, D = gamma^n), ended early by truncation (k < n, still
  # bootstrapped) or by termination (D = 0).
  k = np.array([3, 3, 2, 1, 3, 2, 3, 1][:batch])
  discount = np.where(np.arange(batch) % 4 == 3, 0.0, 0.99 ** k).astype(np.float32)
  transition = np.stack([layout.transition_row(action[i], reward[i], discount[i], k[i])
                         for i in range(batch)])
  signature = layout.item_signature()
  assert transition.shape[1:] == tuple(signature["transition"].shape)
  assert frames.shape[1:] == tuple(signature["frames"].shape)
  keys = np.array([2 ** 63 + 5 + 7 * i for i in range(batch)], np.uint64)   # beyond int64
  probability = rng.uniform(0.001, 0.01, batch)
  table_size = np.full(batch, 500, np.int64)
  info = reverb.replay_sample.SampleInfo(
      key=tf.constant(keys, tf.uint64), probability=tf.constant(probability, tf.float64),
      table_size=tf.constant(table_size, tf.int64),
      priority=tf.constant(rng.uniform(0.1, 2.0, batch), tf.float64),
      times_sampled=tf.ones([batch], tf.int32))
  sample = reverb.replay_sample.ReplaySample(
      info=info, data={"frames": tf.constant(frames), "transition": tf.constant(transition)})
  weights_ = (table_size * probability) ** -beta
  return Batch(sample, keys, frames[:, 0], frames[np.arange(batch), k], action, reward,
               discount, (weights_ / weights_.max()).astype(np.float32))


def _values(variables):
  return [v.numpy().copy() for v in variables]


def _adam_first_step(lr, grads, epsilon):
  """The change of Adam's (tf.keras.optimizers.legacy.Adam) first update: m = (1 - b1) g,
  v = (1 - b2) g^2, lr_t = lr sqrt(1 - b2) / (1 - b1): -lr g / (|g| + eps / sqrt(1 - b2)).
  With a large epsilon it is linear in the gradient, so any other term would show."""
  return [-lr * g / (np.abs(g) + epsilon / np.sqrt(1.0 - ADAM_BETA2)) for g in grads]


def _assert_all_close(actual, expected, atol, what):
  assert len(actual) == len(expected)
  for i, (a, e) in enumerate(zip(actual, expected)):
    np.testing.assert_allclose(a, e, rtol=1e-4, atol=atol, err_msg="%s, variable %d" % (what, i))


@pytest.mark.timeout(240)
def test_learner_step_by_hand_targets_priorities_updates_clip_and_polyak():
  clip, lr, adam_epsilon, tau = 1e-4, 1.0, 1e-2, 0.25
  step, layout = _learner_step(
      "ApexDpgLearnerStep.actor_learning_rate = %r" % lr,
      "ApexDpgLearnerStep.critic_learning_rate = %r" % lr,
      "ApexDpgLearnerStep.adam_epsilon = %r" % adam_epsilon,
      "ApexDpgLearnerStep.actor_grad_clip = %r" % clip,
      "ApexDpgLearnerStep.max_grad_norm = None",
      "ApexDpgLearnerStep.target_update_tau = %r" % tau,
      "ApexDpgLearnerStep.importance_beta = 0.4")
  online, target = step.networks, step.target_networks
  # build() synced the targets; make them differ (and the critics' values far from 0, as
  # initialised), so that targets from the online networks would give other priorities.
  for a, b in zip(online.variables, target.variables):
    np.testing.assert_array_equal(a.numpy(), b.numpy())
  rng = np.random.default_rng(1)
  for v in target.variables:
    v.assign(v * 1.5 + 0.05)
  online.critic.out.kernel.assign(rng.normal(0, 0.3, online.critic.out.kernel.shape))
  b = _hand_made_batch(layout)

  # Expected, from the networks before the step (nothing of the learner step's own code).
  next_q = target.critic((b.next_obs, target.actor(b.next_obs))).numpy()
  y = b.reward + b.discount * next_q
  q_taken = online.critic((b.obs, b.action)).numpy()
  online_y = b.reward + b.discount * online.critic((b.next_obs, online.actor(b.next_obs))).numpy()
  assert np.abs(online_y - y).max() > 0.05     # the target networks matter here
  td = y - q_taken
  with tf.GradientTape() as tape:
    critic_loss = tf.reduce_mean(b.weights * 0.5 * tf.square(
        y - online.critic((b.obs, b.action))))
  critic_grads = [g.numpy() for g in
                  tape.gradient(critic_loss, online.critic.trainable_variables)]
  critic_before = _values(online.critic.variables)
  actor_before = _values(online.actor.variables)
  target_before = _values(target.variables)

  keys, priorities, metrics = step.train(b.sample)

  assert keys.dtype == tf.uint64 and keys.numpy().tolist() == b.keys.tolist()
  assert priorities.dtype == tf.float64
  np.testing.assert_allclose(priorities.numpy(), np.abs(td) + 1e-6, rtol=1e-5, atol=1e-6)
  assert not np.allclose(priorities.numpy(), np.abs(online_y - q_taken) + 1e-6, atol=1e-3)
  assert metrics["Losses/critic"].numpy() == pytest.approx(float(critic_loss), rel=1e-5)
  np.testing.assert_allclose(metrics["Replay/mean_importance_weight"].numpy(),
                             b.weights.mean(), rtol=1e-6)
  assert metrics["Q/mean_target"].numpy() == pytest.approx(float(y.mean()), rel=1e-5, abs=1e-6)
  assert set(step.finite_metric_keys) <= set(metrics)
  assert all(np.isfinite(v.numpy()) for v in metrics.values())
  assert int(step.steps.numpy()) == 1 and int(step.optimizer.iterations.numpy()) == 1

  # The critic moved by Adam's first step on the critic loss's gradient alone.
  critic_after = _values(online.critic.variables)
  _assert_all_close([a - c for a, c in zip(critic_after, critic_before)],
                    _adam_first_step(lr, critic_grads, adam_epsilon), 1e-6, "critic update")
  assert metrics["Optimizer/critic_global_norm"].numpy() == pytest.approx(
      float(np.sqrt(sum((g ** 2).sum() for g in critic_grads))), rel=1e-4)

  # The actor moved by Adam's first step on -mean Q(s, mu(s)) under the updated critic,
  # differentiated through the critic with respect to the actor's variables only, each
  # element clipped to [-clip, clip].
  actor_after = _values(online.actor.variables)
  for v, value in zip(online.actor.variables, actor_before):
    v.assign(value)
  with tf.GradientTape() as tape:
    actor_loss = -tf.reduce_mean(online.critic((b.obs, online.actor(b.obs))))
  actor_grads = [g.numpy() for g in tape.gradient(actor_loss, online.actor.trainable_variables)]
  for v, value in zip(online.actor.variables, actor_after):
    v.assign(value)
  magnitudes = np.concatenate([np.abs(g).ravel() for g in actor_grads])
  assert (magnitudes > 2 * clip).mean() > 0.05 and (magnitudes < clip / 2).mean() > 0.05, (
      "the clip should cut some elements and leave others: %s" % np.percentile(
          magnitudes, [10, 50, 90]))
  clipped = [np.clip(g, -clip, clip) for g in actor_grads]
  _assert_all_close([a - c for a, c in zip(actor_after, actor_before)],
                    _adam_first_step(lr, clipped, adam_epsilon), 1e-7, "actor update")
  unclipped = _adam_first_step(lr, actor_grads, adam_epsilon)
  assert max(np.abs(a - c - u).max()
             for a, c, u in zip(actor_after, actor_before, unclipped)) > 1e-5
  assert metrics["Losses/actor"].numpy() == pytest.approx(float(actor_loss), rel=1e-5)
  assert metrics["Optimizer/actor_global_norm"].numpy() == pytest.approx(
      float(np.sqrt(sum((g ** 2).sum() for g in clipped))), rel=1e-4)

  # Polyak averaging of every target variable: tau * online + (1 - tau) * target.
  online_after = _values(online.variables)
  _assert_all_close(_values(target.variables),
                    [tau * o + (1 - tau) * t for o, t in zip(online_after, target_before)],
                    1e-6, "Polyak target")


@pytest.mark.timeout(240)
def test_learner_step_copies_the_targets_every_period_and_keeps_keys():
  step, layout = _learner_step("ApexDpgLearnerStep.target_update_period = 3",
                               "ApexDpgLearnerStep.target_update_tau = None",
                               "ApexDpgLearnerStep.critic_learning_rate = 0.01",
                               "ApexDpgLearnerStep.actor_learning_rate = 0.01")
  b = _hand_made_batch(layout, batch=5)
  online, target = step.networks, step.target_networks
  synced, target_changed = [], []
  for _ in range(7):
    before = _values(target.variables)
    keys, priorities, _ = step.train(b.sample)
    after = _values(target.variables)
    synced.append(all(np.array_equal(a.numpy(), t) for a, t in zip(online.variables, after)))
    target_changed.append(any(not np.array_equal(x, y) for x, y in zip(before, after)))
    assert keys.numpy().tolist() == b.keys.tolist() and priorities.shape == (5,)
  assert synced == [False, False, True, False, False, True, False]
  assert target_changed == synced          # between copies, the targets stand still
  assert int(step.steps.numpy()) == 7


# --- actors' priorities and the learner's write-back through a real Reverb server ------------

class _NoStop:
  requested = False


def _read_priorities(client, num_samples):
  """key -> priority of the items seen in `num_samples` prioritized samples."""
  return {s.info.key: s.info.priority for s in client.sample(
      replay_layout.REPLAY_TABLE, num_samples, emit_timesteps=False)}


@pytest.mark.timeout(300)
def test_actor_priorities_noise_ladder_and_learner_priorities_through_reverb(monkeypatch):
  gin.parse_config(SMALL_NETWORKS + ["ReplayLayout.n_step = 3",
                                     "dpg_exploration.noise_base = 0.5",
                                     "dpg_exploration.noise_alpha = 3.0",
                                     "ApexDpgLearnerStep.critic_learning_rate = 0.01",
                                     "ApexDpgLearnerStep.actor_learning_rate = 0.01"])
  observation_spec, action_spec = environment.specs("Pendulum-v1")
  layout = replay_layout.ReplayLayout(observation_spec, action_spec)
  assert not layout.discrete_actions and layout.action_shape == (1,)
  settings = replay.apex_replay(capacity=10_000, learning_starts=1, samples_per_insert=1.0,
                                error_buffer=1e7)
  server = replay.start_server(layout, settings=settings)
  address = "127.0.0.1:%d" % server.port
  client = reverb.Client(address)
  acted = []   # per batched step: (noise scales, the actor's mean actions, the actions sent)
  noisy_actions = exploration.noisy_actions

  def recording_noisy_actions(mean_actions, noise_scales, low, high, rng):
    actions = noisy_actions(mean_actions, noise_scales, low, high, rng)
    acted.append((np.array(noise_scales, copy=True), np.array(mean_actions, copy=True),
                  actions.copy()))
    return actions

  monkeypatch.setattr(exploration, "noisy_actions", recording_noisy_actions)
  try:
    # The learner's networks, published as the learner publishes them; the actor acts with
    # a copy (its own ActorAndCritic, the weights copied in the same variable order).
    step = DPG.make_learner_step(action_spec, observation_spec, layout, seed=4)
    networks = step.network
    assert type(networks).__name__ == "ActorAndCritic"
    weights.publish(client, networks, learner_step=7)
    steps = 210   # past Pendulum's 200-step limit: truncated episodes end transitions early
    counters = actor_lib.apex_actor(
        address, actor_index=1, num_actors=2, env_name="Pendulum-v1", algorithm=DPG, seed=11,
        num_envs=4, max_steps=steps, chunk_length=4, discount=0.99, stop=_NoStop())
    size = client.server_info()[replay_layout.REPLAY_TABLE].current_size
    # Per environment: the 200 transitions of the first episode (its truncation completes
    # the n-1 shorter last ones), then those of the second that are n = 3 steps old (its
    # time steps 201..209 were seen: starts 201..206).
    assert counters["items"] == size == 4 * (200 + 6)
    assert counters["agent_steps"] == 4 * steps
    # Actor 1 of 2 x 4 environments explores with the bottom half of the 8-step ladder,
    # one noise scale per environment: 0.5 ** (1 + 3 i / 7), i = 4..7.
    ladder = [0.5 ** (1 + 3 * i / 7) for i in range(4, 8)]
    assert len(acted) == steps
    for scales, mean, sent in acted:
      np.testing.assert_allclose(scales, ladder, rtol=1e-12)
      assert mean.shape == sent.shape == (4, 1) and sent.dtype == np.float32
      assert np.all(np.abs(mean) <= 2.0) and np.all(np.abs(sent) <= 2.0)
    noise = np.concatenate([sent - mean for _, mean, sent in acted])   # [steps * 4, 1]
    spread = noise.reshape(steps, 4).std(axis=0)
    # The noise's std is the scale times half the action range (2), less where clipped.
    np.testing.assert_allclose(spread, 2.0 * np.asarray(ladder), rtol=0.25)
    assert np.all(np.diff(spread) < 0)

    # Initial priority = |R + D Q(s', mu(s')) - Q(s, a)| + 1e-6 under the published
    # networks, recomputed from the stored item; stored actions lie inside [-2, 2].
    checked = 0
    for sample in client.sample(replay_layout.REPLAY_TABLE, 200, emit_timesteps=False,
                                unpack_as_table_signature=True):
      data = layout.unpack_np(sample.data)
      obs, next_obs = layout.observations_np(data["frames"], data["next_offset"])
      action = data["action"]
      assert action.shape == (1,) and -2.0 <= action[0] <= 2.0
      assert 1 <= data["next_offset"] <= 3 and data["discount"] == pytest.approx(
          0.99 ** data["next_offset"], rel=1e-6)   # Pendulum never terminates
      obs, next_obs = obs[None], next_obs[None]
      q_taken = float(networks.critic((obs, action[None]))[0])
      next_value = float(networks.critic((next_obs, networks.actor(next_obs)))[0])
      td = data["reward"] + data["discount"] * next_value - q_taken
      assert sample.info.priority == pytest.approx(abs(td) + 1e-6, rel=1e-4, abs=1e-5)
      checked += 1
    assert checked == 200

    # The learner's steps on sampled batches: the first sees the actor's own networks (and
    # targets equal to them), so its new priorities are the initial ones; the write-back
    # puts each step's new priorities into the table.
    dataset = sampling.replay_dataset(address, layout, batch_size=32, prefetch=1)
    updated, batch_of = {}, {}
    for i, sample in enumerate(dataset.take(4)):
      keys, new_priorities, metrics = step.train(sample)
      assert all(np.isfinite(metrics[k].numpy()) for k in step.finite_metric_keys)
      np.testing.assert_array_equal(keys.numpy(), sample.info.key.numpy())
      if i == 0:
        np.testing.assert_allclose(new_priorities.numpy(), sample.info.priority.numpy(),
                                   rtol=1e-4, atol=1e-5)
      updates = dict(zip(keys.numpy().tolist(), new_priorities.numpy().tolist()))
      client.mutate_priorities(replay_layout.REPLAY_TABLE, updates=updates)
      updated.update(updates)
      batch_of.update({k: i for k in updates})
    assert int(step.steps.numpy()) == 4
    after = _read_priorities(client, 4000)
    common = [k for k in updated if k in after]
    assert len(common) >= 40
    for key in common:   # what the server holds is what the learner wrote
      assert after[key] == pytest.approx(updated[key], rel=1e-9)
  finally:
    server.stop()


# --- a run through the CLI, resumed; its export and evaluation -------------------------------

PENDULUM_SHORT = ("--gin_file=apex_dpg_pendulum.gin", "--gin_bindings=run_local.num_actors=1",
                  "--gin_bindings=apex_replay.learning_starts=200",
                  "--gin_bindings=apex_learner.checkpoint_interval=1000")
PENDULUM_WORST_STEP = np.pi ** 2 + 0.1 * 8 ** 2 + 0.001 * 2 ** 2   # Pendulum's largest cost


def _result(text):
  match = re.search(r"Result: (\{.*\})", text)
  assert match, text[-4000:]
  return ast.literal_eval(match.group(1).replace("nan", "None"))


def _checkpoint_value(root, step, name):
  path = os.path.join(root, "train", "ckpt-%d" % step)
  return int(tf.train.load_checkpoint(path).get_tensor(name + "/.ATTRIBUTES/VARIABLE_VALUE"))


@pytest.fixture(scope="module")
def resumed_run(tmp_path_factory):
  """Two short Ape-X DPG runs on Pendulum in one root dir: the second resumes the first."""
  root = str(tmp_path_factory.mktemp("apex_dpg") / "run")
  runs = []
  for run in range(2):
    # Actors report steps while the learner starts (and, on the rerun, restores), so a run
    # overshoots its bound; the rerun's bound leaves room for learner steps past the
    # replay's learning_starts (it starts empty) and the rate limiter's error buffer.
    total = 3000 if run == 0 else runs[0][0]["agent_steps"] + 4000
    proc = run_module("paac_tf.train", "--root_dir=" + root, *PENDULUM_SHORT,
                      "--gin_bindings=train_eval.total_steps=%d" % total, timeout=400,
                      env={"PYTHONUNBUFFERED": "1"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-4000:]
    result = _result(proc.stderr)
    # What its last checkpoint holds (read now: the rerun's checkpoints replace it).
    result["checkpoint"] = {name: _checkpoint_value(root, result["agent_steps"], name)
                            for name in ("agent_steps", "learner_steps", "episodes")}
    runs.append((result, proc.stderr))
  return root, runs


@pytest.mark.timeout(900)
@pytest.mark.system   # a whole run: `make test-system` (.ci/run's second step)
def test_a_rerun_in_the_same_root_dir_resumes_from_the_checkpoint(resumed_run):
  root, [(first, first_text), (second, text)] = resumed_run
  assert first["reason"] == "done" and first["agent_steps"] >= 3000 and first["updates"] > 0, first
  assert "Resuming" not in first_text
  # Agent step, learner step and both Adams' state come back (the critic's optimizer counts
  # the learner's steps).
  assert "Resuming at agent step %d (learner step %d, optimizer step %d)" % (
      first["agent_steps"], first["updates"], first["updates"]) in text, text[-4000:]
  assert second["reason"] == "done", second
  assert second["agent_steps"] >= first["agent_steps"] + 4000, (first, second)
  assert second["updates"] > first["updates"] and second["episodes"] > first["episodes"]
  # Each run's last checkpoint holds its counts: the rerun's continue the first's.
  for result in (first, second):
    assert result["checkpoint"] == {"agent_steps": result["agent_steps"],
                                    "learner_steps": result["updates"],
                                    "episodes": result["episodes"]}, result
  with open(os.path.join(root, "train", "run_config.json")) as f:
    assert json.load(f)["algorithm"] == "apex_dpg"


@pytest.mark.timeout(900)
@pytest.mark.system   # a whole run: `make test-system` (.ci/run's second step)
def test_the_export_takes_observations_and_gives_bounded_actions(resumed_run, tmp_path):
  root, [(first, _), (second, _)] = resumed_run
  base = os.path.join(root, "policies", "pendulum_v1")
  assert sorted(int(v) for v in os.listdir(base)) == [first["agent_steps"], second["agent_steps"]]
  path = os.path.join(base, str(second["agent_steps"]))
  assert api.newest_export(root) == path

  # TensorFlow alone: serving_default takes float32 [None, 3] observations and gives
  # float32 [None, 1] actions, inside [-2, 2] for any observation.
  loaded = tf.saved_model.load(path)
  serve = loaded.signatures["serving_default"]
  inputs = serve.structured_input_signature[1]
  assert list(inputs) == ["observation"]
  assert inputs["observation"].dtype == tf.float32
  assert inputs["observation"].shape.as_list() == [None, 3]
  assert list(serve.structured_outputs) == ["action"]
  assert serve.structured_outputs["action"].dtype == tf.float32
  assert serve.structured_outputs["action"].shape.as_list() == [None, 1]
  rng = np.random.default_rng(0)
  theta = rng.uniform(-np.pi, np.pi, 64)
  observations = np.stack([np.cos(theta), np.sin(theta), rng.uniform(-8, 8, 64)], 1)
  extremes = np.array([[1, 0, 8], [1, 0, -8], [-1, 0, 8], [0, 1, -8], [0, 0, 0],
                       [1e6, -1e6, 1e6], [-1e6, 1e6, -1e6], [1e30, 1e30, 1e30]])
  observations = np.concatenate([observations, extremes]).astype(np.float32)
  actions = serve(observation=tf.constant(observations))["action"].numpy()
  assert actions.shape == (72, 1) and actions.dtype == np.float32
  assert np.all(np.isfinite(actions)) and np.all((actions >= -2.0) & (actions <= 2.0))
  assert actions[:64].std() > 0   # a function of the observation, not a constant

  # The export is the last checkpoint's actor.
  with open(os.path.join(root, "train", "run_config.json")) as f:
    actor = DPG.build_network(json.load(f)["network_spec"])
  tf.train.Checkpoint(actor=actor).read(
      os.path.join(root, "train", "ckpt-%d" % second["agent_steps"])).expect_partial()
  np.testing.assert_allclose(actions, actor(observations).numpy(), rtol=1e-5, atol=1e-6)

  # The TF-Agents `action` signature and paac_tf.load_policy act the same; load_policy
  # takes a batched TimeStep of the training environment too.
  tf_agents_actions = loaded.signatures["action"](
      arg_0_step_type=tf.ones([72], tf.int32), arg_0_reward=tf.zeros([72]),
      arg_0_discount=tf.ones([72]), arg_0_observation=tf.constant(observations))
  np.testing.assert_array_equal(tf_agents_actions["action"].numpy(), actions)
  policy = paac_tf.load_policy(root)
  assert policy.policy_dir == path
  np.testing.assert_array_equal(policy.action(observations), actions)
  with paac_tf.make_env("Pendulum-v1", num_envs=3, seed=5) as env:
    time_step = env.reset()
    chosen = policy.action(time_step)
    assert chosen.shape == (3, 1) and chosen.dtype == np.float32
    np.testing.assert_array_equal(
        chosen, serve(observation=tf.constant(time_step.observation))["action"].numpy())
    env.step(chosen)

  meta = policy.metadata
  assert meta["algorithm"] == "apex_dpg" and meta["env_name"] == "Pendulum-v1"
  assert meta["action_shape"] == [1]
  assert meta["action_low"] == [-2.0] and meta["action_high"] == [2.0]
  assert "num_actions" not in meta
  assert meta["action_selection"] == "deterministic" and meta["outputs"] == ["action"]
  assert meta["observation"] == {"shape": [3], "dtype": "float32"}
  assert meta["train_step"] == second["agent_steps"] and meta["eval_epsilon"] == 0.0
  with open(os.path.join(path, "assets", "paac_tf_metadata.json")) as f:
    assert json.load(f) == meta

  # The evaluation command plays whole episodes with the export's own actions.
  out = tmp_path / "eval"
  proc = run_module("paac_tf.evaluate", "--policy_dir=" + path, "--episodes=4",
                    "--output_dir=%s" % out, timeout=300)
  assert proc.returncode == 0, proc.stderr[-3000:]
  with open(out / "eval.json") as f:
    summary = json.load(f)
  assert summary["episodes"] == 4 and len(summary["returns"]) == 4
  assert summary["lengths"] == [200] * 4              # Pendulum's time limit
  assert summary["algorithm"] == "apex_dpg" and summary["env_name"] == "Pendulum-v1"
  assert summary["epsilon"] == 0.0 and summary["train_step"] == second["agent_steps"]
  assert all(-200 * PENDULUM_WORST_STEP <= r <= 0 for r in summary["returns"]), summary
  assert summary["mean"] == pytest.approx(np.mean(summary["returns"]))


# --- configurations refused before any work ---------------------------------------------------

PENDULUM_ACTIONS = "Pendulum-v1 has continuous (Box) actions of shape (1,) in [-2, 2]"
# (algorithm, environment, the one-line message)
MISMATCHES = [
    ("paac", "Pendulum-v1", PENDULUM_ACTIONS + "; PAAC takes discrete actions only (Ape-X DPG "
     "takes continuous ones)."),
    ("apex", "Pendulum-v1", PENDULUM_ACTIONS + "; Ape-X takes discrete actions only (Ape-X "
     "DPG takes continuous ones)."),
    ("apex_dpg", "CartPole-v1", "CartPole-v1 has 2 discrete actions; Ape-X DPG takes "
     "continuous actions only (PAAC or Ape-X takes discrete ones)."),
]


def _built_in_takers_only(message):
  """The message as it reads with the built-in algorithms alone: other tests of the same
  process register algorithms of their own, which the message rightly names too."""
  built_in = {a.display_name for a in registry.algorithms() if a.name in registry.BUILTIN}
  head, _, takers = message.rpartition(" (")
  names, _, tail = takers.partition(" takes ")
  kept = [n for n in names.split(" or ") if n in built_in]
  return "%s (%s takes %s" % (head, " or ".join(kept), tail) if takers else message


@pytest.mark.parametrize("algorithm,env_name,message", MISMATCHES,
                         ids=["%s-%s" % (a, e) for a, e, _ in MISMATCHES])
def test_an_algorithm_refuses_the_other_kind_of_actions(tmp_path, algorithm, env_name, message):
  root = str(tmp_path / "run")
  with pytest.raises(errors.UserError) as info:
    train_eval.train_eval(root, env_name=env_name, total_steps=1000, algorithm=algorithm)
  assert _built_in_takers_only(errors.user_message(info.value)) == message
  assert not os.path.exists(root)


@pytest.mark.parametrize("env_id", sorted(REFUSED_BOXES))
def test_apex_dpg_refuses_a_box_without_float_bounds(tmp_path, env_id):
  root = str(tmp_path / "run")
  with pytest.raises(errors.UserError) as info:
    train_eval.train_eval(root, env_name=env_id, total_steps=1000, algorithm="apex_dpg")
  message = errors.user_message(info.value)
  assert message.startswith(REFUSED_BOXES[env_id][1]) and env_id in message, message
  assert "\n" not in message
  assert not os.path.exists(root)


# PAAC on Pendulum-v1 through the CLI: tests/test_train_cli.py's
# test_unsupported_action_space_is_a_clear_error.
@pytest.mark.timeout(240)
@pytest.mark.parametrize("gin_file,env_name,message", [
    ("apex_cartpole.gin", "Pendulum-v1", MISMATCHES[1][2]),
    ("apex_dpg_pendulum.gin", "CartPole-v1", MISMATCHES[2][2]),
], ids=["apex-Pendulum-v1", "apex_dpg-CartPole-v1"])
def test_the_cli_refuses_the_other_kind_of_actions_in_one_line(tmp_path, gin_file, env_name,
                                                               message):
  root = tmp_path / "run"
  proc = run_module("paac_tf.train", "--gin_file=" + gin_file, "--root_dir=%s" % root,
                    "--gin_bindings=train_eval.env_name='%s'" % env_name, timeout=200)
  assert proc.returncode == 2, proc.stderr[-3000:]
  assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
  printed = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
  assert printed == ["error: " + message], proc.stderr[-3000:]
  assert proc.stderr.strip().splitlines()[-1] == "error: " + message
  # Nothing was trained. (The run directory itself, with its run.lock, is made before
  # train_eval checks the actions, unlike a bad binding's: only its contents are checked.)
  assert not (root / "train").exists() and not (root / "policies").exists()
