"""The command programs, each `python -m` runnable, each a small `main` over the library:

  train.py         python -m paac_tf.train         (paac_tf/train.py runs it)
  evaluate.py      python -m paac_tf.evaluate      (paac_tf/evaluate.py runs it)
  export.py        python -m paac_tf.export        (paac_tf/export.py runs it)
  apex_replay.py   python -m paac_tf.commands.apex_replay    the Ape-X processes of a
  apex_actor.py    python -m paac_tf.commands.apex_actor     multi-host run (docs/apex.md)
  apex_learner.py  python -m paac_tf.commands.apex_learner

A bad flag or configuration prints one `error: ...` line and exits with status 2
(each runs `app.run(main, flags_parser=errors.parse_flags)`).
"""
