"""What a training run did: `RunResult`, the same for every runner and the public API's
`paac_tf.TrainResult` (no TensorFlow here: `import paac_tf` stays light)."""
import dataclasses
from typing import Any, Dict, Optional


@dataclasses.dataclass
class RunResult:
  """What a training run did, the same fields for every algorithm.

  Attributes:
    agent_steps: agent steps done, over the whole run (resumes included).
    updates: gradient steps (PAAC updates, Ape-X learner steps), over the whole run.
    episodes: episodes finished over the whole run.
    average_return: the average return of the last 100 episodes (nan before the first).
    reason: why training stopped: 'done' (total_steps reached), 'target' (the configured
      average return reached) or 'signal' (SIGINT/SIGTERM).
    extras: what else the runner reports (Ape-X: replay and actor counts, ...).
    policy_dir: the run's newest exported SavedModel (`root_dir/policies/<model>/<version>`:
      the final export, or the newest one before it when this process exported none), or
      None if the run exported none.
    root_dir: the run directory (set by `paac_tf.train`).
    checkpoint: the run's latest checkpoint (`root_dir/train/ckpt-<agent step>`), or None
      (set by `paac_tf.train`).
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
