"""What runs inside a worker process of `worker_pool.ParallelBatchedPyEnvironment`: the
commands and replies of its pipe, the layout of the step arrays it shares with the parent,
its environments stepped in turn (`EnvGroup`, also the in-process mode's), and its main loop.
"""
import signal
import traceback
from multiprocessing import shared_memory

import numpy as np

# Control messages (parent -> worker): a string, or a tuple for "attach". Replies
# (worker -> parent) are tuples whose first item is the kind.
CMD_STEP, CMD_RESET, CMD_ATTACH, CMD_CLOSE = "step", "reset", "attach", "close"
REPLY_OK, REPLY_READY, REPLY_ERROR = "ok", "ready", "error"
OK = (REPLY_OK,)


# --- shared step buffers ---------------------------------------------------------------
def buffer_layout(num_envs, obs_spec, action_spec):
  """[(name, byte offset, shape, dtype str)] of the step arrays, and the total size.

  `action` follows the batch's action spec (as `worker_pool` normalizes it): int64 [n_e] for
  discrete actions, float32 [n_e, *shape] for continuous ones.
  """
  fields = (("action", (num_envs,) + tuple(action_spec.shape), action_spec.dtype),
            ("step_type", (num_envs,), np.int32),
            ("reward", (num_envs,), np.float32),
            ("discount", (num_envs,), np.float32),
            ("observation", (num_envs,) + tuple(obs_spec.shape), obs_spec.dtype))
  layout, offset = [], 0
  for name, shape, dtype in fields:
    dtype = np.dtype(dtype)
    offset = -(-offset // 64) * 64   # cache-line aligned
    layout.append((name, offset, shape, dtype.str))
    offset += int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
  return layout, max(offset, 1)


def buffer_views(buf, layout):
  """{name: numpy array} views of `buf` (a buffer, e.g. a SharedMemory's) per `layout`."""
  return {name: np.ndarray(shape, np.dtype(dtype), buffer=buf, offset=offset)
          for name, offset, shape, dtype in layout}


def private_buffers(num_envs, obs_spec, action_spec):
  """Plain arrays with the same layout, for the in-process mode."""
  layout, size = buffer_layout(num_envs, obs_spec, action_spec)
  return buffer_views(bytearray(size), layout)


class EnvGroup:
  """The environments of one worker, stepped in turn; results go to step arrays.

  Used inside worker processes and, for `num_workers=0`, in the calling process.
  """

  def __init__(self, env_fns, first_index):
    self.first_index = first_index
    self.envs = []
    try:
      for fn in env_fns:
        self.envs.append(fn())
    except BaseException:
      self.close()
      raise
    self.specs = self._common_specs()
    self._arrays = None
    self._copy_actions = False

  def _common_specs(self):
    specs = None
    for i, env in enumerate(self.envs):
      env_specs = (env.observation_spec(), env.action_spec(), env.reward_spec())
      if specs is None:
        specs = env_specs
      elif env_specs != specs:
        raise ValueError(
            "Environment %d has specs %s, different from environment %d's %s: all "
            "environments of a batch must have the same specs."
            % (self.first_index + i, env_specs, self.first_index, specs))
    return specs

  def bind(self, arrays):
    """Uses this group's slice of the batch-wide step arrays."""
    lo, hi = self.first_index, self.first_index + len(self.envs)
    self._arrays = tuple(arrays[name][lo:hi] for name in
                         ("action", "step_type", "reward", "discount", "observation"))
    # A row of a float action array is a view: an env that kept it would see the next
    # step's actions. Integer actions reach the envs as numpy scalars (copies).
    self._copy_actions = arrays["action"].ndim > 1 or arrays["action"].dtype.kind == "f"

  def reset(self):
    _, step_type, reward, discount, observation = self._arrays
    for i, env in enumerate(self.envs):
      t = env.reset()
      step_type[i], reward[i], discount[i], observation[i] = (
          t.step_type, t.reward, t.discount, t.observation)

  def step(self):
    action, step_type, reward, discount, observation = self._arrays
    if self._copy_actions:
      action = action.copy()   # one copy per step for the group, not per environment
    for i, env in enumerate(self.envs):
      t = env.step(action[i])
      step_type[i], reward[i], discount[i], observation[i] = (
          t.step_type, t.reward, t.discount, t.observation)

  def close(self):
    self._arrays = None
    for env in self.envs:
      try:
        env.close()
      except Exception:  # pylint: disable=broad-except
        pass   # closing must go on for the others
    self.envs = []


def worker_main(index, conn, env_fns, first_index):
  """Worker process: builds its environments, then serves commands until "close"."""
  # Ctrl-C, and the SIGTERM of a container or job stop, reach the whole process group;
  # the parent decides and closes us.
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  signal.signal(signal.SIGTERM, signal.SIG_IGN)
  group, shm = None, None
  try:
    group = EnvGroup(env_fns, first_index)
    conn.send((REPLY_READY, group.specs))
    while True:
      command = conn.recv()
      if command == CMD_STEP:
        group.step()
      elif command == CMD_RESET:
        group.reset()
      elif command == CMD_CLOSE:
        break
      elif isinstance(command, tuple) and command[0] == CMD_ATTACH:
        _, shm_name, layout = command
        shm = shared_memory.SharedMemory(name=shm_name)
        group.bind(buffer_views(shm.buf, layout))
      else:
        raise ValueError("Unknown command %r." % (command,))
      conn.send(OK)
  except (EOFError, BrokenPipeError):
    pass   # the parent has gone away: just exit
  except BaseException as exc:  # pylint: disable=broad-except
    try:
      conn.send((REPLY_ERROR, "%s: %s" % (type(exc).__name__, exc), traceback.format_exc()))
    except Exception:  # pylint: disable=broad-except
      pass
  finally:
    if group is not None:
      group.close()
    if shm is not None:
      try:
        shm.close()
      except BufferError:
        pass   # a view is still referenced somewhere; the OS unmaps at exit
    conn.close()
