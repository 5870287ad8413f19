"""A restored PAAC checkpoint continues with the same weights, optimizer state and RNG."""
import gin
import numpy as np
import tensorflow as tf
from tf_agents.specs import array_spec

import paac_tf
from paac_tf.algorithms.paac import algorithm as algorithm_lib
from paac_tf.algorithms.paac import settings as settings_lib
from paac_tf.algorithms.paac import update
from paac_tf.bookkeeping import checkpointing
from paac_tf.bookkeeping import summaries
from paac_tf.runners.sync import train_loop

OBSERVATION = array_spec.ArraySpec((4,), np.float32)
ACTIONS = array_spec.BoundedArraySpec((), np.int64, 0, 1)


class _Learner:
  """What the training loop checkpoints, made as it makes them (Paac's make_model and
  make_optimizer, a tf.random.Generator from the seed), with the loop's own compiled calls
  (train_loop.compile_calls): `train` is its update, `act` its sampling of actions."""

  def __init__(self, seed):
    gin.clear_config()   # the paac.* defaults, whatever an earlier test of the process bound
    self.settings = settings_lib.PaacSettings(network="mlp", learning_rate=0.01)
    paac = algorithm_lib.Paac()
    self.model = paac.make_model(ACTIONS, OBSERVATION, self.settings, seed=seed)
    self.optimizer = paac.make_optimizer(self.model, self.settings, total_updates=100)
    self.rng = tf.random.Generator.from_seed(seed)
    self._act, _, self._train_step = train_loop.compile_calls(
        paac, self.model, self.optimizer, self.rng, self.settings)

  def train(self, batch):
    return dict(zip(update.METRIC_NAMES, self._train_step(*batch).numpy()))

  def act(self, observation):
    return self._act(observation)[0]


def _agent(seed):
  return _Learner(seed)


def _batch(seed=0, t=5, b=3):
  """(observations, actions, rollout [4, t, b], values [t + 1, b]), no episode end."""
  rng = np.random.default_rng(seed)
  rollout = np.stack([rng.normal(size=(t, b)), np.ones((t, b)), np.zeros((t, b)),
                      np.zeros((t, b))]).astype(np.float32)
  return (rng.normal(size=(t, b, 4)).astype(np.float32), rng.integers(0, 2, (t, b)),
          rollout, rng.normal(size=(t + 1, b)).astype(np.float32))


def _checkpointer(directory, agent):
  return checkpointing.Checkpointer(directory, model=agent.model, optimizer=agent.optimizer,
                                    rng=agent.rng)


def test_restore_continues_with_identical_state(tmp_path):
  a = _agent(seed=1)
  for i in range(3):
    a.train(_batch(i))
  a.act(np.zeros((3, 4), np.float32))
  _checkpointer(str(tmp_path), a).save(15)

  b = _agent(seed=2)
  assert _checkpointer(str(tmp_path), b).restore_latest().endswith("ckpt-15")
  assert int(b.optimizer.iterations.numpy()) == 3
  for x, y in zip(a.optimizer.ms, b.optimizer.ms):
    np.testing.assert_array_equal(x.numpy(), y.numpy())
  np.testing.assert_array_equal(a.rng.state.numpy(), b.rng.state.numpy())
  # The next update and the next sampled actions are the same in both.
  ma, mb = a.train(_batch(7)), b.train(_batch(7))
  np.testing.assert_allclose(float(ma["Losses/total"]), float(mb["Losses/total"]), rtol=1e-6)
  for x, y in zip(a.model.get_weights(), b.model.get_weights()):
    np.testing.assert_allclose(x, y, rtol=1e-6)
  obs = np.random.default_rng(0).normal(size=(64, 4)).astype(np.float32)
  np.testing.assert_array_equal(a.act(obs).numpy(), b.act(obs).numpy())


def test_corrupt_latest_checkpoint_falls_back_to_previous(tmp_path):
  a = _agent(seed=1)
  ckpt = _checkpointer(str(tmp_path), a)
  a.train(_batch(0))
  ckpt.save(5)
  a.train(_batch(1))
  latest = ckpt.save(10)
  with open(latest + ".data-00000-of-00001", "r+b") as f:
    f.truncate(16)
  b = _agent(seed=2)
  restored = _checkpointer(str(tmp_path), b).restore_latest()
  assert restored.endswith("ckpt-5")
  assert int(b.optimizer.iterations.numpy()) == 1


def test_a_resumed_training_run_keeps_its_episode_count(tmp_path):
  """The PAAC loop's checkpointed episode count carries over a resume: a rerun with
  nothing left to train reports the first run's episodes, not the rerun's zero."""
  bindings = {"train_eval.total_steps": 2000, "paac.num_envs": 8, "paac.num_workers": 1,
              "paac.checkpoint_interval": 1000, "paac.stop_at_average_return": None}
  first = paac_tf.train("cartpole.gin", bindings, root_dir=str(tmp_path))
  assert first.episodes > 0 and first.agent_steps == 2000 and first.reason == "done"
  again = paac_tf.train("cartpole.gin", bindings, root_dir=str(tmp_path))
  assert again.agent_steps == first.agent_steps and again.updates == first.updates
  assert again.episodes == first.episodes


def _older_checkpoint_restored(tmp_path, agent, steps_key):
  """A checkpoint of `agent` at agent step 120 with 9 episodes, its step counter under
  `steps_key` and no episode window (as older harnesses wrote it), restored by a harness
  around a fresh agent: (the harness, that agent)."""
  # pylint: disable=import-outside-toplevel
  from paac_tf.algorithms import registry
  from paac_tf.runners import harness
  # pylint: enable=import-outside-toplevel
  root_dir = str(tmp_path)
  checkpointing.Checkpointer(
      harness.train_dir(root_dir), model=agent.model, optimizer=agent.optimizer,
      rng=agent.rng, episodes=tf.Variable(9, dtype=tf.int64),
      **{steps_key: tf.Variable(120, dtype=tf.int64)}).save(120)
  fresh = _agent(seed=2)
  resumed = harness.Harness(root_dir, "CartPole-v1", registry.get("paac"), model=fresh.model,
                            optimizer=fresh.optimizer, rng=fresh.rng)
  assert resumed.restore().endswith("ckpt-120")
  return resumed, fresh


def test_a_checkpoint_with_the_old_counter_name_restores(tmp_path):
  """Runs checkpointed before the agent-step counter was named `agent_steps` hold it as
  `env_steps` (checkpointing.RENAMED_KEYS): the harness restores them all the same, and
  saves the new name from then on."""
  a = _agent(seed=1)
  a.train(_batch(0))
  # What the harness saved before the rename: the counters under `env_steps` and `episodes`.
  resumed, b = _older_checkpoint_restored(tmp_path, a, "env_steps")
  assert resumed.steps == 120 and resumed.window.total == 9
  assert int(b.optimizer.iterations.numpy()) == 1
  for x, y in zip(a.model.trainable_variables, b.model.trainable_variables):
    np.testing.assert_array_equal(x.numpy(), y.numpy())
  resumed.save(140)
  saved = {name.split("/")[0] for name, _ in tf.train.list_variables(
      checkpointing.latest_checkpoint(resumed.checkpointer.manager.directory))}
  assert "agent_steps" in saved and "env_steps" not in saved


def test_a_resumed_run_averages_over_the_whole_episode_window(tmp_path):
  """The 100-episode window is in the checkpoint (harness `episode_window`): a resume
  averages over the episodes before it at once, not over those since the resume."""
  # pylint: disable=import-outside-toplevel
  from paac_tf.algorithms import registry
  from paac_tf.runners import harness
  # pylint: enable=import-outside-toplevel
  root_dir = str(tmp_path)
  a = _agent(seed=1)
  first = harness.Harness(root_dir, "CartPole-v1", registry.get("paac"), model=a.model,
                          optimizer=a.optimizer, rng=a.rng)
  first.restore()
  first.window.add((float(r), 10 + r) for r in range(130))   # episodes 30..129 stay
  first.save(500)

  b = _agent(seed=2)
  resumed = harness.Harness(root_dir, "CartPole-v1", registry.get("paac"), model=b.model,
                            optimizer=b.optimizer, rng=b.rng)
  resumed.restore()
  assert resumed.window.total == 130 and len(resumed.window.returns) == 100
  assert resumed.window.average_return == 79.5           # mean of 30..129
  assert resumed.window.average_length == 89.5
  resumed.window.add([(1000.0, 5)])                      # the window goes on: 31..129, 1000
  assert resumed.window.average_return == (sum(range(31, 130)) + 1000) / 100
  # A runner with its own window (the Ape-X learner's) takes the restored episodes too.
  own = summaries.EpisodeWindow(100)
  resumed.use_window(own)
  assert own.total == 131 and own.average_return == resumed.window.average_return


def test_a_checkpoint_without_the_episode_window_restores_with_it_empty(tmp_path):
  """Checkpoints made before the window was stored (checkpointing.ADDED_KEYS) resume."""
  resumed, _ = _older_checkpoint_restored(tmp_path, _agent(seed=1), "agent_steps")
  assert resumed.window.total == 9 and not resumed.window.returns
