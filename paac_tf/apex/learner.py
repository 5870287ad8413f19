r"""The Ape-X learner: prioritized batches from Reverb, updates, priorities and weights back.

  python -m paac_tf.apex.learner --replay_address=HOST:PORT --root_dir=DIR \
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

Outputs under root_dir/train: TensorBoard summaries (Losses/, Optimizer/, Q/, Replay/,
Perf/, Metrics/ from the actors' reports), checkpoints (ckpt-<agent step>; resumed
automatically) and run_config.json; SavedModels under root_dir/policies/<model_name>/.
"""

if __name__ == "__main__":
  # `python -m paac_tf.apex.learner` runs this file as __main__; hand over to the package's
  # copy of the module so that its gin configurables are registered once, not twice.
  from paac_tf.apex import learner as _package_module  # pylint: disable=import-self
  _package_module.cli()
  raise SystemExit(0)

import collections
import os
import time

from absl import flags
from absl import logging
import gin
import numpy as np
import tensorflow as tf
import tree

from paac_tf import errors
from paac_tf.agents.apex import learner_step as learner_step_lib
from paac_tf.apex import common
from paac_tf.apex import transport
from paac_tf.apex import weights as weights_lib
from paac_tf.runtime import checkpointing
from paac_tf.runtime import progress as progress_lib
from paac_tf.runtime import signals
from paac_tf.runtime import summaries

# Samples wait at most this long for the rate limiter before the loop regains control
# (to drain actor reports, honour stop requests, notice dead actors).
_SAMPLE_TIMEOUT_MS = 1000
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

  def drain(self, client):
    """Reads every pending report; returns how many there were."""
    size = client.server_info(timeout=30)[transport.STATS_TABLE].current_size
    if size == 0:
      return 0
    for sample in client.sample(transport.STATS_TABLE, size, emit_timesteps=False):
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
                 stop=None, health_check=None, on_finished=None):
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
    logging.info("Resuming at agent step %d (learner step %d).", int(env_steps_var.numpy()),
                 int(step.steps.numpy()))

  client = reverb.Client(replay_address)
  try:
    transport.check_replay(client, layout, replay_address, timeout_s=60)
  except (TimeoutError, transport.ReplayMismatchError) as e:
    raise errors.UserError("%s Nothing was trained." % e) from None
  loop = _LearnerLoop(
      client=client, replay_address=replay_address, root_dir=root_dir, env_name=env_name,
      total_steps=int(total_steps), layout=layout, step=step, checkpointer=checkpointer,
      env_steps_var=env_steps_var, episodes_var=episodes_var, observation_spec=observation_spec,
      run_config=run_config, batch_size=int(batch_size), publish_interval=int(publish_interval),
      summary_interval=int(summary_interval), checkpoint_interval=int(checkpoint_interval),
      export_interval=export_interval, stop_at_average_return=stop_at_average_return,
      prefetch=int(prefetch), dataset_workers=int(dataset_workers),
      report_interval_s=float(report_interval_s), stop=stop, health_check=health_check)
  try:
    return loop.run()
  finally:
    if on_finished is not None:
      on_finished()
    loop.close_pipeline()


class _LearnerLoop:
  """The learner's main loop and its bookkeeping (see `apex_learner` for the arguments)."""

  def __init__(self, **kwargs):
    self.__dict__.update(kwargs)
    self.writer = summaries.SummaryWriter(os.path.join(self.root_dir, "train"))
    self.reports = ActorReports()
    self.reports.env_steps = int(self.env_steps_var.numpy())
    self.reports.window.total = int(self.episodes_var.numpy())
    self.progress = progress_lib.Progress(self.total_steps, start_step=self.reports.env_steps)
    self._iterator = None
    self._metrics = None
    self._perf = collections.deque(maxlen=2)   # (time, learner steps, agent steps, items)

  # --- helpers ------------------------------------------------------------------------------
  @property
  def learner_steps(self):
    return int(self.step.steps.numpy())

  def _next_batch(self):
    """The next prioritized batch, or None if the rate limiter held it back for a while."""
    if self._iterator is None:
      dataset = transport.replay_dataset(
          self.replay_address, self.layout, self.batch_size, prefetch=self.prefetch,
          num_workers=self.dataset_workers, rate_limiter_timeout_ms=_SAMPLE_TIMEOUT_MS)
      self._iterator = iter(dataset)
    try:
      return next(self._iterator)
    except (StopIteration, tf.errors.OutOfRangeError, tf.errors.DeadlineExceededError):
      self._iterator = None   # timed out: the pipeline ended; a new one starts next call
      return None

  def close_pipeline(self):
    """Drops the sampling pipeline (its Reverb sampler threads) once all is saved."""
    start = time.monotonic()
    self._iterator = None
    elapsed = time.monotonic() - start
    if elapsed > 5:
      logging.warning("Closing the replay sampling pipeline took %.0f s.", elapsed)

  def _publish(self, done=False):
    weights_lib.publish(self.client, self.step.q_network, self.learner_steps, done=done)

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
    self.env_steps_var.assign(self.reports.env_steps)
    self.episodes_var.assign(self.reports.window.total)
    self.checkpointer.save(self.reports.env_steps)

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
    self.reports.drain(self.client)
    if self.health_check is not None:
      self.health_check(self.reports)
    now = time.monotonic()
    info = self.client.server_info(timeout=30)[transport.REPLAY_TABLE]
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
    self._publish()
    env_steps = self.reports.env_steps
    next_checkpoint = (env_steps // self.checkpoint_interval + 1) * self.checkpoint_interval
    next_export = ((env_steps // self.export_interval + 1) * self.export_interval
                   if self.export_interval else None)
    last_saved = env_steps if self.checkpointer.manager.latest_checkpoint else None
    next_report = 0.0
    reason = "done"
    logging.info("Learner: replay %s, batch %d, %s", self.replay_address, self.batch_size,
                 self.layout)
    try:
      while True:
        if time.monotonic() >= next_report:
          self._housekeeping()
          next_report = time.monotonic() + self.report_interval_s
          if self.reports.env_steps >= self.total_steps:
            break
          if self._target_reached():
            reason = "target"
            break
        if stop.requested:
          reason = "signal"
          break
        batch = self._next_batch()
        if batch is None:
          next_report = 0.0
          continue
        keys, new_priorities, self._metrics = self.step.train(batch)
        self.client.mutate_priorities(transport.REPLAY_TABLE, updates=dict(zip(
            keys.numpy().tolist(), new_priorities.numpy().tolist())))
        steps = self.learner_steps
        if steps % self.publish_interval == 0:
          self._publish()
        if steps % self.summary_interval == 0:
          self.writer.scalars(self._checked_metrics(), steps)
        env_steps = self.reports.env_steps
        if env_steps >= next_checkpoint:
          self._save()
          last_saved = env_steps
          next_checkpoint = (env_steps // self.checkpoint_interval + 1) * self.checkpoint_interval
        if next_export is not None and env_steps >= next_export:
          self._export(env_steps)
          next_export = (env_steps // self.export_interval + 1) * self.export_interval
    finally:
      if own_stop:
        stop.restore()
      self.progress.update(self.reports.env_steps, self.reports.window.average_return,
                           force=True)
      self.progress.close()
    # Tell actors (also those on other hosts) that training is over.
    self._publish(done=True)
    try:
      self.reports.drain(self.client)
    except Exception as e:  # pylint: disable=broad-except
      logging.warning("Could not drain the last actor reports: %s", e)
    env_steps = self.reports.env_steps
    if last_saved != env_steps:
      self._save()
    self.writer.episode_metrics(self.reports.window, self.learner_steps, env_steps)
    self.writer.close()
    self._export(env_steps)
    lowest = self.reports.lowest_epsilon_window()
    result = {"env_steps": env_steps, "learner_steps": self.learner_steps,
              "average_return": self.reports.window.average_return,
              "average_return_lowest_epsilon": (lowest.average_return if lowest is not None
                                                else float("nan")),
              "episodes": self.reports.window.total, "reason": reason}
    logging.info("Learner stopped (%s) at agent step %d, learner step %d; average return of "
                 "the last 100 episodes %.2f (least exploring actor: %.2f).", reason, env_steps,
                 self.learner_steps, result["average_return"],
                 result["average_return_lowest_epsilon"])
    return result


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
  result = apex_learner(FLAGS.replay_address, root_dir, env_name, int(total_steps), seed=seed)
  config.write_operative_config(root_dir)
  logging.info("Result: %s", result)


def cli():
  """`python -m paac_tf.apex.learner`."""
  _define_flags()
  common.run_main(main)
