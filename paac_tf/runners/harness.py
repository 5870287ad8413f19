"""What every runner does around its loop, written once: the synchronous runner
(runners/sync/train_loop.py) and the Ape-X learner (runners/apex/learner.py) use it.

  harness = Harness(root_dir, env_name, algorithm, keep_checkpoints, model=..., ...)
  restored = harness.restore()         # the latest checkpoint, the counters, the window
  cadence = harness.make_cadence(...)  # summaries, checkpoints (harness.save), exports
  ... the runner's loop, calling cadence.summaries / after_update ...
  result = cadence.finish(...)         # a RunResult with the final export's policy_dir

The run directory holds train/ (run_config.json: `check_run_config` refuses to resume a
run made with another configuration; summaries; checkpoints) and policies/<model>/<agent
step>/ (the exports). A checkpoint holds the runner's trackables (the algorithm's network,
optimizer, ...) beside the agent-step and episode counters, `agent_steps` and `episodes`
(bookkeeping/cadence.py's `counters`), and the last 100 episodes (`episode_window`: the
training average goes on over the whole window after a resume). A checkpoint made before
the counter was named `agent_steps` holds it as `env_steps` and restores all the same
(checkpointing.RENAMED_KEYS); one made before `episode_window` restores with the window
empty (checkpointing.ADDED_KEYS).
"""
import os
from typing import Optional

import gin

from paac_tf import errors
from paac_tf.policies import run_settings
from paac_tf.policies import saved_model
from paac_tf.policies import training_evaluation
from paac_tf.bookkeeping import cadence as cadence_lib
from paac_tf.bookkeeping import checkpointing
from paac_tf.bookkeeping import checks
from paac_tf.bookkeeping import summaries

OptionalBool = checks.allows(checks.optional(checks.BOOL), Optional[bool])


def train_dir(root_dir):
  """root_dir/train: summaries, checkpoints and run_config.json."""
  return os.path.join(root_dir, "train")


def export_dir(root_dir, env_name):
  """root_dir/policies/<model_name>: where a run's exports go, one version per agent step."""
  return os.path.join(root_dir, "policies", saved_model.model_name(env_name))


def check_run_config(root_dir, run_config):
  """Records `run_config` in train/run_config.json, or refuses a run directory that holds a
  run made with another one (checkpointing.check_run_config)."""
  checkpointing.check_run_config(train_dir(root_dir), run_config)


@checks.configurable(denylist=["root_dir", "env_name", "algorithm"])
def training_exporter(root_dir, env_name, algorithm, greedy: OptionalBool = None):
  """Returns export(model, observation_spec, step, **metadata) writing `algorithm`'s policy
  of `model` to `export_dir(root_dir, env_name)`/<step>/, with the run's run_config.json and
  operative config in its metadata.

  Args:
    greedy: whether the exported policy takes argmax actions (None: the algorithm's
      `export_greedy`).
  """
  base = export_dir(root_dir, env_name)
  greedy = algorithm.export_greedy if greedy is None else bool(greedy)

  def export(model, observation_spec, step, **metadata):
    run_config = {}
    try:
      run_config = run_settings.read_run_config(root_dir)
    except errors.UserError:
      pass
    metadata = {"env_name": str(env_name), "train_step": int(step), "run_config": run_config,
                "operative_config": gin.operative_config_str(), **metadata}
    return saved_model.save_policy(algorithm, model, observation_spec, base, step, metadata,
                                   greedy=greedy)

  export.greedy = greedy   # how the exports act (the evaluation while training acts so)
  return export


class Harness:
  """One run's checkpoints, counters, episode window, cadence and exports (see the module
  docstring). `trackables`: what the checkpoint holds besides the counters."""

  def __init__(self, root_dir, env_name, algorithm, keep_checkpoints=3, **trackables):
    self.root_dir = root_dir
    self.export_dir = export_dir(root_dir, env_name)
    self.agent_steps, self.episodes = cadence_lib.counters()
    self.window = summaries.EpisodeWindow(100)
    self.window_variables = summaries.WindowVariables(100)
    self.checkpointer = checkpointing.Checkpointer(
        train_dir(root_dir), max_to_keep=keep_checkpoints, **trackables,
        agent_steps=self.agent_steps, episodes=self.episodes,
        episode_window=self.window_variables)
    self.export = training_exporter(root_dir, env_name, algorithm)
    self.env_name, self.algorithm = env_name, algorithm
    self.cadence = None

  def evaluator(self, network, make_model, observation_spec, episodes):
    """evaluate(agent_steps) -> the result of an evaluation of `network`'s policy by the
    protocol, `episodes` episodes acting as the exports do, on a snapshot (a network from
    `make_model()` with `network`'s weights copied; policies/training_evaluation.py)."""
    # The bindings, not the operative config: a process that builds no training
    # environment (the Ape-X learner's) has no make_environment in its operative config.
    preprocessing = run_settings.preprocessing_metadata(self.env_name, gin.config_str())
    evaluator = training_evaluation.TrainingEvaluator(
        self.algorithm, self.env_name, observation_spec, make_model, episodes,
        greedy=self.export.greedy, preprocessing=preprocessing)
    return lambda agent_steps: evaluator(network, agent_steps)

  def restore(self):
    """Restores the latest checkpoint, if any (whether one was): the trackables, the
    counters, the episodes of the run before this process (`window.total`) and the last
    100 of them (the window's; a checkpoint made before it held them: none)."""
    restored = self.checkpointer.restore_latest()
    self.window.total = int(self.episodes.numpy())
    self.window_variables.load(self.window)
    return restored

  @property
  def steps(self):
    """The agent steps of the run so far (restored)."""
    return int(self.agent_steps.numpy())

  def use_window(self, window):
    """Counts the episodes of `window` (a runner's own, e.g. the Ape-X actor reports')
    instead of the harness's, from the restored total and episodes."""
    window.total = self.window.total
    window.returns.extend(self.window.returns)
    window.lengths.extend(self.window.lengths)
    self.window = window

  def save(self, at_steps):
    """The checkpoint of agent step `at_steps`, with the counters."""
    cadence_lib.assign_counters(self.agent_steps, self.episodes, at_steps, self.window.total)
    self.window_variables.store(self.window)
    self.checkpointer.save(at_steps)

  def make_cadence(self, *, checkpoint_interval, export_interval, summary_interval,
                   start_steps, export, network, finite_keys, step_name="update", save=None,
                   evaluate=None, eval_interval=None, eval_setting=None):
    """The run's `cadence.Cadence`: `export(steps)` exports the policy of agent step
    `steps` (usually through `self.export`), `save` (default `self.save`) checkpoints it,
    `evaluate(steps)` (None: none) evaluates it every `eval_interval` agent steps and at
    the end (usually `self.evaluator`'s, on `network`); `eval_setting`: the binding of
    `eval_interval`, named by the run's summary."""
    # saved: a new run stopped before its first update still saves its step 0.
    self.cadence = cadence_lib.Cadence(
        self.root_dir, checkpoint_interval=checkpoint_interval,
        export_interval=export_interval, summary_interval=summary_interval,
        start_steps=start_steps, saved=self.checkpointer.manager.latest_checkpoint is not None,
        save=save or self.save, export=export, export_dir=self.export_dir, network=network,
        finite_keys=finite_keys, step_name=step_name, evaluate=evaluate,
        eval_interval=eval_interval, eval_setting=eval_setting)
    return self.cadence
