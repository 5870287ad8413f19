"""What a training run did: `RunResult`, the same for every runner and the public API's
`paac_tf.TrainResult` (no TensorFlow here: `import paac_tf` stays light), and its summary
(`summary_lines`: what the command prints at the end of every run)."""
import dataclasses
import os
import shlex
from typing import Any, Dict, Optional

REASONS = {"done": "total_steps reached", "target": "the average return target reached",
           "signal": "stopped by a signal", "callback": "stopped by a callback"}


@dataclasses.dataclass
class RunResult:
  """What a training run did, the same fields for every algorithm.

  Attributes:
    agent_steps: agent steps done, over the whole run (resumes included).
    updates: gradient steps (PAAC updates, Ape-X learner steps), over the whole run.
    episodes: episodes finished over the whole run.
    average_return: the average return of the last 100 episodes (nan before the first).
    reason: why training stopped: 'done' (total_steps reached), 'target' (the configured
      average return reached), 'signal' (SIGINT/SIGTERM) or 'callback' (a callback of
      `paac_tf.train` returned False).
    extras: what else the runner reports (Ape-X: replay and actor counts, ...).
    policy_dir: the run's newest exported SavedModel (`root_dir/policies/<model>/<version>`:
      the final export, or the newest one before it when this process exported none), or
      None if the run exported none.
    root_dir: the run directory (set by `paac_tf.train`).
    checkpoint: the run's latest checkpoint (`root_dir/train/ckpt-<agent step>`), or None
      (set by `paac_tf.train`).
    episodes_averaged: the episodes `average_return` averages (at most 100).
    evaluation: the last evaluation while training (policies/training_evaluation.py: its
      agent_steps, mean, std, episodes, returns, ...), or None (none in this process).
    eval_seconds: the wall time this process spent evaluating.
    eval_setting: the binding that sets the evaluation's cadence ('paac.eval_interval',
      'apex_learner.eval_interval'), or None.
    wall_time_s: the wall time of the call (set by `paac_tf.train`).
  """
  agent_steps: int
  updates: int
  episodes: int
  average_return: float
  reason: str
  extras: Dict[str, Any] = dataclasses.field(default_factory=dict)
  policy_dir: Optional[str] = None
  root_dir: Optional[str] = None
  checkpoint: Optional[str] = None
  episodes_averaged: int = 0
  evaluation: Optional[Dict[str, Any]] = None
  eval_seconds: float = 0.0
  eval_setting: Optional[str] = None
  wall_time_s: Optional[float] = None

  def as_dict(self):
    """Every field and extra in one flat dict (the form the logs print)."""
    out = {"agent_steps": self.agent_steps, "updates": self.updates, "episodes": self.episodes,
           "average_return": self.average_return, "reason": self.reason}
    out.update(self.extras)
    return out

  @property
  def metrics(self):
    """Every value the run returned (`as_dict`: the fields and the runner's extras)."""
    return self.as_dict()

  def summary(self):
    """The run's summary (`summary_lines`) as text."""
    return "\n".join(summary_lines(self))


def _hms(seconds):
  seconds = int(round(seconds))
  return "%d:%02d:%02d" % (seconds // 3600, seconds // 60 % 60, seconds % 60)


def summary_lines(result):
  """What the end of every run says: why it stopped, agent steps and wall time, the training
  average and the last evaluation, and where the curves and the policy are with the command
  that uses each (TensorBoard, evaluate, a GIF of the best episode, the plot)."""
  wall = ("" if result.wall_time_s is None else
          " in %s (%.0f s%s)" % (_hms(result.wall_time_s), result.wall_time_s,
                                 ", %.0f s of it evaluating" % result.eval_seconds
                                 if result.eval_seconds else ""))
  lines = ["Run summary: %s at agent step %d (%d updates, %d episodes)%s." % (
      REASONS.get(result.reason, result.reason), result.agent_steps, result.updates,
      result.episodes, wall)]
  if result.episodes_averaged:
    lines.append("  Training average return: %.2f over the last %d episodes." % (
        result.average_return, result.episodes_averaged))
  else:
    lines.append("  Training average return: no episode finished.")
  evaluation = result.evaluation
  if evaluation:
    lines.append("  Evaluation at agent step %d: mean return %.2f +- %.2f (std) over %d "
                 "episodes (the evaluation protocol)." % (
                     evaluation["agent_steps"], evaluation["mean"], evaluation["std"],
                     evaluation["episodes"]))
  else:
    lines.append("  Evaluation: none in this run%s." % (
        " (%s)" % result.eval_setting if result.eval_setting else ""))
  quote = shlex.quote
  if result.root_dir:
    train_dir = os.path.join(result.root_dir, "train")
    lines.append("  Curves:   tensorboard --logdir %s" % quote(train_dir))
    lines.append("  Plot:     python -m paac_tf.plot %s" % quote(result.root_dir))
  if result.policy_dir:
    policy = quote(result.policy_dir)
    lines.append("  Policy:   %s" % result.policy_dir)
    lines.append("  Evaluate: python -m paac_tf.evaluate --policy_dir=%s" % policy)
    lines.append("  GIF:      python -m paac_tf.evaluate --policy_dir=%s --record=best.gif "
                 "--output_dir=%s" % (policy, quote(result.policy_dir.rstrip("/") + "-gif")))
  else:
    lines.append("  Policy:   none exported yet.")
  return lines
