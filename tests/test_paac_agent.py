"""The compiled PAAC act and train steps."""
import numpy as np
import pytest
import tensorflow as tf
from tf_agents.specs import array_spec

from paac_tf.algorithms.paac import update as update_lib
from paac_tf.algorithms.paac import agent as agent_lib
from paac_tf.algorithms.paac import losses
from paac_tf.algorithms.paac import returns
from paac_tf.runners.sync import rollout
from paac_tf.networks import actor_critic

T, B, A = 5, 4, 6


def _agent(**kwargs):
  spec = array_spec.BoundedArraySpec((84, 84, 4), np.uint8, 0, 255)
  model = actor_critic.build_actor_critic(A, spec, torso="arch_nips")
  return agent_lib.PaacAgent(model, total_updates=100, **kwargs)


def _batch(agent, seed=0):
  rng = np.random.default_rng(seed)
  obs = rng.integers(0, 256, size=(T, B, 84, 84, 4), dtype=np.uint8)
  actions = rng.integers(0, A, size=(T, B)).astype(np.int64)
  rewards = rng.choice([-1.0, 0.0, 1.0], size=(T, B)).astype(np.float32)
  discounts = np.ones((T, B), np.float32)
  discounts[2, 1] = 0.0
  next_last = np.zeros((T, B), bool)
  next_last[2, 1] = True
  is_last = np.zeros((T, B), bool)
  is_last[3, 1] = True
  values = np.concatenate([agent.model(o)[1].numpy()[None] for o in obs] +
                          [np.zeros((1, B), np.float32)])
  return obs, actions, rewards, discounts, next_last, is_last, values


def test_act_returns_valid_actions_and_values():
  agent = _agent()
  obs = np.zeros((B, 84, 84, 4), np.uint8)
  actions, values = agent.act(obs)
  assert actions.dtype == tf.int64 and actions.shape == (B,)
  assert np.all((actions.numpy() >= 0) & (actions.numpy() < A))
  np.testing.assert_allclose(values.numpy(), agent.model(obs)[1].numpy(), rtol=1e-5, atol=1e-6)


def test_act_is_reproducible_from_the_seed():
  obs = np.random.default_rng(1).integers(0, 256, size=(64, 84, 84, 4), dtype=np.uint8)
  a1 = _agent(seed=3)
  a2 = _agent(seed=3)
  a2.model.set_weights(a1.model.get_weights())
  np.testing.assert_array_equal(a1.act(obs)[0].numpy(), a2.act(obs)[0].numpy())


def _fixed_target_loss(agent, batch):
  """The update's objective at fixed targets: returns and advantages from the weights
  before the step (the surrogate that the gradient step descends)."""
  obs, actions, rewards, discounts, next_last, is_last, values = batch
  ret = returns.n_step_returns(rewards, discounts, next_last, values, agent.gamma)
  flat_obs = obs.reshape((T * B,) + obs.shape[2:])
  flat_ret = tf.reshape(ret, [-1])
  mask = tf.reshape(returns.valid_mask(is_last), [-1])
  adv = flat_ret - tf.reshape(values[:T], [-1])
  logits, value_pred = agent.model(flat_obs)
  return losses.total_loss(losses.policy_loss(logits, actions.reshape(-1), adv, mask),
                           losses.value_loss(value_pred, flat_ret, mask),
                           losses.entropy(logits, mask), agent.entropy_coef)


def test_one_train_step_changes_weights_and_lowers_loss():
  agent = _agent()
  batch = _batch(agent)
  before = [w.copy() for w in agent.model.get_weights()]
  loss_before = float(_fixed_target_loss(agent, batch))
  metrics = agent.train(*batch)
  np.testing.assert_allclose(float(metrics["Losses/total"]), loss_before, rtol=1e-4, atol=1e-5)
  after = agent.model.get_weights()
  assert any(not np.allclose(b, a) for b, a in zip(before, after))
  assert float(_fixed_target_loss(agent, batch)) < loss_before
  assert int(agent.optimizer.iterations.numpy()) == 1
  for key in ("Losses/policy", "Losses/value", "Losses/entropy", "Losses/total",
              "Optimizer/learning_rate", "Optimizer/global_norm"):
    assert np.isfinite(float(metrics[key])), key


def test_learning_rate_anneals_linearly_to_zero():
  agent = _agent(learning_rate=0.01, lr_anneal_steps=10)
  np.testing.assert_allclose(float(agent.learning_rate(0)), 0.01)
  np.testing.assert_allclose(float(agent.learning_rate(5)), 0.005)
  np.testing.assert_allclose(float(agent.learning_rate(10)), 0.0)
  np.testing.assert_allclose(float(agent.learning_rate(20)), 0.0)


def test_gradient_is_clipped_to_global_norm():
  agent = _agent(max_grad_norm=1e-2, learning_rate=1.0)
  batch = _batch(agent)
  before = agent.model.get_weights()
  metrics = agent.train(*batch)
  assert float(metrics["Optimizer/global_norm"]) > 1e-2   # reported before clipping
  delta = np.sqrt(sum(np.sum((a - b) ** 2) for a, b in zip(agent.model.get_weights(), before)))
  # TF1 RMSProp (ms starts at 1): the first step scales g by 1/sqrt(0.99 + 0.01 g^2 + 0.1).
  assert delta <= 1e-2 / np.sqrt(1.09) * 1.01


def test_xla_train_step_matches_plain():
  plain = _agent(jit_compile=False)
  xla = _agent(jit_compile=True)
  xla.model.set_weights(plain.model.get_weights())
  batch = _batch(plain)
  m1 = plain.train(*batch)
  m2 = xla.train(*batch)
  np.testing.assert_allclose(float(m1["Losses/total"]), float(m2["Losses/total"]), rtol=1e-3)


def test_heads_are_initialised_independently_as_the_original_code():
  spec = array_spec.BoundedArraySpec((84, 84, 4), np.uint8, 0, 255)
  model = actor_critic.build_actor_critic(A, spec, torso="arch_nips")
  policy, value = model.policy_head.kernel.numpy(), model.value_head.kernel.numpy()
  bound = 1.0 / np.sqrt(256.0)
  for w in (policy, value, model.policy_head.bias.numpy(), model.value_head.bias.numpy()):
    assert np.all(np.abs(w) <= bound)
  # Independent draws: the value head is not a copy of the policy head's first weights.
  assert not np.allclose(value[:, 0], policy.reshape(-1)[:256])
  assert model.value_head.bias.numpy()[0] != model.policy_head.bias.numpy()[0]


def test_packed_act_and_train_are_act_and_train():
  """The training loop's calls (one tensor out, the step arrays in one) compute exactly
  what `act` and `train` do, from the same weights and RNG state."""
  a, b = _agent(seed=5), _agent(seed=5)
  b.model.set_weights(a.model.get_weights())
  obs = np.random.default_rng(2).integers(0, 256, size=(B, 84, 84, 4), dtype=np.uint8)
  actions, values = a.act(obs)
  calls = rollout.CompiledCalls(b)
  packed = calls.act_packed(obs).numpy()
  assert packed.shape == (B, 2) and packed.dtype == np.float32
  np.testing.assert_array_equal(packed[:, 0].astype(np.int64), actions.numpy())
  np.testing.assert_allclose(packed[:, 1], values.numpy(), rtol=1e-6)

  obs_b, act_b, rewards, discounts, next_last, is_last, values_b = _batch(a)
  metrics = a.train(obs_b, act_b, rewards, discounts, next_last, is_last, values_b)
  step_data = np.stack([rewards, discounts, next_last, is_last]).astype(np.float32)
  vector = calls.train_packed(obs_b, act_b, step_data, values_b).numpy()
  assert vector.shape == (len(update_lib.METRIC_NAMES),)
  for name, value in zip(update_lib.METRIC_NAMES, vector):
    np.testing.assert_allclose(value, float(metrics[name]), rtol=1e-5, err_msg=name)
  for wa, wb in zip(a.model.get_weights(), b.model.get_weights()):
    np.testing.assert_allclose(wa, wb, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("reuse", [True, False])
def test_the_loop_creates_few_tensors_per_update(reuse):
  """TF 2.15 on Python 3.11 leaks ~48 B per EagerTensor (tensorflow#62551): an update of
  the rollout runner is one packed act call per step and one packed train call, each
  returning one tensor, and the metrics come back as numpy numbers. With stored
  activations: `act_packed` at step 0, `act_stored` at the others, `train_stored`."""
  from paac_tf.envs import environment  # pylint: disable=import-outside-toplevel
  env = environment.make_environment("CartPole-v1", 4, 0, seed=0)
  try:
    model = actor_critic.build_actor_critic(env.num_actions, env.observation_spec(),
                                            torso="mlp")
    agent = agent_lib.PaacAgent(model, total_updates=100, reuse_activations=reuse)
    runner = rollout.RolloutRunner(env, agent, t_max=5)
    runner.run_update()
    calls = []
    names = ["act_packed", "train_packed"] + (["act_stored", "train_stored"] if reuse else [])
    for name in names:
      compiled = getattr(runner.calls, name)
      setattr(runner.calls, name, lambda *x, name=name, f=compiled: calls.append(name) or f(*x))
    metrics = runner.run_update()
    if reuse:
      # Step 0's action was chosen at the end of the previous rollout, with its bootstrap.
      assert calls == ["act_stored"] * 4 + ["act_packed", "train_stored"]
    else:
      assert calls == ["act_packed"] * 5 + ["train_packed"]
    assert set(metrics) == set(update_lib.METRIC_NAMES)
    assert all(isinstance(v, np.floating) for v in metrics.values())
  finally:
    env.close()


def test_learning_rate_horizon_is_in_agent_steps_whatever_n_e_and_t_max():
  """80M agent steps is 500,000 updates at n_e 32, t_max 5 and 1M updates at n_e 16."""
  for steps_per_update, updates in ((32 * 5, 500_000), (16 * 5, 1_000_000), (7, 11_428_572)):
    agent = _agent(learning_rate=0.01, lr_anneal_steps=80_000_000,
                   steps_per_update=steps_per_update)
    np.testing.assert_allclose(float(agent.learning_rate(updates // 2)), 0.005, rtol=1e-5)
    assert float(agent.learning_rate(updates - 1)) > 0.0
    assert float(agent.learning_rate(updates)) == 0.0


def test_orthogonal_initialisation_gains_and_zero_biases():
  """initializer='orthogonal': W^T W = gain^2 I on each layer's kernel (flattened as
  [fan_in, units], fan_in >= units here), gain sqrt(2) in the torso, 0.01 for the policy
  head, 1.0 for the value head, all biases zero."""
  spec = array_spec.BoundedArraySpec((84, 84, 4), np.uint8, 0, 255)
  model = actor_critic.build_actor_critic(A, spec, torso="arch_nips", initializer="orthogonal")
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
