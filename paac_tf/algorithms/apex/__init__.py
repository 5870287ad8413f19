"""Ape-X (Horgan et al. 2018): actors feed n-step transitions with priorities into a shared
Reverb replay; one learner trains a double-dueling DQN on prioritized batches.

  algorithm.py   the algorithm object (registered as 'apex'): run, network, checkpoint, policy
"""
from paac_tf.algorithms import registry as _registry
from paac_tf.algorithms.apex import algorithm as _algorithm

ALGORITHM = _registry.register(_algorithm.Apex())
