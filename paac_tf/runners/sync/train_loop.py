"""The synchronous runner: n_e environments, t_max-step rollouts, one update of the
algorithm's loss per rollout (PAAC's training loop; any on-policy algorithm's, whose object
provides its model, its agent and its loss: algorithms/paac/algorithm.py).

Per rollout: t_max batched action selections (one compiled call each, for all n_e
environments), t_max batched environment steps, then one compiled synchronous update on
the n_e * t_max batch. Summaries, checkpoints, exports and the stop-on-signal check run
between updates only, never inside the rollout.
"""

from absl import logging
import numpy as np

from paac_tf.algorithms import registry
from paac_tf.envs import environment
from paac_tf.envs import worker_split
from paac_tf.networks import precision as precision_lib
from paac_tf.networks import torsos
from paac_tf.bookkeeping import checks
from paac_tf.bookkeeping import checkpointing
from paac_tf.bookkeeping import config
from paac_tf.bookkeeping import progress as progress_lib
from paac_tf.bookkeeping import signals
from paac_tf.bookkeeping import stop_target
from paac_tf.runners import harness
from paac_tf.runners.sync import rollout

LAUNCHERS = ("local",)   # one machine, one process


def run(algorithm, root_dir, env, total_steps, seed, launcher="local", ray_address=None):
  """Trains `algorithm` (an on-policy algorithm: `runner = 'sync'`) in `root_dir` on `env`
  for `total_steps` agent steps; returns a `bookkeeping.run_result.RunResult`."""
  del launcher, ray_address   # one machine, one process
  return paac_train(root_dir, env, int(total_steps), seed=seed, algorithm=algorithm,
                    export_policies=True)


def check_config(bound):
  """The runner's checks across parameters: the environments split evenly among the worker
  processes."""
  worker_split.check_worker_split(paac_train, bound)


@checks.configurable(module="paac", denylist=["algorithm", "export_policies"])
def paac_train(root_dir, env_name, total_steps, seed=0, num_envs: checks.Count = 32,
               num_workers: checks.NonNegativeInt = 8, t_max: checks.Count = 5,
               network: checks.one_of(torsos.TORSOS) = "arch_nips",
               mlp_units: checks.Units = (64, 64),
               initializer: checks.one_of(torsos.INITIALIZERS) = "torch",
               checkpoint_interval: checks.Count = 1_000_000,
               keep_checkpoints: checks.Count = 3, summary_interval: checks.Count = 20,
               export_interval: checks.OptionalCount = None,
               stop_at_average_return: checks.OptionalNumber = None,
               target_env_name: stop_target.TargetEnvName = None,
               overlap_learner: checks.Bool = False,
               precision: checks.one_of(precision_lib.PRECISIONS) = "float32", algorithm=None,
               export_policies=False):
  """Trains `algorithm` (None: the default, PAAC) for `total_steps` agent steps (n_e per
  batched env step); resumable.

  Args:
    root_dir: run directory (train/ summaries and checkpoints, policies/ exports).
    env_name: Atari game (`Pong`, `PongNoFrameskip-v4`, `ALE/Pong-v5`) or gymnasium id.
    total_steps: agent steps to train for (one agent step = frameskip frames on Atari).
    seed: seeds the initial weights, the agent's action sampling and the environments
      (environment i: seed + i; on resume, seed + the latest checkpoint's agent step + i).
    checkpoint_interval: agent steps between checkpoints.
    summary_interval: updates between summaries.
    export_interval: agent steps between SavedModel exports to root_dir/policies (None: end only).
    stop_at_average_return: stop early once the last 100 episodes average at least this,
      on `target_env_name`; on another environment, at its gymnasium reward_threshold if it
      has one (bookkeeping/stop_target.py).
    target_env_name: the environment `stop_at_average_return` is for (None: this run's);
      recorded by `config.parse` from the config that binds the target.
    overlap_learner: start the next rollout's first env step before the update (see
      rollout.py).
    precision: the network's compute precision: 'float32', 'mixed_bfloat16' or 'auto'
      (paac_tf/networks/precision.py).
    algorithm: the on-policy algorithm object (its model, agent and loss).
    export_policies: export the policy to root_dir/policies (harness.training_exporter)
      every `export_interval` and at the end (`run` does).
  Returns:
    A `bookkeeping.run_result.RunResult`: agent_steps, updates, episodes (of the whole run, across
    resumes), average return, reason.
  """
  algorithm = algorithm or registry.get(registry.DEFAULT)
  network_settings = {"network": network, "mlp_units": mlp_units, "initializer": initializer}
  run_config = {**registry.record(algorithm), "env_name": str(env_name), "network": network,
                "num_envs": int(num_envs), "t_max": int(t_max)}
  harness.check_run_config(root_dir, run_config)
  total_updates = int(np.ceil(total_steps / (num_envs * t_max)))
  target = stop_target.for_run(stop_at_average_return, target_env_name, env_name)

  # Installed before the environments start: a stop during the start-up ends the run at
  # the loop's start, after a checkpoint of the model (restored, or new at agent step 0).
  with signals.stop_on_signals() as stop:
    # Built once, seeded from the agent step of the latest checkpoint (new episodes on
    # resume): environment i gets seed + that step + i.
    start = checkpointing.latest_step(harness.train_dir(root_dir))
    env = environment.make_environment(env_name, num_envs=num_envs, num_workers=num_workers,
                                       seed=seed + start)
    try:
      obs_spec = env.observation_spec()
      model = algorithm.make_model(env.action_spec(), obs_spec, network_settings,
                                   precision=precision, seed=seed)
      agent = algorithm.make_agent(model, total_updates=total_updates,
                                   steps_per_update=num_envs * t_max, seed=seed)
      harness_run = harness.Harness(root_dir, env_name, algorithm, keep_checkpoints, model=model,
                            optimizer=agent.optimizer, rng=agent.rng)
      restored = harness_run.restore()
      # The network's full spec (for exports), recorded once any checkpoint is known to fit it.
      harness.check_run_config(root_dir, {"network_spec": algorithm.network_spec(
          env.action_spec(), obs_spec, **network_settings)})
      config.write_operative_config(root_dir)
      steps = harness_run.steps
      if restored:
        logging.info("Resuming at agent step %d (update %d).", steps,
                     int(agent.optimizer.iterations.numpy()))

      def export(at_steps):
        if export_policies:
          return harness_run.export(model, obs_spec, at_steps,
                            network=getattr(model, "torso_name", None))
        return None

      cadence = harness_run.make_cadence(
          checkpoint_interval=checkpoint_interval, export_interval=export_interval,
          summary_interval=summary_interval, start_steps=steps, export=export, network=model,
          finite_keys=("Losses/total", "Optimizer/global_norm"))
      runner = rollout.RolloutRunner(env, agent, t_max, overlap_learner=overlap_learner)
      return _run(runner, cadence, harness_run.window, steps,
                  int(agent.optimizer.iterations.numpy()), total_steps, target, stop)
    finally:
      env.close()


def _run(runner, cadence, window, steps, updates, total_steps, target, stop):
  """The loop: one rollout and update at a time until `total_steps` agent steps, the
  `target` (a `stop_target.StopTarget`) or a stop request (`stop`, checked before each
  update); returns the cadence's RunResult."""
  progress = progress_lib.Progress(total_steps, start_step=steps)
  if not stop.requested:   # else stopped during the start-up: no update at all
    runner.start()
  cadence.start_clock(steps)
  metrics = None
  reason = "done"
  try:
    while steps < total_steps:
      if stop.requested:   # checked before each update: the current one always finishes
        reason = "signal"
        break
      metrics = runner.run_update()
      steps += runner.steps_per_update
      updates += 1    # as agent.optimizer.iterations, without reading it every update
      window.add(runner.env.pop_finished_episodes())
      cadence.summaries(metrics, updates, steps, window, steps_per_second=True)
      progress.update(steps, window.average_return)
      cadence.after_update(steps, updates, metrics)
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
