"""Batched environments: Atari (C++ vector env, portable) and gymnasium, one factory."""
from paac_tf.bookkeeping import startup as _startup

_startup.import_old_gym_quietly()   # before this package's modules import tf-agents
