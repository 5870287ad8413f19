"""Small helpers shared by the Ape-X processes (replay, actor, learner, launcher)."""
import os
import socket

import gin

from paac_tf import errors


def parse_gin(gin_files, gin_bindings):
  """Registers the project's configurables, then parses files and bindings."""
  from paac_tf import configurables  # pylint: disable=import-outside-toplevel,unused-import
  from paac_tf.runtime import config  # pylint: disable=import-outside-toplevel
  return config.parse(gin_files, gin_bindings)


def configured(name, default=None):
  """The value gin binds to `name` (e.g. 'train_eval.env_name'), or `default`."""
  try:
    return gin.query_parameter(name)
  except ValueError:
    return default


def env_name_or_configured(env_name):
  env_name = env_name or configured("train_eval.env_name")
  if not env_name:
    raise errors.UserError("No environment: give --env_name or a gin file that binds "
                           "train_eval.env_name (the run's config, e.g. apex_atari.gin).")
  return env_name


def environment_specs(env_name, seed=0):
  """(observation spec, number of actions) of `env_name` as the actors build it."""
  from paac_tf.envs import environment  # pylint: disable=import-outside-toplevel
  env = environment.make_environment(env_name, num_envs=1, num_workers=0, seed=seed)
  try:
    action_spec = env.action_spec()
    return env.observation_spec(), int(action_spec.maximum) - int(action_spec.minimum) + 1
  finally:
    env.close()


def prepare_root_dir(root_dir):
  """Creates root_dir (absolute path returned); a clear error if it cannot be written."""
  root_dir = os.path.abspath(os.path.expanduser(root_dir))
  try:
    os.makedirs(root_dir, exist_ok=True)
  except OSError as e:
    raise errors.UserError("Cannot create --root_dir %s (%s)." % (root_dir, e.strerror or e)) from None
  if not os.access(root_dir, os.W_OK):
    raise errors.UserError("Cannot write to --root_dir %s." % root_dir)
  return root_dir


def set_tf_threads(num_threads):
  """Caps TensorFlow's thread pools (call before any TF op runs); None leaves them."""
  if not num_threads:
    return
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  try:
    tf.config.threading.set_intra_op_parallelism_threads(int(num_threads))
    tf.config.threading.set_inter_op_parallelism_threads(int(num_threads))
  except RuntimeError:   # TF already initialized in this process: keep its pools
    pass


def check_port_free(port):
  """Raises UserError if something already listens on `port` (any interface).

  gRPC sets SO_REUSEPORT, so a second Reverb server on a busy port would start and
  silently share it; a bind without SO_REUSEPORT detects the conflict. SO_REUSEADDR (which
  gRPC sets too) lets connections of a previous server in TIME_WAIT pass.
  """
  port = int(port)
  if not 0 < port < 65536:
    raise errors.UserError("Invalid port %d." % port)
  for family, address in ((socket.AF_INET6, "::"), (socket.AF_INET, "0.0.0.0")):
    try:
      sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError:
      continue   # no IPv6 (or IPv4) on this host
    try:
      sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
      sock.bind((address, port))
    except OSError as e:
      raise errors.UserError("Port %d is in use (%s); choose another --port." % (
          port, e.strerror or e)) from None
    finally:
      sock.close()


def parent_alive(parent_pid):
  """False once the process that started us has exited (we were re-parented)."""
  return not parent_pid or os.getppid() == int(parent_pid)


def exit_now(status):
  """Flushes the logs and standard streams, then ends the process at once: an actor or
  learner that has closed everything skips the interpreter's teardown of TF and gRPC,
  which can take seconds or wait on calls pending on a lost replay server."""
  import sys  # pylint: disable=import-outside-toplevel
  from absl import logging  # pylint: disable=import-outside-toplevel
  logging.flush()
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(status)  # pylint: disable=protected-access
