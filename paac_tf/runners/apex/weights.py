"""How the learner's weights reach the actors through Reverb.

The learner publishes its online network into `WEIGHTS_TABLE` (one item, max_size 1: a
new publication replaces the previous one) together with its step count and a `done`
flag; actors sample that item (sampling does not consume it) every K steps and copy it
into their local network. `done` tells actors on other hosts that training is over.
"""
import time

import numpy as np
import reverb
import tree

from paac_tf import errors
from paac_tf.runners.apex import call_thread
from paac_tf.runners.apex import replay_client
from paac_tf.runners.apex import replay_layout


def _template(num_variables):
  return {"done": None, "learner_step": None, "variables": [None] * num_variables}


def publish(client, model, learner_step, done=False, timeout_s=60.0, address=None):
  """Inserts the model's weights as the (only) item of the weights table. Raises
  replay_client.ReplayUnavailableError if the server does not confirm it within `timeout_s`,
  or, given its `address`, as soon as the server is found gone (the item is then dropped:
  a later publication replaces it anyway)."""
  data = {"done": np.bool_(done), "learner_step": np.int64(learner_step),
          "variables": [np.asarray(v.numpy()) for v in model.variables]}
  deadline = time.monotonic() + float(timeout_s)
  pending = replay_client.insert_one(client, data, replay_layout.WEIGHTS_TABLE,
                                     timeout_s=min(1.0, float(timeout_s)))
  try:
    while pending is not None:
      if time.monotonic() > deadline:
        raise replay_client.ReplayUnavailableError(
            "Publishing weights (learner step %d) was not confirmed within %.0f s."
            % (learner_step, timeout_s))
      if address:
        try:
          replay_client.probe(client, address, 10)
        except Exception as e:  # pylint: disable=broad-except  (gRPC errors vary)
          raise replay_client.ReplayUnavailableError(
              "Publishing weights (learner step %d): server gone (%s)."
              % (learner_step, errors.user_message(e))) from e
      try:
        pending.flush(timeout_ms=1000)
      except reverb.errors.DeadlineExceededError:
        continue
      pending.close()
      pending = None
  finally:
    if pending is not None:
      pending.close()


class WeightsSubscriber:
  """Copies the published weights into a local model.

  `fetch` blocks until it has weights; `refresh` (the actor's loop) never waits longer
  than it is told: it samples in the background, so a replay that is gone or restarted
  without weights leaves the local weights as they are.
  """

  def __init__(self, client, model, timeout_s=30):
    self._client = client
    self._model = model
    self._variables = list(model.variables)
    self._timeout_s = max(1, int(timeout_s))
    self._calls = None
    self._pending = None
    self.learner_step = -1
    self.done = False

  def available(self):
    info = self._client.server_info(timeout=self._timeout_s)
    return info[replay_layout.WEIGHTS_TABLE].current_size > 0

  def wait(self, timeout_s=None, should_stop=lambda: False, poll_s=0.5):
    """Blocks until weights are published; False on timeout or when should_stop()."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while not self.available():
      if should_stop() or (deadline is not None and time.monotonic() > deadline):
        return False
      time.sleep(poll_s)
    return True

  def _sample(self):
    return list(next(self._client.sample(replay_layout.WEIGHTS_TABLE, 1,
                                          emit_timesteps=False)).data)

  def _apply(self, flat):
    data = tree.unflatten_as(_template(len(self._variables)), flat)
    for var, value in zip(self._variables, data["variables"]):
      var.assign(np.asarray(value)[0])
    self.learner_step = int(np.asarray(data["learner_step"]).reshape(-1)[0])
    self.done = bool(np.asarray(data["done"]).reshape(-1)[0])
    return self.learner_step

  def fetch(self):
    """Copies the published weights (there must be some, see `wait`); returns the
    learner step they come from."""
    return self._apply(self._sample())

  def refresh(self, wait_s=1.0):
    """Copies the published weights if a new sample arrives within `wait_s`; True if
    weights were copied.

    The sample is taken on a background thread: one still pending from an earlier call
    (the server is gone, or has no weights yet after a restart) is only checked, not
    waited for, and collected by a later call.
    """
    if self._calls is None:
      self._calls = call_thread.CallThread(name="weights-subscriber")
    if self._pending is None:
      self._pending = self._calls.start(self._sample)
    else:
      wait_s = 0
    try:
      flat = self._pending.result(timeout=wait_s)
    except Exception:  # pylint: disable=broad-except  (timeout, or a gRPC error)
      if not self._pending.done():
        return False
      flat = None
    self._pending = None
    if flat is None:
      return False
    self._apply(flat)
    return True

  def close(self):
    if self._calls is not None:
      self._calls.close()
      self._calls = None
