"""Ape-X DPG (Horgan et al. 2018, the paper's continuous-control agent): actors with a local
copy of a deterministic actor and its critic explore with Gaussian noise of their own scale
and feed n-step transitions with priorities into the shared Reverb replay; one learner
trains the critic on prioritized batches (importance weights, n-step targets from target
networks) and the actor by the deterministic policy gradient through the critic. The
replay, the actors' and the learner's loops and the launchers are runners/apex/, as for
Ape-X DQN; this package is what is Ape-X DPG's own:

  learner_step.py  the update, top to bottom (losses.py)
  acting.py        noisy deterministic actions and initial priorities (exploration.py: the
                   noise ladder)
  networks.py      the actor and the critic
  algorithm.py     the algorithm object (registered as 'apex_dpg'): networks, acting,
                   update, checkpoint, exported policy
"""
from paac_tf.algorithms import registry as _registry
from paac_tf.algorithms.apex_dpg import algorithm as _algorithm

ALGORITHM = _registry.register(_algorithm.ApexDpg())
