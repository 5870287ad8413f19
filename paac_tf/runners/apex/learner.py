r"""The Ape-X learner: prioritized batches from Reverb, updates, priorities and weights back.

  python -m paac_tf.runners.apex.learner --replay_address=HOST:PORT --root_dir=DIR \
      --gin_file=apex_atari.gin [--gin_bindings=...]

(`python -m paac_tf.train --gin_file=apex_*.gin` runs it inside the one-machine launcher.)

Loop: a `reverb.TrajectoryDataset` pipeline keeps batches prefetched; per batch the
compiled step (`paac_tf/agents/apex/learner_step.py`) updates the network and returns the
items' keys and new priorities, written back with `client.mutate_priorities`. Every
`publish_interval` steps the weights go to the weights table for the actors.

Progress is counted in agent steps (environment steps summed over all actors), which the
actors report through the actor-stats table; training stops once `total_steps` agent
steps were reported (or `stop_at_average_return` is reached, or on SIGINT/SIGTERM), then
publishes a final `done` weights item so that actors on other hosts stop too, saves a
checkpoint and exports a SavedModel.

Replay server faults: at start the learner retries an unreachable server with backoff (1 s
doubling to 30 s, `transport.ReplayRetry`), one log line per retry. Mid-run, a lost server
(killed, restarted) is waited for the same way; once one answers again at the address
(restored from its checkpoint, or empty), the learner republishes its weights, recreates
its sampling pipeline and goes on. It gives up after `server_timeout_s` without a server:
checkpoint saved, one `error: ...` line, exit status 3. Replay calls that have no
deadline of their own run on helper threads (`transport.CallThread`,
`transport.BackgroundSampler`), so a lost server never hangs the loop.

Outputs under root_dir/train: TensorBoard summaries (Losses/, Optimizer/, Q/, Replay/,
Perf/, Metrics/ from the actors' reports), checkpoints (ckpt-<agent step>; resumed
automatically) and run_config.json; SavedModels under root_dir/policies/<model_name>/.
"""

if __name__ == "__main__":
  # `python -m paac_tf.runners.apex.learner` runs this file as __main__; hand over to the package's
  # copy of the module so that its gin configurables are registered once, not twice.
  from paac_tf.runners.apex import learner as _package_module  # pylint: disable=import-self
  _package_module.cli()
  raise SystemExit(0)

import collections
import os
import sys
import time

from absl import flags
from absl import logging
import gin
import numpy as np
import tensorflow as tf
import tree

from paac_tf import errors
from paac_tf.agents.apex import learner_step as learner_step_lib
from paac_tf.runners.apex import common
from paac_tf.runners.apex import transport
from paac_tf.runners.apex import weights as weights_lib
from paac_tf.runtime import checkpointing
from paac_tf.runtime import progress as progress_lib
from paac_tf.runtime import signals
from paac_tf.runtime import summaries

# Samples wait at most this long for the rate limiter before the loop regains control
# (to drain actor reports, honour stop requests, notice dead actors or a lost server).
_SAMPLE_TIMEOUT_MS = 1000
# Deadline of the learner's calls to the replay server (info, reports, priorities, weights).
_RPC_TIMEOUT_S = 10
_STATS_TEMPLATE = {"actor_index": None, "env_steps": None, "epsilon": None,
                   "episode_lengths": None, "episode_returns": None, "items": None}


class ActorReports:
  """Agent steps and finished episodes reported by the actors (drained from Reverb)."""

  def __init__(self, window=100):
    self.env_steps = 0
    self.items = 0
    self.window = summaries.EpisodeWindow(window)
    self.per_actor = {}        # actor index -> EpisodeWindow
    self.epsilons = {}         # actor index -> epsilon
    self._window_size = window

  def drain(self, client, info=None, calls=None, timeout_s=30):
    """Reads every pending report; returns how many there were. `info`: the server's
    table infos if just read; `calls`: a transport.CallThread to sample on (then a lost
    server raises transport.ReplayUnavailableError after `timeout_s`)."""
    if info is None:
      info = client.server_info(timeout=int(timeout_s))
    size = info[transport.STATS_TABLE].current_size
    if size == 0:
      return 0
    sample_all = lambda: list(client.sample(transport.STATS_TABLE, size, emit_timesteps=False))
    samples = sample_all() if calls is None else calls.call(sample_all, timeout_s,
                                                           "Draining actor reports")
    for sample in samples:
      report = tree.unflatten_as(_STATS_TEMPLATE, [np.asarray(x)[0] for x in sample.data])
      index = int(report["actor_index"])
      self.env_steps += int(report["env_steps"])
      self.items += int(report["items"])
      self.epsilons[index] = float(report["epsilon"])
      episodes = list(zip(report["episode_returns"].tolist(),
                          report["episode_lengths"].tolist()))
      self.window.add(episodes)
      self.per_actor.setdefault(index, summaries.EpisodeWindow(self._window_size)).add(episodes)
    return size

  def lowest_epsilon_window(self):
    """Episodes of the actor that explores least (~ the greedy policy), or None."""
    if not self.epsilons:
      return None
    index = min(self.epsilons, key=lambda i: (self.epsilons[i], -i))
    return self.per_actor.get(index)


@gin.configurable(module="apex")
def apex_learner(replay_address, root_dir, env_name, total_steps, seed=0, batch_size=512,
                 publish_interval=25, summary_interval=100, checkpoint_interval=1_000_000,
                 keep_checkpoints=3, export_interval=None, stop_at_average_return=None,
                 prefetch=2, dataset_workers=1, report_interval_s=1.0, tf_threads=None,
                 server_timeout_s=300.0, stop=None, health_check=None, on_finished=None):
  """Trains until `total_steps` agent steps were reported by the actors; resumable.

  Args:
    replay_address: HOST:PORT of the Reverb server (`replay.py`).
    root_dir: run directory (train/ summaries and checkpoints, policies/ exports).
    env_name: the environment (for specs and run records; the learner steps none).
    total_steps: agent steps (summed over actors) to train for.
    batch_size: prioritized batch size (Ape-X: 512).
    publish_interval: learner steps between weight publications.
    summary_interval: learner steps between loss summaries.
    checkpoint_interval: agent steps between checkpoints.
    export_interval: agent steps between SavedModel exports (None: at the end only).
    stop_at_average_return: stop once the least exploring actor's last 100 episodes
      average at least this (that actor, epsilon ~ 0.4^8, stands in for the greedy policy).
    prefetch: batches the tf.data pipeline keeps ready.
    dataset_workers: Reverb sampler threads of the pipeline.
    report_interval_s: seconds between drains of the actors' reports (and progress).
    tf_threads: cap TF's thread pools (None: TF's default).
    server_timeout_s: give up (transport.ReplayUnreachableError, after a checkpoint) once
      the replay server has not answered for this long, at start or mid-run.
    stop: object with a `requested` attribute (default: a SIGINT/SIGTERM handler).
    health_check: optional callable run with the reports; raise to abort training.
    on_finished: optional callable run once training is over (also on errors), before the
      sampling pipeline is torn down; the launcher stops actors and replay there.
  Returns:
    dict: env_steps, learner_steps, average_return, average_return_lowest_epsilon, reason.
  """
  import reverb  # pylint: disable=import-outside-toplevel
  common.set_tf_threads(tf_threads)
  train_dir = os.path.join(root_dir, "train")
  network_settings = weights_lib.apex_network()
  observation_spec, num_actions = common.environment_specs(env_name, seed)
  layout = transport.ReplayLayout(observation_spec)
  run_config = {"algorithm": "apex", "env_name": str(env_name), **network_settings,
                "n_step": layout.n_step, "single_frames": layout.single_frames}
  checkpointing.check_run_config(train_dir, run_config)

  q_network = weights_lib.build_q_network(num_actions, observation_spec, network_settings)
  target_network = weights_lib.build_q_network(num_actions, observation_spec, network_settings)
  step = learner_step_lib.ApexLearnerStep(q_network, target_network, layout)
  step.build()
  env_steps_var = tf.Variable(0, dtype=tf.int64, name="env_steps")
  episodes_var = tf.Variable(0, dtype=tf.int64, name="episodes")
  checkpointer = checkpointing.Checkpointer(
      train_dir, max_to_keep=keep_checkpoints, q_network=q_network,
      target_network=target_network, optimizer=step.optimizer, learner_steps=step.steps,
      env_steps=env_steps_var, episodes=episodes_var)
  if checkpointer.restore_latest():
    logging.info("Resuming at agent step %d (learner step %d, optimizer step %d).",
                 int(env_steps_var.numpy()), int(step.steps.numpy()),
                 int(step.optimizer.iterations.numpy()))

  client = reverb.Client(replay_address)
  try:
    transport.check_replay(client, layout, replay_address, timeout_s=server_timeout_s)
  except transport.ReplayMismatchError as e:
    raise errors.UserError("%s Nothing was trained." % e) from None
  except transport.ReplayUnreachableError as e:
    raise transport.ReplayUnreachableError("%s Nothing was trained." % e) from None
  loop = _LearnerLoop(
      client=client, replay_address=replay_address, root_dir=root_dir, env_name=env_name,
      total_steps=int(total_steps), layout=layout, step=step, checkpointer=checkpointer,
      env_steps_var=env_steps_var, episodes_var=episodes_var, observation_spec=observation_spec,
      run_config=run_config, batch_size=int(batch_size), publish_interval=int(publish_interval),
      summary_interval=int(summary_interval), checkpoint_interval=int(checkpoint_interval),
      export_interval=export_interval, stop_at_average_return=stop_at_average_return,
      prefetch=int(prefetch), dataset_workers=int(dataset_workers),
      report_interval_s=float(report_interval_s), server_timeout_s=float(server_timeout_s),
      stop=stop, health_check=health_check)
  try:
    return loop.run()
  finally:
    # The pipeline first, while the server is up: its thread then ends within a second
    # (a pipeline blocked on a server that is gone would wait for its return).
    loop.close_pipeline()
    if on_finished is not None:
      on_finished()


class _LearnerLoop:
  """The learner's main loop and its bookkeeping (see `apex_learner` for the arguments)."""

  def __init__(self, **kwargs):
    self.__dict__.update(kwargs)
    self.writer = summaries.SummaryWriter(os.path.join(self.root_dir, "train"))
    self.reports = ActorReports()
    self.reports.env_steps = int(self.env_steps_var.numpy())
    self.reports.window.total = int(self.episodes_var.numpy())
    self.progress = progress_lib.Progress(self.total_steps, start_step=self.reports.env_steps)
    self._sampler = None
    self._calls = self._new_call_thread()
    self._replay_ok = True
    self._saved_at = None         # (agent steps, learner steps) of the last checkpoint saved
    self.reconnects = 0
    self._metrics = None
    self._perf = collections.deque(maxlen=2)   # (time, learner steps, agent steps, items)

  # --- helpers ------------------------------------------------------------------------------
  @property
  def learner_steps(self):
    return int(self.step.steps.numpy())

  def _new_call_thread(self):
    return transport.CallThread(name="learner-replay-calls", check=lambda: transport.probe(
        self.client, self.replay_address, _RPC_TIMEOUT_S))

  def _make_dataset(self):
    return transport.replay_dataset(
        self.replay_address, self.layout, self.batch_size, prefetch=self.prefetch,
        num_workers=self.dataset_workers, rate_limiter_timeout_ms=_SAMPLE_TIMEOUT_MS)

  def _next_batch(self):
    """The next prioritized batch, or None if none came for a while (the rate limiter
    held it back, or the server is gone)."""
    if self._sampler is None:
      self._sampler = transport.BackgroundSampler(self._make_dataset)
    return self._sampler.get(timeout_s=_SAMPLE_TIMEOUT_MS / 1000.0)

  def close_pipeline(self, wait_s=5.0):
    """Stops the sampling pipeline (its thread and Reverb samplers)."""
    if self._sampler is None:
      return
    start = time.monotonic()
    if not self._sampler.close(wait_s=wait_s):
      logging.warning("The replay sampling pipeline did not stop within %.0f s; left to "
                      "end in the background.", wait_s)
    elif time.monotonic() - start > 5:
      logging.warning("Closing the replay sampling pipeline took %.0f s.",
                      time.monotonic() - start)
    self._sampler = None

  def _publish(self, done=False):
    try:
      weights_lib.publish(self.client, self.step.q_network, self.learner_steps, done=done,
                          timeout_s=_RPC_TIMEOUT_S, address=self.replay_address)
    except transport.ReplayUnavailableError:
      raise
    except Exception as e:  # pylint: disable=broad-except  (gRPC errors vary)
      raise transport.ReplayUnavailableError(
          "Publishing weights failed: %s" % errors.user_message(e)) from e

  def _server_info(self):
    """The server's table infos. Through transport.probe: a server that is gone is noticed
    at once (its port refuses the connection), not after the call's deadline."""
    try:
      return transport.probe(self.client, self.replay_address, _RPC_TIMEOUT_S)
    except Exception as e:  # pylint: disable=broad-except  (gRPC errors vary)
      raise transport.ReplayUnavailableError(
          "server_info failed: %s" % errors.user_message(e)) from e

  def _update_priorities(self, keys, new_priorities):
    """Writes the new priorities on the call thread (overlapping the next step)."""
    updates = dict(zip(keys.numpy().tolist(), new_priorities.numpy().tolist()))
    self._calls.submit(
        lambda: self.client.mutate_priorities(transport.REPLAY_TABLE, updates=updates),
        _RPC_TIMEOUT_S, "Updating priorities")

  def _reconnect(self, error, stop):
    """Waits for the replay server (backoff, one log line per retry) after `error`; then
    republishes the weights and recreates the sampling pipeline. Raises
    transport.ReplayUnreachableError after `server_timeout_s`; returns early on a stop
    request."""
    lost = time.monotonic()
    self._replay_ok = False
    logging.warning("Learner lost the replay server at %s (%s); waiting for it (giving up "
                    "after %.0f s).", self.replay_address, errors.user_message(error),
                    self.server_timeout_s)
    if self._sampler is not None:
      self._sampler.close(wait_s=0)   # its thread ends once its call returns
      self._sampler = None
    while True:
      info = transport.wait_for_replay(self.client, self.replay_address, self.server_timeout_s,
                                       should_stop=lambda: stop.requested, since=lost)
      if info is None:
        return
      try:
        transport.check_tables(info, self.layout, self.replay_address)
      except transport.ReplayMismatchError as e:
        raise errors.UserError(str(e)) from None
      try:
        # A call still pending on the lost connection completes once it is back.
        self._calls.wait(_RPC_TIMEOUT_S, "A pending replay call")
        self._publish()
        break
      except transport.ReplayUnavailableError as e:
        logging.warning("Replay server at %s: %s", self.replay_address, e)
        if self._calls.busy:
          self._calls.close()
          self._calls = self._new_call_thread()
    self._replay_ok = True
    self.reconnects += 1
    logging.warning("Replay server at %s answers again after %.0f s (replay holds %d items); "
                    "weights republished, sampling pipeline recreated.", self.replay_address,
                    time.monotonic() - lost, info[transport.REPLAY_TABLE].current_size)

  def _checked_metrics(self):
    if self._metrics is None:
      return {}
    values = {k: float(v.numpy()) for k, v in self._metrics.items()}
    if not (np.isfinite(values["Losses/huber"]) and np.isfinite(values["Optimizer/global_norm"])):
      raise errors.TrainingDivergedError(
          "Loss or gradient norm is not finite at learner step %d (%s). Training stopped; the "
          "last good checkpoint is kept untouched. Lower the learning rate or check rewards."
          % (self.learner_steps, ", ".join("%s=%g" % kv for kv in values.items())))
    return values

  def _save(self):
    self._checked_metrics()
    self.env_steps_var.assign(summaries.tf_scalar(self.reports.env_steps, np.int64))
    self.episodes_var.assign(summaries.tf_scalar(self.reports.window.total, np.int64))
    self.checkpointer.save(self.reports.env_steps)
    self._saved_at = (self.reports.env_steps, self.learner_steps)

  def _export(self, env_steps):
    """The single call site of the project's export code for Ape-X."""
    from paac_tf import export  # pylint: disable=import-outside-toplevel
    base = os.path.join(self.root_dir, "policies", export.model_name(self.env_name))
    if tf.io.gfile.exists(os.path.join(base, str(int(env_steps)))):
      logging.info("Export of step %d exists already; skipped.", env_steps)
      return None
    metadata = {"env_name": self.env_name, "train_step": int(env_steps),
                "learner_step": self.learner_steps, "algorithm": "apex",
                "run_config": self.run_config, "network": self.run_config["network"],
                "operative_config": gin.operative_config_str()}
    return export.save_apex_policy(self.step.q_network, self.observation_spec, base,
                                   int(env_steps), metadata)

  def _housekeeping(self):
    """Drains actor reports; writes episode metrics, throughput and progress."""
    infos = self._server_info()
    self.reports.drain(self.client, info=infos, calls=self._calls, timeout_s=_RPC_TIMEOUT_S)
    if self.health_check is not None:
      self.health_check(self.reports)
    now = time.monotonic()
    info = infos[transport.REPLAY_TABLE]
    inserts = info.rate_limiter_info.insert_stats.completed
    self._perf.append((now, self.learner_steps, self.reports.env_steps, inserts))
    steps = self.learner_steps
    values = {"Replay/size": info.current_size}
    if len(self._perf) == 2:
      (t0, l0, e0, i0), (t1, l1, e1, i1) = self._perf
      dt = max(t1 - t0, 1e-9)
      values.update({"Perf/learner_steps_per_second": (l1 - l0) / dt,
                     "Perf/agent_steps_per_second": (e1 - e0) / dt,
                     "Perf/inserts_per_second": (i1 - i0) / dt})
      if i1 > i0:
        values["Replay/samples_per_insert"] = (l1 - l0) * self.batch_size / (i1 - i0)
    self.writer.scalars(values, steps)
    window = self.reports.window
    self.writer.episode_metrics(window, steps, self.reports.env_steps)
    lowest = self.reports.lowest_epsilon_window()
    if lowest is not None and lowest.returns:
      self.writer.scalars({"Metrics/AverageReturnLowestEpsilon": lowest.average_return}, steps)
    self.progress.update(self.reports.env_steps, window.average_return)

  def _target_reached(self):
    if self.stop_at_average_return is None:
      return False
    lowest = self.reports.lowest_epsilon_window()
    return (lowest is not None and len(lowest.returns) >= lowest.returns.maxlen and
            lowest.average_return >= float(self.stop_at_average_return))

  # --- the loop -----------------------------------------------------------------------------
  def run(self):
    stop = self.stop if self.stop is not None else signals.StopRequest()
    own_stop = self.stop is None
    env_steps = self.reports.env_steps
    self._next_checkpoint = (env_steps // self.checkpoint_interval + 1) * self.checkpoint_interval
    self._next_export = ((env_steps // self.export_interval + 1) * self.export_interval
                         if self.export_interval else None)
    self._last_saved = env_steps if self.checkpointer.manager.latest_checkpoint else None
    self._next_report = 0.0
    reason = "done"
    logging.info("Learner: replay %s, batch %d, %s", self.replay_address, self.batch_size,
                 self.layout)
    try:
      try:
        self._publish()
      except transport.ReplayUnavailableError as e:
        self._reconnect(e, stop)
      while True:
        try:
          outcome = self._iteration(stop)
        except transport.ReplayUnavailableError as e:
          self._reconnect(e, stop)
          outcome = "signal" if stop.requested else None
        if outcome is not None:
          reason = outcome
          break
    except transport.ReplayUnreachableError:
      # Giving up on the replay: keep what was learned (a rerun resumes there).
      if self._saved_at != (self.reports.env_steps, self.learner_steps):
        self._save()
      self.writer.close()
      raise
    finally:
      if own_stop:
        stop.restore()
      self.progress.update(self.reports.env_steps, self.reports.window.average_return,
                           force=True)
      self.progress.close()
    if self._replay_ok:
      try:
        self._calls.wait(_RPC_TIMEOUT_S, "Updating priorities")
        # Tell actors (also those on other hosts) that training is over.
        self._publish(done=True)
        self.reports.drain(self.client, calls=self._calls, timeout_s=_RPC_TIMEOUT_S)
      except Exception as e:  # pylint: disable=broad-except
        logging.warning("Could not publish `done` or drain the last actor reports: %s", e)
    self._calls.close()
    env_steps = self.reports.env_steps
    if self._last_saved != env_steps:
      self._save()
    self.writer.episode_metrics(self.reports.window, self.learner_steps, env_steps)
    self.writer.close()
    self._export(env_steps)
    lowest = self.reports.lowest_epsilon_window()
    result = {"env_steps": env_steps, "learner_steps": self.learner_steps,
              "average_return": self.reports.window.average_return,
              "average_return_lowest_epsilon": (lowest.average_return if lowest is not None
                                                else float("nan")),
              "episodes": self.reports.window.total, "reason": reason,
              "replay_reconnects": self.reconnects}
    logging.info("Learner stopped (%s) at agent step %d, learner step %d; average return of "
                 "the last 100 episodes %.2f (least exploring actor: %.2f).", reason, env_steps,
                 self.learner_steps, result["average_return"],
                 result["average_return_lowest_epsilon"])
    return result

  def _iteration(self, stop):
    """One pass of the loop: housekeeping when due, one train step if a batch came.
    Returns the reason to stop, or None."""
    if time.monotonic() >= self._next_report:
      self._housekeeping()
      self._next_report = time.monotonic() + self.report_interval_s
      if self.reports.env_steps >= self.total_steps:
        return "done"
      if self._target_reached():
        return "target"
    if stop.requested:
      return "signal"
    batch = self._next_batch()
    if batch is None:
      self._next_report = 0.0
      return None
    keys, new_priorities, self._metrics = self.step.train(batch)
    self._update_priorities(keys, new_priorities)
    steps = self.learner_steps
    if steps % self.publish_interval == 0:
      self._publish()
    if steps % self.summary_interval == 0:
      self.writer.scalars(self._checked_metrics(), steps)
    env_steps = self.reports.env_steps
    if env_steps >= self._next_checkpoint:
      self._save()
      self._last_saved = env_steps
      self._next_checkpoint = (env_steps // self.checkpoint_interval + 1) * self.checkpoint_interval
    if self._next_export is not None and env_steps >= self._next_export:
      self._export(env_steps)
      self._next_export = (env_steps // self.export_interval + 1) * self.export_interval
    return None


# --- standalone learner -------------------------------------------------------------------

FLAGS = flags.FLAGS


def _define_flags():
  flags.DEFINE_string("replay_address", None, "HOST:PORT of the Reverb replay server.")
  flags.DEFINE_string("root_dir", None, "Run directory (summaries, checkpoints, exports).")
  flags.DEFINE_multi_string("gin_file", [], "The run's gin config(s), e.g. apex_atari.gin.")
  flags.DEFINE_multi_string("gin_bindings", [], "Extra gin bindings.")
  flags.DEFINE_string("env_name", None, "Environment (default: train_eval.env_name).")
  flags.DEFINE_integer("total_steps", None, "Agent steps (default: train_eval.total_steps).")
  flags.DEFINE_integer("seed", None, "Seed (default: train_eval.seed or 0).")


def main(argv):
  if len(argv) > 1:
    raise errors.UserError("Unexpected arguments: %s" % " ".join(argv[1:]))
  if not FLAGS.replay_address or not FLAGS.root_dir:
    raise errors.UserError("Give --replay_address=HOST:PORT and --root_dir.")
  common.parse_gin(FLAGS.gin_file, FLAGS.gin_bindings)
  from paac_tf.runtime import config  # pylint: disable=import-outside-toplevel
  root_dir = common.prepare_root_dir(FLAGS.root_dir)
  env_name = common.env_name_or_configured(FLAGS.env_name)
  total_steps = FLAGS.total_steps or common.configured("train_eval.total_steps")
  if not total_steps or int(total_steps) <= 0:
    raise errors.UserError("Give --total_steps or bind train_eval.total_steps.")
  seed = FLAGS.seed if FLAGS.seed is not None else common.configured("train_eval.seed", 0)
  status = 0
  try:
    result = apex_learner(FLAGS.replay_address, root_dir, env_name, int(total_steps), seed=seed)
    config.write_operative_config(root_dir)
    logging.info("Result: %s", result)
  except transport.ReplayUnreachableError as e:
    logging.flush()
    sys.stderr.write("error: %s\n" % errors.user_message(e))
    status = transport.EXIT_REPLAY_UNREACHABLE
  common.exit_now(status)   # everything is closed (and saved): skip the slow teardown


def cli():
  """`python -m paac_tf.runners.apex.learner`."""
  _define_flags()
  errors.run_cli(main)
