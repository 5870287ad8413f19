"""Speed options and their measurements: the networks' bfloat16 precision (its choice, its
outputs, PAAC's update in it, the benchmark's bf16-vs-float32 part and priorities'
agreement) and the TF-Agents baseline (the wall minutes to a score from committed runs:
test_ablation.py). The benchmark's loop is the training loop: test_tools.py."""

import numpy as np
import pytest
import tensorflow as tf
from tf_agents.specs import array_spec

from paac_tf import errors
from paac_tf.algorithms.paac import algorithm as algorithm_lib
from paac_tf.algorithms.paac import settings as settings_lib
from paac_tf.algorithms.paac import update
from paac_tf.envs import batched
from paac_tf.networks import actor_critic
from paac_tf.networks import dueling_q
from paac_tf.networks import precision
from tools.bench import benchmark_tables
from tools.bench import precision_measurements

from conftest import run_snippet_json

pytestmark = pytest.mark.timeout(240)

ATARI = array_spec.BoundedArraySpec((84, 84, 4), np.uint8, 0, 255)


# --- precision ---------------------------------------------------------------------------
def test_auto_precision_follows_the_cpu_flags_and_gpus(tmp_path):
  with_bf16, without = tmp_path / "bf16", tmp_path / "plain"
  with_bf16.write_text("processor : 0\nflags : fpu sse avx512f avx512_bf16 avx512_vnni\n")
  without.write_text("processor : 0\nflags : fpu sse avx512f avx512_vnni\n")
  assert precision.cpu_has_bf16(str(with_bf16)) and not precision.cpu_has_bf16(str(without))
  assert not precision.cpu_has_bf16(str(tmp_path / "missing"))
  assert precision.resolve("auto", str(with_bf16), has_gpu=False) == "mixed_bfloat16"
  assert precision.resolve("auto", str(without), has_gpu=False) == "float32"
  assert precision.resolve("auto", str(with_bf16), has_gpu=True) == precision.GPU_AUTO
  assert precision.resolve("float32", str(with_bf16)) == "float32"
  assert precision.resolve("mixed_bfloat16", str(without)) == "mixed_bfloat16"
  with pytest.raises(errors.ConfigError, match="Unknown precision 'bf16'"):
    precision.resolve("bf16")


def test_bfloat16_networks_keep_float32_variables_and_outputs():
  obs = np.random.default_rng(0).integers(0, 256, (8, 84, 84, 4), dtype=np.uint8)
  for build, kwargs in ((actor_critic.build_actor_critic, {"torso": "arch_nips"}),
                        (dueling_q.build_dueling_q, {"head_units": 16})):
    f32 = build(6, ATARI, **kwargs)
    bf16 = build(6, ATARI, precision="mixed_bfloat16", **kwargs)
    assert bf16.precision == "mixed_bfloat16" and f32.precision == "float32"
    bf16.set_weights(f32.get_weights())     # the same variables, all float32
    assert {v.dtype for v in bf16.variables} == {tf.float32}
    assert {layer.compute_dtype for layer in bf16.torso.layers} == {"bfloat16"}
    out32, out16 = tf.nest.flatten(f32(obs)), tf.nest.flatten(bf16(obs))
    for a, b in zip(out32, out16):
      assert b.dtype == tf.float32
      scale = float(tf.reduce_max(tf.abs(a)))
      np.testing.assert_allclose(b.numpy(), a.numpy(), atol=0.05 * scale)
      assert not np.array_equal(b.numpy(), a.numpy())   # bfloat16 did compute


def test_bfloat16_paac_train_step_updates_float32_weights():
  """paac.precision = 'mixed_bfloat16': the model the algorithm makes computes its torso in
  bfloat16, and the update (update.train_step, as the loop calls it) applies finite
  float32 gradients to its float32 variables, its loss near the float32 model's."""
  paac = algorithm_lib.Paac()
  actions_spec = array_spec.BoundedArraySpec((), np.int64, 0, 5)
  rng = np.random.default_rng(1)
  obs = rng.integers(0, 256, (3, 4, 84, 84, 4), dtype=np.uint8)
  rollout = np.stack([rng.choice([-1.0, 0.0, 1.0], (3, 4)), np.ones((3, 4)),
                      np.zeros((3, 4)), np.zeros((3, 4))]).astype(np.float32)
  batch = (obs, rng.integers(0, 6, (3, 4)), rollout, np.zeros((4, 4), np.float32))
  out = {}
  for name in ("float32", "mixed_bfloat16"):
    settings = settings_lib.PaacSettings(network="arch_nips", precision=name)
    model = paac.make_model(actions_spec, ATARI, settings, seed=2)
    assert model.precision == name
    optimizer = paac.make_optimizer(model, settings, total_updates=10)
    before = [w.copy() for w in model.get_weights()]
    metrics = update.train_step(model, optimizer, settings,
                                *[tf.constant(x) for x in batch]).numpy()
    assert metrics.dtype == np.float32 and np.all(np.isfinite(metrics))
    assert all(w.dtype == np.float32 for w in model.get_weights())
    assert any(not np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
    out[name] = dict(zip(update.METRIC_NAMES, metrics))
  assert out["mixed_bfloat16"]["Losses/total"] == pytest.approx(out["float32"]["Losses/total"],
                                                                rel=0.05, abs=0.05)


def test_rank_agreement():
  scores = np.arange(100.0)
  same = precision_measurements.rank_agreement(scores, scores * 2 + 1)
  assert same == {"spearman": pytest.approx(1.0), "top_overlap": 1.0}
  reverse = precision_measurements.rank_agreement(scores, -scores)
  assert reverse == {"spearman": pytest.approx(-1.0), "top_overlap": 0.0}
  swapped = scores.copy()
  swapped[[89, 90]] = swapped[[90, 89]]       # one item leaves the top 10, one enters
  assert precision_measurements.rank_agreement(scores, swapped)["top_overlap"] == 0.9


def test_precision_part_measures_both_precisions_and_the_priorities():
  """The benchmark's 'precision' part at small sizes, and its table."""
  args = dict(game="Pong", num_envs=4, t_max=3, apex_batch_size=24, apex_act_batch_size=4,
              num_rounds=2, seconds=0.05)
  result = precision_measurements.part_precision(networks=("arch_nips",), **args)
  rates = result["rates"]
  assert set(rates) == {"paac_act arch_nips", "paac_train arch_nips", "apex_act",
                        "apex_learner"}
  for x in rates.values():
    assert x["float32"] > 0 and x["mixed_bfloat16"] > 0
    assert x["ratio_min"] <= x["ratio"] <= x["ratio_max"]
  p = result["priorities"]
  assert p["batch_size"] == 24 and -1.0 <= p["spearman"] <= 1.0
  assert p["spearman"] > 0.9 and 0.0 <= p["top_overlap"] <= 1.0
  table, summary = benchmark_tables.summarize([dict(result, part="precision", **args)], 4)
  assert "| PAAC act, arch_nips | 4 |" in table and "| Ape-X learner step" in table
  assert "Spearman rank correlation **%.4f**" % p["spearman"] in table
  assert summary["precision"]["apex_learner"]["bf16_vs_f32"] == rates["apex_learner"]["ratio"]


def test_replay_sample_windows_stay_in_one_episode():
  rng = np.random.default_rng(0)
  steps, n = 6, 2
  obs = rng.integers(0, 256, (steps, n, 84, 84, 4), dtype=np.uint8)
  step_types = np.ones((steps, n), np.int32)
  step_types[3, 0] = batched.LAST           # env 0's windows through step 3 are skipped
  rewards = np.ones((steps, n), np.float32)
  sample = precision_measurements.replay_sample(obs, rewards, step_types, 6, 3)
  frames, transition = sample.data["frames"], sample.data["transition"]
  assert frames.shape == (3, 7, 84, 84)
  for item in range(3):
    matches = [(t, e) for t in range(steps - 3) for e in range(n)
               if np.array_equal(frames[item, :4], np.moveaxis(obs[t, e], -1, 0))]
    assert len(matches) == 1
    t, e = matches[0]
    assert np.all(step_types[t + 1:t + 4, e] == 1)
    np.testing.assert_array_equal(frames[item, 4:], obs[t + 1:t + 4, e, ..., -1])
    assert transition[item, 1] == pytest.approx(1 + 0.99 + 0.99 ** 2)
    assert transition[item, 2] == pytest.approx(0.99 ** 3) and transition[item, 3] == 3


# --- TF-Agents baseline ----------------------------------------------------------------
@pytest.mark.system   # a whole run: `make test-system` (.ci/run's second step)
def test_tf_agents_baseline_part_measures_both_loops_in_alternating_rounds():
  """The benchmark's 'tf_agents' part at small sizes (in a fresh process: the baseline
  forks its environment processes), and its table."""
  code = r'''
import json
from tools.bench import benchmark_tables, tf_agents_baseline
args = dict(game="Pong", num_envs=4, num_workers=2, t_max=5, num_rounds=2, seconds=0.3)
r = tf_agents_baseline.part_tf_agents(**args)
r.update(part="tf_agents", **args)
table, summary = benchmark_tables.summarize([r], 4)
print(json.dumps({"result": r, "table": table, "summary": summary}))
'''
  out = run_snippet_json(code, timeout=230)
  result = out["result"]
  assert len(result["rounds"]) == 2
  for r in result["rounds"]:
    assert all(r[k] > 0 for k in ("baseline_env", "vector_env", "portable_env",
                                  "baseline_loop", "loop"))
    assert r["loop_vs_baseline_loop"] == pytest.approx(r["loop"] / r["baseline_loop"])
  median = result["median"]["loop_vs_baseline_loop"]
  assert "| median |" in out["table"] and "**%.2f**" % median in out["table"]
  assert out["summary"]["tf_agents"]["loop_vs_baseline_loop"] == median


def test_driver_loop_trains_on_t_max_steps_of_every_environment():
  """The baseline's update: t_max batched steps gathered time-major into the training
  loop's train step (benchmark_parts.PaacCalls: update.train_step compiled as the loop
  compiles it; in a fresh process: the baseline forks its environment processes)."""
  code = r'''
import json
from tools.bench import benchmark_parts, tf_agents_baseline
env = tf_agents_baseline.parallel_env("Pong", 2)
try:
  calls = benchmark_parts.paac_calls("arch_nips", num_actions=6)
  seen = []
  loop = tf_agents_baseline.DriverLoop(env, calls, t_max=3)
  train = loop.train_step
  loop.train_step = lambda *a: seen.append([x.shape.as_list() for x in a]) or train(*a)
  steps = [loop.update() for _ in range(2)]
  print(json.dumps({"steps": steps, "shapes": seen,
                    "updates": int(calls.optimizer.iterations.numpy())}))
finally:
  env.close()
'''
  out = run_snippet_json(code, timeout=230)
  assert out["steps"] == [6, 6] and out["updates"] == 2
  assert out["shapes"][0] == [[3, 2, 84, 84, 4], [3, 2], [4, 3, 2], [4, 2]]
