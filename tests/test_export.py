"""SavedModel export: TF Serving layout, signatures, TensorFlow-only loading, TF-Agents loading."""
import hashlib
import json
import logging
import os
import subprocess
import sys
import textwrap

import gin
import numpy as np
import pytest
import tensorflow as tf
from tf_agents.specs import array_spec

from conftest import run_module
import paac_tf
from paac_tf import errors
from paac_tf.algorithms import registry
from paac_tf.runners import harness
from paac_tf.envs import factory
from paac_tf.networks import actor_critic
from paac_tf.networks import dueling_q
from paac_tf.networks import specs
from paac_tf.policies import checkpoint_export
from paac_tf.policies import loading
from paac_tf.policies import run_settings
from paac_tf.policies import saved_model
from paac_tf.bookkeeping import cadence as cadence_lib

PAAC, APEX = registry.get("paac"), registry.get("apex")

pytestmark = pytest.mark.timeout(300)

SAVED_MODEL_CLI = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
ATARI_SPEC = array_spec.BoundedArraySpec((84, 84, 4), np.uint8, 0, 255, name="observation")


def _real_observations(env_name, num_envs, steps, seed=0):
  """Observations from a real batched env under random actions: [num_envs * steps, ...]."""
  env = factory.make_batched_env(env_name, num_envs, num_workers=0, seed=seed)
  try:
    rng = np.random.default_rng(seed)
    time_step = env.reset()
    observations = [time_step.observation]
    for _ in range(steps - 1):
      time_step = env.step(rng.integers(0, env.num_actions, num_envs))
      observations.append(time_step.observation)
    return np.concatenate(observations), env.observation_spec(), env.num_actions
  finally:
    env.close()


def _versions(base_dir):
  """Sorted integer versions present under a model directory."""
  return sorted(int(n) for n in os.listdir(base_dir) if n.isdigit())


def _tree_digest(path):
  """{relative path: (mtime_ns, sha256)} of every file under path."""
  out = {}
  for root, _, files in os.walk(path):
    for name in files:
      full = os.path.join(root, name)
      with open(full, "rb") as f:
        out[os.path.relpath(full, path)] = (os.stat(full).st_mtime_ns,
                                            hashlib.sha256(f.read()).hexdigest())
  return out


@pytest.fixture(scope="module")
def cartpole(tmp_path_factory):
  obs, spec, num_actions = _real_observations("CartPole-v1", 4, 8)
  model = actor_critic.build_actor_critic(num_actions, spec, torso="mlp", mlp_units=(16, 16))
  base = str(tmp_path_factory.mktemp("policies") / "cartpole_v1")
  path = saved_model.save_policy(PAAC, model, spec, base, 7, {"env_name": "CartPole-v1",
                                                       "train_step": 7}, greedy=True)
  return {"model": model, "spec": spec, "obs": obs, "path": path, "base": base}


@pytest.fixture(scope="module")
def pong(tmp_path_factory):
  obs, spec, num_actions = _real_observations("Pong", 2, 3)
  model = actor_critic.build_actor_critic(num_actions, spec, torso="arch_nips")
  base = str(tmp_path_factory.mktemp("policies") / "pong")
  path = saved_model.save_policy(PAAC, model, spec, base, 100, {"env_name": "Pong",
                                                         "train_step": 100}, greedy=True)
  return {"model": model, "spec": spec, "obs": obs, "path": path, "num_actions": num_actions}


def _paac_expected(model, obs):
  logits, value = model(obs)
  return (np.argmax(logits.numpy(), -1), tf.nn.softmax(logits).numpy(), value.numpy())


def test_layout_metadata_and_signatures(cartpole):
  path = cartpole["path"]
  assert path == os.path.join(cartpole["base"], "7")
  assert _versions(cartpole["base"]) == [7]
  assert sorted(os.listdir(cartpole["base"])) == ["7"]          # no temporary left over
  for name in ("saved_model.pb", "variables", "policy_specs.pbtxt",
               os.path.join("assets", loading.METADATA_FILE)):
    assert os.path.exists(os.path.join(path, name)), name
  meta = loading.read_metadata(path)
  assert meta["algorithm"] == "paac" and meta["env_name"] == "CartPole-v1"
  assert meta["greedy"] is True and meta["train_step"] == 7 and meta["num_actions"] == 2
  assert meta["observation"] == {"shape": [4], "dtype": "float32"}
  loaded = tf.saved_model.load(path)
  assert set(loaded.signatures) == {"serving_default", "action", "get_initial_state",
                                    "get_train_step", "get_metadata"}
  values = loaded.get_metadata()
  assert values["env_name"].numpy() == b"CartPole-v1"
  assert bool(values["greedy"].numpy()) and int(values["train_step"].numpy()) == 7
  assert json.loads(values["metadata_json"].numpy().decode()) == meta
  assert int(loaded.get_train_step().numpy()) == 7
  # The get_metadata signature (what TF Serving exposes) has one named output per key.
  outputs = loaded.signatures["get_metadata"]()
  assert sorted(outputs) == sorted(values)
  assert outputs["algorithm"].numpy() == b"paac"


def test_atari_preprocessing_metadata(pong):
  pre = loading.read_metadata(pong["path"])["preprocessing"]
  assert pre["atari_game"] == "Pong" and pre["noop_max"] == 30
  assert (pre["frameskip"], pre["frame_stack"], pre["repeat_action_probability"]) == (4, 4, 0.0)
  config = ("make_environment.noop_max = 7\n"
            "paac_tf.envs.make_environment.episodic_life = True\n"
            "make_environment.num_groups = 2\n"           # an old run's (since removed)
            "other/make_environment.noop_max = 9\n"       # scoped: not the run's env
            "make_environment_x.reward_clipping = False\n")  # another configurable
  pre = run_settings.preprocessing_metadata("ALE/Breakout-v5", config)
  assert pre["noop_max"] == 7 and pre["episodic_life"] is True and "num_groups" not in pre
  assert pre["reward_clipping"] is True
  with pytest.raises(errors.ConfigError, match="Cannot parse"):
    run_settings.preprocessing_metadata("Pong", "make_environment.noop_max = (")


def test_fresh_tensorflow_only_process_matches_in_memory_model(cartpole, pong, tmp_path):
  expected = {}
  for name, case in (("cartpole", cartpole), ("pong", pong)):
    action, probabilities, value = _paac_expected(case["model"], case["obs"])
    np.savez(str(tmp_path / ("%s.npz" % name)), obs=case["obs"], action=action,
             probabilities=probabilities, value=value)
    expected[name] = case["path"]
  script = textwrap.dedent("""
      import json, sys
      import numpy as np
      import tensorflow as tf
      out = {}
      for name, path in json.loads(sys.argv[1]).items():
        data = np.load(name + ".npz")
        model = tf.saved_model.load(path)
        res = model.signatures["serving_default"](observation=tf.constant(data["obs"]))
        n = len(data["obs"])
        step = model.signatures["action"](**{
            "0/step_type": tf.zeros([n], tf.int32), "0/reward": tf.zeros([n]),
            "0/discount": tf.ones([n]), "0/observation": tf.constant(data["obs"])})
        out[name] = {
            "action": bool(np.array_equal(res["action"].numpy(), data["action"])),
            "action_dtype": res["action"].dtype.name,
            "policy_action": bool(np.array_equal(step["action"].numpy(), data["action"])),
            "probabilities": float(np.abs(res["probabilities"].numpy()
                                          - data["probabilities"]).max()),
            "value": float(np.abs(res["value"].numpy() - data["value"]).max())}
      mods = [m for m in sys.modules if m.split(".")[0] in ("paac_tf", "tf_agents",
                                                             "tensorflow_probability")]
      print(json.dumps({"results": out, "foreign_modules": mods}))
  """)
  proc = subprocess.run([sys.executable, "-c", script, json.dumps(expected)], cwd=str(tmp_path),
                        capture_output=True, text=True, timeout=240,
                        env={**os.environ, "PYTHONPATH": "", "TF_CPP_MIN_LOG_LEVEL": "2"})
  assert proc.returncode == 0, proc.stderr[-3000:]
  report = json.loads(proc.stdout.strip().splitlines()[-1])
  assert report["foreign_modules"] == []
  for name, res in report["results"].items():
    assert res["action"] and res["policy_action"], (name, res)
    assert res["action_dtype"] == "int64"
    assert res["probabilities"] < 1e-5 and res["value"] < 1e-4, (name, res)


def _signature_block(cli_output, name):
  start = cli_output.index("signature_def['%s']:" % name)
  end = cli_output.find("signature_def['", start + 1)
  return cli_output[start:end if end > 0 else None]


def test_saved_model_cli_lists_serving_default(pong, cartpole):
  proc = subprocess.run([SAVED_MODEL_CLI, "show", "--dir", pong["path"], "--all"],
                        capture_output=True, text=True, timeout=240,
                        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
  assert proc.returncode == 0, proc.stderr[-3000:]
  block = " ".join(_signature_block(proc.stdout, "serving_default").split())
  assert ("inputs['observation'] tensor_info: dtype: DT_UINT8 shape: (-1, 84, 84, 4) name: "
          "serving_default_observation:0") in block
  assert "outputs['action'] tensor_info: dtype: DT_INT64 shape: (-1)" in block
  assert ("outputs['probabilities'] tensor_info: dtype: DT_FLOAT shape: (-1, %d)"
          % pong["num_actions"]) in block
  assert "outputs['value'] tensor_info: dtype: DT_FLOAT shape: (-1)" in block
  for name in ("action", "get_initial_state", "get_train_step", "get_metadata"):
    assert "signature_def['%s']" % name in proc.stdout
  # Vector observations: float32 [None, 4] (checked in-process, as the CLI reads the same).
  serve = tf.saved_model.load(cartpole["path"]).signatures["serving_default"]
  spec = serve.structured_input_signature[1]["observation"]
  assert (spec.dtype, spec.shape.as_list()) == (tf.float32, [None, 4])
  assert {k: (v.dtype, v.shape.as_list()) for k, v in serve.structured_outputs.items()} == {
      "action": (tf.int64, [None]), "probabilities": (tf.float32, [None, 2]),
      "value": (tf.float32, [None])}


@pytest.mark.parametrize("case", ["cartpole", "pong"])
def test_rest_json_bodies_give_the_same_actions(request, case):
  data = request.getfixturevalue(case)
  obs = data["obs"]
  expected, _, _ = _paac_expected(data["model"], obs)
  serve = tf.saved_model.load(data["path"]).signatures["serving_default"]
  dtype = serve.structured_input_signature[1]["observation"].dtype.as_numpy_dtype
  # Row format: {"instances": [...]}; one instance per observation.
  row = json.loads(json.dumps({"instances": obs.tolist()}))
  actions = serve(observation=tf.constant(np.asarray(row["instances"], dtype)))["action"]
  np.testing.assert_array_equal(actions.numpy(), expected)
  # Columnar format with the signature named.
  col = json.loads(json.dumps({"signature_name": "serving_default",
                               "inputs": {"observation": obs.tolist()}}))
  fn = tf.saved_model.load(data["path"]).signatures[col["signature_name"]]
  out = fn(**{k: tf.constant(np.asarray(v, dtype)) for k, v in col["inputs"].items()})
  np.testing.assert_array_equal(out["action"].numpy(), expected)


def test_tf_agents_saved_model_policy_steps_cartpole(cartpole):
  from tf_agents.policies import py_tf_eager_policy  # pylint: disable=import-outside-toplevel
  from paac_tf.envs import gym_adapter  # pylint: disable=import-outside-toplevel
  policy = py_tf_eager_policy.SavedModelPyTFEagerPolicy(cartpole["path"],
                                                        load_specs_from_pbtxt=True)
  assert policy.get_train_step() == 7
  assert policy.get_metadata()["env_name"].numpy() == b"CartPole-v1"
  env = gym_adapter.GymnasiumPyEnvironment("CartPole-v1", seed=3)
  time_step = env.reset()
  steps = 0
  for _ in range(60):
    action = policy.action(time_step).action
    assert action.shape == () and 0 <= int(action) < 2
    expected = int(np.argmax(cartpole["model"](time_step.observation[None])[0].numpy()))
    assert int(action) == expected   # greedy export
    time_step = env.step(action)
    steps += 1
  env.close()
  assert steps == 60


def test_apex_export_signatures_and_epsilon(tmp_path):
  model = dueling_q.build_dueling_q(6, ATARI_SPEC, torso="arch_nips")
  obs = np.random.default_rng(0).integers(0, 256, (5, 84, 84, 4)).astype(np.uint8)
  base = str(tmp_path / "pong")
  path = saved_model.save_policy(APEX, model, ATARI_SPEC, base, 1, {"env_name": "Pong",
                                                             "train_step": 1, "epsilon": 0.4})
  loaded = tf.saved_model.load(path)
  serve = loaded.signatures["serving_default"]
  assert sorted(serve.structured_outputs) == ["action", "q_values"]
  out = serve(observation=tf.constant(obs))
  q = model(obs).numpy()
  np.testing.assert_allclose(out["q_values"].numpy(), q, atol=1e-5)
  np.testing.assert_array_equal(out["action"].numpy(), q.argmax(-1))
  meta = loading.read_metadata(path)
  assert meta["algorithm"] == "apex" and meta["greedy"] is True
  assert meta["epsilon"] == 0.0 and meta["training_epsilon"] == 0.4
  # Non-greedy: epsilon-greedy with the metadata's epsilon (1.0 -> uniformly random).
  path = saved_model.save_policy(APEX, model, ATARI_SPEC, base, 2, {"env_name": "Pong",
                                                             "train_step": 2, "epsilon": 1.0},
                                 greedy=False)
  serve = tf.saved_model.load(path).signatures["serving_default"]
  many = np.repeat(obs[:1], 300, axis=0)
  actions = serve(observation=tf.constant(many))["action"].numpy()
  assert len(set(actions.tolist())) == 6
  meta = loading.read_metadata(path)
  assert meta["action_selection"] == "epsilon_greedy" and meta["epsilon"] == 1.0
  with pytest.raises(ValueError, match="epsilon"):
    saved_model.save_policy(APEX, model, ATARI_SPEC, base, 3, {"env_name": "Pong", "train_step": 3},
                            greedy=False)
  assert _versions(base) == [1, 2]


def test_existing_version_is_refused_and_untouched(cartpole):
  before = _tree_digest(cartpole["base"])
  with pytest.raises(errors.UserError, match="already exists"):
    saved_model.save_policy(PAAC, cartpole["model"], cartpole["spec"], cartpole["base"], 7,
                            {"env_name": "CartPole-v1", "train_step": 99})
  assert _tree_digest(cartpole["base"]) == before


def _fake_run(root, algorithm, model, step, key, network_spec=None):
  """A run directory as training leaves it: run_config, checkpoint and, without a
  `network_spec` in run_config (runs recorded before it was), an operative config."""
  train = root / "train"
  train.mkdir(parents=True)
  network = model.torso_name
  run_config = {"algorithm": algorithm, "env_name": "CartPole-v1", "network": network}
  if network_spec:
    run_config["network_spec"] = network_spec
  else:
    selector = "paac_train" if algorithm == "paac" else "apex_network"
    (root / "operative_config.gin").write_text(
        "%s.mlp_units = (16, 16)\n%s.network = '%s'\n"
        "make_environment.noop_max = 30\n" % (selector, selector, network))
  (train / "run_config.json").write_text(json.dumps(run_config))
  extra = {"agent_steps": tf.Variable(step, dtype=tf.int64)}
  ckpt = tf.train.Checkpoint(**{key: model}, **extra)
  tf.train.CheckpointManager(ckpt, str(train), max_to_keep=3).save(checkpoint_number=step)


def test_cli_exports_a_run_and_refuses_an_existing_version(cartpole, tmp_path):
  run = tmp_path / "run"
  _fake_run(run, "paac", cartpole["model"], 1234, "model")
  proc = run_module("paac_tf.export", "--root_dir=%s" % run, "--greedy", timeout=240)
  assert proc.returncode == 0, proc.stderr[-3000:]
  path = os.path.join(str(run), "policies", "cartpole_v1", "1234")
  assert proc.stdout.strip().splitlines()[-1] == path
  meta = loading.read_metadata(path)
  assert meta["train_step"] == 1234 and meta["greedy"] is True
  assert meta["run_config"]["network"] == "mlp" and "mlp_units" in meta["operative_config"]
  assert meta["preprocessing"]["gymnasium_id"] == "CartPole-v1"
  serve = tf.saved_model.load(path).signatures["serving_default"]
  expected, probabilities, _ = _paac_expected(cartpole["model"], cartpole["obs"])
  out = serve(observation=tf.constant(cartpole["obs"]))
  np.testing.assert_array_equal(out["action"].numpy(), expected)
  np.testing.assert_allclose(out["probabilities"].numpy(), probabilities, atol=1e-5)

  before = _tree_digest(os.path.join(str(run), "policies"))
  proc = run_module("paac_tf.export", "--root_dir=%s" % run, timeout=240)
  assert proc.returncode == 2
  error_lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
  assert len(error_lines) == 1 and "already exists" in error_lines[0], proc.stderr[-2000:]
  assert _tree_digest(os.path.join(str(run), "policies")) == before


@pytest.mark.parametrize("recorded", ["operative_config", "network_spec"])
def test_export_checkpoint_rebuilds_apex_and_picks_checkpoints(tmp_path, recorded):
  spec = array_spec.BoundedArraySpec((4,), np.float32, -1e9, 1e9, name="observation")
  model = dueling_q.build_dueling_q(2, spec, torso="mlp", mlp_units=(16, 16))
  network_spec = None
  if recorded == "network_spec":
    network_spec = specs.dueling_q_spec(2, spec, network="mlp", mlp_units=(16, 16))
  run = tmp_path / "run"
  _fake_run(run, "apex", model, 50, "q_network", network_spec)
  with pytest.raises(errors.UserError, match="No checkpoint for step 7"):
    checkpoint_export.export_checkpoint(str(run), checkpoint=7)
  path = checkpoint_export.export_checkpoint(str(run), checkpoint=50,
                                             export_dir=str(tmp_path / "out"))
  assert path == str(tmp_path / "out" / "cartpole_v1" / "50")
  meta = loading.read_metadata(path)
  assert meta["algorithm"] == "apex" and meta["greedy"] is True
  obs = np.random.default_rng(1).normal(size=(9, 4)).astype(np.float32)
  out = tf.saved_model.load(path).signatures["serving_default"](observation=tf.constant(obs))
  np.testing.assert_allclose(out["q_values"].numpy(), model(obs).numpy(), atol=1e-5)
  # A checkpoint under another key does not fit: a clear error, nothing written.
  run2 = tmp_path / "run2"
  _fake_run(run2, "apex", model, 60, "model", network_spec)
  with pytest.raises(errors.CheckpointMismatchError, match="q_network"):
    checkpoint_export.export_checkpoint(str(run2))
  assert not os.path.exists(run2 / "policies" / "cartpole_v1" / "60")


def test_bad_run_directories(tmp_path):
  with pytest.raises(errors.UserError, match="does not exist"):
    checkpoint_export.export_checkpoint(str(tmp_path / "missing"))
  (tmp_path / "empty").mkdir()
  with pytest.raises(errors.UserError, match="run_config.json not found"):
    checkpoint_export.export_checkpoint(str(tmp_path / "empty"))
  (tmp_path / "empty" / "train").mkdir()
  (tmp_path / "empty" / "train" / "run_config.json").write_text(
      json.dumps({"algorithm": "paac", "env_name": "CartPole-v1"}))
  with pytest.raises(errors.UserError, match="No checkpoint in"):
    checkpoint_export.export_checkpoint(str(tmp_path / "empty"))


def test_network_specs_are_json_and_rebuild_their_model():
  vector = array_spec.BoundedArraySpec((3,), np.float32, [-np.inf, -1.0, 0.0],
                                       [np.inf, 1.0, 5.0], name="observation")
  spec = json.loads(json.dumps(specs.dueling_q_spec(3, vector, network="mlp", mlp_units=(8,),
                                                    head_units=4), allow_nan=False))
  assert specs.observation_spec(spec) == vector
  model = specs.build_model(spec)
  assert isinstance(model, dueling_q.DuelingQ) and model.num_actions == 3
  assert model.value_hidden.units == 4
  spec = json.loads(json.dumps(specs.actor_critic_spec(6, ATARI_SPEC, network="arch_nature",
                                                       initializer="orthogonal")))
  assert spec["observation"] == {"shape": [84, 84, 4], "dtype": "uint8", "minimum": 0,
                                 "maximum": 255}
  assert specs.observation_spec(spec) == ATARI_SPEC
  model = specs.build_model(spec)
  assert (model.torso_name, model.initializer, model.num_actions) == ("arch_nature",
                                                                      "orthogonal", 6)
  with pytest.raises(ValueError, match="Unknown network spec"):
    specs.build_model({"model": "resnet"})
  with pytest.raises(ValueError, match="lacks 'initializer'"):
    specs.build_model({k: v for k, v in spec.items() if k != "initializer"})


def test_export_of_a_run_uses_its_recorded_network_spec(tmp_path):
  """A PAAC run with non-default network settings records its network's spec in
  run_config.json; export rebuilds the network from it, with no operative config (the
  defaults would not fit the checkpoint). A run recorded before the spec was resumes, and
  gets it; a resume with another network setting is refused."""
  root = tmp_path / "run"
  bindings = {"train_eval.total_steps": 40, "paac.num_envs": 4, "paac.num_workers": 0,
              "paac.mlp_units": (16,), "paac.initializer": "orthogonal"}
  paac_tf.train("cartpole.gin", bindings, root_dir=str(root))
  obs, env_spec, _ = _real_observations("CartPole-v1", 4, 3)
  run_config_path = root / "train" / "run_config.json"
  recorded = json.loads(run_config_path.read_text())["network_spec"]
  assert recorded == json.loads(json.dumps(
      specs.actor_critic_spec(2, env_spec, "mlp", (16,), "orthogonal")))
  assert specs.observation_spec(recorded) == env_spec

  os.remove(root / "operative_config.gin")
  # (Elsewhere than the run's policies/: the run exported its final version 40 there.)
  path = checkpoint_export.export_checkpoint(str(root), export_dir=str(tmp_path / "exports"),
                                             greedy=True)
  meta = loading.read_metadata(path)
  assert meta["run_config"]["network_spec"] == recorded and meta["operative_config"] == ""
  trained = actor_critic.build_actor_critic(2, env_spec, torso="mlp", mlp_units=(16,),
                                            initializer="orthogonal")
  checkpoint, _ = checkpoint_export.find_checkpoint(str(root / "train"))
  tf.train.Checkpoint(model=trained).restore(checkpoint).expect_partial()
  action, probabilities, value = _paac_expected(trained, obs)
  out = tf.saved_model.load(path).signatures["serving_default"](observation=tf.constant(obs))
  np.testing.assert_array_equal(out["action"].numpy(), action)
  np.testing.assert_allclose(out["probabilities"].numpy(), probabilities, atol=1e-5)
  np.testing.assert_allclose(out["value"].numpy(), value, atol=1e-4)

  old = json.loads(run_config_path.read_text())
  del old["network_spec"]
  run_config_path.write_text(json.dumps(old))
  paac_tf.train("cartpole.gin", bindings, root_dir=str(root))   # nothing left: resumes, stops
  assert json.loads(run_config_path.read_text()) == {**old, "network_spec": recorded}
  before = run_config_path.read_text()
  with pytest.raises(errors.CheckpointMismatchError, match="network_spec"):
    paac_tf.train("cartpole.gin", {**bindings, "paac.initializer": "torch"},
                  root_dir=str(root))
  assert run_config_path.read_text() == before


def test_training_exporter_contract(cartpole, tmp_path):
  # The exporter's defaults (not greedy), whatever a training earlier in this process bound
  # (cartpole.gin: training_exporter.greedy = True).
  gin.clear_config()

  exporter = harness.training_exporter(str(tmp_path), "CartPole-v1", PAAC)
  path = exporter(cartpole["model"], cartpole["spec"], 500)
  assert path == os.path.join(harness.export_dir(str(tmp_path), "CartPole-v1"), "500")
  assert path == os.path.join(str(tmp_path), "policies", "cartpole_v1", "500")
  meta = loading.read_metadata(path)
  assert meta["greedy"] is False and meta["action_selection"] == "sample"
  exporter(cartpole["model"], cartpole["spec"], 1000)
  assert _versions(os.path.dirname(path)) == [500, 1000]


def test_the_cadence_skips_an_export_that_exists(tmp_path):
  """The rule of every training loop (bookkeeping/cadence.py): a version that exists already
  (the final export of a resumed run that had finished) is left as it is."""
  exported = []

  def export(steps):
    os.makedirs(os.path.join(str(tmp_path), str(steps)))
    exported.append(steps)
    return steps

  network = tf.Module()
  network.weights = tf.Variable([1.0])
  cadence = cadence_lib.Cadence(
      str(tmp_path / "run"), checkpoint_interval=100, export_interval=50, summary_interval=1,
      start_steps=0, saved=True, save=lambda steps: None, export=export,
      export_dir=str(tmp_path), network=network, finite_keys=())
  assert cadence.export(500) == 500 and cadence.export(500) is None
  cadence.after_update(40, 1, None)
  cadence.after_update(120, 2, None)       # past 50 and 100: one export, one checkpoint
  assert exported == [500, 120] and cadence.saved_at == 120
  assert (cadence.next_export, cadence.next_checkpoint) == (150, 200)


def test_model_names():
  assert saved_model.model_name("Pong") == "pong"
  assert saved_model.model_name("ALE/SpaceInvaders-v5") == "space_invaders"
  assert saved_model.model_name("BreakoutNoFrameskip-v4") == "breakout"
  assert saved_model.model_name("CartPole-v1") == "cartpole_v1"


def test_repeated_exports_do_not_grow_the_process_memory(tmp_path):
  """A training run exports every 1M steps: each export's traced functions must be freed
  (they kept 10-16 MB each in a trainer before a collection was forced after saving)."""
  import gc  # pylint: disable=import-outside-toplevel
  import psutil  # pylint: disable=import-outside-toplevel
  model = actor_critic.build_actor_critic(4, ATARI_SPEC)
  process = psutil.Process()
  rss = []
  gc.disable()   # as when the collector's thresholds are not reached between exports
  try:
    for version in range(1, 8):
      saved_model.save_policy(PAAC, model, ATARI_SPEC, str(tmp_path / "breakout"), version,
                              {"env_name": "Breakout", "train_step": version})
      rss.append(process.memory_info().rss / 2 ** 20)
  finally:
    gc.enable()
  assert rss[-1] - rss[1] < 20, ["%.1f" % r for r in rss]


# TensorFlow's INFO lines of a SavedModel save (builder, fingerprint, renamed inputs).
TF_EXPORT_INFO = ("Assets written to", "Writing fingerprint", "will be renamed")


@pytest.mark.parametrize("verbose", [False, True])
def test_exports_keep_tensorflow_info_lines_out_unless_asked_for(cartpole, tmp_path, caplog,
                                                                 monkeypatch, verbose):
  if verbose:
    monkeypatch.setenv("PAAC_TF_VERBOSE_TF", "1")
  else:
    monkeypatch.delenv("PAAC_TF_VERBOSE_TF", raising=False)
  caplog.set_level(logging.INFO)
  caplog.set_level(logging.INFO, logger="tensorflow")   # as under absl's app.run
  saved_model.save_policy(PAAC, cartpole["model"], cartpole["spec"], str(tmp_path / "m"), 1,
                          {"env_name": "CartPole-v1", "train_step": 1})
  noise = [r.getMessage() for r in caplog.records
           if any(n in r.getMessage() for n in TF_EXPORT_INFO)]
  # Asked for, the builder's line (of TensorFlow's own logger) shows: the capture works; the
  # others go through absl's logger, whose level here is not the CLI's (test_train_cli.py
  # checks the command's output). Else none shows.
  if verbose:
    assert any("Assets written to" in m for m in noise), noise[:3]
  else:
    assert noise == [], noise[:3]
  assert logging.getLogger("tensorflow").level == logging.INFO   # restored after the export
