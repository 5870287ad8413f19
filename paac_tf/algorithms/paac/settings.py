"""PAAC's settings: one gin namespace, `paac.*`, read once per run.

    paac.num_envs = 32          # n_e
    paac.t_max = 5
    paac.learning_rate = 0.0224

The network, the environments' batch (n_e, n_w), t_max, the optimizer and the loss, and the
run's cadence (checkpoints, summaries, exports, the stop-at-return target). The training loop
(runners/sync/train_loop.py) builds one `PaacSettings` from the configuration at its start
(`PaacSettings()`) and passes it down; nothing below reads gin.
"""
import dataclasses

from paac_tf.bookkeeping import checks
from paac_tf.bookkeeping import config
from paac_tf.bookkeeping import stop_target
from paac_tf.networks import precision as precision_lib
from paac_tf.networks import torsos


NAMESPACE = "paac"
# atari.gin's evaluation cadence: 10 episodes every 1M agent steps (see docs/performance.md,
# "Evaluation while training", for its measured cost).
EVAL_INTERVAL = 1_000_000
# Before this namespace: the runner's `paac_train.*` and the agent's `PaacAgent.*`.
config.moved(("paac_train", "PaacAgent"), NAMESPACE)
config.removed(("paac_train", "PaacAgent", NAMESPACE), "overlap_learner",
               "the loop is the original's order (runners/sync/train_loop.py)")
config.removed(("paac_train", "PaacAgent", NAMESPACE), "reuse_activations",
               "the gradients come from a GradientTape over the model")


@checks.configurable(NAMESPACE)
@dataclasses.dataclass(frozen=True)
class PaacSettings:
  """PAAC's hyperparameters and its run's cadence (defaults: the original code's, atari.gin).

  Attributes:
    network: the torso: 'arch_nips' (the original code's), 'arch_nature' or 'mlp'.
    mlp_units: the hidden layers of 'mlp'.
    initializer: 'torch' (the original code's) or 'orthogonal'.
    num_envs: n_e, environments stepped as one batch.
    num_workers: n_w, the processes (gymnasium, portable Atari) or C++ threads (the Atari
      vector env, capped at the cores) that step them; 0: in this process.
    t_max: steps per rollout; one update per rollout of n_e * t_max agent steps.
    learning_rate: the initial learning rate, annealed linearly to 0 over `lr_anneal_steps`
      agent steps (None: the whole run).
    lr_anneal_steps: the agent steps over which the learning rate falls to 0 (None: the
      run's total_steps).
    rmsprop_decay: the decay of RMSProp's average of squared gradients (TF1's RMSProp,
      networks/optimizers.py).
    rmsprop_epsilon: RMSProp's epsilon, inside the square root (as TF1's).
    entropy_coef: the entropy bonus's weight in the loss, loss_scale * (policy loss -
      entropy_coef * entropy + value_coef * value loss) (update.py).
    value_coef: the value loss's weight in that loss.
    loss_scale: the factor of the whole loss, so of its gradients before their clip.
    max_grad_norm: the global-norm clip of the gradients.
    gamma: the discount of the n-step returns.
    checkpoint_interval: agent steps between checkpoints.
    keep_checkpoints: the newest checkpoints kept (older ones are deleted).
    summary_interval: updates between summaries.
    export_interval: agent steps between SavedModel exports (None: at the end only).
    eval_interval: agent steps between evaluations while training, by the evaluation
      protocol on a snapshot of the network (policies/training_evaluation.py; Eval/* in
      TensorBoard and train/summaries.csv), and one at the end of a run that got past the
      first; None: no evaluation.
    eval_episodes: the episodes of each evaluation while training.
    stop_at_average_return: stop once the last 100 episodes average at least this, on
      `target_env_name` (bookkeeping/stop_target.py; recorded by `config.parse`).
    target_env_name: the environment `stop_at_average_return` is for (None: this run's);
      recorded by `config.parse` from the config that binds the target.
    precision: the torso's compute precision, 'float32', 'mixed_bfloat16' or 'auto'
      (opt-in: networks/precision.py).
    jit_compile: compile acting and the update with XLA (opt-in: docs/performance.md).
  """
  network: checks.one_of(torsos.TORSOS) = "arch_nips"
  mlp_units: checks.Units = (64, 64)
  initializer: checks.one_of(torsos.INITIALIZERS) = "torch"
  num_envs: checks.Count = 32
  num_workers: checks.NonNegativeInt = 8
  t_max: checks.Count = 5
  learning_rate: checks.Positive = 0.0224
  lr_anneal_steps: checks.OptionalCount = None
  rmsprop_decay: checks.Decay = 0.99
  rmsprop_epsilon: checks.Positive = 0.1
  entropy_coef: checks.NonNegative = 0.02
  value_coef: checks.NonNegative = 0.25
  loss_scale: checks.Positive = 5.0
  max_grad_norm: checks.Positive = 3.0
  gamma: checks.Fraction = 0.99
  checkpoint_interval: checks.Count = 1_000_000
  keep_checkpoints: checks.Count = 3
  summary_interval: checks.Count = 20
  export_interval: checks.OptionalCount = None
  eval_interval: checks.OptionalCount = EVAL_INTERVAL
  eval_episodes: checks.Count = 10
  stop_at_average_return: checks.OptionalNumber = None
  target_env_name: stop_target.TargetEnvName = None
  precision: checks.one_of(precision_lib.PRECISIONS) = "float32"
  jit_compile: checks.Bool = False
  namespace = NAMESPACE   # (not a field: the gin name of these settings)

  @property
  def network_settings(self):
    """{network, mlp_units, initializer}: what builds the network and its recorded spec."""
    return {"network": self.network, "mlp_units": tuple(self.mlp_units),
            "initializer": self.initializer}

  @property
  def steps_per_update(self):
    """n_e * t_max agent steps."""
    return self.num_envs * self.t_max

