"""An Ape-X actor: a batch of environments, the algorithm's acting on a local network copy
(Ape-X's: epsilon-greedy, algorithms/apex/acting.py), n-step transitions with initial
priorities, written to the Reverb replay.

Run as a program of its own by `python -m paac_tf.commands.apex_actor` (the one-machine launcher
starts one per actor).

Per batched step (all `num_envs` environments at once):
  1.-2. the algorithm's acting (`ReplayAlgorithm.make_acting`, algorithms/replay/algorithm.py) picks
     the actions: Ape-X's, Q-values of the observations under the local network (one
     compiled call) and epsilon-greedy actions, one epsilon per environment: its ladder
     spans the N environments of all actors (`algorithms/apex/epsilon.py`), global
     environment i = actor_index * num_envs + j explores with 0.4 ** (1 + 7 i / (N - 1))
     (0.4 if N = 1); the step is sent to the environments, which run while the actor
     writes (3-4);
  3. the n-step builder (`runners/apex/n_step.py`) completes transitions; each gets its
     initial priority from the acting (Ape-X: |TD error| under the local network as online
     and target network);
  4. frames and items go to Reverb (`replay_layout.TransitionWriter`), streamed in chunks;
     the writer is flushed every step down to a bounded number of unconfirmed items,
     so a rate-limited replay slows the actor down instead of queueing without bound.
Every `weights_refresh_interval` batched steps the actor copies the learner's latest
published weights; every `report_interval_s` it reports its agent steps and finished
episodes (raw game scores, each with the epsilon of the environment that played it) to the
actor-stats table. With a root dir it writes TensorBoard summaries (Metrics/AverageReturn,
over all its environments, Actor/epsilon_min, ...) to root_dir/actors/actor_I. An actor's
reports and its Actor/epsilon summary carry the median of its environments' epsilons (one
value per actor; its log line and Actor/epsilon_max, Actor/epsilon_min give the range; its
reports carry the minimum too).

Replay server faults: at start the actor retries an unreachable server with backoff (1 s
doubling to 30 s, `replay_client.ReplayRetry`), one log line per retry. Mid-run, when the
server goes away (killed, restarted), its writes wait: Reverb's writers reconnect by
themselves and send what was pending to the server that answers next, so a restarted
server (from its checkpoint or empty) gets the actor's unconfirmed items again; reports
are kept until a server confirms them, and weights refreshes keep the local weights
meanwhile. What the lost server had confirmed after its last completed checkpoint is
written again from the actor's retention (`retention.py`, `retain_items`), when the replay
checkpoints periodically.

It stops on SIGTERM (and SIGINT unless started by the launcher), when the learner
publishes `done`, after `max_steps` batched steps, when its launcher process is gone, or
(exit status 3, one `error: ...` line) when the replay server stays unreachable for
`server_timeout_s`.
"""
import os
import time

from absl import logging
import numpy as np
import reverb

from paac_tf import errors
from paac_tf.envs import environment
from paac_tf.runners.apex import n_step
from paac_tf.runners.apex import actor_reports
from paac_tf.runners.apex import processes
from paac_tf.runners.apex import replay_client
from paac_tf.runners.apex import replay_flush
from paac_tf.runners.apex import replay_layout
from paac_tf.runners.apex import retention as retention_lib
from paac_tf.runners.apex import weights as weights_lib
from paac_tf.bookkeeping import checks
from paac_tf.bookkeeping import config
from paac_tf.bookkeeping import signals
from paac_tf.bookkeeping import summaries
from paac_tf.bookkeeping import threads

# How long a report may wait for the server's confirmation before the loop goes on (it
# stays pending, and the next reports accumulate until it is confirmed).
_REPORT_FLUSH_S = 0.2
def actor_seed(seed, actor_index, start=0):
  """The seed of actor `actor_index`'s environments and exploration in a run seeded `seed`,
  on its `start`-th restart: a different one for every actor and every (re)start, so a
  restarted actor plays new episodes."""
  return int(seed) * 1000 + 7919 * (int(actor_index) + 1) + 104729 * int(start)


@checks.configurable(module="apex", denylist=["replay_address", "actor_index", "num_actors",
                                            "env_name", "root_dir", "seed", "parent_pid",
                                            "stop", "algorithm"])
def apex_actor(replay_address, actor_index, num_actors, env_name, *, algorithm, root_dir=None,
               seed=0,
               num_envs: checks.Count = 16, num_workers: checks.NonNegativeInt = 0,
               discount: checks.Fraction = 0.99, epsilon_base: checks.Probability = 0.4,
               epsilon_alpha: checks.NonNegative = 7.0,
               weights_refresh_interval: checks.Count = 100, chunk_length: checks.Count = 16,
               report_interval_s: checks.Positive = 1.0, log_interval_s: checks.Positive = 30.0,
               tf_threads: checks.OptionalNonNegativeInt = 1,
               tf_inter_op_threads: checks.OptionalNonNegativeInt = None,
               max_steps: checks.OptionalCount = None, server_timeout_s: checks.Positive = 300.0,
               retain_items: checks.NonNegativeInt = 100_000,
               mark_interval_s: checks.Positive = 1.0,
               parent_pid=None, stop=None):
  """Runs one actor until stopped (see the module docstring); returns its counters.

  Args:
    algorithm: the `ReplayAlgorithm` (algorithms/replay/algorithm.py) whose acting the actor runs.
    num_envs: the environments the actor steps as one batch (`make_environment`).
    num_workers: the processes or C++ threads that step them (as `paac.num_workers`); 0:
      in the actor's process.
    discount: gamma of the n-step returns (n is `ReplayLayout.n_step`).
    epsilon_base, epsilon_alpha: the exploration ladder over all N = num_actors * num_envs
      environments: global environment i acts with epsilon base ** (1 + alpha i / (N - 1))
      (every actor must have the same `num_envs`).
    weights_refresh_interval: batched steps between weight refreshes (Ape-X: ~400 frames,
      i.e. 100 agent steps per environment).
    chunk_length: frames per Reverb chunk (compression unit; items wait for their chunk).
    report_interval_s: seconds between reports to the learner (agent steps, episodes).
    log_interval_s: seconds between the actor's progress log lines (agent steps per
      second, inserts, learner step of its weights, average return).
    tf_threads: TF's intra-op threads (actors share cores; 1 avoids oversubscription: the
      forward pass on one batch of observations is small). None or 0: TF's default.
    tf_inter_op_threads: TF's inter-op threads (None: as `tf_threads`).
    max_steps: stop after this many batched steps (None: until told to stop).
    server_timeout_s: give up (exit status 3) after this long without the replay server,
      at start or mid-run (retries: `ReplayRetry`).
    retain_items: keep at most this many written items until a completed replay
      checkpoint holds them, to write them again into a replay restarted from an older
      checkpoint (`retention.py`; about one frame per kept item, ~7 KB on Atari: 100,000
      items ~0.7 GB; beyond the bound the oldest are dropped, counted and logged). 0: keep
      nothing. Nothing is kept while the replay does not checkpoint periodically.
    mark_interval_s: seconds between reads of the replay's durability marker (each after
      a flush of everything written).
    parent_pid: stop when this process (the launcher) is gone; SIGINT is then ignored.
    stop: object with a `requested` attribute (default: a SIGTERM/SIGINT handler).
  """
  threads.set_tf_threads(tf_threads, tf_inter_op_threads)
  own_stop = stop is None
  if own_stop:
    stop = signals.StopRequest(ignore_sigint=parent_pid is not None,
                               message="%s received: stopping.")
  should_stop = lambda: stop.requested or not processes.parent_alive(parent_pid)
  client = reverb.Client(replay_address)

  env = environment.make_environment(env_name, num_envs=num_envs, num_workers=num_workers,
                                     seed=seed)
  writer = subscriber = None
  try:
    observation_spec, action_spec = env.observation_spec(), env.action_spec()
    layout = replay_layout.ReplayLayout(observation_spec, action_spec)
    acting = algorithm.make_acting(action_spec, observation_spec, num_envs, actor_index,
                                   num_actors, seed, epsilon_base, epsilon_alpha)
    epsilons = acting.epsilons
    subscriber = weights_lib.WeightsSubscriber(client, acting.network, timeout_s=10)
    logging.info("Actor %d/%d: %s x %d, epsilon %.5f..%.5f (median %.5f), replay %s, %s",
                 actor_index, num_actors, env_name, num_envs, epsilons.max(), epsilons.min(),
                 np.median(epsilons), replay_address, layout)
    try:
      info = replay_client.check_replay(client, layout, replay_address,
                                        timeout_s=server_timeout_s, should_stop=should_stop)
    except replay_client.ReplayMismatchError as e:
      raise errors.UserError(str(e)) from None
    if info is None or not _wait_for_weights(subscriber, client, replay_address, should_stop,
                                             server_timeout_s):
      return {"agent_steps": 0, "items": 0, "reason": "stopped"}
    logging.info("Replay server at %s answers; acting with the weights of learner step %d.",
                 replay_address, subscriber.learner_step)
    builder = n_step.NStepBuilder(num_envs, n=layout.n_step, gamma=discount,
                                  action_shape=action_spec.shape, action_dtype=action_spec.dtype)
    writer = replay_layout.TransitionWriter(client, layout, num_envs,
                                            chunk_length=chunk_length,
                                            retain=retain_items > 0)
    loop = _ActorLoop(
        env=env, acting=acting, subscriber=subscriber, builder=builder, writer=writer,
        client=client, replay_address=replay_address, layout=layout, actor_index=actor_index,
        root_dir=root_dir,
        weights_refresh_interval=weights_refresh_interval,
        report_interval_s=report_interval_s, log_interval_s=log_interval_s,
        server_timeout_s=server_timeout_s,
        retention=retention_lib.Retention(retain_items) if retain_items else None,
        mark_interval_s=mark_interval_s)
    if root_dir:   # every binding this process used, for the run's operative_config.gin
      config.write_process_operative_config(root_dir, "actor_%d" % actor_index)
    return loop.run(should_stop, max_steps)
  finally:
    if writer is not None:
      writer.close()
    if subscriber is not None:
      subscriber.close()
    env.close()
    if own_stop:
      stop.restore()


def _wait_for_weights(subscriber, client, address, should_stop, server_timeout_s):
  """Waits for the learner's first weights and copies them; False if told to stop
  meanwhile. A lost server is waited for as at start (`server_timeout_s`)."""
  start = last_log = time.monotonic()
  while True:
    if should_stop():
      return False
    if subscriber.refresh(wait_s=0.5):
      return True
    try:
      subscriber.available()
    except Exception:  # pylint: disable=broad-except  (gRPC errors vary)
      if replay_client.wait_for_replay(client, address, server_timeout_s,
                                       should_stop=should_stop) is None:
        return False
    if time.monotonic() - last_log > 30:
      logging.info("Waiting for the learner's first weights (%.0f s).", time.monotonic() - start)
      last_log = time.monotonic()
    time.sleep(0.5)


class _ActorLoop:
  """The stepping loop with its counters, reports and summaries."""

  def __init__(self, *, env, acting, subscriber, builder, writer, client, replay_address,
               layout, actor_index, root_dir, weights_refresh_interval, report_interval_s,
               log_interval_s, server_timeout_s, retention=None, mark_interval_s=1.0):
    self.env, self.acting, self.subscriber = env, acting, subscriber
    self.replay_address, self.layout = replay_address, layout
    self.builder, self.writer, self.client = builder, writer, client
    self.actor_index = int(actor_index)
    self.epsilons = np.asarray(acting.epsilons, np.float64)    # one per environment (row)
    self.epsilon = float(np.median(self.epsilons))      # the actor's, in reports/summaries
    self.weights_refresh_interval = max(1, int(weights_refresh_interval))
    self.report_interval_s = float(report_interval_s)
    self.log_interval_s = float(log_interval_s)
    self.summary_writer = (summaries.SummaryWriter(
        os.path.join(root_dir, "actors", "actor_%d" % self.actor_index)) if root_dir else None)
    self.window = summaries.EpisodeWindow(100)
    self.agent_steps = 0
    self.flusher = replay_flush.ReplayFlush(writer, client, replay_address, server_timeout_s,
                                            layout, subscriber, actor_index, retention,
                                            mark_interval_s)
    self._unreported = {"agent_steps": 0, "items": 0, "episodes": []}
    self._report_in_flight = None    # (writer, report) not yet confirmed by the server

  def run(self, should_stop, max_steps):
    env, num_envs = self.env, self.builder.num_envs
    can_send = hasattr(env, "send") and hasattr(env, "recv")
    time_step = env.reset()
    steps = 0
    t0 = time.monotonic()
    next_report = t0 + self.report_interval_s
    next_log = t0 + self.log_interval_s
    log_mark = (t0, 0, 0)
    reason = "max_steps"
    while max_steps is None or steps < max_steps:
      if should_stop():
        reason = "stopped"
        break
      action, q_taken, values = self.acting.act(time_step.observation)
      if can_send:
        env.send(action)     # the environments step while the transitions are written
      ids = self.writer.observation_ids(time_step.step_type)
      transitions = self.builder.step(time_step.step_type, time_step.reward,
                                      time_step.discount, action,
                                      q_taken=q_taken, ids=ids)
      initial = self.acting.initial_priorities(transitions, values)
      written = self.writer.write(time_step.step_type, time_step.observation, transitions,
                                  initial)
      self.flusher.flush(should_stop)
      time_step = env.recv() if can_send else env.step(action)
      steps += 1
      self.agent_steps += num_envs
      self._unreported["agent_steps"] += num_envs
      self._unreported["items"] += written.items

      if steps % self.weights_refresh_interval == 0:
        self.subscriber.refresh()
      if self.subscriber.done:
        reason = "learner done"
        break
      now = time.monotonic()
      if now >= next_report:
        self._report()
        next_report = now + self.report_interval_s
      if now >= next_log:
        log_mark = self._log(now, log_mark)
        next_log = now + self.log_interval_s
    # Only a run that ends by itself waits for its last items; after a stop request or the
    # learner's end, the replay may no longer accept them (its rate limiter holds inserts
    # once nobody samples), so waiting would only delay the shutdown.
    self._finish(flush_timeout_ms=30_000 if reason == "max_steps" else 0)
    logging.info("Actor %d stopped (%s) after %d agent steps, %d items.", self.actor_index,
                 reason, self.agent_steps, self.writer.items_written)
    self.flusher.close()
    return {"agent_steps": self.agent_steps, "items": self.writer.items_written, "reason": reason,
            "blocked_s": self.flusher.blocked_s, "reconnects": self.flusher.reconnects,
            "retention": self.flusher.counters()}

  def _report(self, flush_s=_REPORT_FLUSH_S):
    """Sends the agent steps and episodes since the last report, unless the previous
    report still awaits the server's confirmation (then they wait for the next one).
    Returns True if nothing is left unconfirmed."""
    episodes = self.env.pop_finished_episodes(with_env_index=True)
    self.window.add((ret, length) for ret, length, _ in episodes)
    # (return, length, epsilon of the environment that played it)
    self._unreported["episodes"].extend((ret, length, float(self.epsilons[env]))
                                        for ret, length, env in episodes)
    if self.summary_writer is not None:
      self.summary_writer.episode_metrics(self.window, self.agent_steps, self.agent_steps)
    if self._report_in_flight is not None:
      writer, report = self._report_in_flight
      try:
        writer.flush(timeout_ms=max(1, int(1000 * flush_s)))
      except reverb.errors.DeadlineExceededError:
        return False
      except Exception as e:  # pylint: disable=broad-except  (not delivered: send it again)
        logging.warning("Actor report failed (%s); it goes with the next one.",
                        errors.user_message(e))
        for key in ("agent_steps", "items"):
          self._unreported[key] += report[key]
        self._unreported["episodes"][:0] = report["episodes"]
      writer.close()
      self._report_in_flight = None
    report = self._unreported
    self._unreported = {"agent_steps": 0, "items": 0, "episodes": []}
    pending = replay_client.insert_one(
        self.client, actor_reports.report_item(self.actor_index, self.epsilon,
                                               float(self.epsilons.min()), report),
        replay_layout.STATS_TABLE, timeout_s=flush_s)
    if pending is not None:
      self._report_in_flight = (pending, report)
      return False
    return True

  def _log(self, now, mark):
    t, steps, items = mark
    dt = max(now - t, 1e-9)
    rate = (self.agent_steps - steps) / dt
    insert_rate = (self.writer.items_written - items) / dt
    logging.info("Actor %d: %d agent steps (%.0f/s), %.0f inserts/s, weights of learner step "
                 "%d, blocked %.0f%%, average return %.2f over %d episodes", self.actor_index,
                 self.agent_steps, rate, insert_rate, self.subscriber.learner_step,
                 100.0 * self.flusher.blocked_s / max(now - t, 1e-9) if steps else 0.0,
                 self.window.average_return, len(self.window.returns))
    if self.summary_writer is not None:
      self.summary_writer.scalars({"Perf/agent_steps_per_second": rate,
                                   "Perf/inserts_per_second": insert_rate,
                                   "Actor/epsilon": self.epsilon,
                                   "Actor/epsilon_max": float(self.epsilons.max()),
                                   "Actor/epsilon_min": float(self.epsilons.min()),
                                   "Actor/weights_learner_step": self.subscriber.learner_step},
                                  self.agent_steps)
      self.summary_writer.flush()
    self.flusher.blocked_s = 0.0
    return (now, self.agent_steps, self.writer.items_written)

  def _finish(self, flush_timeout_ms):
    """Sends what is buffered (within `flush_timeout_ms`) and a last report (within a few
    seconds: a replay that is gone does not hold the actor's exit)."""
    if flush_timeout_ms > 0:
      try:
        self.writer.flush(timeout_ms=flush_timeout_ms, everything=True)
      except Exception as e:  # pylint: disable=broad-except
        logging.info("Final flush incomplete (%s).", e)
    try:
      # Twice: the first may only confirm a report still in flight.
      if self.flusher.server_lost:
        logging.info("Final report not sent: the replay server is gone.")
      elif not (self._report(flush_s=2.0) or self._report(flush_s=2.0)):
        logging.info("Final report not confirmed by the replay server.")
    except Exception as e:  # pylint: disable=broad-except
      logging.info("Final report not sent (%s).", e)
    if self._report_in_flight is not None:
      self._report_in_flight[0].close()
      self._report_in_flight = None
    if self.summary_writer is not None:
      self.summary_writer.close()
