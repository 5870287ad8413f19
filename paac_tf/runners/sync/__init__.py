"""The synchronous runner: trains an on-policy algorithm (`runner = 'sync'`, e.g. PAAC) on
n_e environments with t_max-step rollouts and one update of its loss per rollout.

  train_loop.py     the loop, Algorithm 1 of the PAAC paper in the original code's order
"""
