"""PAAC behind the algorithm seam: its run, network, checkpoint and exported policy."""
import tensorflow as tf

from paac_tf.algorithms import base
from paac_tf.algorithms.paac import export
from paac_tf.algorithms.paac import train_loop
from paac_tf.envs import batched
from paac_tf.networks import specs
from paac_tf.runners import validation


class Paac(base.Algorithm):
  """Synchronous parallel advantage actor-critic (Clemente et al. 2017)."""
  name = "paac"
  checkpoint_model_key = "model"
  network_configurable = "paac.paac_train"
  network_parameters = ("network", "mlp_units", "initializer")
  output_names = ("action", "probabilities", "value")
  exploration = "sample"
  export_greedy = False

  def run(self, root_dir, env, total_steps, seed, launcher="local", ray_address=None):
    del launcher, ray_address   # one machine, one process
    return train_loop.paac_train(root_dir, env, int(total_steps), seed=seed,
                                 exporter=export.training_exporter(root_dir, env, self))

  def check_config(self, bound):
    validation.check_worker_split(train_loop.paac_train, bound)

  def network_spec(self, action_spec, observation_spec, **settings):
    return specs.actor_critic_spec(batched.num_actions(action_spec), observation_spec,
                                   **settings)

  def build_network(self, spec):
    return specs.build_model(spec)

  def policy_scores(self, model, observation):
    logits, value = model(observation, training=False)
    return logits, {"probabilities": tf.nn.softmax(logits, axis=-1),
                    "value": tf.cast(value, tf.float32)}
