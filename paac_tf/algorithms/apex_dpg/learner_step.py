"""The Ape-X DPG learner's compiled step: one prioritized batch -> one update of the critic
and the actor -> new priorities.

Per batch of replay items (see `paac_tf/runners/apex/replay_layout.py` for the layout):
  1. rebuild s_t and s_{t+k} from the items' frames; a_t from the transition column;
  2. importance weights w_i = (N * P(i))^-beta / max_j w_j from Reverb's sample info;
  3. the critic's n-step targets y = R + D * Q_target(s', mu_target(s')) (losses.py);
  4. critic: loss = mean(w * 0.5 * (y - Q(s, a))^2) (or Huber), gradients clipped to a
     global norm, Adam;
  5. actor: loss = -mean(Q(s, mu(s))), the deterministic policy gradient through the
     critic (after its update), taken with respect to the actor's variables only, each
     element clipped to [-c, c] if asked (the Ape-X paper's DPG clips to [-1, 1]), Adam;
  6. target networks: a copy of the online ones every `target_update_period` steps, or
     Polyak averaging with `target_update_tau` at every step;
  7. returns the items' keys and new priorities |y - Q(s, a)| + epsilon, which the caller
     writes back to Reverb.
"""
import tensorflow as tf

from paac_tf.algorithms.apex_dpg import losses
from paac_tf.algorithms.replay import prioritized
from paac_tf.bookkeeping import checks


@checks.configurable(module="apex_dpg", denylist=["networks", "target_networks", "layout"])
class ApexDpgLearnerStep(tf.Module):
  """Holds the online and target actor and critic and their optimizers; `train(sample)` is
  compiled.

  Args:
    networks, target_networks: `.actor` and `.critic` each (algorithm.ActorAndCritic).
    layout: the replay's `ReplayLayout` (continuous actions).
    actor_learning_rate: Adam's step size for the actor.
    critic_learning_rate: Adam's step size for the critic.
    adam_epsilon: Adam's epsilon.
    max_grad_norm: the critic's and the actor's gradients are each clipped to this global
      norm (None: not clipped).
    actor_grad_clip: the actor's gradient is clipped element-wise to [-c, c] before that
      (None: not clipped; the Ape-X paper's DPG: 1).
    target_update_period: learner steps between copies of the online networks into the
      target networks (used when `target_update_tau` is None).
    target_update_tau: Polyak averaging at every step, target <- tau * online + (1 - tau) *
      target (DDPG's 0.001, TD3's 0.005); None: periodic copies.
    importance_beta: the importance-sampling exponent beta.
    huber_delta: the critic's Huber threshold (None: the squared error).
    jit_compile: compile the step with XLA (opt-in: docs/performance.md).
  """
  # The metrics that must stay finite (the learner stops, keeping its last checkpoint).
  finite_metric_keys = ("Losses/critic", "Losses/actor", "Optimizer/critic_global_norm",
                        "Optimizer/actor_global_norm")

  def __init__(self, networks, target_networks, layout,
               actor_learning_rate: checks.Positive = 1e-4,
               critic_learning_rate: checks.Positive = 1e-4,
               adam_epsilon: checks.Positive = 1e-8,
               max_grad_norm: checks.OptionalPositive = None,
               actor_grad_clip: checks.OptionalPositive = None,
               target_update_period: checks.Count = 100,
               target_update_tau: checks.allows(checks.optional(checks.FRACTION)) = None,
               importance_beta: checks.Probability = 0.4,
               huber_delta: checks.OptionalPositive = None, jit_compile: checks.Bool = False):
    super().__init__(name="apex_dpg_learner_step")
    self.networks = networks
    self.target_networks = target_networks
    self.layout = layout
    self.max_grad_norm = None if max_grad_norm is None else float(max_grad_norm)
    self.actor_grad_clip = None if actor_grad_clip is None else float(actor_grad_clip)
    self.target_update_period = int(target_update_period)
    self.target_update_tau = None if target_update_tau is None else float(target_update_tau)
    self.importance_beta = float(importance_beta)
    self.huber_delta = None if huber_delta is None else float(huber_delta)
    self.actor_learning_rate = float(actor_learning_rate)
    self.critic_learning_rate = float(critic_learning_rate)
    self.actor_optimizer = tf.keras.optimizers.legacy.Adam(self.actor_learning_rate,
                                                           epsilon=adam_epsilon)
    self.critic_optimizer = tf.keras.optimizers.legacy.Adam(self.critic_learning_rate,
                                                            epsilon=adam_epsilon)
    self.steps = tf.Variable(0, dtype=tf.int64, trainable=False, name="learner_steps")
    self.train = tf.function(self._train, jit_compile=jit_compile)

  def build(self):
    """Creates optimizer slots (so a checkpoint restores them) and syncs the targets."""
    # pylint: disable=protected-access
    self.actor_optimizer._create_all_weights(self.networks.actor.trainable_variables)
    self.critic_optimizer._create_all_weights(self.networks.critic.trainable_variables)
    self._update_targets(1.0)

  @property
  def network(self):
    """The online actor and critic: published to the actors (and checked finite)."""
    return self.networks

  @property
  def policy_network(self):
    """The network an export holds: the online actor."""
    return self.networks.actor

  @property
  def optimizer(self):
    """The critic's optimizer (its iterations count the learner's updates)."""
    return self.critic_optimizer

  def checkpoint_trackables(self):
    """What a checkpoint holds of the learner."""
    return {"actor": self.networks.actor, "critic": self.networks.critic,
            "target_actor": self.target_networks.actor,
            "target_critic": self.target_networks.critic,
            "actor_optimizer": self.actor_optimizer,
            "critic_optimizer": self.critic_optimizer, "learner_steps": self.steps}

  def _update_targets(self, tau):
    for target, online in zip(self.target_networks.variables, self.networks.variables):
      target.assign(tau * online + (1.0 - tau) * target if tau < 1.0 else online)

  def _apply(self, optimizer, loss_tape, loss, variables, element_clip=None):
    grads = loss_tape.gradient(loss, variables)
    if element_clip is not None:
      grads = [tf.clip_by_value(g, -element_clip, element_clip) for g in grads]
    if self.max_grad_norm is None:
      global_norm = tf.linalg.global_norm(grads)
    else:
      grads, global_norm = tf.clip_by_global_norm(grads, self.max_grad_norm)
    optimizer.apply_gradients(zip(grads, variables))
    return global_norm

  def _train(self, sample):
    """sample: reverb.ReplaySample of a batch -> (keys [B] uint64, priorities [B] float64,
    metrics dict of scalars)."""
    info, data = sample.info, self.layout.unpack(sample.data)
    obs, next_obs = self.layout.observations(data["frames"], data["next_offset"])
    actor, critic = self.networks.actor, self.networks.critic
    weights = prioritized.importance_weights(info.probability, info.table_size,
                                             self.importance_beta)
    next_q = self.target_networks.critic((next_obs, self.target_networks.actor(next_obs)))
    targets = losses.critic_targets(data["reward"], data["discount"], next_q)

    with tf.GradientTape() as tape:
      q_taken = critic((obs, data["action"]), training=True)
      td_errors = losses.td_errors(targets, q_taken)
      critic_loss = losses.critic_loss(td_errors, weights, self.huber_delta)
    critic_norm = self._apply(self.critic_optimizer, tape, critic_loss,
                              critic.trainable_variables)

    with tf.GradientTape() as tape:
      q_policy = critic((obs, actor(obs, training=True)))
      actor_loss = losses.actor_loss(q_policy)
    actor_norm = self._apply(self.actor_optimizer, tape, actor_loss, actor.trainable_variables,
                             self.actor_grad_clip)

    self.steps.assign_add(1)
    if self.target_update_tau is not None:
      self._update_targets(self.target_update_tau)
    elif self.steps % self.target_update_period == 0:
      self._update_targets(1.0)
    metrics = {
        "Losses/critic": critic_loss,
        "Losses/actor": actor_loss,
        "Losses/mean_abs_td_error": tf.reduce_mean(tf.abs(td_errors)),
        "Optimizer/critic_global_norm": critic_norm,
        "Optimizer/actor_global_norm": actor_norm,
        "Optimizer/learning_rate": tf.constant(self.critic_learning_rate),
        "Q/mean_q_taken": tf.reduce_mean(q_taken),
        "Q/mean_q_policy": tf.reduce_mean(q_policy),
        "Q/mean_target": tf.reduce_mean(targets),
        "Replay/mean_importance_weight": tf.reduce_mean(weights),
        "Replay/mean_sampled_priority": tf.reduce_mean(tf.cast(info.priority, tf.float32)),
    }
    return info.key, prioritized.priorities_from_td(td_errors), metrics
