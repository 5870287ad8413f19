"""One Ape-X run's Ray actors (`RayRun`): started, watched, stopped, killed.

The replay server (`REPLAY_NAME`), the learner (`LEARNER_NAME`) and the actors
(`ACTOR_NAME % i`) are `ray_roles` classes started as named Ray actors with the run's gin
configuration. `RayRun.run` waits for each to start (and says why one does not), logs
where they run, restarts actors that fail or die (up to `max_actor_restarts`), forwards a
stop request to the learner, gathers the replay's and the actors' operative configs into
the learner's result, and asks the actors to stop; `kill_all` kills every Ray actor it
started. `ray_launcher.run_ray` drives it.
"""
import os
import time

from absl import logging

from paac_tf import errors
from paac_tf.runners import harness
from paac_tf.runners.apex import launcher
from paac_tf.runners.apex import ray_roles
from paac_tf.bookkeeping import cadence
from paac_tf.bookkeeping import checkpointing

LEARNER_NAME = "apex_learner"
REPLAY_NAME = "apex_replay"
ACTOR_NAME = "apex_actor_%d"
_WAIT_S = 1.0   # the watch loop's poll interval
_CONFIGS_TIMEOUT_S = 10.0   # for the operative configs of the replay and the actors, in all


class LearnerDiedError(errors.UserError):
  """The learner's Ray actor died (its node or process was lost, or it was killed)."""


def _cause(ray, error):
  """The exception a Ray task raised (RayTaskError), else the error itself."""
  if isinstance(error, ray.exceptions.RayTaskError) and error.cause is not None:
    return error.cause
  return error


def _describe(options):
  """Ray actor options for a message: a node-affinity strategy as the node it names."""
  strategy = options.get("scheduling_strategy")
  if getattr(strategy, "node_id", None):
    options = {**options, "scheduling_strategy": "node %s" % strategy.node_id}
  return options


def _first_line(error):
  return (str(error).strip().splitlines() or [type(error).__name__])[0]


class RayRun:
  """One run's Ray actors: started, watched, stopped, killed."""

  def __init__(self, ray, config_text, algorithm, root_dir, env_name, total_steps, seed,
               num_actors, max_actor_restarts, start_timeout_s):
    self.ray, self.config_text, self.algorithm = ray, config_text, algorithm
    self.root_dir, self.env_name = root_dir, env_name
    self.total_steps, self.seed, self.num_actors = total_steps, seed, num_actors
    self.max_actor_restarts = int(max_actor_restarts)
    self.start_timeout_s = float(start_timeout_s)
    self.handles = []           # every Ray actor started, for kill_all
    self.actors = []
    self.starts = [0] * num_actors
    self.restarts = 0
    self.failure = None
    self.replay_address = None

  def _create(self, role_class, name, options, **extra):
    try:
      handle = self.ray.remote(role_class).options(
          **{**options, **extra, "name": name}).remote(self.config_text, self.algorithm)
    except ValueError as e:
      if "already taken" in str(e):
        raise errors.UserError(
            "A run in %s is already going on this Ray cluster (its Ray actor %r exists)."
            % (self.root_dir, name)) from None
      raise errors.UserError("Bad Ray actor options for %s: %s %s" % (
          name, options, errors.user_message(e))) from None
    self.handles.append(handle)
    return handle

  def _get(self, ref, what, options, deadline, on_wait=None):
    """ray.get until `deadline` (time.monotonic()); a UserError naming `what`, its Ray
    options and the cluster's free resources if it has not started by then. `on_wait` is
    called about once a second meanwhile; if it returns True, so does this (given up)."""
    try:
      while True:
        try:
          return self.ray.get(ref, timeout=min(_WAIT_S, max(0.1, deadline - time.monotonic())))
        except self.ray.exceptions.GetTimeoutError:
          if time.monotonic() >= deadline:
            raise
          if on_wait is not None and on_wait():
            return True
    except self.ray.exceptions.GetTimeoutError:
      raise errors.UserError(
          "%s did not start within %.0f s: does any node offer what it asks (%s)? Free in "
          "the cluster: %s." % (what, self.start_timeout_s, _describe(options),
                                self.ray.available_resources())) from None
    except self.ray.exceptions.RayActorError as e:
      raise errors.UserError("%s died while starting: %s" % (what, _first_line(e))) from None
    except self.ray.exceptions.RayTaskError as e:
      cause = _cause(self.ray, e)
      if isinstance(cause, errors.UserError):
        raise cause from None
      raise

  def _submit(self, index):
    return self.actors[index].run.remote(
        self.replay_address, index, self.num_actors, self.env_name, self.root_dir, self.seed,
        self.starts[index])

  def run(self, options, replay_port, stop, grace_s):
    deadline = time.monotonic() + self.start_timeout_s
    if stop.requested:   # during ray.init: no model yet, nothing to save
      return self._stopped_before_the_learner()
    replay = self._create(ray_roles.ReplayRole, REPLAY_NAME, options["replay"])
    # A stop while the replay's process starts (seconds: it imports TensorFlow) gives up on
    # it at once (kill_all kills it).
    self.replay_address = self._get(replay.start.remote(self.env_name, replay_port),
                                    "The replay server", options["replay"], deadline,
                                    on_wait=lambda: stop.requested)
    if stop.requested:
      return self._stopped_before_the_learner()
    learner = self._create(ray_roles.LearnerRole, LEARNER_NAME, options["learner"],
                           max_concurrency=2, max_restarts=0)
    self.actors = [self._create(ray_roles.ActorRole, ACTOR_NAME % i, options["actor"],
                                max_concurrency=2, max_restarts=self.max_actor_restarts)
                   for i in range(self.num_actors)]
    learner_ref = learner.run.remote(self.replay_address, self.root_dir, self.env_name,
                                     self.total_steps, self.seed)
    pending = {self._submit(i): (i, "run") for i in range(self.num_actors)}
    roles = [(learner, "The learner", options["learner"])] + [
        (actor, "Actor %d" % i, options["actor"]) for i, actor in enumerate(self.actors)]
    sent = []   # the stop requests sent to the learner: False (stop), True (hurry)

    def forward_stop():
      """Asks the learner to stop after a stop request or a failure, and to hurry after a
      second signal (each once); its Ray actor takes the call even before its loop started."""
      for hurry in (False, True):
        wanted = stop.requested or self.failure is not None
        if wanted and (not hurry or getattr(stop, "hurry", False)) and hurry not in sent:
          learner.request_stop.remote(hurry=hurry)
          sent.append(hurry)

    roles.append((replay, "The replay server", options["replay"]))
    places = [self._get(handle.where.remote(), what, opts, deadline, on_wait=forward_stop)
              for handle, what, opts in roles]
    logging.info("Ape-X on Ray: replay %s (pid %d); learner on node %s (%s, pid %d); actors "
                 "on %s.", self.replay_address, places[-1]["pid"], places[0]["node_id"],
                 places[0]["ip"], places[0]["pid"],
                 ", ".join("%d: node %s (%s, pid %d)" % (i, p["node_id"], p["ip"], p["pid"])
                           for i, p in enumerate(places[1:-1])))
    while True:
      forward_stop()
      ready, _ = self.ray.wait([learner_ref] + list(pending), num_returns=1, timeout=_WAIT_S)
      if learner_ref in ready:
        break
      for ref in ready:
        self._actor_ended(ref, pending.pop(ref), pending)
    result = self._learner_result(learner_ref, places[0])
    # The learner's own section (from its result) and the replay's and actors'.
    result.extras.setdefault("process_operative_configs", {}).update(
        self._operative_configs(replay))
    self._stop_actors(pending, grace_s)
    if self.failure is not None:
      raise self.failure
    result.extras["actor_restarts"] = self.restarts
    return result

  def _operative_configs(self, replay, timeout_s=_CONFIGS_TIMEOUT_S):
    """{process: its operative gin config} of the replay and the actors, asked all at once
    and waited for `timeout_s` in all (a stop is not held up by an actor that is gone)."""
    refs = {name: role.operative_config.remote() for name, role in [("replay", replay)] + [
        ("actor_%d" % i, actor) for i, actor in enumerate(self.actors)]}
    self.ray.wait(list(refs.values()), num_returns=len(refs), timeout=timeout_s)
    configs = {}
    for name, ref in refs.items():
      try:   # every process's bindings, for the run's operative_config.gin
        configs[name] = self.ray.get(ref, timeout=0.1)
      except Exception as e:  # pylint: disable=broad-except  (the run's result matters more)
        logging.warning("The operative config of %s could not be read: %s", name,
                        _first_line(e) if str(e).strip() else type(e).__name__)
    return configs

  def _stopped_before_the_learner(self):
    """The result of a run stopped before its learner existed: the agent step of the
    latest checkpoint, if any (nothing was trained, nothing is saved)."""
    logging.info("Stopped before the learner started: nothing to save.")
    return cadence.RunResult(
        agent_steps=checkpointing.latest_step(os.path.join(self.root_dir, "train")), updates=0,
        episodes=0, average_return=float("nan"), reason="signal",
        extras={"actor_restarts": 0},
        policy_dir=cadence.newest_version(harness.export_dir(self.root_dir, self.env_name)))

  def _actor_ended(self, ref, entry, pending):
    """A call to an actor returned or failed. `entry`: (index, 'run' or 'probe').

    `run` returned: the actor ended by itself (the learner's `done`). `run` raised: run
    again (a restart). The actor's process died: a restart too; Ray starts a new process,
    which `where` probes until it answers (calls fail with ActorUnavailableError while Ray
    restarts it), then `run` is called again. ActorDiedError on a probe: Ray gave up."""
    index, kind = entry
    exceptions = self.ray.exceptions
    try:
      outcome = self.ray.get(ref)
    except exceptions.RayTaskError as e:
      cause = _cause(self.ray, e)
      if isinstance(cause, errors.UserError):
        self.failure = cause
      elif self._count_restart(index, "failed (%s)" % _first_line(cause)):
        pending[self._submit(index)] = (index, "run")
      return
    except exceptions.RayActorError as e:
      if kind == "run" and not self._count_restart(index, "died (%s)" % _first_line(e)):
        return
      if kind == "probe" and isinstance(e, exceptions.ActorDiedError):
        self.failure = launcher.ActorFailedError(
            "Actor %d is dead and Ray does not restart it: %s" % (index, _first_line(e)))
        return
      if kind == "probe":
        time.sleep(_WAIT_S / 2)    # still restarting: probe again
      pending[self.actors[index].where.remote()] = (index, "probe")
      return
    if kind == "probe":
      logging.info("Actor %d runs again on node %s (pid %d).", index, outcome["node_id"],
                   outcome["pid"])
      pending[self._submit(index)] = (index, "run")
    else:
      logging.info("Actor %d stopped (%s).", index, outcome.get("reason"))

  def _count_restart(self, index, why):
    """Counts a restart of actor `index`; False (and the run's failure set) past the limit."""
    if self.restarts >= self.max_actor_restarts:
      self.failure = launcher.ActorFailedError(
          "Actor %d %s and the restart limit (%d) is reached." % (
              index, why, self.max_actor_restarts))
      logging.error("%s", self.failure)
      return False
    self.restarts += 1
    self.starts[index] += 1
    logging.warning("Actor %d %s; running it again (restart %d of at most %d).", index, why,
                    self.restarts, self.max_actor_restarts)
    return True

  def _learner_result(self, learner_ref, place):
    try:
      return self.ray.get(learner_ref)
    except self.ray.exceptions.RayTaskError as e:
      raise _cause(self.ray, e) from None
    except self.ray.exceptions.RayActorError as e:
      raise LearnerDiedError(
          "The learner (Ray actor %s on node %s, %s) died: %s Its checkpoints are in %s: run "
          "the same command again to resume." % (
              LEARNER_NAME, place["node_id"], place["ip"], _first_line(e),
              os.path.join(self.root_dir, "train"))) from None

  def _stop_actors(self, pending, grace_s):
    """Asks the actors still running to stop; waits up to `grace_s` for them."""
    for actor in self.actors:
      actor.request_stop.remote()
    if pending:
      self.ray.wait(list(pending), num_returns=len(pending), timeout=float(grace_s))

  def kill_all(self):
    """Kills every Ray actor this run started (their processes; the replay's port frees)."""
    for handle in self.handles:
      try:
        self.ray.kill(handle, no_restart=True)
      except Exception as e:  # pylint: disable=broad-except  (already gone, Ray shut down)
        logging.info("ray.kill: %s", e)
    if self.handles:
      logging.info("Killed the run's %d Ray actors.", len(self.handles))
    self.handles = []
