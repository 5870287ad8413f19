"""The forward pass done once: a torso's backward pass from activations stored at acting.

PAAC runs the torso forward on every observation twice with the same weights: once to pick
the action (t_max calls on n_e observations) and again inside the update, whose gradient
tape needs the layers' activations. `forward` returns those activations at acting time
(the output of each layer with weights), the rollout keeps them beside the observations,
and `backward` computes the torso's weight gradients from them with the layers' own
gradient ops (Dense: two matmuls; Conv2D: `Conv2DBackpropFilter` / `Conv2DBackpropInput`),
without running the forward pass again. The gradients are those of `tf.GradientTape`
over the torso (tests/test_stored_activations.py), up to float rounding between the
batch sizes of acting and of the update. The CPU a train step saves:
docs/performance.md, "Less work per agent step".

Supported torsos: `tf.keras.Sequential` of parameter-free input layers (scaling, casts),
`Flatten`, and `Dense` / `Conv2D` (channels last, no dilation, groups 1) with a relu,
tanh or linear activation: every torso of torsos.py. `supports` says whether a torso
qualifies; the agent recomputes the forward pass for any other.
"""
import numpy as np
import tensorflow as tf

layers = tf.keras.layers
ACTIVATIONS = ("relu", "tanh", "linear")


def _activation(layer):
  return getattr(getattr(layer, "activation", None), "__name__", None)


def _supported_layer(layer):
  if not layer.trainable_weights:
    return True
  if (_activation(layer) not in ACTIVATIONS or not layer.use_bias or
      len(layer.trainable_weights) != 2):
    return False
  if isinstance(layer, layers.Dense):
    return len(layer.kernel.shape) == 2
  if isinstance(layer, layers.Conv2D) and type(layer) is layers.Conv2D:  # pylint: disable=unidiomatic-typecheck
    return (layer.data_format == "channels_last" and tuple(layer.dilation_rate) == (1, 1)
            and layer.groups == 1 and layer.padding in ("valid", "same"))
  return False


def supports(torso):
  """Whether `backward` can train `torso` from stored activations."""
  return (isinstance(torso, tf.keras.Sequential) and bool(torso.trainable_weights) and
          all(_supported_layer(layer) for layer in torso.layers))


def stored_shapes(torso):
  """The per-sample shapes of the stored activations: the output of each layer with
  weights, in order (the last one is the torso's features)."""
  return [tuple(layer.output_shape[1:]) for layer in torso.layers if layer.trainable_weights]


def stored_size(torso):
  """Numbers per sample of all stored activations (their flat concatenation)."""
  return int(sum(np.prod(shape) for shape in stored_shapes(torso)))


def forward(torso, observation):
  """(features, stored): the torso's output and the outputs of its layers with weights."""
  stored, x = [], observation
  for layer in torso.layers:
    x = layer(x)
    if layer.trainable_weights:
      stored.append(x)
  return x, stored


def pack(stored):
  """The stored activations of a batch [B, ...] as one float32 tensor [B, stored_size]."""
  batch = tf.shape(stored[0])[0]
  return tf.concat([tf.cast(tf.reshape(s, [batch, -1]), tf.float32) for s in stored], axis=1)


def unpack(torso, packed, offset=0):
  """`pack`'s inverse: a list of [N, *shape] tensors in the torso's compute dtype from a
  float32 [N, offset + stored_size] tensor holding `pack`'s output from column `offset` on,
  or from a list of such tensors (their rows in turn: each layer's columns are cut from each
  and joined, one copy, rather than the tensors joined first, which copies them all)."""
  parts = packed if isinstance(packed, (list, tuple)) else [packed]
  out, start = [], int(offset)
  dtype = torso.layers[-1].compute_dtype
  for shape in stored_shapes(torso):
    size = int(np.prod(shape))
    columns = [p[:, start:start + size] for p in parts]
    layer = columns[0] if len(columns) == 1 else tf.concat(columns, axis=0)
    out.append(tf.cast(tf.reshape(layer, [-1, *shape]), dtype))
    start += size
  return out


def _activation_grad(layer, y, dy):
  """dL/dz from dL/dy for y = activation(z), using only y."""
  name = _activation(layer)
  if name == "relu":
    return dy * tf.cast(y > 0, dy.dtype)
  if name == "tanh":
    return dy * (1 - y * y)
  return dy


def backward(torso, observation, stored, d_features):
  """The gradients of the torso's trainable variables (in `torso.trainable_variables`
  order, float32) given dL/d(features) and the activations `forward` stored for these
  observations under the same weights."""
  inputs, outputs, k, x = [], [], 0, observation
  for layer in torso.layers:          # each layer's input: recompute only parameter-free ones
    inputs.append(x)
    if layer.trainable_weights:
      x = stored[k]
      k += 1
    else:
      x = layer(x)
    outputs.append(x)
  first = min(i for i, layer in enumerate(torso.layers) if layer.trainable_weights)
  grads, dy = {}, tf.cast(d_features, outputs[-1].dtype)   # layer index -> its gradients
  for i in reversed(range(first, len(torso.layers))):
    layer, x, y = torso.layers[i], inputs[i], outputs[i]
    if not layer.trainable_weights:   # Flatten (and other reshapes between weight layers)
      dy = tf.reshape(dy, tf.shape(x))
      continue
    dz = _activation_grad(layer, y, dy)
    kernel = tf.cast(layer.kernel, dz.dtype)
    if isinstance(layer, layers.Dense):
      d_kernel = tf.matmul(x, dz, transpose_a=True)
      d_bias = tf.reduce_sum(dz, axis=0)
      if i > first:
        dy = tf.matmul(dz, kernel, transpose_b=True)
    else:
      strides = [1, *layer.strides, 1]
      padding = layer.padding.upper()
      d_kernel = tf.raw_ops.Conv2DBackpropFilter(
          input=x, filter_sizes=tf.shape(kernel), out_backprop=dz, strides=strides,
          padding=padding)
      d_bias = tf.reduce_sum(dz, axis=[0, 1, 2])
      if i > first:
        dy = tf.raw_ops.Conv2DBackpropInput(
            input_sizes=tf.shape(x), filter=kernel, out_backprop=dz, strides=strides,
            padding=padding)
    grads[i] = (d_kernel, d_bias)            # the order of layer.trainable_weights
  # A Sequential's trainable_variables: its layers' (kernel, bias) in layer order.
  return [tf.cast(g, tf.float32) for i in sorted(grads) for g in grads[i]]
