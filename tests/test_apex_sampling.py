"""The learner's sampling thread (`sampling.BackgroundSampler`) against a real Reverb server:
while the replay is below its rate limiter's minimum size it makes no pipeline, where it
made one per rate-limiter timeout, each a new Reverb sampler (and, with the server in the
process, a step towards another of Reverb's "Sampler and server are owned by the same
process" lines: replay.py)."""
import numpy as np
import reverb
import tensorflow as tf

from paac_tf.runners.apex import replay_client
from paac_tf.runners.apex import replay_layout
from paac_tf.runners.apex import sampling

MIN_SIZE = 20


def _pipelines(address, made):
  """A `make_dataset` that notes each pipeline it makes in `made`."""
  def make():
    made.append(1)
    return reverb.TrajectoryDataset(
        server_address=address, table=replay_layout.REPLAY_TABLE, dtypes=tf.float32,
        shapes=tf.TensorShape([1]), max_in_flight_samples_per_worker=2,
        rate_limiter_timeout_ms=100)
  return make


def test_no_pipeline_before_the_replay_holds_its_minimum_size():
  table = reverb.Table(replay_layout.REPLAY_TABLE, sampler=reverb.selectors.Fifo(),
                       remover=reverb.selectors.Fifo(), max_size=1000,
                       rate_limiter=reverb.rate_limiters.MinSize(MIN_SIZE))
  server = reverb.Server([table])
  address = "127.0.0.1:%d" % server.port
  client = reverb.Client(address)
  unready, ready = [], []
  samplers = [sampling.BackgroundSampler(_pipelines(address, unready)),
              sampling.BackgroundSampler(_pipelines(address, ready), poll_s=0.05,
                                         ready=sampling.min_size_reached(client))]
  try:
    # A second of an empty replay: ~10 rate-limiter timeouts of 100 ms.
    assert samplers[1].get(timeout_s=1.0) is None
    assert len(unready) >= 4 and ready == [], (len(unready), len(ready))
    samplers[0].close(wait_s=5)
    for i in range(MIN_SIZE):
      assert replay_client.insert_one(client, np.float32(i), replay_layout.REPLAY_TABLE,
                                      timeout_s=10) is None
    batch = samplers[1].get(timeout_s=30)
    assert batch is not None and float(batch.data[0]) == 0.0   # the oldest item first
    assert len(ready) == 1
  finally:
    for sampler in samplers:
      sampler.close(wait_s=5)
    server.stop()
