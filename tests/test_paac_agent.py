"""PAAC's parts that the training loop puts together (algorithms/paac/algorithm.py: the
model, the optimizer; update.train_step: one update on a rollout): the update descends the
loss, the learning rate anneals over agent steps, the gradient is clipped, XLA changes
nothing, and the network starts as the original code's (or orthogonal) initialisation."""
import gin
import numpy as np
import pytest
import tensorflow as tf
from tf_agents.specs import array_spec

from paac_tf.algorithms.paac import algorithm as algorithm_lib
from paac_tf.algorithms.paac import settings as settings_lib
from paac_tf.algorithms.paac import update

T, B, A = 5, 4, 6
ATARI = array_spec.BoundedArraySpec((84, 84, 4), np.uint8, 0, 255)
ACTIONS = array_spec.BoundedArraySpec((), np.int64, 0, A - 1)
PAAC = algorithm_lib.Paac()


@pytest.fixture(autouse=True)
def _no_bindings():
  """PaacSettings reads the paac.* bindings: none here (a configuration that an earlier test
  of the process parsed would change the defaults)."""
  gin.clear_config()
  yield
  gin.clear_config()


def _parts(total_updates=100, seed=0, **settings):
  """(model, optimizer, settings) as the training loop makes them (Paac's make_model and
  make_optimizer), on Atari observations."""
  settings = settings_lib.PaacSettings(**settings)
  model = PAAC.make_model(ACTIONS, ATARI, settings, seed=seed)
  return model, PAAC.make_optimizer(model, settings, total_updates), settings


def _batch(model, seed=0):
  """A rollout of T steps of B environments as the loop passes it to train_step: an episode
  of env 1 terminates at ts_3 (step 3 from it is the auto-reset), the acting values from
  the model, V(s_T) 0."""
  rng = np.random.default_rng(seed)
  obs = rng.integers(0, 256, size=(T, B, 84, 84, 4), dtype=np.uint8)
  actions = rng.integers(0, A, size=(T, B)).astype(np.int64)
  rollout = np.zeros((4, T, B), np.float32)   # rewards, discounts, next_is_last, is_last
  rollout[0] = rng.choice([-1.0, 0.0, 1.0], size=(T, B))
  rollout[1] = 1.0
  rollout[1, 2, 1] = 0.0
  rollout[2, 2, 1] = 1.0
  rollout[3, 3, 1] = 1.0
  values = np.concatenate([model(o)[1].numpy()[None] for o in obs] +
                          [np.zeros((1, B), np.float32)])
  return obs, actions, rollout, values


def _train(model, optimizer, settings, batch, compile_with=None):
  """update.train_step on `batch`: its metrics as {name: float}."""
  step = lambda *b: update.train_step(model, optimizer, settings, *b)
  if compile_with is not None:
    step = tf.function(step, jit_compile=compile_with)
  vector = step(*[tf.constant(x) for x in batch]).numpy()
  assert vector.shape == (len(update.METRIC_NAMES),) and vector.dtype == np.float32
  return dict(zip(update.METRIC_NAMES, vector.tolist()))


def _fixed_target_loss(model, settings, batch):
  """The update's objective at fixed targets (returns and advantages from the acting
  values: the surrogate that the gradient step descends)."""
  obs, actions, rollout, values = batch
  logits, value_pred = model(obs.reshape((T * B,) + obs.shape[2:]))
  return float(update.loss(logits, value_pred, actions, rollout, values, settings)[0])


def test_one_train_step_changes_weights_and_lowers_loss():
  model, optimizer, settings = _parts()
  batch = _batch(model)
  before = [w.copy() for w in model.get_weights()]
  loss_before = _fixed_target_loss(model, settings, batch)
  metrics = _train(model, optimizer, settings, batch)
  assert metrics["Losses/total"] == pytest.approx(loss_before, rel=1e-4, abs=1e-5)
  after = model.get_weights()
  assert any(not np.allclose(b, a) for b, a in zip(before, after))
  assert _fixed_target_loss(model, settings, batch) < loss_before
  assert int(optimizer.iterations.numpy()) == 1
  assert all(np.isfinite(v) for v in metrics.values()), metrics
  assert metrics["Losses/value"] > 0 and metrics["Losses/entropy"] > 0
  # The learning rate applied: the first update's, the initial one.
  assert metrics["Optimizer/learning_rate"] == pytest.approx(settings.learning_rate)


def test_learning_rate_anneals_linearly_to_zero():
  """Over the run's updates (lr_anneal_steps None)."""
  model, optimizer, settings = _parts(total_updates=10, learning_rate=0.01)
  schedule = optimizer.learning_rate
  for update_count, rate in ((0, 0.01), (5, 0.005), (10, 0.0), (20, 0.0)):
    assert float(schedule(update_count)) == pytest.approx(rate, abs=1e-9), update_count
  batch = _batch(model)
  # Each update applies the rate of its index (reported by train_step).
  rates = [_train(model, optimizer, settings, batch)["Optimizer/learning_rate"]
           for _ in range(3)]
  np.testing.assert_allclose(rates, [0.01, 0.009, 0.008], rtol=1e-5)


@pytest.mark.parametrize("num_envs,t_max,updates", [(32, 5, 500_000), (16, 5, 1_000_000),
                                                    (7, 1, 11_428_572)])
def test_learning_rate_horizon_is_in_agent_steps_whatever_n_e_and_t_max(num_envs, t_max,
                                                                        updates):
  """lr_anneal_steps = 80M agent steps (the original code's) is 500,000 updates at n_e 32,
  t_max 5 and 1M updates at n_e 16 (rounded up), whatever the run's length."""
  settings = settings_lib.PaacSettings(learning_rate=0.01, lr_anneal_steps=80_000_000,
                                       num_envs=num_envs, t_max=t_max, network="mlp")
  model = PAAC.make_model(ACTIONS, array_spec.ArraySpec((4,), np.float32), settings)
  schedule = PAAC.make_optimizer(model, settings, total_updates=10).learning_rate
  assert float(schedule(updates // 2)) == pytest.approx(0.005, rel=1e-5)
  assert float(schedule(updates - 1)) > 0.0
  assert float(schedule(updates)) == 0.0


def test_gradient_is_clipped_to_global_norm():
  model, optimizer, settings = _parts(max_grad_norm=1e-2, learning_rate=1.0)
  batch = _batch(model)
  before = model.get_weights()
  metrics = _train(model, optimizer, settings, batch)
  assert metrics["Optimizer/global_norm"] > 1e-2   # reported before clipping
  delta = np.sqrt(sum(np.sum((a - b) ** 2) for a, b in zip(model.get_weights(), before)))
  # TF1 RMSProp (ms starts at 1): the first step scales g by 1/sqrt(0.99 + 0.01 g^2 + 0.1),
  # so a clipped gradient of norm 1e-2 moves the weights by at most 1e-2 / sqrt(1.09).
  assert 0 < delta <= 1e-2 / np.sqrt(1.09) * 1.01


def test_xla_train_step_matches_plain():
  """The loop's train step compiled with XLA (paac.jit_compile) gives the eager update."""
  plain, plain_optimizer, settings = _parts(seed=3)
  xla, xla_optimizer, _ = _parts(seed=4)
  xla.set_weights(plain.get_weights())
  batch = _batch(plain)
  for _ in range(2):
    m1 = _train(plain, plain_optimizer, settings, batch)
    m2 = _train(xla, xla_optimizer, settings, batch, compile_with=True)
    for name in update.METRIC_NAMES:
      assert m2[name] == pytest.approx(m1[name], rel=1e-3, abs=1e-5), name
  for a, b in zip(plain.get_weights(), xla.get_weights()):
    np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)


def test_make_model_follows_the_settings():
  settings = settings_lib.PaacSettings(network="mlp", mlp_units=(16, 8))
  model = PAAC.make_model(ACTIONS, array_spec.ArraySpec((4,), np.float32), settings, seed=1)
  logits, values = model(np.zeros((3, 4), np.float32))
  assert logits.shape == (3, A) and values.shape == (3,)
  assert [layer.units for layer in model.torso.layers if hasattr(layer, "units")] == [16, 8]
  again = PAAC.make_model(ACTIONS, array_spec.ArraySpec((4,), np.float32), settings, seed=1)
  for a, b in zip(model.get_weights(), again.get_weights()):   # the seed fixes the weights
    np.testing.assert_array_equal(a, b)


def test_heads_are_initialised_independently_as_the_original_code():
  model, _, _ = _parts()   # initializer 'torch', the default
  policy, value = model.policy_head.kernel.numpy(), model.value_head.kernel.numpy()
  bound = 1.0 / np.sqrt(256.0)
  for w in (policy, value, model.policy_head.bias.numpy(), model.value_head.bias.numpy()):
    assert np.all(np.abs(w) <= bound)
  # Independent draws: the value head is not a copy of the policy head's first weights.
  assert not np.allclose(value[:, 0], policy.reshape(-1)[:256])
  assert model.value_head.bias.numpy()[0] != model.policy_head.bias.numpy()[0]


def test_orthogonal_initialisation_gains_and_zero_biases():
  """initializer='orthogonal': W^T W = gain^2 I on each layer's kernel (flattened as
  [fan_in, units], fan_in >= units here), gain sqrt(2) in the torso, 0.01 for the policy
  head, 1.0 for the value head, all biases zero."""
  model, _, _ = _parts(initializer="orthogonal")
  layers = [(layer, np.sqrt(2.0)) for layer in model.torso.layers
            if getattr(layer, "kernel", None) is not None]
  layers += [(model.policy_head, 0.01), (model.value_head, 1.0)]
  assert len(layers) == 5
  for layer, gain in layers:
    kernel = layer.kernel.numpy()
    flat = kernel.reshape(-1, kernel.shape[-1])
    np.testing.assert_allclose(flat.T @ flat, gain ** 2 * np.eye(flat.shape[1]), atol=1e-4 * gain)
    assert not np.any(layer.bias.numpy()), layer.name
  # The first policy is near uniform.
  logits, _ = model(np.random.default_rng(0).integers(0, 256, (8, 84, 84, 4), dtype=np.uint8))
  assert float(tf.reduce_max(tf.abs(logits))) < 0.1
