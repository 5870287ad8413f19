"""The Ape-X learner's compiled step: one prioritized batch -> one update -> new priorities.

Per batch of replay items (see `paac_tf/runners/apex/replay_layout.py` for the layout):
  1. rebuild s_t and s_{t+k} from the items' frames;
  2. importance weights w_i = (N * P(i))^-beta / max_j w_j from Reverb's sample info;
  3. double-Q n-step targets R + D * Q_target(s', argmax Q_online(s')) (losses.py);
  4. loss = mean(w * huber(target - Q_online(s, a))); gradients clipped to global norm
     40; centered RMSProp (TF1's, as the paper: lr 0.00025 / 4, decay 0.95, epsilon
     1.5e-7 inside the square root) or Adam;
  5. every `target_update_period` steps the target network copies the online one;
  6. returns the items' keys and new priorities |TD error| + epsilon (as Acme's DQN
     learner does), which the caller writes back to Reverb.
"""
import tensorflow as tf

from paac_tf.networks import optimizers
from paac_tf.algorithms.apex import losses
from paac_tf.algorithms.replay import prioritized
from paac_tf.bookkeeping import checks

OPTIMIZERS = ("rmsprop", "adam")


@checks.configurable(module="apex", denylist=["q_network", "target_network", "layout"])
class ApexLearnerStep(tf.Module):
  """Holds online and target networks and the optimizer; `train(sample)` is compiled.

  Args:
    q_network, target_network: the online and the target dueling Q-networks.
    layout: the replay's `ReplayLayout`.
    optimizer: 'rmsprop' (centered, TF1's: networks/optimizers.py; the paper's) or 'adam'.
    learning_rate: the optimizer's step size (the paper's 0.00025 / 4).
    rmsprop_decay: RMSProp's decay of its gradient averages.
    rmsprop_epsilon: RMSProp's epsilon, inside the square root.
    adam_epsilon: Adam's epsilon (with optimizer 'adam').
    max_grad_norm: the gradients are clipped to this global norm.
    target_update_period: learner steps between copies of the online network into the
      target network.
    importance_beta: the importance-sampling exponent beta of the prioritized batches'
      weights.
    huber_delta: the Huber loss's threshold between its squared and its linear part.
    jit_compile: compile the step with XLA (opt-in: docs/performance.md).
  """
  # The metrics that must stay finite (the learner stops, keeping its last checkpoint).
  finite_metric_keys = ("Losses/huber", "Optimizer/global_norm")

  def __init__(self, q_network, target_network, layout,
               optimizer: checks.one_of(OPTIMIZERS) = "rmsprop",
               learning_rate: checks.Positive = 0.00025 / 4,
               rmsprop_decay: checks.Decay = 0.95, rmsprop_epsilon: checks.Positive = 1.5e-7,
               adam_epsilon: checks.Positive = 1.5e-4, max_grad_norm: checks.Positive = 40.0,
               target_update_period: checks.Count = 2500,
               importance_beta: checks.Probability = 0.4, huber_delta: checks.Positive = 1.0,
               jit_compile: checks.Bool = False):
    super().__init__(name="apex_learner_step")
    if optimizer not in OPTIMIZERS:
      raise ValueError("ApexLearnerStep.optimizer must be one of %s, got %r."
                       % (", ".join(OPTIMIZERS), optimizer))
    self.q_network = q_network
    self.target_network = target_network
    self.layout = layout
    self.max_grad_norm = float(max_grad_norm)
    self.target_update_period = int(target_update_period)
    self.importance_beta = float(importance_beta)
    self.huber_delta = float(huber_delta)
    self.optimizer_name = optimizer
    if optimizer == "rmsprop":
      self.optimizer = optimizers.RMSProp(float(learning_rate), decay=rmsprop_decay,
                                          epsilon=rmsprop_epsilon, centered=True)
    else:
      self.optimizer = tf.keras.optimizers.legacy.Adam(float(learning_rate),
                                                       epsilon=adam_epsilon)
    self.learning_rate = float(learning_rate)
    self.steps = tf.Variable(0, dtype=tf.int64, trainable=False, name="learner_steps")
    self.train = tf.function(self._train, jit_compile=jit_compile)

  def build(self):
    """Creates optimizer slots (so a checkpoint restores them) and syncs the target."""
    variables = self.q_network.trainable_variables
    if self.optimizer_name == "rmsprop":
      self.optimizer.build(variables)
    else:
      self.optimizer._create_all_weights(variables)  # pylint: disable=protected-access
    self.update_target()

  @property
  def network(self):
    """The online network: published to the actors (and checked finite)."""
    return self.q_network

  @property
  def policy_network(self):
    """The network an export holds: the online network."""
    return self.q_network

  def checkpoint_trackables(self):
    """What a checkpoint holds of the learner (the names are those of existing runs)."""
    return {"q_network": self.q_network, "target_network": self.target_network,
            "optimizer": self.optimizer, "learner_steps": self.steps}

  def update_target(self):
    for target, online in zip(self.target_network.variables, self.q_network.variables):
      target.assign(online)

  def _train(self, sample):
    """sample: reverb.ReplaySample of a batch -> (keys [B] uint64, priorities [B] float64,
    metrics dict of scalars)."""
    info, data = sample.info, self.layout.unpack(sample.data)
    obs, next_obs = self.layout.observations(data["frames"], data["next_offset"])
    weights = prioritized.importance_weights(info.probability, info.table_size,
                                                self.importance_beta)
    next_q_online = self.q_network(next_obs)
    next_q_target = self.target_network(next_obs)
    targets = losses.double_q_targets(data["reward"], data["discount"], next_q_online,
                                      next_q_target)
    variables = self.q_network.trainable_variables
    with tf.GradientTape() as tape:
      q_values = self.q_network(obs, training=True)
      q_taken = losses.chosen_q(q_values, data["action"])
      td_errors = targets - q_taken
      loss = losses.weighted_huber_loss(td_errors, weights, self.huber_delta)
    grads = tape.gradient(loss, variables)
    grads, global_norm = tf.clip_by_global_norm(grads, self.max_grad_norm)
    self.optimizer.apply_gradients(zip(grads, variables))
    self.steps.assign_add(1)
    if self.steps % self.target_update_period == 0:
      self.update_target()
    new_priorities = prioritized.priorities_from_td(td_errors)
    metrics = {
        "Losses/huber": loss,
        "Losses/mean_abs_td_error": tf.reduce_mean(tf.abs(td_errors)),
        "Optimizer/global_norm": global_norm,
        "Optimizer/learning_rate": tf.constant(self.learning_rate),
        "Q/mean_q_taken": tf.reduce_mean(q_taken),
        "Q/mean_target": tf.reduce_mean(targets),
        "Replay/mean_importance_weight": tf.reduce_mean(weights),
        "Replay/mean_sampled_priority": tf.reduce_mean(tf.cast(info.priority, tf.float32)),
    }
    return info.key, new_priorities, metrics
