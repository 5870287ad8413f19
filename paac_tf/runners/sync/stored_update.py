"""The update with the forward pass done once: the torso's gradients from the activations
stored while acting (networks/stored_activations.py), the heads' by tape through the
agent's own `loss`, applied by its own `apply`; the same update as `agent.update`
(algorithms/paac/update.py for PAAC), less CPU (tests/test_stored_activations.py).

Where the calls `stores_activations` (rollout.CompiledCalls) the loop acts with `act`
(actions, values and the torso's activations in one tensor) at rollout steps 1..T-1 and
trains with `train`. Step 0's activations are computed in `train`: its actions were chosen
with the bootstrap values, before the last update.
"""
import tensorflow as tf

from paac_tf.networks import stored_activations
from paac_tf.runners.sync import packed_calls


def _heads(model, features):
  return model.policy_head(features), tf.squeeze(model.value_head(features), -1)


def act(agent, observation):
  """`packed_calls.act` with the torso's activations: float32 [B, 2 + activation_size],
  each row (action, value, activations packed by stored_activations.pack)."""
  features, stored = stored_activations.forward(agent.model.torso, observation)
  logits, values = _heads(agent.model, features)
  actions = agent.sample(logits)
  return tf.concat([tf.cast(actions, tf.float32)[:, None], values[:, None],
                    stored_activations.pack(stored)], axis=1)


def train(agent, observations, actions, rollout_steps, values, *acted):
  """`packed_calls.train` from what `act` returned for steps 1..T-1 of the rollout: `acted`
  is its outputs, float32 [rows, 2 + activation_size] each, in the order of the rollout's
  rows (step by step; within a step, env groups in turn), kept as the tensors it returned
  (no copy between acting and training)."""
  model = agent.model
  num_steps, batch = actions.shape[0], actions.shape[1]
  flat_obs = tf.reshape(observations, [num_steps * batch] + observations.shape[2:].as_list())
  torso = model.torso
  _, first = stored_activations.forward(torso, observations[0])
  later = stored_activations.unpack(torso, acted, offset=2)
  stored = [tf.concat([a, b], axis=0) for a, b in zip(first, later)]
  features = stored[-1]
  heads = model.policy_head.trainable_variables + model.value_head.trainable_variables
  with tf.GradientTape() as tape:
    tape.watch(features)
    total, metrics = agent.loss(_heads(model, features), actions, rollout_steps, values)
  d_features, *head_grads = tape.gradient(total, [features] + heads)
  torso_grads = stored_activations.backward(torso, flat_obs, stored, d_features)
  by_variable = {id(v): g for v, g in zip(torso.trainable_variables + heads,
                                          torso_grads + head_grads)}
  grads = [by_variable[id(v)] for v in model.trainable_variables]
  return packed_calls.metrics_vector(agent, agent.apply(grads, metrics))
