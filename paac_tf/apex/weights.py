"""The Ape-X Q-network, and how the learner's weights reach the actors through Reverb.

The learner publishes its online network into `WEIGHTS_TABLE` (one item, max_size 1: a
new publication replaces the previous one) together with its step count and a `done`
flag; actors sample that item (sampling does not consume it) every K steps and copy it
into their local network. `done` tells actors on other hosts that training is over.
"""
import time

import gin
import numpy as np
import tree

from paac_tf.apex import transport
from paac_tf.networks import dueling_q


@gin.configurable(module="apex")
def apex_network(network="arch_nature", mlp_units=(64, 64), head_units=None):
  """The dueling Q-network's settings (shared by learner, actors and exports)."""
  return {"network": str(network), "mlp_units": [int(u) for u in mlp_units],
          "head_units": None if head_units is None else int(head_units)}


def build_q_network(num_actions, observation_spec, settings=None):
  """A dueling Q-network with variables, as configured by `apex_network`."""
  settings = settings or apex_network()
  return dueling_q.build_dueling_q(int(num_actions), observation_spec,
                                   torso=settings["network"],
                                   mlp_units=tuple(settings["mlp_units"]),
                                   head_units=settings["head_units"])


def _template(num_variables):
  return {"done": None, "learner_step": None, "variables": [None] * num_variables}


def publish(client, model, learner_step, done=False):
  """Inserts the model's weights as the (only) item of the weights table."""
  data = {"done": np.bool_(done), "learner_step": np.int64(learner_step),
          "variables": [np.asarray(v.numpy()) for v in model.variables]}
  client.insert(data, priorities={transport.WEIGHTS_TABLE: 1.0})


class WeightsSubscriber:
  """Copies the published weights into a local model."""

  def __init__(self, client, model):
    self._client = client
    self._model = model
    self._variables = list(model.variables)
    self.learner_step = -1
    self.done = False

  def available(self):
    info = self._client.server_info(timeout=30)
    return info[transport.WEIGHTS_TABLE].current_size > 0

  def wait(self, timeout_s=None, should_stop=lambda: False, poll_s=0.5):
    """Blocks until weights are published; False on timeout or when should_stop()."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while not self.available():
      if should_stop() or (deadline is not None and time.monotonic() > deadline):
        return False
      time.sleep(poll_s)
    return True

  def fetch(self):
    """Copies the published weights (there must be some, see `wait`); returns the
    learner step they come from."""
    sample = next(self._client.sample(transport.WEIGHTS_TABLE, 1, emit_timesteps=False))
    data = tree.unflatten_as(_template(len(self._variables)), list(sample.data))
    values = data["variables"]
    for var, value in zip(self._variables, values):
      var.assign(np.asarray(value)[0])
    self.learner_step = int(np.asarray(data["learner_step"]).reshape(-1)[0])
    self.done = bool(np.asarray(data["done"]).reshape(-1)[0])
    return self.learner_step
