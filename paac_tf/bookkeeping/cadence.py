"""A training loop's bookkeeping, the same for every algorithm: summaries, non-finite checks,
checkpoint and export cadence, the "already exported" rule, and the run's result.

A loop makes one `Cadence` and calls it between updates:

  cadence = Cadence(root_dir, total_steps=..., start_steps=..., save=..., export=..., ...)
  while ...:
    metrics = <one update>
    cadence.summaries(metrics, updates, steps, window)   # every summary_interval updates
    cadence.after_update(steps, updates, metrics)        # checkpoint and export when due
  result = cadence.finish(steps, updates, metrics, window, reason)

Checkpoints and exports are due at every multiple of their interval in agent steps (the
first step count at or past it). Nothing non-finite is saved: before a checkpoint the last
update's metrics (`finite_keys`) and the network's weights are checked, and a
TrainingDivergedError stops the run, the last good checkpoint kept. An export whose version
directory exists already is skipped. The final export is of what this process trained: none
when no update ran (a stop during the start-up, a resumed run that had finished), none when
a second signal asked to hurry (`finish(..., hurry=True)`); the final checkpoint is always
written (a new run stopped before its first update saves its step 0).

Evaluation while training (`evaluate`, every `eval_interval` agent steps, and at the end
of a process that got past its first evaluation, unless a stop was requested): its Eval/*
scalars against agent steps, `last_evaluation` and `eval_seconds` (the time spent
evaluating, in the run's result). The active callbacks (bookkeeping/callbacks.py) hear of
each update and each evaluation.
"""
import os
import time

from absl import logging
import numpy as np
import tensorflow as tf

from paac_tf.bookkeeping import callbacks
from paac_tf.bookkeeping import health
from paac_tf.bookkeeping import run_result
from paac_tf.bookkeeping import summaries


RunResult = run_result.RunResult   # what `Cadence.finish` returns


def next_multiple(steps, interval):
  """The first multiple of `interval` above `steps`."""
  return (int(steps) // int(interval) + 1) * int(interval)


class Cadence:
  """The bookkeeping of one training loop (see the module docstring).

  Args:
    root_dir: the run directory (summaries go to root_dir/train).
    checkpoint_interval, export_interval: agent steps between checkpoints and between
      exports (export_interval None: at the end only).
    summary_interval: updates between the metric summaries.
    start_steps: the agent steps of the run so far (a resumed run's).
    saved: whether a checkpoint of `start_steps` exists (a resumed run's).
    save: save(steps) writes the checkpoint of agent step `steps`.
    export: export(steps) exports the policy of agent step `steps`, into
      `export_dir/<steps>`.
    network: the network whose weights must be finite before a checkpoint.
    finite_keys: the metrics that must be finite (a loss, the gradient norm).
    step_name: what an update is called in messages ('update', 'learner step').
    evaluate: evaluate(steps) -> the result dict of an evaluation of the policy of agent
      step `steps` (policies/training_evaluation.py), or None: no evaluation.
    eval_interval: agent steps between evaluations (None: at the end only).
    eval_setting: the binding that sets `eval_interval` ('paac.eval_interval'), for the
      run's summary (RunResult.eval_setting).
  """

  def __init__(self, root_dir, *, checkpoint_interval, export_interval, summary_interval,
               start_steps, saved, save, export, export_dir, network, finite_keys,
               step_name="update", evaluate=None, eval_interval=None, eval_setting=None):
    self.writer = summaries.SummaryWriter(os.path.join(root_dir, "train"))
    self.summary_interval = int(summary_interval)
    self.checkpoint_interval = int(checkpoint_interval)
    self.export_interval = int(export_interval) if export_interval else None
    self.next_checkpoint = next_multiple(start_steps, self.checkpoint_interval)
    self.next_export = (next_multiple(start_steps, self.export_interval)
                        if self.export_interval else None)
    self.saved_at = int(start_steps) if saved else None
    self._save, self._export, self.export_dir = save, export, export_dir
    self.network, self.finite_keys, self.step_name = network, tuple(finite_keys), step_name
    self._perf = (time.monotonic(), int(start_steps))
    self.trained = False   # whether an update ran in this process (after_update was called)
    self.policy_dir = None   # the newest export's version directory, once known
    self._evaluate, self.eval_setting = evaluate, eval_setting
    self.eval_interval = int(eval_interval) if evaluate and eval_interval else None
    self.next_eval = (next_multiple(start_steps, self.eval_interval)
                      if self.eval_interval else None)
    self.first_eval = self.next_eval   # a shorter run (a smoke test) is not evaluated
    self.last_evaluation = None   # the result of this process's latest evaluation
    self.eval_seconds = 0.0       # the wall time its evaluations took
    self._window = None           # the episode window the summaries last saw

  def start_clock(self, steps):
    """Starts the agent-steps-per-second clock at `steps` (when the loop starts stepping)."""
    self._perf = (time.monotonic(), int(steps))

  def checked(self, metrics, updates):
    """The metrics as floats ({} before the first update); TrainingDivergedError if one of
    `finite_keys` is not finite."""
    if metrics is None:
      return {}
    values = {k: float(v) for k, v in metrics.items()}
    return health.check_finite_metrics(values, self.finite_keys, updates,
                                       step_name=self.step_name)

  def summaries(self, metrics, updates, steps, window=None, steps_per_second=False):
    """Every `summary_interval` updates: the metrics (checked), the agent steps per second
    since the last such summary (`steps_per_second`), the episode metrics of `window`."""
    self._window = window if window is not None else self._window
    if updates % self.summary_interval:
      return
    values = self.checked(metrics, updates)
    if steps_per_second:
      now = time.monotonic()
      values["Perf/steps_per_second"] = (steps - self._perf[1]) / max(now - self._perf[0], 1e-9)
      self._perf = (now, steps)
    self.writer.scalars(values, updates)
    if window is not None:
      self.writer.episode_metrics(window, updates, steps)

  def after_update(self, steps, updates, metrics):
    """Tells the callbacks; saves a checkpoint, exports and evaluates when due (`steps`
    past the next multiple)."""
    self.trained = True
    if callbacks.active():
      values = {k: float(v) for k, v in (metrics or {}).items()}
      values.update(agent_steps=int(steps), updates=int(updates))
      if self._window is not None and self._window.returns:
        values["average_return"] = self._window.average_return
      callbacks.call("on_update", values)
    if steps >= self.next_checkpoint:
      self.save(steps, updates, metrics)
      self.next_checkpoint = next_multiple(steps, self.checkpoint_interval)
    if self.next_export is not None and steps >= self.next_export:
      self.export(steps)
      self.next_export = next_multiple(steps, self.export_interval)
    if self.next_eval is not None and steps >= self.next_eval:
      self.evaluate(steps)
      self.next_eval = next_multiple(steps, self.eval_interval)

  def evaluate(self, steps):
    """Evaluates the policy of agent step `steps`: Eval/* summaries, `last_evaluation`,
    the callbacks' `on_evaluation`."""
    result = self._evaluate(int(steps))
    self.last_evaluation = result
    self.eval_seconds += float(result["wall_time_s"])
    # Perf/steps_per_second stays training's speed: the evaluation's time is left out.
    self._perf = (self._perf[0] + float(result["wall_time_s"]), self._perf[1])
    self.writer.evaluation(result)
    logging.info("Evaluation at agent step %d: %d episodes, mean return %.2f +- %.2f (std), "
                 "%.1f s.", steps, result["episodes"], result["mean"], result["std"],
                 result["wall_time_s"])
    callbacks.call("on_evaluation", result)
    return result

  def save(self, steps, updates, metrics):
    """The checkpoint of agent step `steps`, once the metrics and weights are finite."""
    self.checked(metrics, updates)
    health.check_finite_weights(self.network, updates, step_name=self.step_name)
    self._save(int(steps))
    self.saved_at = int(steps)

  def export(self, steps):
    """Exports the policy of agent step `steps`, unless that version exists already (then
    a log line; returns None). Returns the version directory written."""
    path = os.path.join(self.export_dir, str(int(steps)))
    if tf.io.gfile.exists(path):
      logging.info("Export %s exists already; skipped.", path)
      self.policy_dir = path
      return None
    self.policy_dir = self._export(int(steps))
    return self.policy_dir

  def finish(self, steps, updates, metrics, window, reason, hurry=False, **extras):
    """The end of the run: the episode metrics, the last checkpoint (unless this step's is
    saved), the final export (if an update ran in this process, and not `hurry`: a second
    signal asked to skip what is optional) and the final evaluation (if this process got
    past its first evaluation, has not evaluated this step, and no stop was requested:
    reason 'signal'); returns
    the RunResult."""
    self.writer.episode_metrics(window, updates, steps)
    evaluated = self.last_evaluation and self.last_evaluation["agent_steps"] == int(steps)
    due = self.first_eval is not None and steps >= self.first_eval
    if due and self.trained and reason != "signal" and not evaluated:
      self.evaluate(steps)
    self.writer.close()
    if reason == "signal" and callbacks.stopped():
      reason = "callback"   # the stop a callback requested (bookkeeping/callbacks.py)
    if self.saved_at != int(steps):
      self.save(steps, updates, metrics)
    if self.trained and not hurry:
      self.export(steps)
    return RunResult(agent_steps=int(steps), updates=int(updates), episodes=int(window.total),
                     average_return=window.average_return, reason=reason, extras=extras,
                     policy_dir=self.policy_dir or newest_version(self.export_dir),
                     episodes_averaged=len(window.returns), evaluation=self.last_evaluation,
                     eval_seconds=round(self.eval_seconds, 3), eval_setting=self.eval_setting)


def newest_version(export_dir):
  """The version directory of `export_dir` (a model's exports) with the highest version, or
  None."""
  versions = [int(v) for v in (tf.io.gfile.listdir(export_dir)
                               if tf.io.gfile.isdir(export_dir) else [])
              if v.strip("/").isdigit() and
              tf.io.gfile.exists(os.path.join(export_dir, v.strip("/"), "saved_model.pb"))]
  return os.path.join(export_dir, str(max(versions))) if versions else None


def counters():
  """The agent-step and episode counters a checkpoint holds beside the algorithm's state
  (int64 variables `agent_steps` and `episodes`)."""
  return (tf.Variable(0, dtype=tf.int64, name="agent_steps"),
          tf.Variable(0, dtype=tf.int64, name="episodes"))


def assign_counters(agent_steps_var, episodes_var, agent_steps, episodes):
  """Sets the checkpoint's counters before a save."""
  agent_steps_var.assign(summaries.tf_scalar(agent_steps, np.int64))
  episodes_var.assign(summaries.tf_scalar(episodes, np.int64))
