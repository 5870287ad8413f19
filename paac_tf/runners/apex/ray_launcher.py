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
terminal's Ctrl-C, `docker stop`, Kubernetes, Slurm) as a stop request
(`ray_connection.RayOwner`). A Ray started for the run has its processes (GCS, raylet,
agents) in this command's process group; they start with both signals blocked, so that
they keep running until the learner has saved, and `ray.shutdown` ends them (SIGKILL
after 1 s each: ~4 s more than an unblocked shutdown). Ray's workers run in process groups
of their own.

Placement (`run_ray` bindings): by default learner and replay run on the node of this
command (where root_dir is) and the actors are spread over the cluster (SPREAD). Each
role's Ray actor options (num_cpus, resources, scheduling_strategy, ...) can be set, e.g.
a custom resource that only the learner's node offers ("apex_learner") and one that only
the actor nodes offer ("apex_actor"); see docs/apex-hosts.md#run-on-a-cluster.

Outputs are the local launcher's: root_dir/train (summaries, checkpoints), policies/,
actors/actor_I (actor summaries), operative_config.gin; each written by the node that runs
the role, under the same path (a shared file system, or the learner's node for train/ and
policies/). Worker logs go where Ray puts them (forwarded to this command's terminal).
The replay is not checkpointed: a rerun in the same root_dir resumes the learner from its
checkpoint and refills an empty replay.

This module holds `run_ray` and the roles' Ray actor options (defaults, placement);
`ray_connection` imports Ray and connects to it (step 1, and the signals), `ray_run` starts,
watches, stops and kills the run's Ray actors (steps 2 to 5).
"""
import os

import gin

from paac_tf import errors
from paac_tf.algorithms import registry
from paac_tf.runners.apex import launcher
from paac_tf.runners.apex import ray_connection
from paac_tf.runners.apex import ray_run
from paac_tf.bookkeeping import config
from paac_tf.bookkeeping import signals

_DEFAULT_OPTIONS = {
    "learner": {"num_cpus": 1},
    "replay": {"num_cpus": 0},
    "actor": {"num_cpus": 1, "scheduling_strategy": "SPREAD"},
}


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


# The caller passes the run's seed and cluster: bindings of them here were never read.
config.removed(("run_ray",), "seed", "the run's seed is train_eval.seed")
config.removed(("run_ray",), "address", "the Ray cluster is train_eval.ray_address")


@gin.configurable(module="apex", denylist=["algorithm", "seed", "address"])
def run_ray(root_dir, env_name, total_steps, seed=0, address=None, *, algorithm, num_actors=None,
            learner_node="driver", learner_options=None, replay_options=None,
            actor_options=None, replay_port=None, max_actor_restarts=20,
            shutdown_grace_s=10.0, start_timeout_s=300.0):
  """Trains Ape-X on a Ray cluster (see the module docstring); returns the learner's result.

  Args:
    seed: the run's seed (`train_eval.seed`, which the caller passes; not a setting of its
      own).
    algorithm: the `ReplayAlgorithm` (algorithms/replay/algorithm.py) trained.
    address: the cluster ('auto', 'HOST:6379'), or None to start a Ray on this machine
      (`train_eval.ray_address`, which the caller passes; not a setting of its own).
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
  ray = ray_connection.import_ray(local=address is None)
  if num_actors is None:
    num_actors = config.configured_or_default(launcher.run_local, "num_actors")
  if int(num_actors) < 1:
    raise errors.UserError("run_ray.num_actors must be >= 1, got %r." % (num_actors,))
  options = _role_options(learner_options, replay_options, actor_options)
  root_dir = os.path.abspath(root_dir)
  config_text = gin.config_str()
  with signals.stop_on_signals() as stop:
    owner = ray_connection.connect(ray, address, root_dir, options, int(num_actors), stop)
    run = ray_run.RayRun(ray, config_text, registry.reference(algorithm), root_dir, env_name,
                         int(total_steps), int(seed), int(num_actors), max_actor_restarts,
                         start_timeout_s)
    try:
      _pin(ray, options, learner_node)
      return run.run(options, replay_port, stop, shutdown_grace_s)
    finally:
      run.kill_all()
      ray.shutdown()
      owner.release()
