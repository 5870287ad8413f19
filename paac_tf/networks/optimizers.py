"""RMSProp as in TF1's `tf.train.RMSPropOptimizer`, which both papers' code used.

  ms  <- decay * ms + (1 - decay) * g^2            (ms starts at 1.0, as TF1)
  mg  <- decay * mg + (1 - decay) * g              (centered only)
  var <- var - lr * g / sqrt(ms - mg^2 + epsilon)  (epsilon inside the square root)

Keras' RMSprop puts epsilon outside the square root and starts ms at 0; with the large
epsilons of PAAC (0.1) that is a different optimizer (up to ~3x larger steps), so the
papers' settings would not mean what they say.
"""
import tensorflow as tf


class RMSProp(tf.Module):
  """Checkpointable TF1-style RMSProp with a learning-rate schedule of the update count."""

  def __init__(self, learning_rate, decay=0.99, epsilon=0.1, centered=False, initial_ms=1.0,
               name="rmsprop"):
    super().__init__(name=name)
    self.learning_rate = learning_rate
    self.decay = float(decay)
    self.epsilon = float(epsilon)
    self.centered = bool(centered)
    self.initial_ms = float(initial_ms)
    self.iterations = tf.Variable(0, dtype=tf.int64, trainable=False, name="iterations")
    self.ms = []
    self.mg = []

  def build(self, variables):
    """Creates the slots (idempotent), so that a checkpoint can restore them."""
    if self.ms:
      return
    for v in variables:
      base = v.name.split(":")[0].replace("/", "_")
      self.ms.append(tf.Variable(tf.fill(v.shape, self.initial_ms), trainable=False,
                                 name=base + "_ms"))
      if self.centered:
        self.mg.append(tf.Variable(tf.zeros(v.shape), trainable=False, name=base + "_mg"))

  def current_learning_rate(self):
    lr = self.learning_rate
    return tf.cast(lr(self.iterations) if callable(lr) else lr, tf.float32)

  def apply_gradients(self, grads_and_vars):
    grads_and_vars = list(grads_and_vars)
    if not self.ms:
      raise ValueError("RMSProp.build(variables) must be called before apply_gradients.")
    lr = self.current_learning_rate()
    for i, (g, v) in enumerate(grads_and_vars):
      ms = self.ms[i]
      ms.assign(self.decay * ms + (1.0 - self.decay) * tf.square(g))
      denom = ms
      if self.centered:
        mg = self.mg[i]
        mg.assign(self.decay * mg + (1.0 - self.decay) * g)
        denom = ms - tf.square(mg)
      v.assign_sub(lr * g * tf.math.rsqrt(denom + self.epsilon))
    self.iterations.assign_add(1)
    return lr


def rmsprop(model, learning_rate, anneal_updates, decay, epsilon):
  """RMSProp on `model`'s variables (built: a checkpoint restores its slots), its learning
  rate annealed linearly from `learning_rate` to 0 over `anneal_updates` updates."""
  schedule = tf.keras.optimizers.schedules.PolynomialDecay(
      float(learning_rate), decay_steps=int(anneal_updates), end_learning_rate=0.0, power=1.0)
  optimizer = RMSProp(schedule, decay=decay, epsilon=epsilon)
  optimizer.build(model.trainable_variables)
  return optimizer
