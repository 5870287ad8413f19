"""Ape-X on one machine: replay server, N actor processes and the learner, one command.

`python -m paac_tf.train --gin_file=apex_atari.gin` reaches `run_local` through
`train_eval`. It
  1. writes the whole gin configuration to root_dir/apex_config.gin (actors parse it);
  2. starts the Reverb server in this process (`replay.start_server`; the learner then
     samples it without gRPC, which Reverb notes on stderr: "Reverb's line" in replay.py),
     restoring root_dir/replay_checkpoint (`checkpoint_replay`, on by default);
  3. starts N actors, `python -m paac_tf.commands.apex_actor ...` subprocesses connected to
     127.0.0.1:PORT, logging to root_dir/actors/actor_I.log; a monitor thread restarts an
     actor that dies (killed, or a non-zero exit status; at most `max_actor_restarts`
     restarts in all, then the run fails with the last lines of its log);
  4. runs the learner in this process until `total_steps` agent steps (summed over all
     actors, as the actors report them) or a stop request (SIGINT/SIGTERM);
  5. shuts down: actors get SIGTERM (SIGKILL after `shutdown_grace_s`), the server
     stops (its port is freed). Actors run in sessions of their own: a signal to the
     launcher's process group (the terminal's Ctrl-C, a container or job stop) reaches the
     launcher alone, which decides; they exit by themselves if the launcher disappears, and
     none is restarted once a stop was requested.

The same pieces run on several hosts as programs of their own: `python -m
paac_tf.commands.apex_replay`, `python -m paac_tf.commands.apex_actor` and `python -m
paac_tf.commands.apex_learner`.
"""
import os
import subprocess
import sys
import threading
import time

from absl import logging
import gin
import reverb

from paac_tf import errors
from paac_tf.algorithms import registry
from paac_tf.runners.apex import actor as actor_lib
from paac_tf.runners.apex import learner as learner_lib
from paac_tf.runners.apex import replay as replay_lib
from paac_tf.bookkeeping import checks
from paac_tf.bookkeeping import config
from paac_tf.bookkeeping import signals

CONFIG_FILE = "apex_config.gin"
REPLAY_CHECKPOINT_DIR = "replay_checkpoint"


class ActorFailedError(errors.UserError):
  """Actors keep dying; the run stops."""


class ActorProcesses:
  """Starts, watches, restarts and stops the actor subprocesses."""

  def __init__(self, root_dir, replay_address, num_actors, config_file, seed, algorithm,
               max_restarts=20, poll_s=1.0, extra_args=(), env=None, stop=None):
    self.root_dir = root_dir
    self.replay_address = replay_address
    self.num_actors = int(num_actors)
    self.config_file = config_file
    self.seed = int(seed)
    self.algorithm = registry.reference(algorithm)
    self.max_restarts = int(max_restarts)
    self.poll_s = float(poll_s)
    self.extra_args = list(extra_args)
    self.env = env
    self.stop_request = stop   # once requested, no actor is restarted
    self.log_dir = os.path.join(root_dir, "actors")
    os.makedirs(self.log_dir, exist_ok=True)
    self.processes = [None] * self.num_actors
    self.finished = [False] * self.num_actors
    self.starts = [0] * self.num_actors
    self.restarts = 0
    self.failure = None
    self._lock = threading.Lock()
    self._stopping = threading.Event()
    self._thread = None

  def log_path(self, index):
    return os.path.join(self.log_dir, "actor_%d.log" % index)

  def _command(self, index):
    seed = actor_lib.actor_seed(self.seed, index, start=self.starts[index])
    return [sys.executable, "-m", "paac_tf.commands.apex_actor",
            "--replay_address=%s" % self.replay_address, "--actor_index=%d" % index,
            "--num_actors=%d" % self.num_actors, "--gin_file=%s" % self.config_file,
            "--root_dir=%s" % self.root_dir, "--seed=%d" % seed,
            "--algorithm=%s" % self.algorithm,
            "--parent_pid=%d" % os.getpid()] + self.extra_args

  def _start(self, index):
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env.update(self.env or {})
    with open(self.log_path(index), "ab") as log:
      log.write(b"\n=== start %d of actor %d at %s ===\n" % (
          self.starts[index] + 1, index, time.strftime("%Y-%m-%d %H:%M:%S").encode()))
      log.flush()
      # A session of its own: the signals sent to the launcher's process group are the
      # launcher's to decide on (it stops its actors with SIGTERM).
      process = subprocess.Popen(self._command(index), stdin=subprocess.DEVNULL, stdout=log,
                                 stderr=subprocess.STDOUT, env=env, cwd=os.getcwd(),
                                 start_new_session=True)
    self.processes[index] = process
    self.starts[index] += 1
    logging.info("Started actor %d (pid %d), log %s", index, process.pid, self.log_path(index))

  def start(self):
    for i in range(self.num_actors):
      self._start(i)
    self._thread = threading.Thread(target=self._watch, name="apex-actor-monitor", daemon=True)
    self._thread.start()

  def _tail(self, index, lines=12):
    try:
      with open(self.log_path(index), "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - 8192))
        return "\n".join(f.read().decode("utf-8", "replace").splitlines()[-lines:])
    except OSError:
      return ""

  def _watch(self):
    while not self._stopping.wait(self.poll_s):
      with self._lock:
        if self._stopping.is_set() or getattr(self.stop_request, "requested", False):
          return
        for i, process in enumerate(self.processes):
          code = process.poll()
          if code is None or code == 0 or self.finished[i]:
            # Running, or done by itself (exit status 0: the learner published `done`,
            # or it was told to stop): nothing to restart.
            self.finished[i] = self.finished[i] or code == 0
            continue
          if self.restarts >= self.max_restarts:
            self.failure = ("Actor %d exited with status %s and the restart limit (%d) is "
                            "reached; last lines of %s:\n%s" % (
                                i, code, self.max_restarts, self.log_path(i), self._tail(i)))
            logging.error("%s", self.failure)
            return
          self.restarts += 1
          logging.warning("Actor %d (pid %d) exited with status %s; restarting it (restart %d "
                          "of at most %d). Log: %s", i, process.pid, code, self.restarts,
                          self.max_restarts, self.log_path(i))
          self._start(i)

  def check(self, *_):
    """Raises if the monitor gave up on an actor (called from the learner's loop)."""
    if self.failure:
      raise ActorFailedError(self.failure)

  def pids(self):
    return [p.pid for p in self.processes if p is not None]

  def stop(self, grace_s=10.0):
    """SIGTERM to every actor, SIGKILL to those still alive after `grace_s`; reaps all."""
    with self._lock:
      self._stopping.set()
    if self._thread is not None:
      self._thread.join(timeout=5.0)
    alive = [p for p in self.processes if p is not None and p.poll() is None]
    for p in alive:
      try:
        p.terminate()
      except OSError:
        pass
    deadline = time.monotonic() + grace_s
    for p in alive:
      try:
        p.wait(timeout=max(0.1, deadline - time.monotonic()))
      except subprocess.TimeoutExpired:
        logging.warning("Actor pid %d did not stop in %.0f s; killing it.", p.pid, grace_s)
        p.kill()
        p.wait()


# The caller passes the run's seed: a binding of it here was never read.
config.removed(("run_local",), "seed", "the run's seed is train_eval.seed")


@checks.configurable(module="apex", denylist=["algorithm", "seed"])
def run_local(root_dir, env_name, total_steps, seed=0, *, algorithm, num_actors: checks.Count = 2,
              port: checks.allows(checks.optional(checks.integer(1, 65535))) = None,
              checkpoint_replay: checks.Bool = True,
              max_actor_restarts: checks.NonNegativeInt = 20,
              shutdown_grace_s: checks.NonNegative = 10.0):
  """Trains Ape-X on this machine (see the module docstring); returns the learner's result.

  Args:
    seed: the run's seed (`train_eval.seed`, which the caller passes; not a setting of its
      own); each actor's is derived from it (`actor.actor_seed`).
    algorithm: the `ReplayAlgorithm` (algorithms/replay/algorithm.py) trained.
    num_actors: N actor processes (each steps `apex_actor.num_envs` environments; the
      epsilon ladder spans all N * num_envs of them).
    port: the replay server's port (None: a free one).
    checkpoint_replay: restore the replay from root_dir/replay_checkpoint on start and
      checkpoint it at the end, after the actors stopped (the whole replay content; sizes
      and times per config measured in results/apex_capacity/README.md). On by default: a
      resumed run without it starts with an empty replay and waits for `learning_starts`
      new transitions, its learner training on fresh data only. A missing or unreadable
      checkpoint does not stop the run: the replay starts empty (`replay.start_server`).
    max_actor_restarts: actor restarts tolerated over the run before it fails.
    shutdown_grace_s: seconds actors get to exit after SIGTERM before SIGKILL.
  """
  if int(num_actors) < 1:
    raise errors.UserError("run_local.num_actors must be >= 1, got %r." % (num_actors,))
  root_dir = os.path.abspath(root_dir)
  config_file = os.path.join(root_dir, CONFIG_FILE)
  _write_config(config_file)
  with signals.stop_on_signals() as stop:   # installed first: a Ctrl-C during start-up counts
    server = actors = None
    stopped = []

    def shut_down():
      """Actors first (SIGTERM, then SIGKILL), then the replay server; idempotent."""
      if stopped:
        return
      stopped.append(True)
      if actors is not None:
        actors.stop(shutdown_grace_s)
      if server is not None:
        if checkpoint_replay:
          try:
            logging.info("Replay checkpoint: %s",
                         reverb.Client("127.0.0.1:%d" % server.port).checkpoint())
          except Exception as e:  # pylint: disable=broad-except
            logging.error("Replay checkpoint failed: %s", e)
        server.stop()
        logging.info("Replay server stopped.")

    try:
      layout = replay_lib.layout_for(env_name)
      checkpoint_dir = os.path.join(root_dir, REPLAY_CHECKPOINT_DIR) if checkpoint_replay else None
      server = replay_lib.start_server(layout, port=port, checkpoint_dir=checkpoint_dir)
      address = "127.0.0.1:%d" % server.port
      actors = ActorProcesses(root_dir, address, num_actors, config_file, seed, algorithm,
                              max_restarts=max_actor_restarts, stop=stop)
      actors.start()
      logging.info("Ape-X: replay on port %d, %d actors (pids %s), learner in this process.",
                   server.port, num_actors, actors.pids())
      result = learner_lib.apex_learner(address, root_dir, env_name, total_steps,
                                        algorithm=algorithm, seed=seed, stop=stop,
                                        health_check=actors.check, on_finished=shut_down)
      result.extras["actor_restarts"] = actors.restarts
      return result
    finally:
      shut_down()


def _write_config(path):
  """Writes every gin binding of this process, for the actor processes to parse."""
  text = gin.config_str()
  tmp = path + ".tmp"
  with open(tmp, "w") as f:
    f.write("# Written by paac_tf.runners.apex.launcher: the configuration the actors run with.\n")
    f.write(text)
  os.replace(tmp, path)
