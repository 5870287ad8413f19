"""Evaluation while training: the evaluation protocol (evaluation.py: its own environment
seeds, no-op starts, whole games, raw scores, the assists the policy trained with) played
by a snapshot of the training network, every `eval_interval` agent steps and at the end.

The snapshot is a second network of the same architecture with the current weights copied
in: the evaluation acts with it, in its own environments, with its own random generators,
so training's update and random streams are those of a run without evaluation
(tests/test_training_evaluation.py). It acts as the run's export does (greedy or a sample,
`training_exporter.greedy`), so the score is the one `python -m paac_tf.evaluate` would
give the export of that step, up to the sampling's randomness. Each evaluation plays the
same environment seeds (EVAL_SEED + i), so successive evaluations are comparable.
"""
import time

import numpy as np
import tensorflow as tf

from paac_tf.policies import evaluation
from paac_tf.policies import replays
from paac_tf.policies import saved_model


class TrainingEvaluator:
  """evaluator(model, agent_steps) -> the evaluation's result dict (see `__call__`).

  Args:
    algorithm: the run's algorithm (its `policy_scores` and `exploration`).
    env_name: the run's environment (a `names.Environment` or its name).
    observation_spec: the environment's observation spec.
    make_model: makes a network of the training network's architecture (the snapshot).
    episodes: episodes per evaluation.
    greedy: whether the policy takes argmax actions (as the run's exports).
    preprocessing: the run's environment settings (`run_settings.preprocessing_metadata`).
    num_envs: environments played in parallel (at most `episodes`).
    noop_max: the protocol's no-op starts (Atari).
  """

  def __init__(self, algorithm, env_name, observation_spec, make_model, episodes, greedy,
               preprocessing, num_envs=evaluation.DEFAULT_NUM_ENVS, noop_max=30):
    self.algorithm, self.env_name = algorithm, str(env_name)
    self.observation_spec, self.make_model = observation_spec, make_model
    self.episodes, self.greedy = int(episodes), bool(greedy)
    self.preprocessing = dict(preprocessing or {})
    self.num_envs = min(int(num_envs), self.episodes)
    self.noop_max = int(noop_max)
    self.max_episode_frames = int(self.preprocessing.get("max_episode_frames") or 108000)
    self.epsilon = float(algorithm.eval_epsilon(self.greedy))
    self._snapshot = None
    self._serve = None

  def actions(self, observations):
    """The snapshot's actions for a batch of observations (evaluation.run_episodes' policy)."""
    obs = np.asarray(observations, self.observation_spec.dtype)
    return self._serve(tf.constant(obs)).numpy()

  def copy_weights(self, model):
    """The snapshot: `model`'s current weights, copied into the evaluation's network."""
    if self._snapshot is None:
      self._snapshot = self.make_model()
      policy = saved_model.KerasModelPolicy(self._snapshot, self.observation_spec,
                                            self.algorithm, self.greedy)
      self._serve = tf.function(lambda observation: policy.outputs(observation)["action"])
    self._snapshot.set_weights(model.get_weights())

  def __call__(self, model, agent_steps):
    """Evaluates `model`'s policy at agent step `agent_steps`: a dict with `agent_steps`,
    evaluation.return_stats' (`mean`, `std`, `episodes`, ...), `average_length`, the
    `returns` and `lengths`, the distinct counts, `assists`, `protocol`, `wall_time_s`."""
    start = time.monotonic()
    self.copy_weights(model)
    env = evaluation.make_eval_env(self.env_name, self.num_envs, evaluation.EVAL_SEED,
                                   self.noop_max, self.max_episode_frames, self.preprocessing)
    try:
      sources = []
      results = evaluation.run_episodes(self, env, self.episodes, self.epsilon,
                                        seed=evaluation.EVAL_SEED, sources=sources)
      applied = evaluation.assists(env, self.env_name, self.noop_max,
                                   self.max_episode_frames, self.epsilon, self.preprocessing)
    finally:
      env.close()
    returns = [float(r) for r, _ in results]
    lengths = [int(n) for _, n in results]
    counts = replays.distinct_counts(returns, lengths, [frames for _, frames in sources])
    metadata = {"algorithm": self.algorithm.name, "greedy": self.greedy,
                "action_selection": self.algorithm.exploration}
    return {"agent_steps": int(agent_steps), **evaluation.return_stats(returns),
            "average_length": float(np.mean(lengths)), **counts, "returns": returns,
            "lengths": lengths, "epsilon": self.epsilon, "assists": applied,
            "protocol": evaluation.protocol_description(
                self.env_name, self.noop_max, self.max_episode_frames, self.epsilon,
                self.num_envs, self.episodes, metadata, fire=applied["fire_at_game_start"]),
            "wall_time_s": round(time.monotonic() - start, 3)}
