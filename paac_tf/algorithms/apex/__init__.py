"""Ape-X (Horgan et al. 2018): actors feed n-step transitions with priorities into a shared
Reverb replay; one learner trains a double-dueling DQN on prioritized batches. The replay,
the actors' and the learner's loops and the launchers are runners/apex/ (shared by every
algorithm of that family); this package is what is Ape-X's own:

  learner_step.py  the update, top to bottom (losses.py, priorities.py)
  acting.py        Q-values and epsilon-greedy actions (epsilon.py: the exploration ladder)
  algorithm.py     the algorithm object (registered as 'apex'): network, acting, update,
                   checkpoint, exported policy
"""
from paac_tf.algorithms import registry as _registry
from paac_tf.algorithms.apex import algorithm as _algorithm

ALGORITHM = _registry.register(_algorithm.Apex())
