"""PAAC as a TF-Agents agent: `PaacTFAgent`, a `tf_agents.agents.TFAgent` for TF-Agents'
drivers, replay buffers and environments (TF-Agents itself has no A2C agent).

It holds the actor-critic model, an optimizer (by default the project's TF1-style RMSProp)
and PAAC's settings (`PaacSettings`: the loss's), and trains them with the CLI's update,
`update.train_step`, on a TF-Agents `Trajectory` [B, T + 1]:

  experience[:, t]   step t: time step ts_t (step_type, observation), action a_t, and the
                     next time step's type, reward and discount (TF-Agents' layout);
  steps 0..T-1       the rollout's T transitions (rewards, discounts, next_is_last, is_last
                     as update.py defines them);
  step T             only its observation counts: the bootstrap value V(s_T) of the
                     rollout's last transition.

The values V(s_0..s_T) come from the model in `train`, under the weights being trained:
the weights that acted when each rollout is trained on right after it was collected (the
PAAC loop's order; examples/tf_agents_cartpole.py). `collect_policy` samples from the
actor's logits; `policy` takes their argmax (TF-Agents' `GreedyPolicy`).
"""
import tensorflow as tf
import tensorflow_probability as tfp
from tf_agents.agents import data_converter
from tf_agents.agents import tf_agent
from tf_agents.distributions import shifted_categorical
from tf_agents.policies import greedy_policy
from tf_agents.policies import tf_policy
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import policy_step
from tf_agents.trajectories import time_step as ts

from paac_tf.algorithms.paac import settings as settings_lib
from paac_tf.algorithms.paac import update
from paac_tf.envs import batched
from paac_tf.networks import actor_critic
from paac_tf.networks import optimizers

LAST = int(ts.StepType.LAST)


def to_time_major(experience, num_steps=None):
  """Each tensor of a [B, N, ...] nest as [N, B, ...], N static (`num_steps`, else the
  tensors' own static N): the n-step returns unroll over it (update.py)."""
  def transpose(x):
    x = tf.convert_to_tensor(x)
    if num_steps is not None:
      x = tf.ensure_shape(x, [None, int(num_steps)] + x.shape[2:].as_list())
    if x.shape[1] is None:
      raise ValueError("PAAC's update needs a static rollout length: give PaacTFAgent "
                       "t_max, or a Trajectory whose time dimension is static.")
    return tf.transpose(x, [1, 0] + list(range(2, x.shape.rank)))
  return tf.nest.map_structure(transpose, experience)


def rollout_arrays(trajectory):
  """A time-major `Trajectory` [N, B] as the update's arrays: (observations [N, B, ...],
  actions [N, B], rollout [4, N, B]: rewards, discounts, next_is_last, is_last as float32,
  update.py's layout)."""
  rollout = [trajectory.reward, trajectory.discount,
             tf.equal(trajectory.next_step_type, LAST), tf.equal(trajectory.step_type, LAST)]
  return (trajectory.observation, trajectory.action,
          tf.stack([tf.cast(x, tf.float32) for x in rollout]))


class KerasOptimizer(tf.Module):
  """A Keras optimizer behind the project's optimizer interface (networks/optimizers.py):
  `apply_gradients` returns the learning rate it applied, which `update.train_step`
  reports."""

  def __init__(self, optimizer):
    super().__init__(name="keras_optimizer")
    self.optimizer = optimizer

  @property
  def iterations(self):
    return self.optimizer.iterations

  def build(self, variables):
    self.optimizer.build(variables)

  def apply_gradients(self, grads_and_vars):
    self.optimizer.apply_gradients(grads_and_vars)
    return tf.cast(tf.convert_to_tensor(self.optimizer.learning_rate), tf.float32)


class ActorCriticPolicy(tf_policy.TFPolicy):
  """A TF-Agents policy of the actor-critic model: a categorical distribution over the
  action spec's range [minimum, maximum] from the model's logits (sampled by `action`)."""

  def __init__(self, time_step_spec, action_spec, model, name="paac_collect_policy"):
    super().__init__(time_step_spec, action_spec, name=name)
    self._model = model

  def _variables(self):
    return self._model.variables

  def _distribution(self, time_step, policy_state):
    logits, _ = self._model(time_step.observation)
    spec = self.action_spec
    if int(spec.minimum) == 0:   # (ShiftedCategorical logs a TFP warning at each creation)
      distribution = tfp.distributions.Categorical(logits=logits, dtype=spec.dtype)
    else:
      distribution = shifted_categorical.ShiftedCategorical(logits=logits, dtype=spec.dtype,
                                                            shift=int(spec.minimum))
    return policy_step.PolicyStep(distribution, policy_state)


class PaacTFAgent(tf_agent.TFAgent):
  """PAAC (Clemente et al. 2017) for TF-Agents: n-step actor-critic updates on [B, T + 1]
  trajectories, by the update the CLI's training runs (see the module docstring)."""

  def __init__(self, time_step_spec, action_spec, actor_critic_network=None, optimizer=None,
               total_updates=None, t_max=None, network="mlp", mlp_units=(64, 64), seed=0,
               train_step_counter=None, name="paac_tf_agent", **paac_settings):
    """Args:
      time_step_spec, action_spec: the environment's (a `TFPyEnvironment`'s), one discrete
        scalar action.
      actor_critic_network: the project's Keras actor-critic
        (`paac_tf.networks.actor_critic.build_actor_critic`); None: built here from
        `network`, `mlp_units` and `seed`.
      optimizer: None: PAAC's TF1-style RMSProp (`paac_settings` may set its learning_rate,
        rmsprop_decay, rmsprop_epsilon), the learning rate annealed linearly to 0 over
        `total_updates` train calls; else an optimizer of networks/optimizers.py's interface
        or a Keras optimizer, used as it is.
      total_updates: the annealing horizon of the default optimizer (required with it).
      t_max: the rollout length T (train takes [B, T + 1]; None: any static length).
      seed: the initial weights of a network built here.
      paac_settings: `PaacSettings` fields: the loss's (entropy_coef, value_coef, loss_scale,
        max_grad_norm, gamma) and the optimizer's; unset ones are the paac.* namespace's
        (gin-bound or default: atari.gin's values).
    """
    tf.Module.__init__(self, name=name)
    # One discrete scalar action (NoDiscreteActionsError otherwise).
    num_actions = batched.num_actions(tensor_spec.to_array_spec(action_spec),
                                      "PaacTFAgent's action_spec")
    if actor_critic_network is None:
      actor_critic_network = actor_critic.build_actor_critic(
          num_actions, time_step_spec.observation, torso=network, mlp_units=mlp_units,
          seed=seed)
    if optimizer is None and total_updates is None:
      raise ValueError("PaacTFAgent's default optimizer anneals its learning rate over "
                       "total_updates train calls: give total_updates (or an optimizer).")
    self._model = actor_critic_network
    self._settings = settings_lib.PaacSettings(**paac_settings)
    if optimizer is None:
      optimizer = optimizers.rmsprop(
          actor_critic_network, self._settings.learning_rate, max(int(total_updates), 1),
          self._settings.rmsprop_decay, self._settings.rmsprop_epsilon)
    else:
      if isinstance(optimizer, tf.keras.optimizers.Optimizer):
        optimizer = KerasOptimizer(optimizer)
      optimizer.build(actor_critic_network.trainable_variables)
    self._optimizer = optimizer
    self._action_minimum = int(action_spec.minimum)
    collect_policy = ActorCriticPolicy(time_step_spec, action_spec, actor_critic_network)
    super().__init__(time_step_spec, action_spec,
                     policy=greedy_policy.GreedyPolicy(collect_policy),
                     collect_policy=collect_policy,
                     train_sequence_length=None if t_max is None else int(t_max) + 1,
                     train_step_counter=train_step_counter)
    # Validates and prunes train's experience: a Trajectory [B, T + 1] of the collect spec.
    self._as_trajectory = data_converter.AsTrajectory(
        self.data_context, sequence_length=self.train_sequence_length)

  @property
  def settings(self):
    """The `PaacSettings` of the loss and the default optimizer."""
    return self._settings

  @property
  def optimizer(self):
    return self._optimizer

  @property
  def model(self):
    return self._model

  def _initialize(self):
    return tf.no_op()

  def _train(self, experience, weights=None):
    """One PAAC update on a [B, T + 1] Trajectory; its loss and metrics."""
    if weights is not None:
      raise ValueError("PAAC weighs every valid step of a rollout alike: no weights.")
    trajectory = to_time_major(self._as_trajectory(experience), self.train_sequence_length)
    observations, actions, rollout = rollout_arrays(trajectory)
    num_steps = actions.shape[0] - 1
    flat = tf.reshape(observations, [-1] + observations.shape[2:].as_list())
    values = tf.reshape(self.model(flat)[1], [num_steps + 1, -1])
    vector = update.train_step(self.model, self.optimizer, self.settings,
                               observations[:num_steps],
                               actions[:num_steps] - self._action_minimum,
                               rollout[:, :num_steps], values)
    metrics = dict(zip(update.METRIC_NAMES, tf.unstack(vector)))
    self.train_step_counter.assign_add(1)
    return tf_agent.LossInfo(loss=metrics["Losses/total"], extra=metrics)
