"""Imports every module that registers gin configurables, so configs can name them."""
# pylint: disable=unused-import
from paac_tf.algorithms.paac import export as _paac_export
from paac_tf.runners import train_eval
from paac_tf.algorithms.paac import agent as _paac_agent
from paac_tf.algorithms.paac import train_loop as _paac_train_loop
from paac_tf.envs import environment as _environment
from paac_tf.agents.apex import learner_step as _apex_learner_step
from paac_tf.runners.apex import actor as _apex_actor
from paac_tf.runners.apex import launcher as _apex_launcher
from paac_tf.runners.apex import learner as _apex_learner
from paac_tf.runners.apex import ray_launcher as _apex_ray_launcher
from paac_tf.runners.apex import replay as _apex_replay
from paac_tf.runners.apex import replay_client as _apex_replay_client
from paac_tf.runners.apex import replay_layout as _apex_replay_layout
from paac_tf.networks import dueling_q as _dueling_q
