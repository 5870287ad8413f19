"""The Ape-X processes as Ray actors: the replay server, the learner and an actor.

Plain classes; `ray_run.py` wraps them with `ray.remote` and places them on the cluster
(with the options `ray_launcher.py` gives each role). Each runs in a Ray worker process of
its own (on any node), parses the run's gin configuration (sent as text by the launcher)
and then runs the same code as the one-machine launcher's processes:
`replay.start_server`, `learner.apex_learner`, `actor.apex_actor`. Learner and actors are
threaded Ray actors (max_concurrency 2): `run` holds one thread while `request_stop` and
`where` answer on the other.

Ray is imported only inside methods (the module is imported by Ray's workers, where it is
installed; the package itself works without it).
"""
import os
import threading

from absl import logging
import gin

from paac_tf.algorithms import registry
from paac_tf.envs import environment  # noqa: F401  (registers `make_environment`)
from paac_tf.runners.apex import actor as actor_lib
from paac_tf.runners.apex import learner as learner_lib
from paac_tf.runners.apex import replay as replay_lib


class _Stop:
  """A stop request set by the launcher (`request_stop`), read by the training loops;
  `hurry`: the command got a second signal (the learner skips its final export)."""

  def __init__(self):
    self._event = threading.Event()
    self.hurry = False

  @property
  def requested(self):
    return self._event.is_set()

  def set(self, hurry=False):
    self.hurry = self.hurry or bool(hurry)
    self._event.set()


def _set_up(config_text, algorithm):
  """Logging for Ray's log forwarding, and the run's gin configuration in this process;
  returns the run's algorithm (a `registry.reference` name).

  The launcher's process registered every configurable of the package and checked the
  configuration; this one knows those that the Ape-X processes use (the modules imported
  above and theirs, and the algorithm's), so bindings of others (PAAC's, train_eval's) are
  skipped.
  """
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  logging.set_verbosity(logging.INFO)
  found = registry.get(algorithm)   # its configurables, before the configuration is parsed
  gin.clear_config()
  gin.parse_config(config_text, skip_unknown=True)
  return found


def where():
  """{'node_id', 'ip', 'pid'} of this Ray worker."""
  import ray  # pylint: disable=import-outside-toplevel  (lazy: Ray is an optional extra)
  return {"node_id": ray.get_runtime_context().get_node_id(),
          "ip": ray.util.get_node_ip_address(), "pid": os.getpid()}


def host_port(ip, port):
  """HOST:PORT for a gRPC client, IPv6 addresses in brackets."""
  return ("[%s]:%d" if ":" in ip else "%s:%d") % (ip, int(port))


class ReplayRole:
  """The Reverb server (`replay.start_server`)."""

  def __init__(self, config_text, algorithm):
    _set_up(config_text, algorithm)
    self._server = None

  def start(self, env_name, port=None):
    """Starts the server on `port` (None: a free one); returns the HOST:PORT that learner
    and actors connect to: this node's IP as Ray knows it."""
    self._server = replay_lib.start_server(replay_lib.layout_for(env_name), port=port)
    return host_port(where()["ip"], self._server.port)

  def operative_config(self):
    """Every binding this process used (for the run's operative_config.gin)."""
    return gin.operative_config_str()

  def where(self):
    return where()


class LearnerRole:
  """The learner (`learner.apex_learner`) with a stop request the launcher can set."""

  def __init__(self, config_text, algorithm):
    self._algorithm = _set_up(config_text, algorithm)
    self._stop = _Stop()

  def run(self, replay_address, root_dir, env_name, total_steps, seed):
    """Trains to the end; the result has the learner's operative gin configuration too
    (`process_operative_configs`)."""
    result = learner_lib.apex_learner(replay_address, root_dir, env_name, total_steps,
                                      algorithm=self._algorithm, seed=seed, stop=self._stop)
    result.extras["process_operative_configs"] = {"learner": gin.operative_config_str()}
    return result

  def request_stop(self, hurry=False):
    """Finish the current update, save a checkpoint, export (unless `hurry`), return (as on
    SIGINT, and a second SIGINT)."""
    self._stop.set(hurry)

  def where(self):
    return where()


class ActorRole:
  """One actor (`actor.apex_actor`). Ray restarts a crashed one (a new process, this
  constructor again); the launcher then calls `run` again with the next `start`."""

  def __init__(self, config_text, algorithm):
    self._algorithm = _set_up(config_text, algorithm)
    self._stop = _Stop()

  def operative_config(self):
    """Every binding this process used (for the run's operative_config.gin)."""
    return gin.operative_config_str()

  def run(self, replay_address, actor_index, num_actors, env_name, root_dir, seed, start):
    seed = actor_lib.actor_seed(seed, actor_index, start=start)
    return actor_lib.apex_actor(replay_address, actor_index, num_actors, env_name,
                                algorithm=self._algorithm, root_dir=root_dir, seed=seed,
                                stop=self._stop)

  def request_stop(self):
    self._stop.set()

  def where(self):
    return where()
