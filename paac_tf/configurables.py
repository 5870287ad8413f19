"""Imports every module that registers gin configurables, so configs can name them."""
# pylint: disable=unused-import
from paac_tf import export as _export
from paac_tf import train_eval
from paac_tf.agents.paac import agent as _paac_agent
from paac_tf.agents.paac import train_loop as _paac_train_loop
from paac_tf.envs import environment as _environment
