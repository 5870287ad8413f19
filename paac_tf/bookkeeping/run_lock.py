"""One command at a time per run directory: an exclusive lock on `root_dir/run.lock`.

Training (every algorithm and launcher, in the process the user started), the Ape-X
learner program and an export into the run directory hold the lock while they run; a
second such command on the same directory stops at once with one `error:` line naming the
process that holds it, having written nothing.

The lock is a POSIX record lock (`fcntl.lockf`) on an empty file that the first command
creates and no one writes or deletes afterwards, so that a command that holds it (or a
refused one) changes no file and no mtime of the run. The kernel drops the lock when its
process ends, however it ends (`kill -9` included), so there is no stale lock to clean up:
the next command simply takes it. The refusal names the holder from the kernel's answer
(`F_GETLK` gives its process id; its command line comes from the process table). The
lock is not inherited by child processes (workers, actors), and a POSIX lock also holds
between hosts on file systems that lock over the network (NFS, Lustre); on one mounted
without network locks (NFS `nolock` or `local_lock`), it only sees commands on the same
host. A file system that cannot lock at all gets a warning, and the command runs unlocked.

POSIX locks belong to a process, not to a file descriptor: the same process would be given
the lock twice, and closing any descriptor of the file releases it. Locks held by this
process are therefore kept in a table, checked before the file is opened: another thread
is refused; the thread that holds the lock gets it again (a no-op: the outer holder
releases it).
"""
import errno
import os
import struct
import sys
import threading

from absl import logging

from paac_tf import errors

try:
  import fcntl
except ImportError:   # not a POSIX system: no lock
  fcntl = None

LOCK_FILE = "run.lock"
_UNSUPPORTED = (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL)
# struct flock of F_GETLK, where its layout is known: (format, index of l_pid).
_FLOCK_LAYOUT = {"linux": ("hhqqi", 4), "darwin": ("qqihh", 2)}

_held = {}   # (st_dev, st_ino) of a lock file -> (what holds it, the thread that took it)
_held_lock = threading.Lock()


class RunDirInUseError(errors.UserError):
  """Another command runs in this run directory."""


class RunLock:
  """A held lock (or, with `fd` None, the stand-in of one the system could not take);
  `release()` (or leaving a `with` block) gives it back, idempotent."""

  def __init__(self, path, fd, key):
    self.path, self._fd, self._key = path, fd, key

  def release(self):
    with _held_lock:
      if self._fd is None:
        return
      _held.pop(self._key, None)
      os.close(self._fd)   # closing the descriptor drops the process's lock
      self._fd = None

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.release()


def lock_path(root_dir):
  return os.path.join(root_dir, LOCK_FILE)


def acquire(root_dir, create=True, what=None):
  """Locks the run directory `root_dir` (an existing directory) for this process.

  Args:
    root_dir: the run directory.
    create: create run.lock if it is missing (False: return None instead, writing nothing).
    what: what this process does there, for a later refusal within this process.

  Returns:
    A RunLock (an empty one on a system or file system without locks), or None if
    run.lock is missing and not `create`.

  Raises:
    RunDirInUseError: another process, or another call in this one, holds the lock.
  """
  path = lock_path(os.path.abspath(root_dir))
  if fcntl is None:
    logging.warning("No file locks on this system: %s is not protected against a second "
                    "command.", root_dir)
    return RunLock(path, None, None)
  with _held_lock:
    try:
      stat = os.stat(path)
    except FileNotFoundError:
      stat = None
    holder = _held.get((stat.st_dev, stat.st_ino)) if stat is not None else None
    if holder is not None:   # checked before opening: closing a descriptor drops our lock
      if holder[1] == threading.get_ident():
        return RunLock(path, None, None)   # taken again by the same call: held already
      raise RunDirInUseError("%s is in use by this process (%s, not finished yet); wait "
                             "for it to end." % (os.path.dirname(path), holder[0]))
    if stat is None and not create:
      return None
    try:
      fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
      raise errors.UserError("Cannot open %s (%s)." % (path, e.strerror or e)) from None
    stat = os.fstat(fd)
    key = (stat.st_dev, stat.st_ino)
    try:
      fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
      if e.errno in (errno.EACCES, errno.EAGAIN):
        holder = _holder_pid(fd)
        os.close(fd)
        raise RunDirInUseError(_in_use_message(os.path.dirname(path), path, holder)) from None
      os.close(fd)
      if e.errno in _UNSUPPORTED:
        logging.warning("The file system of %s cannot lock files (%s): a second command in "
                        "this directory will not be detected.", root_dir, e.strerror)
        return RunLock(path, None, None)
      raise errors.UserError("Cannot lock %s (%s)." % (path, e.strerror or e)) from None
    _held[key] = (what or "pid %d" % os.getpid(), threading.get_ident())
    return RunLock(path, fd, key)


def _holder_pid(fd):
  """The process id of the lock's holder as the kernel reports it (None if unknown)."""
  layout = _FLOCK_LAYOUT.get(sys.platform.rstrip("0123456789"))
  if layout is None:
    return None
  fmt, pid_index = layout
  fields = [0] * len(fmt)
  fields[fmt.index("h")] = fcntl.F_WRLCK   # l_type; l_whence, l_start, l_len: whole file
  try:
    reply = struct.unpack(fmt, fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack(fmt, *fields)))
  except OSError:
    return None
  pid = reply[pid_index]
  return pid if pid > 0 else None


def _describe(pid, path):
  """'process N (its command line)' if process N of this host holds `path` open, else what
  can be said of it (another host, another user)."""
  import psutil  # pylint: disable=import-outside-toplevel  (lazy: only to name a holder)
  try:
    process = psutil.Process(pid)
    real = os.path.realpath(path)
    holds = any(os.path.realpath(f.path) == real for f in process.open_files())
    cmdline = process.cmdline()
  except psutil.AccessDenied:
    return "process %d (of another user)" % pid
  except psutil.Error:
    holds, cmdline = False, []
  if not holds:
    return "process %d of another host (the directory is on a shared file system)" % pid
  command = " ".join([os.path.basename(cmdline[0])] + cmdline[1:]) if cmdline else "?"
  if len(command) > 300:
    command = command[:297] + "..."
  return "process %d (%s)" % (pid, command)


def _in_use_message(root_dir, path, pid):
  if pid is None:
    return ("%s is in use by another process (it holds %s); wait for it to end or stop it."
            % (root_dir, path))
  return ("%s is in use by %s; wait for it to end or stop it (kill -TERM %d), then rerun."
          % (root_dir, _describe(pid, path), pid))
