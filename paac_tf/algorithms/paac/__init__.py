"""PAAC (Clemente et al. 2017): n_e environments, t_max-step rollouts, one synchronous
actor-critic update per rollout.

  update.py         the update, top to bottom (returns.py, losses.py): read this first
  agent.py          `PaacAgent`: the model, optimizer and RNG; batched acting; the compiled
                    update
  stored_update.py  the same update from the activations stored while acting (speed-up)
  packed_calls.py   acting and the update with one tensor out of each call (speed-up)
  tensor_views.py   numpy arrays and tensors on the same memory, DLPack (speed-up)
  rollout.py        collects rollouts (env groups in flight) and calls the update
  train_loop.py     `paac_train`: the training loop (its bookkeeping: runtime/cadence.py)
  export.py         `training_exporter`: the loop's SavedModel exports
  algorithm.py      the algorithm object (registered as 'paac'): run, network, checkpoint,
                    policy outputs
  tf_agent.py       `PaacTFAgent`: the update as a TF-Agents agent (drivers, replay buffers)
"""
from paac_tf.algorithms import registry as _registry
from paac_tf.algorithms.paac import algorithm as _algorithm
from paac_tf.algorithms.paac.tf_agent import PaacTFAgent

__all__ = ["ALGORITHM", "PaacTFAgent"]

ALGORITHM = _registry.register(_algorithm.Paac())
