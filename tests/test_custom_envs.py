"""Custom gymnasium environments: `"module:EnvId"` ids and ids registered by a module the user
imported, in-process, in worker processes and through `python -m paac_tf.train`."""
import functools
import os

import gymnasium as gym
import numpy as np
import pytest

from conftest import run_module
from paac_tf.envs import factory
from paac_tf.envs import gym_adapter
from paac_tf.envs import names
from paac_tf.envs import worker_pool

pytestmark = pytest.mark.timeout(300)

MODULE = "tests.custom_env_module"
ENV_ID = "TinyCorridor-v0"


def _step_a_while(env):
  """Resets and steps `env` (always right) until every environment finished an episode."""
  first = env.reset()
  assert first.observation.shape == (env.batch_size, 2)
  assert first.observation.dtype == np.float32
  for _ in range(25):
    env.step(np.ones(env.batch_size, np.int64))
  episodes = env.pop_finished_episodes()
  assert len(episodes) >= env.batch_size, episodes   # walking right always reaches the end
  assert all(ret == 1.0 for ret, _ in episodes), episodes


def test_module_colon_id_imports_the_module_and_runs_in_workers():
  name = "%s:%s" % (MODULE, ENV_ID)
  assert names.check_env_name(name) == name
  assert ENV_ID in gym.registry   # the module was imported: it registered the env
  env = factory.make_batched_env(name, 4, num_workers=2)
  try:
    assert len(env.worker_pids) == 2
    _step_a_while(env)
  finally:
    env.close()


def test_an_id_registered_by_an_imported_module_runs_in_workers():
  import tests.custom_env_module  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
  assert names.check_env_name(ENV_ID) == ENV_ID
  # Workers start without the parent's imports: they get the module that registers the env.
  assert names.worker_env_id(ENV_ID) == "%s:%s" % (MODULE, ENV_ID)
  assert names.worker_env_id("CartPole-v1") == "CartPole-v1"
  env = factory.make_batched_env(ENV_ID, 4, num_workers=2)
  try:
    _step_a_while(env)
  finally:
    env.close()
  # What the module name spares them: the bare id is unknown in a fresh worker.
  with pytest.raises(worker_pool.WorkerError, match="NameNotFound|No registered env"):
    worker_pool.ParallelBatchedPyEnvironment(
        [functools.partial(gym_adapter.GymnasiumPyEnvironment, ENV_ID)] * 2,
        num_workers=2).close()


@pytest.mark.parametrize("name,message", [
    ("tests.no_such_module:%s" % ENV_ID, "Cannot import module 'tests.no_such_module'"),
    ("%s:NoSuchEnv-v0" % MODULE, "did not register 'NoSuchEnv-v0'"),
    (":%s" % ENV_ID, "use 'module:EnvId'"),
])
def test_bad_module_colon_ids_are_clear_errors(name, message):
  with pytest.raises(names.UnknownEnvironmentError, match=message):
    names.check_env_name(name)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("bindings", [
    pytest.param(["train_eval.env_name='%s:%s'" % (MODULE, ENV_ID)],
                 marks=pytest.mark.system),   # a whole run too: `make test-system`
    ["import %s" % MODULE, "train_eval.env_name='%s'" % ENV_ID],
], ids=["module_colon_id", "imported_module"])
def test_paac_trains_on_a_custom_env_with_workers_through_the_cli(tmp_path, bindings):
  root = str(tmp_path / "run")
  flags = ["--gin_bindings=%s" % b for b in bindings + [
      "train_eval.total_steps=800", "paac.num_envs=4", "paac.num_workers=2",
      "paac.stop_at_average_return=None"]]
  proc = run_module("paac_tf.train", "--gin_file=cartpole.gin", "--root_dir=" + root, *flags)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert "Result: {'agent_steps': 800" in proc.stderr, proc.stderr[-3000:]
  assert os.path.exists(os.path.join(root, "train", "ckpt-800.index"))
