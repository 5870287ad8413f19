"""The Ape-X learner: prioritized batches from Reverb, updates, priorities and weights back.

Run as a program of its own by `python -m paac_tf.commands.apex_learner`; `python -m paac_tf.train
--gin_file=apex_*.gin` runs it inside the one-machine launcher.

Loop: a `reverb.TrajectoryDataset` pipeline keeps batches prefetched; per batch the
algorithm's compiled step (`ReplayAlgorithm.make_learner_step`; Ape-X's:
`paac_tf/algorithms/apex/learner_step.py`) updates the network and returns the items' keys
and new priorities, written back with `client.mutate_priorities`. Every
`publish_interval` steps the weights go to the weights table for the actors.

Progress is counted in agent steps (environment steps summed over all actors), which the
actors report through the actor-stats table; training stops once `total_steps` agent
steps were reported (or `stop_at_average_return` is reached, or on SIGINT/SIGTERM), then
publishes a final `done` weights item so that actors on other hosts stop too, saves a
checkpoint and exports a SavedModel.

Replay server faults: at start the learner retries an unreachable server with backoff (1 s
doubling to 30 s, `replay_client.ReplayRetry`), one log line per retry. Mid-run, a lost
server (killed, restarted) is waited for the same way; once one answers again at the address
(restored from its checkpoint, or empty), the learner republishes its weights, recreates
its sampling pipeline and goes on. It gives up after `server_timeout_s` without a server:
checkpoint saved, one `error: ...` line, exit status 3. Replay calls that have no
deadline of their own run on helper threads (`call_thread.CallThread`,
`sampling.BackgroundSampler`), so a lost server never hangs the loop.

Evaluation while training (`eval_interval`): the evaluation protocol on a snapshot of the
policy network, in this process; the learner pauses meanwhile (actors wait at the rate limiter).

Outputs under root_dir/train: TensorBoard summaries (Losses/, Optimizer/, Q/, Replay/,
Perf/, Metrics/ from the actors' reports, Eval/), checkpoints (ckpt-<agent step>; resumed
automatically) and run_config.json; SavedModels under root_dir/policies/<model_name>/.
"""
import collections
import dataclasses
import time
from typing import Optional

from absl import logging
import reverb

from paac_tf import errors
from paac_tf.algorithms import registry
from paac_tf.envs import environment
from paac_tf.runners import harness
from paac_tf.runners.apex import actor_reports
from paac_tf.runners.apex import call_thread
from paac_tf.runners.apex import learner_rates
from paac_tf.runners.apex import replay_client
from paac_tf.runners.apex import replay_layout
from paac_tf.runners.apex import sampling
from paac_tf.runners.apex import weights as weights_lib
from paac_tf.bookkeeping import checks
from paac_tf.bookkeeping import config
from paac_tf.bookkeeping import progress as progress_lib
from paac_tf.bookkeeping import signals
from paac_tf.bookkeeping import stop_target
from paac_tf.bookkeeping import summary_tags
from paac_tf.bookkeeping import threads

# Samples wait at most this long for the rate limiter before the loop regains control
# (to drain actor reports, honour stop requests, notice dead actors or a lost server).
_SAMPLE_TIMEOUT_MS = 1000
# Deadline of the learner's calls to the replay server (info, reports, priorities, weights).
_RPC_TIMEOUT_S = 10
# The evaluation's default cadence (apex_learner.eval_interval; apex_dpg.gin's export_interval);
# its cost: docs/apex.md, "Evaluation while training".
EVAL_INTERVAL = 500_000


@dataclasses.dataclass(frozen=True)
class LoopSettings:
  """The learner loop's schedule and limits (see `apex_learner` for each)."""
  total_steps: int
  batch_size: int
  publish_interval: int
  summary_interval: int
  checkpoint_interval: int
  export_interval: Optional[int]
  eval_interval: Optional[int]
  target: stop_target.StopTarget
  low_epsilon: float
  prefetch: int
  dataset_workers: int
  report_interval_s: float
  server_timeout_s: float


# The callers pass the run's seed: a binding of it here was never read.
config.removed(("apex_learner",), "seed", "the run's seed is train_eval.seed")


@checks.configurable(module="apex", denylist=["algorithm", "seed", "stop", "health_check",
                                              "on_finished"])
def apex_learner(replay_address, root_dir, env_name, total_steps, *, algorithm, seed=0,
                 batch_size: checks.Count = 512, publish_interval: checks.Count = 25,
                 summary_interval: checks.Count = 100,
                 checkpoint_interval: checks.Count = 1_000_000,
                 keep_checkpoints: checks.Count = 3, export_interval: checks.OptionalCount = None,
                 eval_interval: checks.OptionalCount = EVAL_INTERVAL,
                 eval_episodes: checks.Count = 10,
                 stop_at_average_return: checks.OptionalNumber = None,
                 target_env_name: stop_target.TargetEnvName = None,
                 low_epsilon: checks.NonNegative = actor_reports.DEFAULT_LOW_EPSILON,
                 prefetch: checks.NonNegativeInt = 2, dataset_workers: checks.Count = 1,
                 report_interval_s: checks.Positive = 1.0,
                 tf_threads: checks.OptionalNonNegativeInt = None,
                 tf_inter_op_threads: checks.OptionalNonNegativeInt = None,
                 server_timeout_s: checks.Positive = 300.0, stop=None, health_check=None,
                 on_finished=None):
  """Trains until `total_steps` agent steps were reported by the actors; resumable.

  Args:
    replay_address: HOST:PORT of the Reverb server (`replay.py`).
    root_dir: run directory (train/ summaries and checkpoints, policies/ exports).
    env_name: the environment (for specs and run records; the learner steps none).
    algorithm: the `ReplayAlgorithm` (algorithms/replay/algorithm.py) whose update the learner runs.
    total_steps: agent steps (summed over actors) to train for.
    seed: the run's seed, of the initial weights (`train_eval.seed` or the command's --seed,
      which the callers pass; not a setting of its own).
    batch_size: prioritized batch size (Ape-X: 512).
    publish_interval: learner steps between weight publications.
    summary_interval: learner steps between loss summaries.
    checkpoint_interval: agent steps between checkpoints.
    keep_checkpoints: the newest checkpoints kept (older ones are deleted).
    export_interval: agent steps between SavedModel exports (None: at the end only).
    eval_interval: agent steps between evaluations while training, on a snapshot (Eval/*;
      the learner pauses), and one at the end of a run past the first; None: none. 500,000:
      0.3% of apex_dpg_small.gin's time (docs/apex.md, Atari's too; `python -m
      tools.bench.eval_cost --gin_file=apex_dpg_small.gin`).
    eval_episodes: the episodes of each evaluation while training.
    stop_at_average_return: stop once the last 100 episodes played at epsilon <=
      `low_epsilon` (by any actor's environments) average at least this: they stand in for
      the greedy policy (`actor_reports.ActorReports.low_epsilon_window`); on
      `target_env_name`: on another environment, at its gymnasium reward_threshold if it has
      one (bookkeeping/stop_target.py).
    target_env_name: the environment `stop_at_average_return` is for (None: this run's);
      recorded by `config.parse` from the config that binds the target.
    low_epsilon: the exploration up to which episodes count as the near-greedy policy's,
      for `stop_at_average_return`, the summary Metrics/AverageReturnLowEpsilon and the
      result's average_return_low_epsilon (default 0.01, the final training epsilon of
      the 2015 DQN and of Dopamine's). A run with no environment that low uses the
      episodes of its lowest epsilon instead.
    prefetch: batches the tf.data pipeline keeps ready.
    dataset_workers: Reverb sampler threads of the pipeline.
    report_interval_s: seconds between drains of the actors' reports (and progress).
    tf_threads: TF's intra-op threads, the cores one op of the update may use (None: TF's
      default, one per core). Ape-X's learner is the process that needs the cores: actors
      wait for it (the replay's rate limiter blocks their inserts), so leave it the cores
      the actors do not use (see apex_atari_small.gin for the measurement).
    tf_inter_op_threads: TF's inter-op threads, independent ops at once (None: as
      `tf_threads`).
    server_timeout_s: give up (ReplayUnreachableError, after a checkpoint) once
      the replay server has not answered for this long, at start or mid-run.
    stop: object with a `requested` attribute (default: a SIGINT/SIGTERM handler).
    health_check: optional callable run with the reports; raise to abort training.
    on_finished: optional callable run once training is over (also on errors), before the
      sampling pipeline is torn down; the launcher stops actors and replay there.
  Returns:
    A `bookkeeping.run_result.RunResult` (its updates: learner steps) with the extras
    average_return_low_epsilon (and low_epsilon, the bound its episodes were played under)
    and replay_reconnects.
  """
  pools = threads.set_tf_threads(tf_threads, tf_inter_op_threads)
  if pools:
    logging.info("Learner TF threads: %d intra-op, %d inter-op (0: one per core).", *pools)
  network_settings = algorithm.network_settings()
  observation_spec, action_spec = environment.specs(env_name)
  algorithm.check_actions(env_name, action_spec)
  target = stop_target.for_run(stop_at_average_return, target_env_name, env_name)
  layout = replay_layout.ReplayLayout(observation_spec, action_spec)
  run_config = {**registry.record(algorithm), "env_name": str(env_name), **network_settings,
                "n_step": layout.n_step, "single_frames": layout.single_frames,
                "network_spec": algorithm.network_spec(action_spec, observation_spec,
                                                       **network_settings)}
  harness.check_run_config(root_dir, run_config)

  step = algorithm.make_learner_step(action_spec, observation_spec, layout, seed)
  harness_run = harness.Harness(root_dir, env_name, algorithm, keep_checkpoints,
                                **step.checkpoint_trackables())
  if harness_run.restore():
    logging.info("Resuming at agent step %d (learner step %d, optimizer step %d).",
                 harness_run.steps, int(step.steps.numpy()),
                 int(step.optimizer.iterations.numpy()))

  client = reverb.Client(replay_address)
  try:
    replay_client.check_replay(client, layout, replay_address, timeout_s=server_timeout_s)
  except replay_client.ReplayMismatchError as e:
    raise errors.UserError("%s Nothing was trained." % e) from None
  except replay_client.ReplayUnreachableError as e:
    raise replay_client.ReplayUnreachableError("%s Nothing was trained." % e) from None
  settings = LoopSettings(
      total_steps=int(total_steps), batch_size=int(batch_size),
      publish_interval=int(publish_interval), summary_interval=int(summary_interval),
      checkpoint_interval=int(checkpoint_interval), export_interval=export_interval,
      eval_interval=eval_interval, target=target, low_epsilon=float(low_epsilon),
      prefetch=int(prefetch), dataset_workers=int(dataset_workers),
      report_interval_s=float(report_interval_s), server_timeout_s=float(server_timeout_s))
  loop = _LearnerLoop(
      algorithm=algorithm, client=client, replay_address=replay_address, root_dir=root_dir,
      env_name=env_name, observation_spec=observation_spec, run_config=run_config,
      layout=layout, step=step, harness_run=harness_run, settings=settings, stop=stop,
      health_check=health_check,
      evaluate=None if eval_interval is None else harness_run.evaluator(
          step.policy_network, lambda: algorithm.build_network(run_config["network_spec"]),
          observation_spec, eval_episodes))
  try:
    return loop.run()
  finally:
    # The pipeline first, while the server is up: its thread then ends within a second
    # (a pipeline blocked on a server that is gone would wait for its return).
    loop.close_pipeline()
    if on_finished is not None:
      on_finished()


class _LearnerLoop:
  """The learner's main loop and its bookkeeping.

  Args:
    algorithm: the `ReplayAlgorithm` (algorithms/replay/algorithm.py) (its name and exports).
    client, replay_address: the replay server.
    root_dir, env_name, observation_spec, run_config: the run (outputs and exports).
    layout: the replay's `ReplayLayout`.
    step: the algorithm's compiled learner step (its networks, optimizer and step counter).
    harness_run: the run's `harness.Harness`: its checkpoints of step's state with the counts of
      agent steps and episodes (restored by a resumed run), its cadence and exports.
    settings: `LoopSettings`.
    stop, health_check: as for `apex_learner`.
    evaluate: evaluate(agent_steps), the evaluation while training (Harness.evaluator), or None.
  """

  def __init__(self, *, algorithm, client, replay_address, root_dir, env_name, observation_spec,
               run_config, layout, step, harness_run, settings, stop=None, health_check=None,
               evaluate=None):
    self.algorithm = algorithm
    self.client, self.replay_address = client, replay_address
    self.root_dir, self.env_name = root_dir, env_name
    self.observation_spec, self.run_config = observation_spec, run_config
    self.layout, self.step, self.harness_run = layout, step, harness_run
    self.settings, self.stop, self.health_check = settings, stop, health_check
    self.reports = actor_reports.ActorReports(low_epsilon=settings.low_epsilon)
    self.reports.agent_steps = harness_run.steps
    harness_run.use_window(self.reports.window)
    self.cadence = harness_run.make_cadence(
        checkpoint_interval=settings.checkpoint_interval,
        export_interval=settings.export_interval, summary_interval=settings.summary_interval,
        start_steps=self.reports.agent_steps, save=self._save_checkpoint,
        export=self._export_policy, network=step.network,
        finite_keys=step.finite_metric_keys, step_name="learner step", evaluate=evaluate,
        eval_interval=settings.eval_interval, eval_setting="apex_learner.eval_interval")
    self.writer = self.cadence.writer
    self.progress = progress_lib.Progress(settings.total_steps,
                                          start_step=self.reports.agent_steps)
    self._sampler = None
    self._calls = self._new_call_thread()
    self._replay_ok = True
    self._saved_updates = None    # the learner steps of the last checkpoint saved
    self.reconnects = 0
    self._metrics = None
    self._perf = collections.deque(maxlen=2)   # learner_rates.Tally of the last two passes

  # --- helpers ------------------------------------------------------------------------------
  @property
  def learner_steps(self):
    return int(self.step.steps.numpy())

  def _new_call_thread(self):
    return call_thread.CallThread(
        name="learner-replay-calls",
        check=lambda: replay_client.probe(self.client, self.replay_address, _RPC_TIMEOUT_S))

  def _make_dataset(self):
    return sampling.replay_dataset(
        self.replay_address, self.layout, self.settings.batch_size,
        prefetch=self.settings.prefetch, num_workers=self.settings.dataset_workers,
        rate_limiter_timeout_ms=_SAMPLE_TIMEOUT_MS)

  def _next_batch(self):
    """The next prioritized batch, or None if none came for a while (the rate limiter
    held it back, or the server is gone)."""
    if self._sampler is None:
      self._sampler = sampling.BackgroundSampler(self._make_dataset,
                                                 ready=sampling.min_size_reached(self.client))
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
      weights_lib.publish(self.client, self.step.network, self.learner_steps, done=done,
                          timeout_s=_RPC_TIMEOUT_S, address=self.replay_address)
    except replay_client.ReplayUnavailableError:
      raise
    except Exception as e:  # pylint: disable=broad-except  (gRPC errors vary)
      raise replay_client.ReplayUnavailableError(
          "Publishing weights failed: %s" % errors.user_message(e)) from e

  def _server_info(self):
    """The server's table infos. Through replay_client.probe: a server that is gone is noticed
    at once (its port refuses the connection), not after the call's deadline."""
    try:
      return replay_client.probe(self.client, self.replay_address, _RPC_TIMEOUT_S)
    except Exception as e:  # pylint: disable=broad-except  (gRPC errors vary)
      raise replay_client.ReplayUnavailableError(
          "server_info failed: %s" % errors.user_message(e)) from e

  def _update_priorities(self, keys, new_priorities):
    """Writes the new priorities on the call thread (overlapping the next step)."""
    updates = dict(zip(keys.numpy().tolist(), new_priorities.numpy().tolist()))
    self._calls.submit(
        lambda: self.client.mutate_priorities(replay_layout.REPLAY_TABLE, updates=updates),
        _RPC_TIMEOUT_S, "Updating priorities")

  def _reconnect(self, error, stop):
    """Waits for the replay server (backoff, one log line per retry) after `error`; then
    republishes the weights and recreates the sampling pipeline. Raises
    replay_client.ReplayUnreachableError after `server_timeout_s`; returns early on a stop
    request."""
    lost = time.monotonic()
    self._replay_ok = False
    logging.warning("Learner lost the replay server at %s (%s); waiting for it (giving up "
                    "after %.0f s).", self.replay_address, errors.user_message(error),
                    self.settings.server_timeout_s)
    if self._sampler is not None:
      self._sampler.close(wait_s=0)   # its thread ends once its call returns
      self._sampler = None
    while True:
      info = replay_client.wait_for_replay(self.client, self.replay_address,
                                           self.settings.server_timeout_s,
                                           should_stop=lambda: stop.requested, since=lost)
      if info is None:
        return
      try:
        replay_client.check_tables(info, self.layout, self.replay_address)
      except replay_client.ReplayMismatchError as e:
        raise errors.UserError(str(e)) from None
      try:
        # A call still pending on the lost connection completes once it is back.
        self._calls.wait(_RPC_TIMEOUT_S, "A pending replay call")
        self._publish()
        break
      except replay_client.ReplayUnavailableError as e:
        logging.warning("Replay server at %s: %s", self.replay_address, e)
        if self._calls.busy:
          self._calls.close()
          self._calls = self._new_call_thread()
    self._replay_ok = True
    self.reconnects += 1
    logging.warning("Replay server at %s answers again after %.0f s (replay holds %d items); "
                    "weights republished, sampling pipeline recreated.", self.replay_address,
                    time.monotonic() - lost, info[replay_layout.REPLAY_TABLE].current_size)

  def _save(self):
    """A checkpoint of the agent steps reported so far (`cadence.save`: checked first)."""
    self.cadence.save(self.reports.agent_steps, self.learner_steps, self._metrics)

  def _save_checkpoint(self, agent_steps):
    self.harness_run.save(agent_steps)
    self._saved_updates = self.learner_steps

  def _export_policy(self, agent_steps):
    """The policy network's export (the harness's training export)."""
    return self.harness_run.export(
        self.step.policy_network, self.observation_spec, int(agent_steps),
        learner_step=self.learner_steps, algorithm=self.algorithm.name,
        run_config=self.run_config, network=self.run_config["network"])

  def _housekeeping(self):
    """Drains actor reports; writes episode metrics, throughput and progress."""
    infos = self._server_info()
    self.reports.drain(self.client, info=infos, calls=self._calls, timeout_s=_RPC_TIMEOUT_S)
    if self.health_check is not None:
      self.health_check(self.reports)
    now = time.monotonic() - self.cadence.eval_seconds   # Perf/*: training's, not evaluating
    info = infos[replay_layout.REPLAY_TABLE]
    steps = self.learner_steps
    self._perf.append(learner_rates.Tally(now, steps, self.reports.agent_steps,
                                          info.rate_limiter_info.insert_stats.completed))
    values = {"Replay/size": info.current_size}
    if len(self._perf) == 2:
      values.update(learner_rates.rates(*self._perf, self.settings.batch_size))
    self.writer.scalars(values, steps)
    window = self.reports.window
    self.writer.episode_metrics(window, steps, self.reports.agent_steps)
    low = self.reports.low_epsilon_window()
    if low is not None and low.returns:
      self.writer.scalars({summary_tags.LOW_EPSILON_RETURN_VS_UPDATES: low.average_return},
                          steps)
      self.writer.scalars({summary_tags.LOW_EPSILON_RETURN_VS_AGENT_STEPS: low.average_return},
                          self.reports.agent_steps)
    self.progress.update(self.reports.agent_steps, window.average_return)

  def _target_reached(self):
    low = self.reports.low_epsilon_window()
    if low is None or not self.settings.target.reached(low):
      return False
    logging.info("%s (episodes at epsilon <= %.4g).", self.settings.target.stop_line(low),
                 self.reports.low_epsilon_bound())
    return True

  # --- the loop -----------------------------------------------------------------------------
  def run(self):
    if self.stop is not None:
      return self._run(self.stop)
    with signals.stop_on_signals() as stop:
      return self._run(stop)

  def _run(self, stop):
    self._next_report = 0.0
    reason = "done"
    logging.info("Learner: replay %s, batch %d, %s", self.replay_address, self.settings.batch_size,
                 self.layout)
    try:
      try:
        self._publish()
      except replay_client.ReplayUnavailableError as e:
        self._reconnect(e, stop)
      while True:
        try:
          outcome = self._iteration(stop)
        except replay_client.ReplayUnavailableError as e:
          self._reconnect(e, stop)
          outcome = "signal" if stop.requested else None
        if outcome is not None:
          reason = outcome
          break
    except replay_client.ReplayUnreachableError:
      # Giving up on the replay: keep what was learned (a rerun resumes there).
      if (self.cadence.saved_at, self._saved_updates) != (self.reports.agent_steps,
                                                          self.learner_steps):
        self._save()
      self.writer.close()
      raise
    finally:
      self.progress.update(self.reports.agent_steps, self.reports.window.average_return,
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
    agent_steps = self.reports.agent_steps
    low = self.reports.low_epsilon_window()
    bound = self.reports.low_epsilon_bound()
    # The final export (of what this process trained) is skipped if a second signal asked
    # to hurry.
    result = self.cadence.finish(
        agent_steps, self.learner_steps, self._metrics, self.reports.window, reason,
        hurry=getattr(stop, "hurry", False),
        average_return_low_epsilon=low.average_return if low is not None else float("nan"),
        low_epsilon=bound, replay_reconnects=self.reconnects)
    logging.info("Learner stopped (%s) at agent step %d, learner step %d; average return of "
                 "the last 100 episodes %.2f (%.2f at epsilon <= %.4g).", reason, agent_steps,
                 self.learner_steps, result.average_return,
                 result.extras["average_return_low_epsilon"],
                 float("nan") if bound is None else bound)
    return result

  def _iteration(self, stop):
    """One pass of the loop: housekeeping when due, one train step if a batch came.
    Returns the reason to stop, or None."""
    if time.monotonic() >= self._next_report:
      self._housekeeping()
      self._next_report = time.monotonic() + self.settings.report_interval_s
      if self.reports.agent_steps >= self.settings.total_steps:
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
    if steps % self.settings.publish_interval == 0:
      self._publish()
    self.cadence.summaries(self._metrics, steps, self.reports.agent_steps)
    self.cadence.after_update(self.reports.agent_steps, steps, self._metrics)
    return None
