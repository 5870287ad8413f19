"""PAAC (Clemente et al. 2017): n_e environments, t_max-step rollouts, one synchronous
actor-critic update per rollout.

  update.py         the update, top to bottom (returns.py, losses.py): read this first
  agent.py          `PaacAgent`: the model, optimizer and RNG; batched acting; the loss and
                    apply of update.py
  algorithm.py      the algorithm object (registered as 'paac'): model, agent, loss,
                    checkpoint, policy outputs
  tf_agent.py       `PaacTFAgent`: the update as a TF-Agents agent (drivers, replay buffers)

The loop that collects rollouts and calls the update is the synchronous runner's
(runners/sync/: rollout.py, train_loop.py, and its speed-ups stored_update.py,
packed_calls.py, tensor_views.py, which call this package's loss and apply).
"""
from paac_tf.algorithms import registry as _registry
from paac_tf.algorithms.paac import algorithm as _algorithm
from paac_tf.algorithms.paac.tf_agent import PaacTFAgent

__all__ = ["ALGORITHM", "PaacTFAgent"]

ALGORITHM = _registry.register(_algorithm.Paac())
