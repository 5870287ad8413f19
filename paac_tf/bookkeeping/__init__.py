"""A run's bookkeeping, below the algorithms: its configuration and the checks of it (gin),
its directory and lock, checkpoints, the cadence of summaries, checkpoints and exports,
signals and stops, progress lines, its result; and the process's set-up that goes with it
(a quiet start, thread pools, memory handed back after saves).

It knows no algorithm and no loop: the loops that train (the sync runner, the Ape-X
machinery) and `train_eval`, which chooses one, are the runners (`paac_tf/runners/`),
above the algorithms; they keep their books with this package.
"""
