"""PAAC (Clemente et al. 2017): n_e environments, t_max-step rollouts, one synchronous
actor-critic update per rollout.

  algorithm.py   the algorithm object (registered as 'paac'): run, network, checkpoint, policy
  agent.py       `PaacAgent`: the update (returns.py, losses.py), acting, the optimizer
  rollout.py     collects rollouts (env groups in flight) and calls the update
  train_loop.py  `paac_train`: the training loop
  export.py      `training_exporter`: the loop's SavedModel exports
"""
from paac_tf.algorithms import registry as _registry
from paac_tf.algorithms.paac import algorithm as _algorithm

ALGORITHM = _registry.register(_algorithm.Paac())
