"""PAAC's environment layout: n_e environments stepped by n_w worker processes, batched.

`ParallelBatchedPyEnvironment(env_fns, num_workers)` builds n_e = len(env_fns)
non-batched TF-Agents PyEnvironments (one per env_fn) split over `num_workers` processes;
each worker owns n_e / n_w consecutive environments and steps them in turn. The whole
is ONE batched PyEnvironment (`batch_size == n_e`) following the project's batched-env
contract (see `atari_vector.py`):

- each environment follows TF-Agents' auto-reset convention (an episode end is a LAST
  step carrying the true final observation, discount 0 if terminated, 1 if truncated;
  the next step of that environment is FIRST and ignores its action). The wrapped
  environments must implement it themselves (e.g. `handle_auto_reset=True`, as
  `GymnasiumPyEnvironment` does);
- rewards may be clipped to [-1, 1] for learning (`reward_clipping`), while
  `pop_finished_episodes()` reports raw returns of finished episodes;
- actions are discrete (a scalar integer spec: `send` takes [n_e] ints, the batch's
  `action_spec()` is int64 [minimum, maximum], `num_actions` their number) or continuous
  (a bounded float spec of any shape, e.g. a gymnasium `Box` through the adapter: `send`
  takes [n_e, *shape] floats, `action_spec()` is that spec in float32, and `num_actions`
  raises `batched.NoDiscreteActionsError`, an AttributeError and a ValueError).

Data path: observations, rewards, discounts, step types and actions live in one shared
memory block that workers read and write in place (actions: int64 [n_e] or float32
[n_e, *shape], following the action spec); the per-worker Pipe only carries
tiny commands ("step", "reset", ...) and acknowledgements. A step writes the actions,
sends "step" to every worker, then waits for all of them (`send()` / `recv()` expose the
two halves, so the caller can overlap work with the environments).

Processes: workers are started with the 'forkserver' method (or 'spawn'), never 'fork':
the parent has TensorFlow loaded. The fork server preloads this package's env modules
(which import TF-Agents, hence TensorFlow, once), so each worker starts in milliseconds
instead of importing TensorFlow itself. The caller's main module is run again in each
worker as multiprocessing does, except where that cannot work (`python -`, a script that
trains without `if __name__ == "__main__":`; `main_module.py`). The fork server and the
workers are started with SIGINT and SIGTERM blocked (`signals.children_shielded`) and the
workers ignore both: a signal to the whole process group (Ctrl-C in a terminal, a container
or job stop) reaches the parent alone, which decides and closes them. Workers are daemons
that exit when their pipe closes, so they never outlive the parent. A worker that raises or
dies surfaces in the parent as a `WorkerError` naming the worker and the original
exception, never as a hang: waits watch the process sentinels and have a timeout.
`close()`, an error, a KeyboardInterrupt inside a reset or step, garbage collection and
interpreter exit all shut the workers down.

`num_workers=0` steps the environments in the calling process (no subprocess, no
shared memory): for tests, debugging and environments too cheap to be worth a process.
What runs inside a worker (its commands, the step arrays' layout, its loop) is in
`worker_process.py`.
"""
import contextlib
import multiprocessing
import multiprocessing.connection
from multiprocessing import resource_tracker
import pickle
import signal
import time
import weakref
from multiprocessing import shared_memory

import numpy as np
from tf_agents.specs import array_spec
from tf_agents.trajectories import time_step as ts

from paac_tf.envs import batched
from paac_tf.envs import episode_stats
from paac_tf.envs import main_module
from paac_tf.envs import worker_process
from paac_tf.bookkeeping import signals

FIRST, MID, LAST = batched.FIRST, batched.MID, batched.LAST

# Modules the fork server imports once, so that forked workers find them (and
# TensorFlow, which TF-Agents imports) already loaded. '__main__' is multiprocessing's
# default preload. Missing modules are skipped by the fork server.
_FORKSERVER_PRELOAD = ("__main__", "paac_tf.envs.worker_pool", "paac_tf.envs.worker_process",
                       "paac_tf.envs.gym_adapter", "paac_tf.envs.atari_portable",
                       "paac_tf.envs.fork_server")   # last: see fork_server.py
_forkserver_preload_requested = False

_SHUTDOWN_GRACE_S = 5.0   # how long close() waits for workers to exit by themselves


class WorkerError(RuntimeError):
  """A worker process of a ParallelBatchedPyEnvironment raised, died or stopped answering."""


def _mp_context(start_method):
  """The multiprocessing context; asks the fork server to preload our env modules."""
  global _forkserver_preload_requested
  if start_method not in ("forkserver", "spawn"):
    raise ValueError("start_method must be 'forkserver' or 'spawn' (never 'fork': TensorFlow "
                     "is loaded in the parent), got %r." % (start_method,))
  ctx = multiprocessing.get_context(start_method)
  if start_method == "forkserver" and not _forkserver_preload_requested:
    # Takes effect only if the fork server is not running yet (it starts on first use).
    ctx.set_forkserver_preload(list(_FORKSERVER_PRELOAD))
    _forkserver_preload_requested = True
  return ctx


def _shutdown(processes, conns, shm_holder, grace_s):
  """Stops workers (politely, then SIGKILL: they ignore SIGTERM) and frees shared memory.

  A module-level function holding no reference to the environment object, so that it can
  serve as the `weakref.finalize` safety net (garbage collection, interpreter exit).
  """
  for conn, process in zip(conns, processes):
    if process.is_alive():
      try:
        conn.send(worker_process.CMD_CLOSE)
      except (OSError, ValueError):
        pass
  deadline = time.monotonic() + grace_s
  for process in processes:
    process.join(max(0.0, deadline - time.monotonic()))
  for process in processes:
    if process.is_alive():
      process.kill()
      process.join(1.0)
  for conn in conns:
    conn.close()
  while shm_holder:
    shm = shm_holder.pop()
    try:
      shm.close()
    except BufferError:
      pass   # views still referenced (finalizer at exit): the mapping dies with the process
    try:
      shm.unlink()
    except FileNotFoundError:
      pass


def _describe_exit(exitcode):
  if exitcode is None:
    return "is still running"
  if exitcode < 0:
    try:
      return "was killed by signal %s" % signal.Signals(-exitcode).name
    except ValueError:
      return "was killed by signal %d" % -exitcode
  return "exited with code %d" % exitcode


def batch_action_spec(action_spec):
  """The batch's per-environment action spec: int64 scalar for a scalar bounded integer spec,
  float32 for a bounded float one with finite bounds; anything else is a ValueError."""
  if isinstance(action_spec, array_spec.BoundedArraySpec):
    if batched.is_discrete_spec(action_spec):
      return array_spec.BoundedArraySpec(
          (), np.int64, int(action_spec.minimum), int(action_spec.maximum), name="action")
    if (np.issubdtype(action_spec.dtype, np.floating)
        and np.prod(action_spec.shape, dtype=np.int64) > 0):
      low = np.asarray(action_spec.minimum, np.float64)
      high = np.asarray(action_spec.maximum, np.float64)
      limit = float(np.finfo(np.float32).max)
      if np.all(np.abs(low) <= limit) and np.all(np.abs(high) <= limit):   # NaN: False
        return array_spec.BoundedArraySpec(action_spec.shape, np.float32, low.astype(np.float32),
                                           high.astype(np.float32), name="action")
  raise ValueError("Only scalar bounded integer actions and float actions with finite bounds "
                   "are supported, got the spec %s." % (action_spec,))


class ParallelBatchedPyEnvironment(batched.BatchedPyEnvironment):
  """n_e environments stepped by n_w worker processes, as one batched PyEnvironment.

  Args:
    env_fns: n_e callables, each returning a non-batched TF-Agents PyEnvironment with a
      single-array observation, a scalar integer bounded action or a float bounded action
      array with finite bounds, and TF-Agents auto-reset semantics
      (e.g. `functools.partial(GymnasiumPyEnvironment, "CartPole-v1", seed=i)`).
      With workers they must be picklable: top-level functions or functools.partial.
    num_workers: n_w worker processes; n_e must be divisible by it. 0 steps the
      environments in the calling process.
    reward_clipping: clip rewards of time steps to [-1, 1] (episode returns stay raw).
    start_method: 'forkserver' (default, fast worker start) or 'spawn'.
    timeout: seconds to wait for the workers' answer to a reset or a step before a
      `WorkerError` (a dead worker is reported at once; this catches hung ones).
    startup_timeout: the same for starting the workers and building the environments.
  """

  def __init__(self, env_fns, num_workers, reward_clipping=False, start_method="forkserver",
               timeout=300.0, startup_timeout=600.0):
    super().__init__(handle_auto_reset=False)
    env_fns = list(env_fns)
    self._num_envs = len(env_fns)
    self._num_workers = int(num_workers)
    self._reward_clipping = bool(reward_clipping)
    self._timeout = float(timeout)
    self._startup_timeout = float(startup_timeout)
    self._closed = False
    self._failure = None       # why the environment closed itself, if it did
    self._pending = False      # a step was sent and not yet received
    self._group = None         # in-process mode
    self._processes, self._conns, self._shm_holder = [], [], []
    self._arrays = None
    self._continuous = False   # float actions [n_e, *shape] rather than ints [n_e]
    self._finalizer = weakref.finalize(self, _shutdown, self._processes, self._conns,
                                       self._shm_holder, _SHUTDOWN_GRACE_S)
    if self._num_envs < 1:
      raise ValueError("env_fns must hold at least one environment constructor.")
    if self._num_workers < 0:
      raise ValueError("num_workers must be >= 0, got %d." % self._num_workers)
    if self._num_workers and self._num_envs % self._num_workers:
      raise ValueError(
          "The number of environments (%d) must be divisible by the number of workers (%d): "
          "each worker steps the same number of environments." %
          (self._num_envs, self._num_workers))
    try:
      if self._num_workers == 0:
        self._group = worker_process.EnvGroup(env_fns, 0)
        self._set_specs(*self._group.specs)
        self._arrays = worker_process.private_buffers(self._num_envs, self._obs_spec,
                                                      self._action_spec)
        self._group.bind(self._arrays)
      else:
        # Shielded: the fork server and the workers begin with the stop signals blocked.
        # multiprocessing's resource tracker (it ignores both signals itself) is started
        # first: starting it unblocks them in the calling thread.
        resource_tracker.ensure_running()
        with signals.children_shielded():
          self._set_specs(*self._start_workers(env_fns, start_method))
          self._attach_shared_memory()
    except BaseException:
      self.close()
      raise
    self._stats = episode_stats.EpisodeStats(self._num_envs)

  # --- construction ----------------------------------------------------------------
  def _start_workers(self, env_fns, start_method):
    """Starts the workers, waits until they built their envs; returns the common specs."""
    try:
      pickle.dumps(env_fns)
    except Exception as exc:
      raise TypeError(
          "env_fns must be picklable to reach the worker processes (use top-level functions "
          "or functools.partial, not lambdas or local functions): %s" % exc) from exc
    ctx = _mp_context(start_method)
    per_worker = self._num_envs // self._num_workers
    with main_module.hidden_if_unsafe():   # `python -`, a script without a main guard
      for k in range(self._num_workers):
        lo = k * per_worker
        parent_conn, child_conn = ctx.Pipe(duplex=True)
        process = ctx.Process(target=worker_process.worker_main,
                              name="paac-env-worker-%d" % k, daemon=True,
                              args=(k, child_conn, env_fns[lo:lo + per_worker], lo))
        process.start()
        child_conn.close()   # the worker holds the only other end: EOF tells either side
        self._processes.append(process)
        self._conns.append(parent_conn)
    replies = self._gather("building its environments", timeout=self._startup_timeout)
    specs = replies[0]
    for k in range(1, self._num_workers):
      if replies[k] != specs:
        raise ValueError(
            "Worker %d's environments have specs %s, different from worker 0's %s: all "
            "environments of a batch must have the same specs." % (k, replies[k], specs))
    return specs

  def _set_specs(self, obs_spec, action_spec, reward_spec):
    if not isinstance(obs_spec, array_spec.ArraySpec):
      raise ValueError("Only single-array observations are supported, got the spec %s."
                       % (obs_spec,))
    if isinstance(obs_spec, array_spec.BoundedArraySpec):
      self._obs_spec = array_spec.BoundedArraySpec(
          obs_spec.shape, obs_spec.dtype, obs_spec.minimum, obs_spec.maximum,
          name="observation")
    else:
      self._obs_spec = array_spec.ArraySpec(obs_spec.shape, obs_spec.dtype, name="observation")
    self._action_spec = batch_action_spec(action_spec)
    self._continuous = not batched.is_discrete_spec(self._action_spec)
    self._action_shape = (self._num_envs,) + tuple(self._action_spec.shape)
    if not (isinstance(reward_spec, array_spec.ArraySpec) and reward_spec.shape == ()):
      raise ValueError("Only scalar rewards are supported, got the spec %s." % (reward_spec,))

  def _attach_shared_memory(self):
    layout, size = worker_process.buffer_layout(self._num_envs, self._obs_spec,
                                                self._action_spec)
    shm = shared_memory.SharedMemory(create=True, size=size)
    self._shm_holder.append(shm)
    self._arrays = worker_process.buffer_views(shm.buf, layout)
    self._arrays["observation"].fill(0)
    self._send_all((worker_process.CMD_ATTACH, shm.name, layout), "attaching shared memory")
    self._gather("attaching shared memory", timeout=self._startup_timeout)

  # --- talking to workers ------------------------------------------------------------
  def _worker_name(self, k):
    per_worker = self._num_envs // self._num_workers
    process = self._processes[k]
    return "Worker %d (pid %s, environments %d-%d)" % (
        k, process.pid, k * per_worker, (k + 1) * per_worker - 1)

  def _fail(self, message, grace_s=_SHUTDOWN_GRACE_S):
    """Shuts everything down and raises a WorkerError."""
    self._failure = message
    self.close(grace_s)
    raise WorkerError(message)

  def _send_all(self, command, what):
    for k, conn in enumerate(self._conns):
      try:
        conn.send(command)
      except (OSError, ValueError):
        # Its pipe is broken: it died. Collect its last words, if any.
        self._gather(what, only=[k])
        self._fail("%s %s while %s." % (self._worker_name(k),
                                         _describe_exit(self._processes[k].exitcode), what))

  def _gather(self, what, only=None, timeout=None):
    """Waits for one reply from each worker ({k: payload}); raises WorkerError on failure."""
    pending = {k: self._conns[k] for k in (range(self._num_workers) if only is None else only)}
    replies = {}
    timeout = self._timeout if timeout is None else timeout
    deadline = time.monotonic() + timeout
    while pending:
      waitables = list(pending.values()) + [self._processes[k].sentinel for k in pending]
      ready = multiprocessing.connection.wait(waitables,
                                              timeout=max(0.0, deadline - time.monotonic()))
      if not ready:
        names = ", ".join(self._worker_name(k) for k in sorted(pending))
        # Hung workers would not read a polite "close": terminate them at once.
        self._fail("%s did not answer within %.0f s while %s." % (names, timeout, what),
                   grace_s=0.0)
      ready = set(ready)
      for k in list(pending):
        conn, process = pending[k], self._processes[k]
        if conn not in ready and process.sentinel not in ready:
          continue
        reply = None
        try:
          if conn.poll():
            reply = conn.recv()
        except (EOFError, OSError):
          reply = None
        if reply is None:
          process.join(1.0)
          self._fail("%s %s while %s (no error was reported: it crashed or was killed; see "
                     "its stderr)." % (self._worker_name(k), _describe_exit(process.exitcode),
                                       what))
        if reply[0] == worker_process.REPLY_ERROR:
          _, text, remote_traceback = reply
          self._fail("%s raised %s while %s.\nWorker traceback:\n%s"
                     % (self._worker_name(k), text, what, remote_traceback))
        replies[k] = reply[1] if reply[0] == worker_process.REPLY_READY else None
        del pending[k]
    return replies

  @contextlib.contextmanager
  def _closing_on_interrupt(self, what):
    """A Ctrl-C (or SystemExit) inside a command leaves workers mid-command and the batch
    inconsistent: shut everything down and let the interrupt rise. (One that lands
    between steps, in the caller's code, leaves the environment usable.)"""
    try:
      yield
    except (KeyboardInterrupt, SystemExit):
      self._failure = "interrupted while %s" % what
      self.close()
      raise

  def _check_open(self):
    if self._closed:
      raise RuntimeError("This ParallelBatchedPyEnvironment is closed%s."
                         % ((" (%s)" % self._failure) if self._failure else ""))

  # --- PyEnvironment API -------------------------------------------------------------
  def _reset(self):
    self._check_open()
    if self._pending:   # a step is in flight: let it land first
      self.recv()
    with self._closing_on_interrupt("resetting"):
      if self._group is not None:
        self._group.reset()
      else:
        self._send_all(worker_process.CMD_RESET, "resetting")
        self._gather("resetting")
    self._stats.reset()
    a = self._arrays
    n = self._num_envs
    return ts.TimeStep(np.full(n, FIRST, np.int32), np.zeros(n, np.float32),
                       np.ones(n, np.float32), a["observation"].copy())

  def _step(self, action):
    self.send(action)
    return self.recv()

  # --- asynchronous halves of a step --------------------------------------------------
  def send(self, action):
    """Starts stepping all environments with `action`: [n_e] ints, or [n_e, *shape] floats
    for continuous actions (a ValueError for any other shape)."""
    self._check_open()
    if self._pending:
      raise RuntimeError("send() was called twice without recv() in between.")
    action = np.asarray(action)
    if self._continuous:
      if action.shape != self._action_shape:
        raise ValueError("Expected actions of shape %s (one action of shape %s per "
                         "environment), got shape %s." % (self._action_shape,
                                                          self._action_spec.shape, action.shape))
    elif action.size != self._num_envs:
      raise ValueError("Expected %d actions (one per environment), got shape %s."
                       % (self._num_envs, action.shape))
    with self._closing_on_interrupt("stepping"):
      self._arrays["action"][:] = action.reshape(self._action_shape)
      self._pending = True
      if self._group is not None:
        self._group.step()
      else:
        self._send_all(worker_process.CMD_STEP, "stepping")

  def recv(self):
    """Waits for the step started by `send` and returns its batched TimeStep."""
    self._check_open()
    if not self._pending:
      raise RuntimeError("recv() was called without a preceding send().")
    with self._closing_on_interrupt("stepping"):
      if self._group is None:
        self._gather("stepping")
      self._pending = False
      a = self._arrays
      # Copies: the shared buffers are overwritten in place by the next step.
      step_type = a["step_type"].copy()
      raw = a["reward"].copy()
      discount = a["discount"].copy()
      observation = a["observation"].copy()
      first = step_type == FIRST
      last = step_type == LAST
      self._stats.update(raw, ~first, last)
      reward = np.clip(raw, -1.0, 1.0) if self._reward_clipping else raw
      self._current_time_step = ts.TimeStep(step_type, reward, discount, observation)
    return self._current_time_step

  # --- extras --------------------------------------------------------------------------
  @property
  def num_actions(self):
    """The number of discrete actions; `batched.NoDiscreteActionsError` for continuous ones."""
    return batched.num_actions(self._action_spec, "this batch of environments")

  @property
  def num_workers(self):
    return self._num_workers

  @property
  def worker_pids(self):
    """Process ids of the workers (empty in the in-process mode)."""
    return [p.pid for p in self._processes]

  def pop_finished_episodes(self, with_env_index=False):
    """(raw return, length in agent steps) of each episode finished since the last call;
    with `with_env_index`, (return, length, index of the environment that played it)."""
    return self._stats.pop_finished(with_env_index)

  def close(self, grace_s=_SHUTDOWN_GRACE_S):
    """Stops the workers and frees shared memory; idempotent.

    Workers get `grace_s` seconds to close their environments and exit, then are
    terminated (and killed if need be).
    """
    if self._closed:
      return
    self._closed = True
    self._pending = False
    if self._group is not None:
      self._group.close()
      self._group = None
    self._arrays = None   # drop our views of the shared memory before it is closed
    if self._finalizer.detach() is not None:
      _shutdown(self._processes, self._conns, self._shm_holder, grace_s)
