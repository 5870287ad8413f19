"""A third algorithm, for the tests: REINFORCE with a learned baseline (Williams 1992), in one
file, registered through the seam (docs/algorithms.md).

Each update takes `horizon` steps of `num_envs` CartPole environments, the discounted
returns G_t of those steps (cut at episode ends; not bootstrapped at the segment's end),
and descends  -mean(log pi(a_t|s_t) * (G_t - V(s_t))) + mean((G_t - V(s_t))^2) / 2  on an
actor-critic MLP. A gin config imports this module (`import reinforce_algorithm`), which
registers the algorithm; `train_eval.algorithm = 'reinforce'` then trains it with
`python -m paac_tf.train`, and export, evaluation and `paac_tf.load_policy` work as for the
package's own algorithms.
"""
import os

import gin
import numpy as np
import tensorflow as tf

from paac_tf.algorithms import base
from paac_tf.algorithms import registry
from paac_tf.envs import batched
from paac_tf.envs import environment
from paac_tf.networks import actor_critic
from paac_tf.networks import specs
from paac_tf.policies import saved_model
from paac_tf.runtime import cadence as cadence_lib
from paac_tf.runtime import checkpointing
from paac_tf.runtime import checks
from paac_tf.runtime import config
from paac_tf.runtime import signals
from paac_tf.runtime import summaries


def discounted_returns(rewards, discounts, next_is_last, gamma):
  """G_t = r_{t+1} + gamma * d_{t+1} * G_{t+1} over [T, B] arrays (step t: reward and
  discount of arriving at time step t+1), G_{t+1} = 0 where time step t+1 is LAST (the next
  step is a new episode's) and after the segment's last step."""
  returns, future = np.zeros_like(rewards), np.zeros(rewards.shape[1], np.float32)
  for t in reversed(range(len(rewards))):
    future = rewards[t] + gamma * discounts[t] * np.where(next_is_last[t], 0.0, future)
    returns[t] = future
  return returns


@tf.function
def update(model, optimizer, observations, actions, returns, valid):
  """One step on the segment: policy gradient with the baseline, and the baseline's
  regression to the returns (means over the valid steps, not those from a LAST step)."""
  with tf.GradientTape() as tape:
    logits, values = model(observations, training=True)
    advantages = tf.stop_gradient(returns - values)
    log_probs = tf.gather(tf.nn.log_softmax(logits), actions, batch_dims=1)
    loss = tf.reduce_sum(valid * (-log_probs * advantages + 0.5 * (returns - values) ** 2))
    loss = loss / tf.maximum(tf.reduce_sum(valid), 1.0)
  optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                model.trainable_variables))
  return {"Losses/total": loss}


@checks.configurable(module="reinforce", denylist=["algorithm"])
def reinforce_train(root_dir, env_name, total_steps, seed, algorithm, *,
                    num_envs: checks.Count = 8, horizon: checks.Count = 64,
                    mlp_units: checks.Units = (32,), learning_rate: checks.Positive = 0.01,
                    gamma: checks.Fraction = 0.99, checkpoint_interval: checks.Count = 2000):
  """Trains for `total_steps` agent steps in `root_dir`; resumable; a cadence.RunResult."""
  train_dir = os.path.join(root_dir, "train")
  env = environment.make_environment(env_name, num_envs, 0, seed)
  observation_spec = env.observation_spec()
  spec = algorithm.network_spec(env.action_spec(), observation_spec, mlp_units=mlp_units)
  checkpointing.check_run_config(train_dir, {**registry.record(algorithm),
                                             "env_name": str(env_name), "network_spec": spec})
  model = algorithm.build_network(spec)
  optimizer = tf.keras.optimizers.legacy.Adam(learning_rate)
  env_steps, episodes = cadence_lib.counters()
  checkpointer = checkpointing.Checkpointer(train_dir, model=model, optimizer=optimizer,
                                            env_steps=env_steps, episodes=episodes)
  checkpointer.restore_latest()
  config.write_operative_config(root_dir)
  window, steps = summaries.EpisodeWindow(100), int(env_steps.numpy())
  window.total = int(episodes.numpy())

  def save(at_steps):
    cadence_lib.assign_counters(env_steps, episodes, at_steps, window.total)
    checkpointer.save(at_steps)

  def export(at_steps):
    metadata = {"env_name": str(env_name), "train_step": at_steps,
                "operative_config": gin.operative_config_str()}
    return saved_model.save_policy(algorithm, model, observation_spec, cadence.export_dir,
                                   at_steps, metadata)

  cadence = cadence_lib.Cadence(
      root_dir, checkpoint_interval=checkpoint_interval, export_interval=None,
      summary_interval=1, start_steps=steps, saved=True, save=save, export=export,
      export_dir=os.path.join(root_dir, "policies", saved_model.model_name(env_name)),
      network=model, finite_keys=("Losses/total",))
  rng, updates, metrics = np.random.default_rng(seed), 0, None
  time_step, reason = env.reset(), "done"
  with signals.stop_on_signals() as stop:
    try:
      while steps < total_steps and reason == "done":
        rollout = []
        for _ in range(horizon):
          logits, _ = model(time_step.observation)
          probs = tf.nn.softmax(logits).numpy().astype(np.float64)
          action = np.array([rng.choice(len(p), p=p / p.sum()) for p in probs])
          next_step = env.step(action)
          rollout.append((time_step.observation, action, time_step.step_type == batched.LAST,
                          next_step.reward, next_step.discount,
                          next_step.step_type == batched.LAST))
          time_step = next_step
        obs, actions, was_last, rewards, discounts, next_last = (np.stack(x) for x in zip(*rollout))
        returns = discounted_returns(rewards.astype(np.float32), discounts.astype(np.float32),
                                     next_last, gamma)
        metrics = update(model, optimizer, obs.reshape((-1,) + obs.shape[2:]),
                         actions.reshape(-1), returns.reshape(-1),
                         (1.0 - was_last).reshape(-1).astype(np.float32))
        steps, updates = steps + horizon * num_envs, updates + 1
        window.add(env.pop_finished_episodes())
        cadence.summaries(metrics, updates, steps, window)
        cadence.after_update(steps, updates, metrics)
        reason = "signal" if stop.requested else reason
    finally:
      env.close()
    return cadence.finish(steps, updates, metrics, window, reason, hurry=stop.hurry)


class Reinforce(base.Algorithm):
  """REINFORCE with a learned baseline (tests only)."""
  name = "reinforce"
  display_name = "REINFORCE"
  network_configurable = "reinforce.reinforce_train"
  network_parameters = ("mlp_units",)
  output_names = ("action", "probabilities")

  def run(self, root_dir, env, total_steps, seed, launcher="local", ray_address=None):
    return reinforce_train(root_dir, env, total_steps, seed, self)

  def network_spec(self, action_spec, observation_spec, mlp_units=(32,)):
    return specs.actor_critic_spec(batched.num_actions(action_spec), observation_spec,
                                   "mlp", mlp_units)

  def build_network(self, spec):
    return actor_critic.build_actor_critic(spec["num_actions"], specs.observation_spec(spec),
                                           "mlp", tuple(spec["mlp_units"]))

  def policy_scores(self, model, observation):
    logits, _ = model(observation, training=False)
    return logits, {"probabilities": tf.nn.softmax(logits, axis=-1)}


ALGORITHM = registry.register(Reinforce())
