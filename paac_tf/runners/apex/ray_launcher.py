"""Ape-X on a Ray cluster: the replay server, the learner and the actors as Ray actors.

`python -m paac_tf.train --gin_file=apex_cartpole.gin
--gin_bindings='train_eval.launcher="ray"'` reaches `run_ray` through `train_eval`
(`train_eval.ray_address`: None starts a Ray on this machine for the run; 'auto' or
'HOST:6379' joins the cluster that this machine is a node of). It
  1. connects to Ray in the namespace "paac_tf:<root_dir>" (a second run in the same
     root_dir on the same cluster is refused: the actors' names are taken);
  2. starts the replay server as a Ray actor (`ray_roles.ReplayRole`, named
     `apex_replay`), which reports its address: its node's IP as Ray knows it and the port
     it bound (`replay_port`, or a free one);
  3. starts the learner (`apex_learner`) and N actors (`apex_actor_I`), each a Ray actor
     with the run's gin configuration, and logs the node of each;
  4. watches them: an actor whose process dies is restarted by Ray (`max_restarts` =
     `max_actor_restarts`) and its loop entered again (with a new seed); one that raises is
     run again; past `max_actor_restarts` in all, or on an actor's UserError (a bad
     configuration), the run stops with an error. SIGINT/SIGTERM asks the learner to stop
     (it saves a checkpoint and exports, as in the local launcher), from any moment on:
     during `ray.init` and the roles' start too (before the learner exists, the run ends
     with nothing to save);
  5. once the learner returns or fails: asks the actors to stop, waits up to
     `shutdown_grace_s` for them, then kills every Ray actor it started (`ray.kill`, in a
     `finally`) and disconnects; a Ray it started stops with it.

Signals: this command takes SIGINT and SIGTERM (its own, or its process group's: a
terminal's Ctrl-C, `docker stop`, Kubernetes, Slurm) as a stop request (`_RayOwner`). A
Ray started for the run has its processes (GCS, raylet, agents) in this command's process
group; they start with both signals blocked, so that they keep running until the learner
has saved, and `ray.shutdown` ends them (SIGKILL after 1 s each: ~4 s more than an
unblocked shutdown). Ray's workers run in process groups of their own.

Placement (`run_ray` bindings): by default learner and replay run on the node of this
command (where root_dir is) and the actors are spread over the cluster (SPREAD). Each
role's Ray actor options (num_cpus, resources, scheduling_strategy, ...) can be set, e.g.
a custom resource that only the learner's node offers ("apex_learner") and one that only
the actor nodes offer ("apex_actor"); see docs/apex.md#run-on-a-cluster.

Outputs are the local launcher's: root_dir/train (summaries, checkpoints), policies/,
actors/actor_I (actor summaries), operative_config.gin; each written by the node that runs
the role, under the same path (a shared file system, or the learner's node for train/ and
policies/). Worker logs go where Ray puts them (forwarded to this command's terminal).
The replay is not checkpointed: a rerun in the same root_dir resumes the learner from its
checkpoint and refills an empty replay.
"""
import logging as logging_lib
import os
import socket
import threading
import time

from absl import logging
import gin

from paac_tf import errors
from paac_tf.algorithms import registry
from paac_tf.runners.apex import launcher
from paac_tf.runners.apex import ray_roles
from paac_tf.runtime import cadence
from paac_tf.runtime import checkpointing
from paac_tf.runtime import config
from paac_tf.runtime import signals

LEARNER_NAME = "apex_learner"
REPLAY_NAME = "apex_replay"
ACTOR_NAME = "apex_actor_%d"
_DEFAULT_OPTIONS = {
    "learner": {"num_cpus": 1},
    "replay": {"num_cpus": 0},
    "actor": {"num_cpus": 1, "scheduling_strategy": "SPREAD"},
}
_WAIT_S = 1.0   # the watch loop's poll interval
_NO_FAILURE_HANDLER = "RAY_DISABLE_FAILURE_SIGNAL_HANDLER"
_CONFIGS_TIMEOUT_S = 10.0   # for the operative configs of the replay and the actors, in all


class LearnerDiedError(errors.UserError):
  """The learner's Ray actor died (its node or process was lost, or it was killed)."""


def namespace_for(root_dir):
  """The Ray namespace of the run in `root_dir` (its actors' names live there)."""
  return "paac_tf:" + os.path.abspath(root_dir)


def _import_ray(local):
  """Imports Ray; for a Ray started for this run (`local`), first sets up this process's
  environment, which Ray's processes inherit: Ray's single-machine mode (as on macOS: its
  addresses on loopback, not on the network; read when Ray is imported) and TensorFlow's
  C++ log level of the one-machine launcher.

  This process's own Ray driver gets no C++ failure signal handler (RAY_DISABLE_FAILURE_
  SIGNAL_HANDLER, read when Ray is imported; Ray's processes do not inherit it): ray.init
  would install one on SIGTERM, and after a SIGTERM that it caught (one that comes during
  ray.init, before this process's stop handler is put back) it prints a stack dump and
  ray.shutdown aborts the process (status 134, measured)."""
  if local:
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  added = _NO_FAILURE_HANDLER not in os.environ
  if added:
    os.environ[_NO_FAILURE_HANDLER] = "1"
  try:
    import ray  # pylint: disable=import-outside-toplevel  (lazy: Ray is an optional extra)
  except ImportError:
    raise errors.UserError(
        "train_eval.launcher = 'ray' needs Ray: pip install -e '.[ray]' (on every node of "
        "the cluster).") from None
  finally:
    if added:
      os.environ.pop(_NO_FAILURE_HANDLER, None)
  return ray


def _role_options(learner_options=None, replay_options=None, actor_options=None):
  """{role: Ray actor options}: each role's defaults updated with the given dict."""
  given = {"learner": learner_options, "replay": replay_options, "actor": actor_options}
  out = {}
  for role, defaults in _DEFAULT_OPTIONS.items():
    options = given[role] or {}
    if not isinstance(options, dict):
      raise errors.UserError("run_ray.%s_options must be a dict of Ray actor options, got %r."
                             % (role, options))
    out[role] = {**defaults, **options}
  return out


def _node_id(ray, learner_node):
  """The node id that `learner_node` names: 'driver' (this command's node) or an IP."""
  if learner_node == "driver":
    return ray.get_runtime_context().get_node_id()
  nodes = [n for n in ray.nodes() if n.get("Alive")]
  for node in nodes:
    if node["NodeManagerAddress"] == learner_node:
      return node["NodeID"]
  raise errors.UserError("run_ray.learner_node = %r: no live node of the cluster has this IP "
                         "(nodes: %s)." % (learner_node, ", ".join(
                             sorted(n["NodeManagerAddress"] for n in nodes)) or "none"))


def _pin(ray, options, learner_node):
  """Learner and replay on `learner_node`'s node unless their options place them."""
  if learner_node is None:
    return
  from ray.util import scheduling_strategies  # pylint: disable=import-outside-toplevel  (as Ray)
  strategy = scheduling_strategies.NodeAffinitySchedulingStrategy(
      node_id=_node_id(ray, learner_node), soft=False)
  for role in ("learner", "replay"):
    options[role].setdefault("scheduling_strategy", strategy)


class _NoSigtermNotice(logging_lib.Filter):
  """Drops ray.init's notice that it set no SIGTERM handler off the main thread (this
  process has its own: the stop request)."""

  def filter(self, record):
    return "SIGTERM handler is not set" not in record.getMessage()


class _RayOwner:
  """`ray.init` on a thread of its own, which lives until `release()`.

  - The processes of a Ray started for the run are forked by this thread, which blocks
    SIGINT and SIGTERM (`signals.children_shielded`): they inherit the blocked signals, so
    a signal to the process group does not kill them while the learner saves.
  - Off the main thread, ray.init leaves this process's SIGTERM handler alone (on the main
    thread it installs one that exits at once, even in the middle of ray.init).
  - Linux sends Ray's fate-sharing signal (PR_SET_PDEATHSIG) when the *thread* that forked
    a process ends: the thread stays until Ray is shut down.
  The main thread waits in short steps, so that its signal handlers run meanwhile.
  """

  def __init__(self, ray, kwargs):
    self._ray, self._kwargs = ray, kwargs
    self._ready = threading.Event()
    self._released = threading.Event()
    self.error = None
    self._thread = threading.Thread(target=self._main, name="ray-owner", daemon=True)

  def _main(self):
    notice = _NoSigtermNotice()
    ray_logger = logging_lib.getLogger("ray._private.worker")
    ray_logger.addFilter(notice)
    try:
      with signals.children_shielded():
        self._ray.init(**self._kwargs)
    except BaseException as e:  # pylint: disable=broad-except  (raised in the main thread)
      self.error = e
    finally:
      ray_logger.removeFilter(notice)
      self._ready.set()
    if self.error is None:
      self._released.wait()

  def start(self):
    """Runs ray.init; returns once it returned, raises what it raised."""
    self._thread.start()
    while not self._ready.wait(0.5):
      pass
    if self.error is not None:
      raise self.error

  def release(self):
    """Ends the thread (after ray.shutdown)."""
    self._released.set()
    self._thread.join(timeout=10.0)


def _connect(ray, address, root_dir, options, num_actors, stop):
  """ray.init: joins the cluster at `address`, or starts a Ray on this machine (None):
  on loopback, without dashboard, with a logical CPU for every role that asks one.
  Returns the `_RayOwner` to release after ray.shutdown."""
  kwargs = {"namespace": namespace_for(root_dir)}
  level = os.environ.get("TF_CPP_MIN_LOG_LEVEL")
  if level is not None:
    # The run's Ray workers start with this command's TensorFlow log level (quiet unless
    # asked for, `startup.quiet_tensorflow`), also on a cluster started elsewhere.
    kwargs["runtime_env"] = {"env_vars": {"TF_CPP_MIN_LOG_LEVEL": level}}
  if address is None:
    needed = (options["learner"].get("num_cpus", 0) + options["replay"].get("num_cpus", 0) +
              num_actors * options["actor"].get("num_cpus", 0))
    kwargs.update(address="local", include_dashboard=False, _node_ip_address="127.0.0.1",
                  num_cpus=max(os.cpu_count() or 1, int(needed + 0.999)))
  else:
    _check_reachable(address)
    kwargs["address"] = address
  owner = _RayOwner(ray, kwargs)
  try:
    owner.start()
  except ConnectionError as e:
    raise errors.UserError("Cannot connect to the Ray cluster at %r (train_eval.ray_address): "
                           "%s" % (address, errors.user_message(e))) from None
  # In case Ray was imported before `_import_ray` (its driver then put a handler of its own,
  # a stack dump, on SIGTERM): ours again.
  stop.reinstall()
  return owner


def _check_reachable(address, timeout_s=10.0):
  """A UserError unless HOST:PORT accepts connections (ray.init would retry forever).
  A loopback HOST is replaced by this machine's address first, as Ray does."""
  if address == "auto" or "://" in address or ":" not in address:
    return                      # found by Ray, or Ray Client: ray.init reports failures
  from ray._private import services  # pylint: disable=import-outside-toplevel  (as Ray)
  try:
    address = services.canonicalize_bootstrap_address(address) or address
  except Exception:  # pylint: disable=broad-except  (a malformed address: Ray says why)
    return
  host, port = address.rsplit(":", 1)
  try:
    socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
  except (OSError, ValueError) as e:
    raise errors.UserError(
        "No Ray cluster answers at %s (train_eval.ray_address): %s. Start one with `ray start "
        "--head` (docs/apex.md#run-on-a-cluster), or leave ray_address unset for a Ray on "
        "this machine." % (address, e)) from None


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


@gin.configurable(module="apex", denylist=["algorithm"])
def run_ray(root_dir, env_name, total_steps, seed=0, address=None, *, algorithm, num_actors=None,
            learner_node="driver", learner_options=None, replay_options=None,
            actor_options=None, replay_port=None, max_actor_restarts=20,
            shutdown_grace_s=10.0, start_timeout_s=300.0):
  """Trains Ape-X on a Ray cluster (see the module docstring); returns the learner's result.

  Args:
    algorithm: the `family.ReplayAlgorithm` trained.
    address: the cluster ('auto', 'HOST:6379'), or None to start a Ray on this machine
      (given by `train_eval.ray_address`).
    num_actors: N actors (None: `run_local.num_actors`, which the configs set).
    learner_node: where learner and replay run: 'driver' (the node of this command), a
      node's IP, or None (placed by their options alone). Ignored for a role whose
      options set a scheduling_strategy.
    learner_options, replay_options, actor_options: Ray actor options of each role, over
      the defaults {'num_cpus': 1}, {'num_cpus': 0} and {'num_cpus': 1,
      'scheduling_strategy': 'SPREAD'}; e.g. {'resources': {'apex_actor': 1}}.
    replay_port: the port the replay server binds on its node (None: a free one).
    max_actor_restarts: actor restarts tolerated over the run before it fails.
    shutdown_grace_s: seconds the actors get to stop before they are killed.
    start_timeout_s: seconds to wait for every role to start (placement included).
  """
  ray = _import_ray(local=address is None)
  if num_actors is None:
    num_actors = config.configured_or_default(launcher.run_local, "num_actors")
  if int(num_actors) < 1:
    raise errors.UserError("run_ray.num_actors must be >= 1, got %r." % (num_actors,))
  options = _role_options(learner_options, replay_options, actor_options)
  root_dir = os.path.abspath(root_dir)
  config_text = gin.config_str()
  with signals.stop_on_signals() as stop:
    owner = _connect(ray, address, root_dir, options, int(num_actors), stop)
    run = _RayRun(ray, config_text, registry.reference(algorithm), root_dir, env_name,
                  int(total_steps), int(seed), int(num_actors), max_actor_restarts,
                  start_timeout_s)
    try:
      _pin(ray, options, learner_node)
      return run.run(options, replay_port, stop, shutdown_grace_s)
    finally:
      run.kill_all()
      ray.shutdown()
      owner.release()


class _RayRun:
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
        env_steps=checkpointing.latest_step(os.path.join(self.root_dir, "train")), updates=0,
        episodes=0, average_return=float("nan"), reason="signal",
        extras={"actor_restarts": 0})

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
