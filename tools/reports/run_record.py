"""The RunRecord (what compare knows about one published run) and what an eval.json says.

`run_results` fills RunRecord records from what runs left on disk; the tables, plots and
seed reports read them. Beside the record: the statistics of an evaluation (`eval_stats`,
`standard_error`), which evaluations are apart from training (`seeds_apart`) or of a
policy without its FIRE assist (`is_policy_only`), and the names shown for an algorithm
and whether an environment is Atari.
"""
import dataclasses
import os
import statistics
from typing import List, Optional

from paac_tf.algorithms import registry
from paac_tf.envs import names
from tools import reference_scores as ref
from tools import events


@dataclasses.dataclass
class RunRecord:
  """What compare knows about one run."""
  name: str
  root: str                                # run directory, or the folder of its eval.json
  folder: str = ""                         # the results folder that names the row
  config: Optional[str] = None             # config label (run_labels.config_of)
  config_explicit: bool = False            # from run_info's "config" (not the command)
  env_name: Optional[str] = None
  algorithm: Optional[str] = None
  network: Optional[str] = None
  evaluation: Optional[dict] = None        # the chosen eval.json's contents
  eval_path: Optional[str] = None
  other_evals: List[str] = dataclasses.field(default_factory=list)   # the run's earlier ones
  policy_only: Optional[dict] = None       # the same policy without the FIRE assist
  policy_only_path: Optional[str] = None
  newer_eval: Optional[str] = None         # set on an earlier evaluation: the run's newest
  run_events: Optional[events.RunEvents] = None
  summaries_used: bool = False             # a number of the row came from run_events
  run_info: dict = dataclasses.field(default_factory=dict)
  run_info_path: Optional[str] = None
  command: Optional[str] = None
  agent_steps: Optional[int] = None        # of the evaluated policy if known, else the run's
  run_agent_steps: Optional[int] = None    # the whole run's
  frames: Optional[float] = None
  run_frames: Optional[float] = None
  steps_source: str = ""
  wall_time_s: Optional[float] = None
  wall_time_text: Optional[str] = None     # wall_time.txt that is not a number
  wall_time_source: str = ""
  hardware: Optional[str] = None
  notes: List[str] = dataclasses.field(default_factory=list)

  @property
  def game(self):
    return ref.game_key(self.env_name)

  @property
  def atari(self):
    return is_atari(self.env_name)

  @property
  def evaluated(self):
    return self.evaluation is not None

  @property
  def score(self):
    """(mean, std, episodes) of the evaluation, or None."""
    if self.evaluation is None:
      return None
    return eval_stats(self.evaluation)

  @property
  def training_return(self):
    """The last training average (ScalarPoint), or None."""
    if self.run_events is None:
      return None
    return (self.run_events.last(self.run_events.training_return_tag()) or
            self.run_events.last(events.RETURN_VS_UPDATES))

  @property
  def shown_score(self):
    if self.evaluated:
      return self.score[0]
    point = self.training_return
    return point.value if point else None

  @property
  def hns(self):
    """Human-normalized score (fraction) of the shown score, or None."""
    return ref.human_normalized(self.env_name, self.shown_score)

  @property
  def folder_name(self):
    return os.path.basename(os.path.normpath(self.folder or self.root))

  @property
  def label(self):
    parts = [self.game or self.env_name or "?", algorithm_name(self.algorithm)]
    return " ".join(p for p in parts if p)


def algorithm_name(algorithm):
  if not algorithm:
    return ""
  name = str(algorithm)
  shown = registry.display_name(name.lower())
  return name if shown == name.lower() else shown


def is_atari(env_name):
  if not env_name:
    return False
  try:
    return names.resolve_atari(str(env_name)) is not None
  except Exception:  # pylint: disable=broad-except  (ale-py missing: use the tables)
    return ref.game_key(env_name) is not None


def eval_stats(evaluation):
  """(mean, sample std, episodes) from an eval.json, tolerating a missing mean/std/episodes.

  The std is the sample std (ddof 1), computed from the returns when the file has them
  (evaluations before the seeds-and-assists protocol recorded the population std)."""
  returns = [float(r) for r in evaluation.get("returns") or []]
  mean = evaluation.get("mean")
  if mean is None and returns:
    mean = sum(returns) / len(returns)
  std = statistics.stdev(returns) if len(returns) > 1 else evaluation.get("std")
  episodes = evaluation.get("episodes")
  if episodes is None:
    episodes = len(returns) or None
  return (float(mean) if mean is not None else None,
          float(std) if std is not None else None, episodes)


def standard_error(evaluation):
  """The standard error of the evaluation's mean (sample std / sqrt(N)), or None."""
  _, std, episodes = eval_stats(evaluation)
  return std / episodes ** 0.5 if std is not None and episodes else None


def is_policy_only(evaluation):
  """Whether an eval.json evaluates a FIRE-reset policy with its own actions only (shown
  beside the policy's evaluation with the assist, not as an evaluation of its own)."""
  applied = evaluation.get("assists") or {}
  return bool(applied.get("trained_with_fire_reset")) and not applied.get("fire_at_game_start")


def off_protocol(evaluation):
  """Whether an eval.json was made at an epsilon other than its export's default (given
  with `paac_tf.evaluate --epsilon`): such an evaluation is never a run's score. Those made
  before eval.json recorded `default_epsilon` count as the protocol's."""
  return ("default_epsilon" in evaluation and
          float(evaluation.get("epsilon") or 0.0) != float(evaluation["default_epsilon"]))


def seeds_apart(evaluation):
  """Whether the evaluation's env seeds are recorded and apart from training's (>= 10**9)."""
  seeds = evaluation.get("env_seeds")
  return bool(seeds) and int(seeds[0]) >= EVAL_SEED_FLOOR


# How every report marks an evaluation made before issue 27's protocol (not seeds_apart).
EARLIER_MARK = "(earlier protocol)"
EVAL_SEED_FLOOR = 10**9     # policies.evaluation.EVAL_SEED: training seeds lie below
