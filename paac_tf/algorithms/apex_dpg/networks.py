"""Ape-X DPG's Keras networks (float32): the deterministic actor mu(s) and the critic
Q(s, a), DDPG's MLPs (Lillicrap et al. 2016), and the actor's JSON-able spec.

  actor:  flatten(s) -> [Dense -> (LayerNorm) -> activation] x len(hidden_units)
          -> Dense(action_dim) -> a = low + (tanh(x) + 1) / 2 * (high - low),
          reshaped to [B, *action_shape]: every action inside [low, high];
  critic: concat(flatten(s), flatten(a)) -> [Dense -> (LayerNorm) -> activation] x ...
          -> Dense(1) -> Q [B].

The critic takes the action at its input, concatenated with the observation (as TD3 does;
DDPG inserts it at the second layer). It is called with one (observation, action) pair:
`critic((observation, action))`. Hidden layers are initialised as DDPG's (weights and
biases ~ U(+-1/sqrt(fan_in)), `torsos.torch_init`), the output layers small (U(+-3e-3)) so
that the first actions and values are near the middle of the range and near 0. `seed`
fixes the initial weights (`torsos.seed_initializers`, as every network of paac_tf).

The actor's spec (`actor_spec`) records the observation spec (networks/specs.py's format),
the action shape and bounds and the settings; `build_actor_from_spec` rebuilds the same
architecture with fresh variables, for a checkpoint to restore into:

  {"kind": "dpg_actor", "observation": OBSERVATION,
   "action": {"shape": [A], "low": [...], "high": [...]},     (bounds flat, float)
   "hidden_units": [400, 300], "activation": "relu", "layer_norm": false}
"""
import numpy as np
import tensorflow as tf
from tf_agents.specs import array_spec

from paac_tf.networks import specs
from paac_tf.networks import torsos

SPEC_KIND = "dpg_actor"
OUTPUT_INIT = 3e-3     # the output layers' U(+-3e-3) (DDPG's)
DEFAULT_SETTINGS = {"hidden_units": (400, 300), "activation": "relu", "layer_norm": False}


def action_bounds(action_spec):
  """(low, high): float32 numpy arrays of the action shape; ValueError unless low < high
  everywhere with a finite float32 range high - low (the actor's tanh spans exactly [low,
  high]; tf_agents stores an unbounded float spec's bounds as the dtype's extremes)."""
  shape = tuple(int(d) for d in action_spec.shape)
  if not (hasattr(action_spec, "minimum") and hasattr(action_spec, "maximum")):
    raise ValueError("Ape-X DPG needs a bounded action spec; got %r." % (action_spec,))
  low = np.broadcast_to(np.asarray(action_spec.minimum, np.float32), shape).copy()
  high = np.broadcast_to(np.asarray(action_spec.maximum, np.float32), shape).copy()
  width = high.astype(np.float64) - low.astype(np.float64)
  if not (np.all(low < high) and np.all(width <= np.finfo(np.float32).max)):
    raise ValueError("Ape-X DPG needs finite action bounds with low < high; got low %s, "
                     "high %s." % (low.tolist(), high.tolist()))
  return low, high


def _flat_size(shape):
  return int(np.prod(shape, dtype=np.int64))


def _hidden_layers(hidden_units, activation, layer_norm, fan_in):
  """The hidden stack's layers, in order: Dense (DDPG's init), LayerNorm if asked, activation."""
  stack = []
  for i, units in enumerate(hidden_units):
    stack.append(tf.keras.layers.Dense(int(units), name="fc%d" % i,
                                       **torsos.torch_init(fan_in)))
    if layer_norm:
      stack.append(tf.keras.layers.LayerNormalization(name="layer_norm%d" % i))
    stack.append(tf.keras.layers.Activation(activation, name="%s%d" % (activation, i)))
    fan_in = int(units)
  return stack


def _output_layer(units, name):
  init = lambda: tf.keras.initializers.RandomUniform(-OUTPUT_INIT, OUTPUT_INIT)
  return tf.keras.layers.Dense(units, name=name, kernel_initializer=init(),
                               bias_initializer=init())


class DpgActor(tf.keras.Model):
  """observation [B, *obs_shape] -> action [B, *action_shape] float32 in [low, high].

  Attributes:
    action_low, action_high: float32 numpy arrays of the action shape.
    action_shape: the action shape (tuple); action_dim: its size.
  """

  def __init__(self, observation_shape, action_low, action_high, hidden_units=(400, 300),
               activation="relu", layer_norm=False):
    super().__init__(name="dpg_actor")
    self.observation_shape = tuple(int(d) for d in observation_shape)
    self.action_low = np.asarray(action_low, np.float32)
    self.action_high = np.asarray(action_high, np.float32)
    self.action_shape = tuple(int(d) for d in self.action_low.shape)
    self.action_dim = _flat_size(self.action_shape)
    self.hidden_units = tuple(int(u) for u in hidden_units)
    self.activation = str(activation)
    self.layer_norm = bool(layer_norm)
    self.flatten = tf.keras.layers.Flatten(name="flatten")
    self.hidden = _hidden_layers(self.hidden_units, self.activation, self.layer_norm,
                                 _flat_size(self.observation_shape))
    self.out = _output_layer(self.action_dim, "action")

  def get_config(self):
    """Plain values (Keras warns at export about the bounds' numpy arrays otherwise)."""
    return {"observation_shape": list(self.observation_shape),
            "action_low": self.action_low.tolist(), "action_high": self.action_high.tolist(),
            "hidden_units": list(self.hidden_units), "activation": self.activation,
            "layer_norm": self.layer_norm}

  def call(self, observation, training=False):
    h = self.flatten(tf.cast(observation, tf.float32))
    for layer in self.hidden:
      h = layer(h, training=training)
    low = tf.constant(self.action_low.reshape(-1))
    high = tf.constant(self.action_high.reshape(-1))
    action = low + (tf.tanh(self.out(h)) + 1.0) / 2.0 * (high - low)
    # The clip only removes float rounding at a saturated tanh (low + 1 * (high - low)).
    action = tf.clip_by_value(action, low, high)
    return tf.reshape(action, [-1, *self.action_shape])


class DpgCritic(tf.keras.Model):
  """(observation [B, *obs_shape], action [B, *action_shape]) -> Q [B] float32; call it
  with one pair, `critic((observation, action))`."""

  def __init__(self, observation_shape, action_shape, hidden_units=(400, 300),
               activation="relu", layer_norm=False):
    super().__init__(name="dpg_critic")
    self.observation_shape = tuple(int(d) for d in observation_shape)
    self.action_shape = tuple(int(d) for d in action_shape)
    self.hidden_units = tuple(int(u) for u in hidden_units)
    self.activation = str(activation)
    self.layer_norm = bool(layer_norm)
    self.flatten_observation = tf.keras.layers.Flatten(name="flatten_observation")
    self.flatten_action = tf.keras.layers.Flatten(name="flatten_action")
    fan_in = _flat_size(self.observation_shape) + _flat_size(self.action_shape)
    self.hidden = _hidden_layers(self.hidden_units, self.activation, self.layer_norm, fan_in)
    self.out = _output_layer(1, "q")

  def get_config(self):
    return {"observation_shape": list(self.observation_shape),
            "action_shape": list(self.action_shape), "hidden_units": list(self.hidden_units),
            "activation": self.activation, "layer_norm": self.layer_norm}

  def call(self, inputs, training=False):
    observation, action = inputs
    h = tf.concat([self.flatten_observation(tf.cast(observation, tf.float32)),
                   self.flatten_action(tf.cast(action, tf.float32))], axis=-1)
    for layer in self.hidden:
      h = layer(h, training=training)
    return self.out(h)[:, 0]


def build_actor(observation_spec, action_spec, hidden_units=(400, 300), activation="relu",
                layer_norm=False, seed=None):
  """The actor with its variables (one call on a zero batch); `seed` (None: unseeded)
  fixes its initial weights."""
  low, high = action_bounds(action_spec)
  torsos.seed_initializers(seed)
  actor = DpgActor(observation_spec.shape, low, high, hidden_units, activation, layer_norm)
  actor(tf.zeros((1,) + tuple(observation_spec.shape), observation_spec.dtype))
  return actor


def build_critic(observation_spec, action_spec, hidden_units=(400, 300), activation="relu",
                 layer_norm=False, seed=None):
  """The critic with its variables (one call on a zero batch); `seed` (None: unseeded)
  fixes its initial weights. Called as `critic((observation, action))`."""
  torsos.seed_initializers(seed)
  action_shape = tuple(int(d) for d in action_spec.shape)
  critic = DpgCritic(observation_spec.shape, action_shape, hidden_units, activation,
                     layer_norm)
  critic((tf.zeros((1,) + tuple(observation_spec.shape), observation_spec.dtype),
          tf.zeros((1,) + action_shape, tf.float32)))
  return critic


def actor_spec(observation_spec, action_spec, **settings):
  """The JSON-able spec of `build_actor(observation_spec, action_spec, **settings)`
  (settings: hidden_units, activation, layer_norm; the defaults are build_actor's)."""
  unknown = sorted(set(settings) - set(DEFAULT_SETTINGS))
  if unknown:
    raise ValueError("Unknown actor settings %s; known: %s."
                     % (", ".join(unknown), ", ".join(DEFAULT_SETTINGS)))
  settings = dict(DEFAULT_SETTINGS, **settings)
  low, high = action_bounds(action_spec)
  return {"kind": SPEC_KIND, "observation": specs.observation_json(observation_spec),
          "action": {"shape": [int(d) for d in low.shape],
                     "low": [float(x) for x in low.reshape(-1)],
                     "high": [float(x) for x in high.reshape(-1)]},
          "hidden_units": [int(u) for u in settings["hidden_units"]],
          "activation": str(settings["activation"]),
          "layer_norm": bool(settings["layer_norm"])}


def action_spec_from_json(action):
  """The action BoundedArraySpec (float32) of an actor spec's "action" entry."""
  shape = tuple(int(d) for d in action["shape"])
  return array_spec.BoundedArraySpec(
      shape, np.float32, np.asarray(action["low"], np.float32).reshape(shape),
      np.asarray(action["high"], np.float32).reshape(shape), name="action")


def build_actor_from_spec(spec):
  """The actor of an `actor_spec`, with fresh variables (to restore a checkpoint into).

  Raises:
    ValueError: the spec is not a dpg_actor's or lacks a key.
  """
  if spec.get("kind") != SPEC_KIND:
    raise ValueError("Not a %s spec: kind %r." % (SPEC_KIND, spec.get("kind")))
  try:
    return build_actor(specs.observation_spec(spec), action_spec_from_json(spec["action"]),
                       hidden_units=tuple(spec["hidden_units"]), activation=spec["activation"],
                       layer_norm=spec["layer_norm"])
  except KeyError as e:
    raise ValueError("The %s spec lacks %s." % (SPEC_KIND, e)) from None
