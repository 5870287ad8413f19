"""Code run during training from the Python API: `paac_tf.train(..., callbacks=[...])`.

A callback is any object with some of these methods (each optional):

  on_update(metrics)      after each update (PAAC) or learner step (Ape-X): a dict of the
                          update's metrics (`Losses/total`, ...) with `agent_steps`,
                          `updates` and, once episodes finished, `average_return` (the
                          last 100 episodes')
  on_evaluation(result)   after each evaluation while training (`paac.eval_interval`,
                          `apex_learner.eval_interval`): a dict with `agent_steps`,
                          `mean`, `std`, `episodes`, `returns`, `lengths`,
                          `wall_time_s`, ... (policies/training_evaluation.py)
  on_end(result)          once, after the run: the `paac_tf.TrainResult`, with its summary

On Ray (`train_eval.launcher = 'ray'`) the Ape-X learner runs in a process of its own,
where none is installed: only `on_end` is called.

`on_update` or `on_evaluation` returning False (not None) stops the run as a signal does:
after the current update, with a checkpoint and the final export; the result's reason is
'callback'. An exception in a callback ends the run as any error does.

The runner reaches the callbacks of the call in force through `active()` (installed by
`installed(callbacks)`), not through its arguments: the loop stays as the paper writes it.
"""
import contextlib

from paac_tf.bookkeeping import signals

HOOKS = ("on_update", "on_evaluation", "on_end")

_active = ()          # the callbacks of the `installed` block in force
_stopped = [False]    # whether one of them asked the run to stop


def check(callbacks):
  """The callbacks as a tuple; a TypeError naming any object without one of `HOOKS`."""
  callbacks = tuple(callbacks or ())
  for callback in callbacks:
    if not any(callable(getattr(callback, hook, None)) for hook in HOOKS):
      raise TypeError("callback %r has none of the methods %s." % (callback, ", ".join(HOOKS)))
  return callbacks


@contextlib.contextmanager
def installed(callbacks):
  """Makes `callbacks` the active ones for the block (a training call)."""
  global _active  # pylint: disable=global-statement
  previous, _active = _active, check(callbacks)
  _stopped[0] = False
  try:
    yield
  finally:
    _active = previous


def active():
  """Whether any callback is installed (the runner then builds what they receive)."""
  return bool(_active)


def stopped():
  """Whether a callback of the block in force asked the run to stop."""
  return _stopped[0]


def call(hook, value):
  """Calls `hook` (one of HOOKS) of every active callback with `value`; a False returned
  by one requests the run's stop (the StopRequest the loop checks)."""
  for callback in _active:
    method = getattr(callback, hook, None)
    if method is not None and method(value) is False and hook != "on_end":
      _stopped[0] = True
      stop = signals.current()
      if stop is not None:
        stop.requested = True
