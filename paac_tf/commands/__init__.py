"""The Ape-X programs of a multi-host run (docs/apex.md), each `python -m` runnable, each a
small `main` over the library:

  apex_replay.py   python -m paac_tf.commands.apex_replay
  apex_actor.py    python -m paac_tf.commands.apex_actor
  apex_learner.py  python -m paac_tf.commands.apex_learner

The user's commands are paac_tf/train.py, evaluate.py and export.py (`python -m
paac_tf.train`, ...). A bad flag or configuration prints one `error: ...` line and exits
with status 2 (each runs `app.run(main, flags_parser=errors.parse_flags)`).
"""
