"""Imports every module that registers gin configurables, so configs can name them."""
# pylint: disable=unused-import
from paac_tf import export as _export
from paac_tf.runners import train_eval
from paac_tf.agents.paac import agent as _paac_agent
from paac_tf.runners.paac import train_loop as _paac_train_loop
from paac_tf.envs import environment as _environment
from paac_tf.agents.apex import learner_step as _apex_learner_step
from paac_tf.runners.apex import actor as _apex_actor
from paac_tf.runners.apex import launcher as _apex_launcher
from paac_tf.runners.apex import learner as _apex_learner
from paac_tf.runners.apex import replay as _apex_replay
from paac_tf.runners.apex import transport as _apex_transport
from paac_tf.runners.apex import weights as _apex_weights
