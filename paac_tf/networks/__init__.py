"""Keras networks: torsos, the actor-critic, the dueling Q-network, network specs."""
from paac_tf.bookkeeping import startup as _startup

_startup.import_old_gym_quietly()   # before this package's modules import tf-agents
