"""Connects the Ray launcher's command to Ray: imports it, starts or joins a cluster.

`import_ray` imports Ray (an optional extra) with this process's environment set up for
it; `connect` runs `ray.init` in the run's namespace (`namespace_for`) on a thread of its
own (`RayOwner`, which shields a Ray started for the run from SIGINT and SIGTERM until
`ray.shutdown`), after checking that a cluster's address answers. `ray_launcher.run_ray`
uses them (see its module docstring for the signals and the placement).
"""
import logging as logging_lib
import os
import socket
import threading

from paac_tf import errors
from paac_tf.bookkeeping import signals

_NO_FAILURE_HANDLER = "RAY_DISABLE_FAILURE_SIGNAL_HANDLER"


def namespace_for(root_dir):
  """The Ray namespace of the run in `root_dir` (its actors' names live there)."""
  return "paac_tf:" + os.path.abspath(root_dir)


def import_ray(local):
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


class _NoSigtermNotice(logging_lib.Filter):
  """Drops ray.init's notice that it set no SIGTERM handler off the main thread (this
  process has its own: the stop request)."""

  def filter(self, record):
    return "SIGTERM handler is not set" not in record.getMessage()


class RayOwner:
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


def connect(ray, address, root_dir, options, num_actors, stop):
  """ray.init: joins the cluster at `address`, or starts a Ray on this machine (None):
  on loopback, without dashboard, with a logical CPU for every role that asks one.
  Returns the `RayOwner` to release after ray.shutdown."""
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
  owner = RayOwner(ray, kwargs)
  try:
    owner.start()
  except ConnectionError as e:
    raise errors.UserError("Cannot connect to the Ray cluster at %r (train_eval.ray_address): "
                           "%s" % (address, errors.user_message(e))) from None
  # In case Ray was imported before `import_ray` (its driver then put a handler of its own,
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
        "--head` (docs/apex-hosts.md#run-on-a-cluster), or leave ray_address unset for a Ray on "
        "this machine." % (address, e)) from None
