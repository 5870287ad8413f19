"""The forward pass done once: gradients from activations stored at acting time equal the
gradient tape's, for every torso, and the training loop's update is the same update."""
import numpy as np
import pytest
import tensorflow as tf
from tf_agents.specs import array_spec

from paac_tf.algorithms.paac import update as update_lib
from paac_tf.algorithms.paac import agent as agent_lib
from paac_tf.envs import environment
from paac_tf.networks import actor_critic
from paac_tf.networks import stored_activations
from paac_tf.runners.sync import rollout

T, B, A = 3, 4, 6
IMAGE = array_spec.BoundedArraySpec((84, 84, 4), np.uint8, 0, 255)
VECTOR = array_spec.ArraySpec((5,), np.float32)


def _observations(spec, shape, seed=0):
  rng = np.random.default_rng(seed)
  if spec.dtype == np.uint8:
    return rng.integers(0, 256, size=shape + spec.shape, dtype=np.uint8)
  return rng.normal(size=shape + spec.shape).astype(np.float32)


def _model(torso, spec, precision="float32", initializer="orthogonal"):
  return actor_critic.build_actor_critic(A, spec, torso=torso, initializer=initializer,
                                         precision=precision, seed=7)


@pytest.mark.parametrize("torso,spec", [("arch_nips", IMAGE), ("arch_nature", IMAGE),
                                        ("mlp", VECTOR)])
def test_backward_from_stored_activations_is_the_tape_gradient(torso, spec):
  model = _model(torso, spec)
  assert stored_activations.supports(model.torso)
  obs = tf.constant(_observations(spec, (8,)))
  weights = tf.constant(np.random.default_rng(1).normal(size=(8, model.torso.output_shape[-1])),
                        tf.float32)
  with tf.GradientTape() as tape:
    features = model.torso(obs)
    loss = tf.reduce_sum(features * weights) + tf.reduce_sum(tf.square(features))
  expected = tape.gradient(loss, model.torso.trainable_variables)

  features, stored = stored_activations.forward(model.torso, obs)
  np.testing.assert_allclose(features.numpy(), model.torso(obs).numpy(), rtol=1e-6)
  d_features = weights + 2.0 * features
  got = stored_activations.backward(model.torso, obs, stored, d_features)
  assert len(got) == len(expected)
  for variable, g, e in zip(model.torso.trainable_variables, got, expected):
    assert g.shape == e.shape, variable.name
    scale = float(tf.reduce_max(tf.abs(e))) + 1e-12
    assert float(tf.reduce_max(tf.abs(g - e))) / scale < 1e-5, variable.name


def test_pack_and_unpack_round_trip():
  model = _model("arch_nips", IMAGE)
  _, stored = stored_activations.forward(model.torso, tf.constant(_observations(IMAGE, (2,))))
  packed = stored_activations.pack(stored)
  assert packed.shape == (2, stored_activations.stored_size(model.torso))
  assert stored_activations.stored_size(model.torso) == 20 * 20 * 16 + 9 * 9 * 32 + 256
  for a, b in zip(stored_activations.unpack(model.torso, packed), stored):
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_unpack_takes_the_act_outputs_as_they_are():
  """A list of `act_stored`-like rows (2 leading columns, then `pack`'s) unpacks to the
  layers of all their rows in turn, as the rows joined and unpacked."""
  model = _model("arch_nips", IMAGE)
  parts = []
  for seed in (0, 1):
    _, stored = stored_activations.forward(
        model.torso, tf.constant(_observations(IMAGE, (3,), seed)))
    parts.append(tf.concat([tf.fill([3, 2], -7.0), stored_activations.pack(stored)], axis=1))
  joined = stored_activations.unpack(model.torso, tf.concat([p[:, 2:] for p in parts], 0))
  got = stored_activations.unpack(model.torso, parts, offset=2)
  assert [g.shape for g in got] == [(6, 20, 20, 16), (6, 9, 9, 32), (6, 256)]
  for a, b in zip(got, joined):
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_unsupported_torsos_are_recognised():
  layers = tf.keras.layers
  normalised = tf.keras.Sequential([layers.Dense(4, activation="relu"),
                                    layers.BatchNormalization()])
  dilated = tf.keras.Sequential([layers.Conv2D(4, 3, dilation_rate=2, activation="relu")])
  elu = tf.keras.Sequential([layers.Dense(4, activation="elu")])
  for torso in (normalised, dilated, elu):
    torso.build((None, 8, 8, 2) if torso is dilated else (None, 3))
    assert not stored_activations.supports(torso)


def _rollout(spec, calls, seed=0):
  obs = _observations(spec, (T, B), seed)
  rng = np.random.default_rng(seed + 1)
  actions = rng.integers(0, A, size=(T, B)).astype(np.int64)
  step_data = np.stack([rng.choice([-1.0, 0.0, 1.0], size=(T, B)),
                        np.where(rng.random((T, B)) < 0.2, 0.0, 1.0),
                        np.zeros((T, B)), np.zeros((T, B))]).astype(np.float32)
  step_data[2, 1, 2] = step_data[3, 2, 2] = 1.0     # an episode ends inside the rollout
  packed = np.stack([calls.act_stored(o).numpy() for o in obs])
  values = np.concatenate([packed[:, :, 1], np.zeros((1, B), np.float32)])
  # Step 0's activations are not passed: the update computes them.
  return obs, [tf.constant(p) for p in packed[1:]], actions, step_data, values


@pytest.mark.parametrize("torso,spec,precision,tolerance", [
    ("arch_nips", IMAGE, "float32", 1e-5), ("arch_nature", IMAGE, "float32", 1e-5),
    ("mlp", VECTOR, "float32", 1e-5), ("arch_nips", IMAGE, "mixed_bfloat16", 2e-2)])
def test_train_stored_is_train_packed(torso, spec, precision, tolerance):
  """The same update: the metrics and the new weights of two agents that start equal."""
  a = agent_lib.PaacAgent(_model(torso, spec, precision), total_updates=10)
  b = agent_lib.PaacAgent(_model(torso, spec, precision), total_updates=10)
  b.model.set_weights(a.model.get_weights())
  calls_a, calls_b = rollout.CompiledCalls(a), rollout.CompiledCalls(b)
  assert calls_a.stores_activations
  assert calls_a.activation_size == stored_activations.stored_size(a.model.torso)
  obs, activations, actions, step_data, values = _rollout(spec, calls_a)
  m_tape = calls_a.train_packed(obs, actions, step_data, values).numpy()
  m_stored = calls_b.train_stored(obs, actions, step_data, values, *activations).numpy()
  np.testing.assert_allclose(m_stored, m_tape, rtol=tolerance, atol=1e-6)
  for wa, wb in zip(a.model.get_weights(), b.model.get_weights()):
    np.testing.assert_allclose(wb, wa, rtol=tolerance, atol=tolerance * 1e-2)


def test_act_stored_acts_as_act_packed():
  a = agent_lib.PaacAgent(_model("arch_nips", IMAGE), total_updates=10, seed=3)
  b = agent_lib.PaacAgent(_model("arch_nips", IMAGE), total_updates=10, seed=3)
  b.model.set_weights(a.model.get_weights())
  obs = _observations(IMAGE, (B,))
  calls_b = rollout.CompiledCalls(b)
  plain, stored = rollout.CompiledCalls(a).act_packed(obs).numpy(), calls_b.act_stored(obs).numpy()
  assert stored.shape == (B, 2 + calls_b.activation_size)
  np.testing.assert_array_equal(stored[:, 0], plain[:, 0])
  np.testing.assert_allclose(stored[:, 1], plain[:, 1], rtol=1e-6)


def test_option_off_keeps_the_recomputing_update():
  agent = agent_lib.PaacAgent(_model("arch_nips", IMAGE), total_updates=10,
                              reuse_activations=False)
  calls = rollout.CompiledCalls(agent)
  assert not calls.stores_activations and not hasattr(calls, "train_stored")


@pytest.mark.parametrize("num_groups,overlap", [(1, False), (2, False), (1, True)])
def test_loop_trains_the_same_with_and_without_stored_activations(num_groups, overlap):
  """Two runners on equally seeded envs and agents: the same rollouts (same sampled
  actions) and the same updates, the stored-activation one without a second forward
  pass but on step 0."""
  results = []
  for reuse in (True, False):
    env = environment.make_environment("CartPole-v1", 4, 0, seed=11, num_groups=num_groups)
    try:
      model = actor_critic.build_actor_critic(env.num_actions, env.observation_spec(),
                                              torso="mlp", seed=2)
      agent = agent_lib.PaacAgent(model, total_updates=100, reuse_activations=reuse, seed=4)
      runner = rollout.RolloutRunner(env, agent, t_max=5, overlap_learner=overlap)
      assert runner.stores_activations == reuse
      metrics = [runner.run_update() for _ in range(6)]
      results.append((metrics, [w.copy() for w in model.get_weights()]))
    finally:
      env.close()
  (m_a, w_a), (m_b, w_b) = results
  for x, y in zip(m_a, m_b):
    for name in update_lib.METRIC_NAMES:
      np.testing.assert_allclose(x[name], y[name], rtol=1e-4, atol=1e-6, err_msg=name)
  for x, y in zip(w_a, w_b):
    np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-6)
