"""The loops that train an algorithm, and the entry that picks one: `train_eval.py` (the
gin-configured run behind `python -m paac_tf.train`), `validation.py` (the configuration's
checks before a run starts), `dispatch.py` (which runner trains an algorithm),
`harness.py` (what every runner does around its loop), `sync/` (the synchronous runner:
PAAC) and `apex/` (Ape-X's replay, actors and learner).

The runners sit above the algorithms and drive them; the bookkeeping they keep
(configuration, checkpoints, cadence, signals, progress) is `paac_tf/bookkeeping/`, below the
algorithms, which knows no loop.
"""
