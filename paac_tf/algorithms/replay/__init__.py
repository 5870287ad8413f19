"""What the replay algorithms (Ape-X DQN, Ape-X DPG) share, below the Ape-X machinery that
runs them (runners/apex/):

  algorithm.py    `ReplayAlgorithm`: what such an algorithm provides (acting, learner step)
  prioritized.py  prioritized replay's priorities and importance-sampling weights
  ladder.py       the exploration ladder: each environment's exploration scale
"""
