"""Feature extractors shared by the actor-critic (PAAC) and dueling-Q (Ape-X) models.

Image torsos take uint8 NHWC frame stacks and scale them to [0, 1] inside the model,
so that callers (and SavedModel users) feed observations exactly as the env gives them.
`dtype` is the layers' Keras dtype policy (None: float32; see precision.py): the torso
then computes, and returns its features, in that policy's compute dtype.
"""
import tensorflow as tf

layers = tf.keras.layers

TORSOS = ("arch_nips", "arch_nature", "mlp")


INITIALIZERS = ("torch", "orthogonal")
TORSO_GAIN = 2.0 ** 0.5     # orthogonal gain for ReLU layers


def torch_init(fan_in):
  """Weights and biases ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)): the original PAAC code's
  ("torch") initialisation, for weights and biases alike."""
  bound = 1.0 / float(fan_in) ** 0.5
  return dict(kernel_initializer=tf.keras.initializers.RandomUniform(-bound, bound),
              bias_initializer=tf.keras.initializers.RandomUniform(-bound, bound))


def orthogonal_init(gain):
  """Orthogonal weights with `gain`, zero biases (Saxe et al. 2014; OpenAI baselines' A2C)."""
  return dict(kernel_initializer=tf.keras.initializers.Orthogonal(gain=float(gain)),
              bias_initializer="zeros")


def layer_init(initializer, fan_in, gain=TORSO_GAIN):
  """Keyword arguments of one layer's initialisers: a fresh instance per layer."""
  if initializer == "torch":
    return torch_init(fan_in)
  if initializer == "orthogonal":
    return orthogonal_init(gain)
  raise ValueError("Unknown initializer %r; choose one of %s."
                   % (initializer, ", ".join(INITIALIZERS)))


def seed_initializers(seed):
  """Makes the initial weights of the models built next a function of `seed` (None: left
  unseeded). Keras draws the seed of each unseeded initializer, at its creation, from a
  generator that `tf.keras.utils.set_random_seed` seeds; that call also seeds Python's,
  numpy's and TensorFlow's global generators."""
  if seed is not None:
    tf.keras.utils.set_random_seed(int(seed))


class ScaleUint8(layers.Layer):
  """uint8 pixels -> [0, 1], scaled in float32, in the layer's compute dtype."""

  def call(self, x):
    return tf.cast(tf.cast(x, tf.float32) * (1.0 / 255.0), self.compute_dtype)


class ToFloat32(layers.Layer):
  """Observations -> float32, then the layer's compute dtype."""

  def call(self, x):
    return tf.cast(tf.cast(x, tf.float32), self.compute_dtype)


def arch_nips(name="arch_nips", initializer="torch", dtype=None):
  """PAAC / DQN-NIPS torso: conv 16 8x8/4, conv 32 4x4/2, fc 256 (84x84x4 input)."""
  return tf.keras.Sequential([
      ScaleUint8(name="scale", dtype=dtype),
      layers.Conv2D(16, 8, strides=4, activation="relu", name="conv1", dtype=dtype,
                    **layer_init(initializer, 8 * 8 * 4)),
      layers.Conv2D(32, 4, strides=2, activation="relu", name="conv2", dtype=dtype,
                    **layer_init(initializer, 4 * 4 * 16)),
      layers.Flatten(name="flatten", dtype=dtype),
      layers.Dense(256, activation="relu", name="fc", dtype=dtype,
                   **layer_init(initializer, 9 * 9 * 32)),
  ], name=name)


def arch_nature(name="arch_nature", initializer="torch", dtype=None):
  """Nature-DQN torso: conv 32 8x8/4, conv 64 4x4/2, conv 64 3x3/1, fc 512 (84x84x4 input)."""
  return tf.keras.Sequential([
      ScaleUint8(name="scale", dtype=dtype),
      layers.Conv2D(32, 8, strides=4, activation="relu", name="conv1", dtype=dtype,
                    **layer_init(initializer, 8 * 8 * 4)),
      layers.Conv2D(64, 4, strides=2, activation="relu", name="conv2", dtype=dtype,
                    **layer_init(initializer, 4 * 4 * 32)),
      layers.Conv2D(64, 3, strides=1, activation="relu", name="conv3", dtype=dtype,
                    **layer_init(initializer, 3 * 3 * 64)),
      layers.Flatten(name="flatten", dtype=dtype),
      layers.Dense(512, activation="relu", name="fc", dtype=dtype,
                   **layer_init(initializer, 7 * 7 * 64)),
  ], name=name)


def mlp(hidden_units=(64, 64), activation="tanh", name="mlp", dtype=None):
  """MLP torso for vector observations (cast to float32 inside)."""
  model = [ToFloat32(name="to_float", dtype=dtype)]
  model += [layers.Dense(u, activation=activation, name="fc%d" % i, dtype=dtype)
            for i, u in enumerate(hidden_units)]
  return tf.keras.Sequential(model, name=name)


def make_torso(torso, observation_shape, mlp_units=(64, 64), initializer="torch", dtype=None):
  """Builds a torso by name and checks that it fits the observation shape."""
  image = len(observation_shape) == 3
  if torso in ("arch_nips", "arch_nature") and not image:
    raise ValueError("Network %r needs image observations (H, W, C); this environment "
                     "gives shape %s: use network='mlp'." % (torso, tuple(observation_shape)))
  if torso == "mlp" and len(observation_shape) > 1:
    raise ValueError("Network 'mlp' needs vector observations; this environment gives "
                     "shape %s: use 'arch_nips' or 'arch_nature'." % (tuple(observation_shape),))
  if torso == "arch_nips":
    return arch_nips(initializer=initializer, dtype=dtype)
  if torso == "arch_nature":
    return arch_nature(initializer=initializer, dtype=dtype)
  if torso == "mlp":
    return mlp(tuple(mlp_units), dtype=dtype)
  raise ValueError("Unknown network %r; choose one of %s." % (torso, ", ".join(TORSOS)))
