"""PAAC training loop: n_e environments, t_max-step rollouts, one update per rollout.

Per rollout: t_max batched action selections (one compiled call each, for all n_e
environments), t_max batched environment steps, then one compiled synchronous update on
the n_e * t_max batch. Summaries, checkpoints, exports and the stop-on-signal check run
between updates only, never inside the rollout.
"""
import os
import time

from absl import logging
import numpy as np
import tensorflow as tf

from paac_tf.algorithms.paac import agent as agent_lib
from paac_tf.algorithms.paac import rollout
from paac_tf.envs import environment
from paac_tf.networks import actor_critic
from paac_tf.networks import precision as precision_lib
from paac_tf.networks import specs
from paac_tf.networks import torsos
from paac_tf.runtime import checkpointing
from paac_tf.runtime import checks
from paac_tf.runtime import config
from paac_tf.runtime import health
from paac_tf.runtime import progress as progress_lib
from paac_tf.runtime import signals
from paac_tf.runtime import summaries


@checks.configurable(module="paac")
def paac_train(root_dir, env_name, total_steps, seed=0, num_envs: checks.Count = 32,
               num_workers: checks.NonNegativeInt = 8, t_max: checks.Count = 5,
               network: checks.one_of(torsos.TORSOS) = "arch_nips",
               mlp_units: checks.Units = (64, 64),
               initializer: checks.one_of(torsos.INITIALIZERS) = "torch",
               checkpoint_interval: checks.Count = 1_000_000,
               keep_checkpoints: checks.Count = 3, summary_interval: checks.Count = 20,
               export_interval: checks.OptionalCount = None,
               stop_at_average_return: checks.OptionalNumber = None,
               overlap_learner: checks.Bool = False,
               precision: checks.one_of(precision_lib.PRECISIONS) = "float32", exporter=None):
  """Trains PAAC for `total_steps` agent steps (n_e per batched env step); resumable.

  Args:
    root_dir: run directory (train/ summaries and checkpoints, policies/ exports).
    env_name: Atari game (`Pong`, `PongNoFrameskip-v4`, `ALE/Pong-v5`) or gymnasium id.
    total_steps: agent steps to train for (one agent step = frameskip frames on Atari).
    seed: seeds the initial weights, the agent's action sampling and the environments
      (environment i: seed + i; on resume, seed + the agent steps done + i).
    checkpoint_interval: agent steps between checkpoints.
    summary_interval: updates between summaries.
    export_interval: agent steps between SavedModel exports to root_dir/policies (None: end only).
    stop_at_average_return: stop early once the last 100 episodes average at least this.
    overlap_learner: start the next rollout's first env step before the update (see
      rollout.py).
    precision: the network's compute precision: 'float32', 'mixed_bfloat16' or 'auto'
      (paac_tf/networks/precision.py).
    exporter: callable(agent, env, step) used for exports (given by the entry point).
  Returns:
    dict with final env_steps, updates, episodes (of the whole run, across resumes) and
    average return.
  """
  train_dir = os.path.join(root_dir, "train")
  run_config = {"algorithm": "paac", "env_name": str(env_name), "network": network,
                "num_envs": int(num_envs), "t_max": int(t_max)}
  checkpointing.check_run_config(train_dir, run_config)
  total_updates = int(np.ceil(total_steps / (num_envs * t_max)))

  env = environment.make_environment(env_name, num_envs=num_envs, num_workers=num_workers,
                                     seed=seed)
  try:
    obs_spec = env.observation_spec()
    model = actor_critic.build_actor_critic(env.num_actions, obs_spec, torso=network,
                                            mlp_units=mlp_units, initializer=initializer,
                                            precision=precision, seed=seed)
    agent = agent_lib.PaacAgent(model, total_updates=total_updates,
                                steps_per_update=num_envs * t_max, seed=seed)
    env_steps = tf.Variable(0, dtype=tf.int64, name="env_steps")
    episodes_done = tf.Variable(0, dtype=tf.int64, name="episodes")
    checkpointer = checkpointing.Checkpointer(
        train_dir, max_to_keep=keep_checkpoints, model=model, optimizer=agent.optimizer,
        rng=agent.rng, env_steps=env_steps, episodes=episodes_done)
    restored = checkpointer.restore_latest()
    # The network's full spec (for exports), recorded once any checkpoint is known to fit it.
    checkpointing.check_run_config(train_dir, {"network_spec": specs.actor_critic_spec(
        env.num_actions, obs_spec, network, mlp_units, initializer)})
    config.write_operative_config(root_dir)
    if restored:
      logging.info("Resuming at agent step %d (update %d).", int(env_steps.numpy()),
                   int(agent.optimizer.iterations.numpy()))
      # New episodes on resume: reseed the environments from the step count.
      env.close()
      env = environment.make_environment(env_name, num_envs=num_envs, num_workers=num_workers,
                                         seed=seed + int(env_steps.numpy()))
    return _run(root_dir, env, agent, checkpointer, env_steps, episodes_done, total_steps,
                t_max, checkpoint_interval, summary_interval, export_interval,
                stop_at_average_return, overlap_learner, exporter)
  finally:
    env.close()


def _run(root_dir, env, agent, checkpointer, env_steps, episodes_done, total_steps, t_max,
         checkpoint_interval, summary_interval, export_interval, stop_at_average_return,
         overlap_learner, exporter):
  writer = summaries.SummaryWriter(os.path.join(root_dir, "train"))
  window = summaries.EpisodeWindow(100)
  window.total = int(episodes_done.numpy())     # episodes of the run before a resume
  steps = int(env_steps.numpy())
  progress = progress_lib.Progress(total_steps, start_step=steps)
  stop = signals.StopRequest()
  next_checkpoint = (steps // checkpoint_interval + 1) * checkpoint_interval
  next_export = (steps // export_interval + 1) * export_interval if export_interval else None
  last_saved = steps
  runner = rollout.RolloutRunner(env, agent, t_max, overlap_learner=overlap_learner)
  runner.start()
  metrics = None
  perf_t, perf_steps = time.monotonic(), steps
  reason = "done"

  def save_checkpoint():
    env_steps.assign(summaries.tf_scalar(steps, np.int64))
    episodes_done.assign(summaries.tf_scalar(window.total, np.int64))
    checkpointer.save(steps)
  updates = int(agent.optimizer.iterations.numpy())
  try:
    while steps < total_steps:
      metrics = runner.run_update()
      steps += runner.steps_per_update
      updates += 1    # as agent.optimizer.iterations, without reading it every update
      window.add(env.pop_finished_episodes())

      if updates % summary_interval == 0:
        values_np = _checked_metrics(metrics, updates)
        now = time.monotonic()
        values_np["Perf/steps_per_second"] = (steps - perf_steps) / max(now - perf_t, 1e-9)
        perf_t, perf_steps = now, steps
        writer.scalars(values_np, updates)
        writer.episode_metrics(window, updates, steps)
      progress.update(steps, window.average_return)

      if steps >= next_checkpoint:
        _checked_metrics(metrics, updates)
        health.check_finite_weights(agent.model, updates)
        save_checkpoint()
        last_saved = steps
        next_checkpoint += checkpoint_interval
      if next_export is not None and steps >= next_export and exporter is not None:
        exporter(agent, env, steps)
        next_export += export_interval
      if stop_at_average_return is not None and len(window.returns) >= 100 and (
          window.average_return >= stop_at_average_return):
        reason = "target"
        break
      if stop.requested:
        reason = "signal"
        break
  finally:
    stop.restore()
    progress.update(steps, window.average_return, force=True)
    progress.close()
    writer.flush()
  writer.episode_metrics(window, updates, steps)
  writer.close()
  if steps != last_saved:
    _checked_metrics(metrics, updates)
    health.check_finite_weights(agent.model, updates)
    save_checkpoint()
  if exporter is not None:
    exporter(agent, env, steps)
  logging.info("Stopped (%s) at agent step %d; average return of the last %d episodes: %.2f",
               reason, steps, len(window.returns), window.average_return)
  return {"env_steps": steps, "updates": updates, "episodes": window.total,
          "average_return": window.average_return, "reason": reason}


def _checked_metrics(metrics, updates):
  """The metrics as numbers; stops training on a non-finite loss or gradient norm."""
  if metrics is None:
    return {}
  values = {k: float(v) for k, v in metrics.items()}
  return health.check_finite_metrics(values, ("Losses/total", "Optimizer/global_norm"), updates)
