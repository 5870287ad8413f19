"""Keras dueling Q-network (Wang et al. 2016): Q = V + A - mean(A); Ape-X's network settings
(`apex_network`, shared by learner, actors and exports), its compute precision
(`apex_precision`, learner and actors) and its builder."""
import tensorflow as tf

from paac_tf.networks import precision as precision_lib
from paac_tf.networks import torsos
from paac_tf.bookkeeping import checks


class DuelingQ(tf.keras.Model):
  """obs -> Q values [B, A], float32 in every precision (precision.py: torso and hidden
  head layers compute in `precision`, the value and advantage outputs in float32)."""

  def __init__(self, num_actions, observation_shape, torso="arch_nature", mlp_units=(64, 64),
               head_units=None, precision="float32"):
    super().__init__(name="dueling_q")
    self.torso_name = torso
    self.num_actions = int(num_actions)
    self.observation_shape = tuple(int(d) for d in observation_shape)
    self.precision = precision_lib.resolve(precision)
    dtype = precision_lib.layer_dtype(self.precision)
    self.torso = torsos.make_torso(torso, self.observation_shape, mlp_units, dtype=dtype)
    dense = tf.keras.layers.Dense
    self.value_hidden = (dense(head_units, activation="relu", name="value_hidden", dtype=dtype)
                         if head_units else None)
    self.adv_hidden = (dense(head_units, activation="relu", name="adv_hidden", dtype=dtype)
                       if head_units else None)
    self.value_head = dense(1, name="value")
    self.advantage_head = dense(num_actions, name="advantage")

  def call(self, observation, training=False):
    h = self.torso(observation, training=training)
    hv = self.value_hidden(h) if self.value_hidden is not None else h
    ha = self.adv_hidden(h) if self.adv_hidden is not None else h
    value = self.value_head(hv)
    adv = self.advantage_head(ha)
    return value + adv - tf.reduce_mean(adv, axis=-1, keepdims=True)


def build_dueling_q(num_actions, observation_spec, torso="arch_nature", mlp_units=(64, 64),
                    head_units=None, precision="float32", seed=None):
  """Creates the model and its variables; `seed` (None: unseeded) fixes the initial weights
  (`torsos.seed_initializers`)."""
  torsos.seed_initializers(seed)
  model = DuelingQ(num_actions, observation_spec.shape, torso, mlp_units, head_units, precision)
  model(tf.zeros((1,) + tuple(observation_spec.shape), observation_spec.dtype))
  return model


@checks.configurable(module="apex")
def apex_network(network: checks.one_of(torsos.TORSOS) = "arch_nature",
                 mlp_units: checks.Units = (64, 64), head_units: checks.OptionalCount = None):
  """The dueling Q-network's settings (shared by learner, actors and exports).

  Args:
    network: the torso: 'arch_nature' (the Nature DQN's, as the paper), 'arch_nips' or 'mlp'.
    mlp_units: the hidden layers of 'mlp'.
    head_units: a hidden layer of this many units in the value and in the advantage head
      (None: linear heads on the torso).
  """
  return {"network": str(network), "mlp_units": [int(u) for u in mlp_units],
          "head_units": None if head_units is None else int(head_units)}


@checks.configurable(module="apex")
def apex_precision(precision: checks.one_of(precision_lib.PRECISIONS) = "float32"):
  """The Ape-X networks' compute precision, learner and actors alike (see precision.py).
  Not a network setting: variables are float32 in every precision, so it is neither in
  `apex_network` nor in the recorded network spec, and a run may resume in another one.

  Args:
    precision: 'float32', 'mixed_bfloat16' or 'auto' (opt-in: networks/precision.py).
  """
  return precision_lib.check(precision)


def build_q_network(num_actions, observation_spec, settings=None, precision=None, seed=None):
  """A dueling Q-network with variables, as configured by `apex_network`, computing in
  `precision` (None: `apex_precision`), its initial weights fixed by `seed` (None: unseeded)."""
  settings = settings or apex_network()
  return build_dueling_q(int(num_actions), observation_spec, torso=settings["network"],
                         mlp_units=tuple(settings["mlp_units"]),
                         head_units=settings["head_units"],
                         precision=apex_precision() if precision is None else precision,
                         seed=seed)
