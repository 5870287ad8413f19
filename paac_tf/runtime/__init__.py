"""The process-level machinery below the algorithms: configuration and its checks (gin),
run directories and their lock, checkpoints, the cadence of summaries, checkpoints and
exports, signals and stops, progress lines, memory, threads, and a run's result.

It knows no algorithm and no loop: the loops that train (the sync runner, the Ape-X
machinery) and `train_eval`, which chooses one, are in `paac_tf/runners/`, above the
algorithms, and use this package.
"""
