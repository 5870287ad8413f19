"""JSON-able specs of this project's Keras models, and the models rebuilt from them.

Training records the spec of its network in `train/run_config.json` (key `network_spec`);
export rebuilds the network from it alone, with neither the run's gin configuration nor
an environment. The two kinds:

  {"model": "actor_critic", "network": "arch_nips", "mlp_units": [64, 64],
   "initializer": "torch", "num_actions": 6, "observation": OBSERVATION}      (PAAC)
  {"model": "dueling_q", "network": "arch_nature", "mlp_units": [64, 64],
   "head_units": null, "num_actions": 6, "observation": OBSERVATION}          (Ape-X)

OBSERVATION is the environment's observation spec, e.g. {"shape": [84, 84, 4], "dtype":
"uint8", "minimum": 0, "maximum": 255}: bounds as numbers or nested lists, non-finite
values as the strings "inf", "-inf" and "nan" (which strict JSON lacks); no bounds for an
unbounded spec.
"""
import math

import numpy as np
from tf_agents.specs import array_spec

from paac_tf.networks import actor_critic
from paac_tf.networks import dueling_q

MODELS = ("actor_critic", "dueling_q")


def actor_critic_spec(num_actions, observation_spec, network="arch_nips", mlp_units=(64, 64),
                      initializer="torch"):
  """The spec of `actor_critic.build_actor_critic` with these arguments."""
  return {"model": "actor_critic", "network": str(network),
          "mlp_units": [int(u) for u in mlp_units], "initializer": str(initializer),
          "num_actions": int(num_actions), "observation": observation_json(observation_spec)}


def dueling_q_spec(num_actions, observation_spec, network="arch_nature", mlp_units=(64, 64),
                   head_units=None):
  """The spec of `dueling_q.build_dueling_q` with these arguments."""
  return {"model": "dueling_q", "network": str(network),
          "mlp_units": [int(u) for u in mlp_units],
          "head_units": None if head_units is None else int(head_units),
          "num_actions": int(num_actions), "observation": observation_json(observation_spec)}


def build_model(spec):
  """The model of a spec, with fresh variables (to restore from a checkpoint).

  Raises:
    ValueError: the spec names no known model, lacks a key, or does not fit its torso.
  """
  kind = spec.get("model")
  if kind not in MODELS:
    raise ValueError("Unknown network spec model %r; known: %s." % (kind, ", ".join(MODELS)))
  try:
    observation = observation_spec(spec)
    if kind == "actor_critic":
      return actor_critic.build_actor_critic(
          int(spec["num_actions"]), observation, torso=spec["network"],
          mlp_units=tuple(spec["mlp_units"]), initializer=spec["initializer"])
    return dueling_q.build_dueling_q(
        int(spec["num_actions"]), observation, torso=spec["network"],
        mlp_units=tuple(spec["mlp_units"]), head_units=spec["head_units"])
  except KeyError as e:
    raise ValueError("The %s network spec lacks %s." % (kind, e)) from None


def observation_spec(spec):
  """The observation ArraySpec (BoundedArraySpec if bounded) recorded in a model's spec."""
  observation = spec["observation"]
  shape, dtype = tuple(int(d) for d in observation["shape"]), np.dtype(observation["dtype"])
  if "minimum" not in observation:
    return array_spec.ArraySpec(shape, dtype, name="observation")
  return array_spec.BoundedArraySpec(shape, dtype, np.asarray(observation["minimum"], dtype),
                                     np.asarray(observation["maximum"], dtype),
                                     name="observation")


def observation_json(spec):
  """{"shape", "dtype"[, "minimum", "maximum"]} of an ArraySpec or TensorSpec."""
  dtype = np.dtype(getattr(spec.dtype, "as_numpy_dtype", spec.dtype))
  out = {"shape": [int(d) for d in spec.shape], "dtype": dtype.name}
  if hasattr(spec, "minimum") and hasattr(spec, "maximum"):
    out["minimum"] = _bound_json(spec.minimum)
    out["maximum"] = _bound_json(spec.maximum)
  return out


def _bound_json(bound):
  def number(x):
    if isinstance(x, float) and not math.isfinite(x):
      return str(x)   # 'inf', '-inf', 'nan'
    return x
  values = np.asarray(bound).tolist()
  if isinstance(values, list):
    return _map_nested(number, values)
  return number(values)


def _map_nested(fn, values):
  return [_map_nested(fn, v) if isinstance(v, list) else fn(v) for v in values]
