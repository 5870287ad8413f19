"""The results folders of one game and config, one run per training seed.

A results folder (written by tools/campaign/publish_run.py) holds a run of game G (run_info.json's
env_name), config C (run_labels.config_of: run_info's "config", else derived from its
command) and seed S (its operative_config.gin's `train_eval.seed`; 0, the default, where the
file does not bind it), and its evaluations (run_results reads them: eval.json,
eval_at_<agent steps>.json, and eval_policy_only*.json beside them), each at the agent step
of the evaluated policy (its train_step).

`by_seed` keeps one run per seed, the issue's unit: where several folders hold runs of one
game, config and seed (one run published twice, e.g. results/pong_paac and the same run
resumed, results/pong_paac_extended; or a seed run again for another purpose), the one that
counts is the one evaluated at the budget, under the evaluation protocol of issue 27 (env
seeds apart from training's: run_record.seeds_apart) before an earlier one, then the one
that started first (the first training summary's wall time), then the one with fewer
frames; the others are returned as repeats, to be named, not counted. Runs that stopped
short of the budget are returned apart.
"""
import csv
import dataclasses
import os
from typing import Dict, List, Optional

from paac_tf import errors
from paac_tf.algorithms import registry
from tools import reference_scores as ref
from tools import events
from tools.reports import run_groups
from tools.reports import run_labels
from tools.reports import run_record
from tools.reports import run_results

SUMMARIES_CSV = events.SUMMARIES_CSV
DEFAULT_SEED = 0        # train_eval.seed's default


@dataclasses.dataclass
class SeedRun:
  """One results folder: a run of one game, config and seed, and its evaluations."""
  folder: str
  info: dict                             # its run_info.json
  game: Optional[str]
  config: Optional[str]
  algorithm: Optional[str]
  seed: int
  frames: Optional[float]                # of the whole run (run_info.json)
  started: Optional[float]               # wall time of its first training summary
  results: List[run_record.RunRecord]    # one per evaluation (run_results.build_results);
                                         # [] for a folder without one

  @property
  def name(self):
    return os.path.basename(os.path.normpath(self.folder))

  def evaluation_at(self, agent_steps):
    """The RunRecord of the folder's evaluation of the policy trained `agent_steps` agent
    steps (its train_step), or None."""
    found = [r for r in self.results if r.evaluated and r.agent_steps == int(agent_steps)]
    return found[-1] if found else None

  def evaluations(self):
    """{agent steps of the evaluated policy: RunRecord}, every evaluation of the folder."""
    return {r.agent_steps: r for r in self.results if r.evaluated and r.agent_steps}


def seed_of(folder):
  """The run's `train_eval.seed` from the folder's operative_config.gin (DEFAULT_SEED where
  the file is missing or does not bind it)."""
  seed = run_groups.operative_binding(folder, "train_eval.seed")
  try:
    return int(seed) if seed is not None else DEFAULT_SEED
  except ValueError:
    return DEFAULT_SEED


def started(folder):
  """The wall time of the folder's first training summary (summaries.csv's first row), or
  None: two folders of one run share it to the digit."""
  path = os.path.join(folder, SUMMARIES_CSV)
  if not os.path.isfile(path):
    return None
  with open(path, newline="", encoding="utf-8") as f:
    first = next(csv.DictReader(f), None)
  try:
    return float(first["wall_time"]) if first else None
  except (KeyError, TypeError, ValueError):
    return None


def _published_folders(top):
  """Folders under `top` (not in an archive/ below it) with a summaries.csv and a
  run_info.json: the results folders tools/campaign/publish_run.py writes (not, e.g., a run
  directory's saved state: results/campaign_state/)."""
  for dirpath, _, filenames in events.walk(top):
    if (SUMMARIES_CSV in filenames and run_groups.RUN_INFO in filenames and
        not run_labels.archived_below(dirpath, top)):
      yield dirpath


def _read_folder(folder):
  """SeedRun of one results folder: its evaluations as run_results reads them (none: its
  run_info.json alone)."""
  try:
    results = run_results.collect([folder])
  except errors.UserError:              # not evaluated
    results = []
  info = events.read_json(os.path.join(folder, run_groups.RUN_INFO)) or {}
  if results:
    newest = results[-1]
    game, config, algorithm = newest.game, newest.config, newest.algorithm
    frames = newest.run_frames
  else:
    game, config = ref.game_key(info.get("env_name")), run_labels.config_of(info)[0]
    algorithm = info.get("algorithm")
    frames = info.get("frames") or (info.get("agent_steps") or 0) * ref.FRAMES_PER_AGENT_STEP
  return SeedRun(folder=folder, info=info, game=game, config=config, algorithm=algorithm,
                 seed=seed_of(folder), frames=frames or None, started=started(folder),
                 results=results)


def find(results_dir):
  """[SeedRun] of every results folder under `results_dir` (not its archive/), by folder."""
  return [_read_folder(f) for f in sorted(_published_folders(os.path.abspath(results_dir)))]


def find_one(folder):
  """The SeedRun of one results folder, or None where it is not one (no summaries.csv or no
  run_info.json)."""
  found = find(folder)
  return found[0] if found else None


def _preference(run, budget_steps):
  evaluation = run.evaluation_at(budget_steps)
  return (evaluation is None,
          evaluation is None or not run_record.seeds_apart(evaluation.evaluation),
          run.started if run.started is not None else float("inf"),
          run.frames if run.frames is not None else float("inf"), run.name)


@dataclasses.dataclass
class SeedGroup:
  """The runs of one game and config: one per seed, and those left out."""
  game: str
  config: str
  runs: Dict[int, SeedRun]                  # seed -> the run that counts, by seed
  repeats: List[tuple]                      # (SeedRun left out, the SeedRun that counts)
  short: List[SeedRun]                      # stopped before the budget


def by_seed(runs, game, config, budget_steps, algorithm=registry.DEFAULT):
  """SeedGroup of the runs of `game` (any spelling ref.game_key knows) and `config` (the
  exact label) of `algorithm`, at a budget of `budget_steps` agent steps."""
  game = ref.game_key(game) or game
  mine = [r for r in runs if r.game == game and r.config == config and
          str(r.algorithm or "").lower() == algorithm]
  budget_frames = budget_steps * ref.FRAMES_PER_AGENT_STEP
  short = [r for r in mine if r.frames is not None and r.frames < budget_frames]
  chosen, repeats = {}, []
  for run in sorted((r for r in mine if r not in short),
                    key=lambda r: _preference(r, budget_steps)):
    if run.seed in chosen:
      repeats.append((run, chosen[run.seed]))
    else:
      chosen[run.seed] = run
  return SeedGroup(game=game, config=config, runs=dict(sorted(chosen.items())),
                   repeats=repeats, short=short)
