"""Keras actor-critic model: a torso with a policy-logits head and a scalar value head."""
import tensorflow as tf

from paac_tf.networks import precision as precision_lib
from paac_tf.networks import torsos


class ActorCritic(tf.keras.Model):
  """obs -> (policy logits [B, A], value [B]), float32 in every precision (precision.py:
  the torso computes in `precision`, the two heads in float32)."""

  def __init__(self, num_actions, observation_shape, torso="arch_nips", mlp_units=(64, 64),
               initializer="torch", precision="float32"):
    super().__init__(name="actor_critic")
    self.torso_name = torso
    self.num_actions = int(num_actions)
    self.observation_shape = tuple(int(d) for d in observation_shape)
    self.initializer = initializer
    self.precision = precision_lib.resolve(precision)
    self.torso = torsos.make_torso(torso, self.observation_shape, mlp_units, initializer,
                                   dtype=precision_lib.layer_dtype(self.precision))
    # "torch": heads as the original PAAC code (uniform, biases included); "orthogonal":
    # gain 0.01 for the policy head (a near-uniform first policy), 1.0 for the value head.
    features = {"arch_nips": 256, "arch_nature": 512}.get(torso, (tuple(mlp_units) or (0,))[-1])
    # One initializer instance per layer: an unseeded Keras initializer called twice gives
    # the same draw (the value head would copy the policy head's first weights).
    if initializer == "orthogonal":
      policy_init, value_init = torsos.orthogonal_init(0.01), torsos.orthogonal_init(1.0)
    elif torso in ("arch_nips", "arch_nature"):
      policy_init, value_init = torsos.torch_init(features), torsos.torch_init(features)
    else:
      policy_init, value_init = {}, {}
    self.policy_head = tf.keras.layers.Dense(num_actions, name="policy_logits", **policy_init)
    self.value_head = tf.keras.layers.Dense(1, name="value", **value_init)

  def call(self, observation, training=False):
    features = self.torso(observation, training=training)
    return self.policy_head(features), tf.squeeze(self.value_head(features), -1)


def build_actor_critic(num_actions, observation_spec, torso="arch_nips", mlp_units=(64, 64),
                       initializer="torch", precision="float32", seed=None):
  """Creates the model and its variables (one call on a zero batch); `seed` (None:
  unseeded) fixes the initial weights (`torsos.seed_initializers`)."""
  torsos.seed_initializers(seed)
  model = ActorCritic(num_actions, observation_spec.shape, torso, mlp_units, initializer,
                      precision)
  model(tf.zeros((1,) + tuple(observation_spec.shape), observation_spec.dtype))
  return model
