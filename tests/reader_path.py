"""The paac_tf files a reader opens to follow `python -m paac_tf.train` to PAAC's update.

    python tests/reader_path.py --gin_file=atari.gin --gin_bindings=... --root_dir=...

runs the command as `python -m paac_tf.train` would (runpy, the same argv) under a trace
function that, at each of the events below, records the paac_tf files on the stack, then
prints {event: [files]} and their union as one JSON line (stdout's last):

  env_step   a step of the batched environment (its `_step`, `step`, `send` or `recv`)
  forward    the model's forward pass (`ActorCritic.call`)
  returns    the n-step returns (`n_step_returns`)
  loss       the loss (`total_loss`)
  backward   the backward pass (`GradientTape.gradient`)
  apply      the optimizer's apply (`apply_gradients` in paac_tf)

The compiled functions run eagerly here (`tf.config.run_functions_eagerly`), so that their
Python runs as written (not autograph's conversion of it), and the events are recorded up
to the first apply: the path from the command to the optimizer's apply. It also
counts the resolutions of an environment name (`names.resolve` of a str) and the batched
environments built (`factory.make_batched_env`).
"""
import json
import os
import runpy
import sys
import threading

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "paac_tf")


def _event(code):
  """The event a function's code object is, or None."""
  name, path = code.co_name, code.co_filename
  if path.startswith(PACKAGE):
    if name in ("_step", "step", "send", "recv") and os.sep + "envs" + os.sep in path:
      return "env_step"
    if name == "call" and path.endswith("actor_critic.py"):
      return "forward"
    if name == "n_step_returns":
      return "returns"
    if name == "total_loss":
      return "loss"
    if name == "apply_gradients":
      return "apply"
  elif name == "gradient" and path.endswith(os.path.join("eager", "backprop.py")):
    return "backward"
  return None


def _stack_files(frame):
  """The paac_tf files of the frames on the stack from `frame` down."""
  files = set()
  while frame is not None:
    if frame.f_code.co_filename.startswith(PACKAGE):
      files.add(os.path.relpath(frame.f_code.co_filename, os.path.dirname(PACKAGE)))
    frame = frame.f_back
  return files


def main(argv):
  found = {}
  events = {}
  counts = {"env_name_resolutions": 0, "env_builds": 0}
  callers = []
  applied = []
  names_py = os.path.join(PACKAGE, "envs", "names.py")
  factory_py = os.path.join(PACKAGE, "envs", "factory.py")

  def trace(frame, what, arg):
    del arg
    if what == "call":
      code = frame.f_code
      if code.co_name == "resolve" and code.co_filename == names_py and isinstance(
          frame.f_locals.get("name"), str):
        counts["env_name_resolutions"] += 1
        callers.append(_stack_files(frame.f_back))
      elif code.co_name == "make_batched_env" and code.co_filename == factory_py:
        counts["env_builds"] += 1
      event = events.get(frame.f_code, False)
      if event is False:
        event = events[frame.f_code] = _event(frame.f_code)
      if event and not applied:
        found.setdefault(event, set()).update(_stack_files(frame))
        if event == "apply":
          applied.append(True)
    return None

  def leave(status):   # the command ends with os._exit (errors.exit_now): report first
    raise SystemExit(status)

  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  tf.config.run_functions_eagerly(True)
  sys.argv = [os.path.join(PACKAGE, "train.py")] + argv
  os._exit = leave  # pylint: disable=protected-access
  sys.settrace(trace)
  threading.settrace(trace)
  try:
    runpy.run_module("paac_tf.train", run_name="__main__", alter_sys=True)
  except SystemExit:
    pass
  finally:
    sys.settrace(None)
    threading.settrace(None)
  union = sorted(set().union(*found.values())) if found else []
  out = {"events": {k: sorted(v) for k, v in sorted(found.items())}, "files": union, **counts,
         "resolution_callers": [sorted(c) for c in callers]}
  sys.stdout.write(json.dumps(out) + "\n")
  sys.stdout.flush()


if __name__ == "__main__":
  main(sys.argv[1:])
