"""PAAC (Clemente et al. 2017): n_e environments, t_max-step rollouts, one synchronous
actor-critic update per rollout.

  update.py         the update, one screen: n-step returns, advantages, the losses, the
                    tape, the clip, RMSProp's apply (read this first)
  settings.py       `PaacSettings`: the `paac.*` gin namespace (network, n_e, n_w, t_max,
                    optimizer, loss, the run's cadence)
  algorithm.py      the algorithm object (registered as 'paac'): settings, model, optimizer,
                    update; checkpoint and policy outputs
  tf_agent.py       `PaacTFAgent`: the update as a TF-Agents agent (drivers, replay buffers)

The loop that collects rollouts and calls the update is the synchronous runner's
(runners/sync/train_loop.py).
"""
from paac_tf.algorithms import registry as _registry
from paac_tf.algorithms.paac import algorithm as _algorithm
from paac_tf.algorithms.paac.tf_agent import PaacTFAgent

__all__ = ["ALGORITHM", "PaacTFAgent"]

ALGORITHM = _registry.register(_algorithm.Paac())
