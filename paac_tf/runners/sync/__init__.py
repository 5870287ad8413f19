"""The synchronous runner: trains an on-policy algorithm (`runner = 'sync'`, e.g. PAAC) on
n_e environments with t_max-step rollouts and one update of its loss per rollout.

  train_loop.py     `paac_train`: the run (model, agent, the loop; its checkpoints,
                    cadence and exports: runners/harness.py)
  rollout.py        collects rollouts (env groups in flight) and calls the update
  stored_update.py  the algorithm's update from the activations stored while acting
  packed_calls.py   acting and the update with one tensor out of each call
  tensor_views.py   numpy arrays and tensors on the same memory, DLPack
"""
