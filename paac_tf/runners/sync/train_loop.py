"""PAAC's training loop: Algorithm 1 of Clemente et al. (2017), in the original code's order
(Alfredvc/paac, paac.py train()). Read it beside the paper; each step is one line here.

  repeat until total_steps agent steps:
    for t = 1..t_max:   one batched forward pass on the n_e current observations,
                        a sample of each environment's policy, one step of all n_e envs
    the bootstrap values V(s_T) of the last observations (their own forward pass)
    one synchronous update on the n_e * t_max batch (algorithms/paac/update.py: n-step
      returns, advantages, the loss, a GradientTape over the Keras model, global-norm
      clip, RMSProp)
    bookkeeping: summaries, checkpoints, exports, the stop-at-return target, a stop signal
  The next rollout's first actions come after the update, from its weights.

The same loop trains any on-policy algorithm whose object gives its settings, model,
optimizer and loss (algorithms/paac/algorithm.py); the run directory, checkpoints, cadence
and exports are the harness's (runners/harness.py).
"""
import functools

from absl import logging
import numpy as np
import tensorflow as tf

from paac_tf.algorithms import registry
from paac_tf.bookkeeping import checkpointing
from paac_tf.bookkeeping import config
from paac_tf.bookkeeping import progress as progress_lib
from paac_tf.bookkeeping import signals
from paac_tf.bookkeeping import stop_target
from paac_tf.envs import batched
from paac_tf.envs import environment
from paac_tf.envs import worker_split
from paac_tf.runners import harness

LAUNCHERS = ("local",)   # one machine, one process
LAST = batched.LAST


def run(algorithm, root_dir, env, total_steps, seed, launcher="local", ray_address=None):
  """Trains the on-policy `algorithm` in `root_dir` on `env` (a `names.Environment`) for
  `total_steps` agent steps (n_e per batched env step), resumable; returns the run's
  `bookkeeping.run_result.RunResult`. `seed` seeds the initial weights, the action sampling
  and the environments (environment i: seed + i; on resume, + the checkpoint's agent step)."""
  del launcher, ray_address   # one machine, one process
  settings = algorithm.settings()   # the algorithm's gin namespace (paac.*), read once
  n_e, t_max = settings.num_envs, settings.t_max
  harness.check_run_config(root_dir, {**registry.record(algorithm), "env_name": str(env),
                                      "network": settings.network, "num_envs": n_e,
                                      "t_max": t_max})
  total_updates = -(-int(total_steps) // settings.steps_per_update)
  target = stop_target.for_run(settings.stop_at_average_return, settings.target_env_name, env)
  # Installed before the environments start: a stop during the start-up ends the run at
  # the loop's start, after a checkpoint of the model (restored, or new at agent step 0).
  with signals.stop_on_signals() as stop:
    start = checkpointing.latest_step(harness.train_dir(root_dir))
    envs = environment.make_environment(env, n_e, settings.num_workers, seed=seed + start)
    try:
      obs_spec, action_spec = envs.observation_spec(), envs.action_spec()
      model = algorithm.make_model(action_spec, obs_spec, settings, seed=seed)
      optimizer = algorithm.make_optimizer(model, settings, total_updates)
      rng = tf.random.Generator.from_seed(seed)
      books = harness.Harness(root_dir, env, algorithm, settings.keep_checkpoints,
                              model=model, optimizer=optimizer, rng=rng)
      if books.restore():
        logging.info("Resuming at agent step %d (update %d).", books.steps,
                     int(optimizer.iterations.numpy()))
      harness.check_run_config(root_dir, {"network_spec": algorithm.network_spec(
          action_spec, obs_spec, **settings.network_settings)})
      config.write_operative_config(root_dir)
      books.make_cadence(
          checkpoint_interval=settings.checkpoint_interval,
          export_interval=settings.export_interval,
          summary_interval=settings.summary_interval, start_steps=books.steps,
          export=lambda at: books.export(model, obs_spec, at, network=settings.network),
          network=model, finite_keys=("Losses/total", "Optimizer/global_norm"),
          evaluate=None if settings.eval_interval is None else books.evaluator(
              model, lambda: algorithm.make_model(action_spec, obs_spec, settings, seed=seed),
              obs_spec, settings.eval_episodes),
          eval_interval=settings.eval_interval,
          eval_setting="%s.eval_interval" % settings.namespace)

      act, bootstrap_values, train_step = compile_calls(algorithm, model, optimizer, rng,
                                                        settings)
      return _train(envs, act, bootstrap_values, train_step, algorithm.metric_names, t_max,
                    total_steps, books, optimizer, target, stop)
    finally:
      envs.close()


def compile_calls(algorithm, model, optimizer, rng, settings):
  """The loop's three calls, each one `tf.function` (XLA with `settings.jit_compile`):
  act(observations) -> (actions, values), bootstrap_values(observations) -> V(s_T),
  train_step(observations, actions, rollout, values) -> the metrics vector (the update)."""
  compiled = functools.partial(tf.function, jit_compile=settings.jit_compile)

  @compiled
  def act(observation):
    """One batched forward pass; a sample of each row's policy, and its value."""
    logits, values = model(observation)
    seeds = rng.uniform_full_int([2], tf.int32)
    return tf.random.stateless_categorical(logits, 1, seeds, dtype=tf.int64)[:, 0], values

  bootstrap_values = compiled(lambda observation: model(observation)[1])
  train_step = compiled(functools.partial(algorithm.train_step, model, optimizer, settings,
                                          loss=algorithm.loss))
  return act, bootstrap_values, train_step


def _train(envs, act, bootstrap_values, train_step, metric_names, t_max, total_steps, books,
           optimizer, target, stop):
  """Algorithm 1's loop until `total_steps` agent steps, the `target` or a stop request
  (checked before each rollout: an update once begun always finishes)."""
  n_e = envs.batch_size
  steps, updates = books.steps, int(optimizer.iterations.numpy())
  cadence, window = books.cadence, books.window
  progress = progress_lib.Progress(total_steps, start_step=steps)
  # One rollout: observations s_0..s_{T-1}, actions, V(s_0..s_T); per step, rewards,
  # discounts, next_is_last and is_last (update.py's layout).
  observations = np.zeros((t_max, n_e) + tuple(envs.observation_spec().shape),
                          envs.observation_spec().dtype)
  actions = np.zeros((t_max, n_e), np.int64)
  values = np.zeros((t_max + 1, n_e), np.float32)
  rollout = np.zeros((4, t_max, n_e), np.float32)
  rewards, discounts, next_is_last, is_last = rollout
  time_step = None if stop.requested else envs.reset()
  cadence.start_clock(steps)
  metrics, reason = None, "done"
  try:
    while steps < total_steps:
      if stop.requested:
        reason = "signal"
        break
      for t in range(t_max):
        observations[t] = time_step.observation
        is_last[t] = time_step.step_type == LAST
        chosen, value = act(time_step.observation)   # one forward pass for all n_e envs
        actions[t], values[t] = chosen.numpy(), value.numpy()
        time_step = envs.step(actions[t])             # all n_e environments step
        rewards[t], discounts[t] = time_step.reward, time_step.discount
        next_is_last[t] = time_step.step_type == LAST
      values[t_max] = bootstrap_values(time_step.observation).numpy()
      metrics = dict(zip(metric_names, train_step(observations, actions, rollout,
                                                  values).numpy()))
      steps, updates = steps + n_e * t_max, updates + 1
      window.add(envs.pop_finished_episodes())
      cadence.summaries(metrics, updates, steps, window, steps_per_second=True)
      progress.update(steps, window.average_return)
      cadence.after_update(steps, updates, metrics)   # checkpoint and export when due
      if target.reached(window):
        logging.info("%s.", target.stop_line(window))
        reason = "target"
        break
  finally:
    progress.update(steps, window.average_return, force=True)
    progress.close()
    cadence.writer.flush()
  # The final export (of what this process trained) is skipped if a second signal asked
  # to hurry.
  result = cadence.finish(steps, updates, metrics, window, reason, hurry=stop.hurry)
  logging.info("Stopped (%s) at agent step %d; average return of the last %d episodes: %.2f",
               reason, steps, len(window.returns), window.average_return)
  return result


def check_config(algorithm, bound):
  """The runner's checks across parameters: the environments split evenly among the worker
  processes (`bound(binding, default)` reads the configuration)."""
  settings = algorithm.settings()
  worker_split.check_worker_split(algorithm.settings.namespace, settings.num_envs,
                                  settings.num_workers, bound)
