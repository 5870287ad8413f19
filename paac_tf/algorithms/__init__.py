"""The algorithms, one package each, behind one seam (`base.Algorithm`, `registry`).

Each algorithm's package (`paac/`, `apex/`) holds what only that algorithm knows: its
update, its acting, its configuration and the checks on it, its network and the
network's spec, what its checkpoint holds, its policy's outputs and its run. Everything
else (train_eval, the policies, the API, the commands, the tools) looks an algorithm up by
name in `registry` and asks the object it gets; docs/extending.md says what adding one
takes.
"""
