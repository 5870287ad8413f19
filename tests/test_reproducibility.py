"""train_eval.seed and train_eval.deterministic: seeded networks, bit-identical PAAC runs."""
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.framework import config as tf_config
from tf_agents.specs import array_spec

import gin

from paac_tf.networks import actor_critic
from paac_tf.networks import dueling_q
from paac_tf.runners import train_eval
from paac_tf.bookkeeping import config

train_eval.load_configurables()   # the configurables the configs name

VECTOR = array_spec.BoundedArraySpec((4,), np.float32, -1.0, 1.0)
IMAGE = array_spec.BoundedArraySpec((84, 84, 4), np.uint8, 0, 255)


def _weights(model):
  return [v.numpy() for v in model.variables]


def _same(a, b):
  return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("build,spec,kwargs", [
    (actor_critic.build_actor_critic, VECTOR, {"torso": "mlp"}),
    (actor_critic.build_actor_critic, IMAGE, {"torso": "arch_nips"}),
    (actor_critic.build_actor_critic, IMAGE, {"torso": "arch_nips", "initializer": "orthogonal"}),
    (dueling_q.build_dueling_q, VECTOR, {"torso": "mlp", "head_units": 16}),
    (dueling_q.build_dueling_q, IMAGE, {"torso": "arch_nature"}),
], ids=["actor_critic_mlp", "actor_critic_nips", "actor_critic_orthogonal", "dueling_q_mlp",
        "dueling_q_nature"])
def test_the_same_seed_builds_the_same_network(build, spec, kwargs):
  first = _weights(build(3, spec, seed=7, **kwargs))
  tf.random.uniform([5])   # other random draws in between change nothing
  assert _same(first, _weights(build(3, spec, seed=7, **kwargs)))
  other = _weights(build(3, spec, seed=8, **kwargs))
  # Every randomly initialised kernel differs under another seed (biases may be zeros).
  kernels = [i for i, w in enumerate(first) if w.ndim > 1]
  assert kernels and all(not np.array_equal(first[i], other[i]) for i in kernels)


@pytest.fixture
def deterministic_runs(tmp_path):
  """run(name, seed) -> the checkpoint of a short deterministic CartPole PAAC run."""
  def run(name, seed):
    gin.clear_config()
    config.parse(["cartpole.gin"], [
        "train_eval.total_steps = 3000", "train_eval.seed = %d" % seed,
        "train_eval.deterministic = True", "paac.num_workers = 0",
        "paac.stop_at_average_return = None"])
    root = str(tmp_path / name)
    result = train_eval.train_eval(root_dir=root)
    assert result.agent_steps >= 3000 and result.episodes > 0, result
    return tf.train.load_checkpoint(tf.train.latest_checkpoint(root + "/train"))
  yield run
  gin.clear_config()
  tf_config.disable_op_determinism()   # process-wide: leave later tests as they were


def _checkpoint_values(reader):
  return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


@pytest.mark.timeout(600)
def test_deterministic_runs_with_one_seed_end_with_identical_checkpoints(deterministic_runs):
  first = _checkpoint_values(deterministic_runs("a", seed=3))
  second = _checkpoint_values(deterministic_runs("b", seed=3))
  other = _checkpoint_values(deterministic_runs("c", seed=4))
  assert tf_config.is_op_determinism_enabled()
  weights = [n for n in first if n.startswith("model/") and "OPTIMIZER_SLOT" not in n]
  assert len(weights) >= 6, sorted(first)   # 2 hidden layers and 2 heads: kernels, biases
  assert sorted(first) == sorted(second)
  differing = [n for n in first if not np.array_equal(first[n], second[n])]
  assert not differing, differing
  assert all(not np.array_equal(first[n], other[n]) for n in weights if first[n].ndim > 1)
