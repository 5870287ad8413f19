"""Ape-X's pure math: epsilon ladder, n-step transitions, priorities, weights, losses."""
import numpy as np
import pytest
import tensorflow as tf

from paac_tf.algorithms.apex import epsilon
from paac_tf.algorithms.apex import losses
from paac_tf.runners.apex import n_step
from paac_tf.algorithms.apex import priorities
from paac_tf.algorithms.replay import prioritized

F, M, L = n_step.FIRST, n_step.MID, n_step.LAST
G = 0.9   # gamma of the hand computations


# --- epsilon ladder -------------------------------------------------------------------------

def test_epsilon_ladder_spans_every_environment_of_every_actor():
  # 2 actors x 2 environments: N = 4, epsilon_i = 0.4 ** (1 + 7 i / 3).
  assert epsilon.environment_epsilons(0, 2, 2) == pytest.approx([0.4, 0.4 ** (1 + 7 / 3)])
  assert epsilon.environment_epsilons(1, 2, 2) == pytest.approx([0.4 ** (1 + 14 / 3), 0.4 ** 8])
  assert epsilon.environment_epsilons(0, 2, 2)[1] == pytest.approx(0.04716, abs=5e-6)
  assert epsilon.environment_epsilons(1, 2, 2)[0] == pytest.approx(0.005559, abs=5e-7)
  # One environment per actor: the paper's per-actor ladder.
  assert [epsilon.environment_epsilons(i, 2, 1)[0] for i in range(2)] == pytest.approx(
      [0.4, 0.4 ** 8])
  assert epsilon.environment_epsilons(2, 5, 1)[0] == pytest.approx(0.4 ** (1 + 7 * 2 / 4))
  # One actor: its environments hold the whole ladder.
  assert epsilon.environment_epsilons(0, 1, 8) == pytest.approx(
      [0.4 ** (1 + i) for i in range(8)])


@pytest.mark.parametrize("num_actors,num_envs", [(1, 1), (2, 1), (2, 2), (2, 32), (3, 5),
                                                 (8, 16)])
def test_epsilon_ladder_union_over_actors_is_the_full_ladder(num_actors, num_envs):
  n = num_actors * num_envs
  ladder = np.concatenate([epsilon.environment_epsilons(a, num_actors, num_envs)
                           for a in range(num_actors)])
  expected = [0.4] if n == 1 else [0.4 ** (1 + 7 * i / (n - 1)) for i in range(n)]
  assert ladder.dtype == np.float64 and ladder.shape == (n,)
  np.testing.assert_allclose(ladder, expected, rtol=1e-12)
  assert ladder[0] == pytest.approx(0.4) and ladder[-1] == pytest.approx(0.4 if n == 1
                                                                       else 0.4 ** 8)
  assert all(a > b for a, b in zip(ladder, ladder[1:]))   # actor 0's first explores most


def test_epsilon_ladder_single_environment_and_custom_base():
  assert epsilon.environment_epsilons(0, 1, 1) == pytest.approx([0.4])
  assert epsilon.environment_epsilons(0, 1, 1, base=0.5, alpha=3.0) == pytest.approx([0.5])
  assert epsilon.environment_epsilons(1, 2, 1, base=0.5, alpha=3.0) == pytest.approx([0.5 ** 4])


@pytest.mark.parametrize("index,count,envs", [(-1, 2, 4), (2, 2, 4), (0, 0, 4), (0, 1, 0),
                                              (0, 2, -1)])
def test_epsilon_ladder_rejects_bad_inputs(index, count, envs):
  with pytest.raises(ValueError):
    epsilon.environment_epsilons(index, count, envs)


def test_epsilon_greedy_takes_one_epsilon_per_row():
  rng = np.random.default_rng(0)
  q = np.tile(np.array([[0.0, 0.0, 1.0]]), (2, 1))
  acts = np.stack([epsilon.epsilon_greedy(q, [1.0, 0.0], rng) for _ in range(2000)])
  assert (acts[:, 1] == 2).all()                      # epsilon 0: always greedy
  assert np.mean(acts[:, 0] != 2) == pytest.approx(2 / 3, abs=0.05)   # epsilon 1: uniform
  # An actor's rows with its slice of the ladder explore at their own rates.
  eps = epsilon.environment_epsilons(0, 1, 4)
  acts = np.stack([epsilon.epsilon_greedy(np.tile(q[:1], (4, 1)), eps, rng)
                   for _ in range(20000)])
  np.testing.assert_allclose(np.mean(acts != 2, axis=0), eps * 2 / 3, atol=0.012)


def test_epsilon_greedy_explores_at_the_given_rate():
  rng = np.random.default_rng(0)
  q = np.tile(np.array([[0.0, 1.0, 0.0, 0.0]]), (20000, 1))
  greedy = epsilon.epsilon_greedy(q, 0.0, rng)
  assert (greedy == 1).all()
  acts = epsilon.epsilon_greedy(q, 0.4, rng)
  # Non-greedy actions: epsilon * 3/4 of the time.
  assert np.mean(acts != 1) == pytest.approx(0.4 * 0.75, abs=0.015)


# --- n-step transitions -----------------------------------------------------------------------

def _run(builder, steps):
  """steps: list of (step_type, reward, discount, action) for one env; collects output."""
  out = []
  for st, r, d, a in steps:
    t = builder.step([st], [r], [d], [a], q_taken=[float(a)])
    out.extend(zip(t.start_id.tolist(), t.next_id.tolist(), t.length.tolist(),
                   t.action.tolist(), t.reward.tolist(), t.discount.tolist(),
                   t.q_taken.tolist()))
  return out


def test_n_step_full_transitions_in_the_middle_of_an_episode():
  b = n_step.NStepBuilder(1, n=3, gamma=G)
  out = _run(b, [(F, 0, 1, 10), (M, 1, 1, 11), (M, 2, 1, 12), (M, 4, 1, 13), (M, 8, 1, 14)])
  # start, next, k, action, R, D, q_taken
  assert out[0][:4] == (0, 3, 3, 10)
  assert out[0][4] == pytest.approx(1 + G * 2 + G * G * 4)
  assert out[0][5] == pytest.approx(G ** 3)
  assert out[0][6] == 10.0
  assert out[1][:4] == (1, 4, 3, 11)
  assert out[1][4] == pytest.approx(2 + G * 4 + G * G * 8)
  assert len(out) == 2 and b.num_pending == 3


def test_n_step_terminated_inside_the_n_steps_does_not_bootstrap():
  b = n_step.NStepBuilder(1, n=3, gamma=G)
  out = _run(b, [(F, 0, 1, 10), (M, 1, 1, 11), (M, 2, 1, 12), (L, 4, 0, 99)])
  assert [o[:4] for o in out] == [(0, 3, 3, 10), (1, 3, 2, 11), (2, 3, 1, 12)]
  assert [o[4] for o in out] == pytest.approx([1 + G * 2 + G * G * 4, 2 + G * 4, 4])
  assert [o[5] for o in out] == [0.0, 0.0, 0.0]
  assert b.num_pending == 0   # nothing starts at LAST


def test_n_step_truncated_inside_the_n_steps_bootstraps_from_the_final_observation():
  b = n_step.NStepBuilder(1, n=3, gamma=G)
  out = _run(b, [(F, 0, 1, 10), (M, 1, 1, 11), (M, 2, 1, 12), (L, 4, 1, 99)])
  # next_id 3 is the LAST time step: its observation is the true final one.
  assert [o[:4] for o in out] == [(0, 3, 3, 10), (1, 3, 2, 11), (2, 3, 1, 12)]
  assert [o[4] for o in out] == pytest.approx([1 + G * 2 + G * G * 4, 2 + G * 4, 4])
  assert [o[5] for o in out] == pytest.approx([G ** 3, G ** 2, G])


def test_n_step_short_episode_and_no_transition_straddles_a_first():
  b = n_step.NStepBuilder(1, n=3, gamma=G)
  out = _run(b, [(F, 0, 1, 10), (L, 5, 0, 99),              # a one-step episode
                 (F, 100, 1, 20), (M, 1, 1, 21), (L, 2, 1, 99),
                 (F, 0, 1, 30)])
  # The FIRST's reward (100, garbage) and the episode before it never leak in.
  assert [o[:4] for o in out] == [(0, 1, 1, 10), (2, 4, 2, 20), (3, 4, 1, 21)]
  assert [o[4] for o in out] == pytest.approx([5, 1 + G * 2, 2])
  assert [o[5] for o in out] == pytest.approx([0.0, G ** 2, G])
  assert b.num_pending == 1


def test_n_step_life_loss_cuts_return_and_bootstrap_but_not_the_stream():
  b = n_step.NStepBuilder(1, n=3, gamma=G)
  out = _run(b, [(F, 0, 1, 10), (M, 1, 1, 11), (M, 2, 0, 12), (M, 4, 1, 13), (M, 8, 1, 14),
                 (M, 16, 1, 15)])
  assert [o[:4] for o in out] == [(0, 3, 3, 10), (1, 4, 3, 11), (2, 5, 3, 12)]
  assert [o[4] for o in out] == pytest.approx([1 + G * 2, 2, 4 + G * 8 + G * G * 16])
  assert [o[5] for o in out] == pytest.approx([0.0, 0.0, G ** 3])


def test_n_step_is_batched_over_environments_with_their_own_episode_ends():
  b = n_step.NStepBuilder(2, n=2, gamma=G)
  seq = [  # (step types, rewards, discounts, actions) of envs 0 and 1
      ([F, F], [0, 0], [1, 1], [1, 2]),
      ([M, M], [1, 10], [1, 1], [3, 4]),
      ([L, M], [2, 20], [0, 1], [0, 5]),
      ([F, L], [0, 30], [1, 1], [6, 0]),
  ]
  got = []
  for i, (st, r, d, a) in enumerate(seq):
    t = b.step(st, r, d, a, ids=np.array([100 + i, 200 + i]))
    got.append(t)
  t2, t3 = got[2], got[3]
  # Step 2: env 0 ends (terminated): its starts 100 and 101 complete; env 1's start 200
  # completes normally (k = n = 2).
  assert t2.env.tolist() == [0, 0, 1]
  assert t2.start_id.tolist() == [100, 101, 200]
  assert t2.next_id.tolist() == [102, 102, 202]
  assert t2.length.tolist() == [2, 1, 2]
  assert t2.reward.tolist() == pytest.approx([1 + G * 2, 2, 10 + G * 20])
  assert t2.discount.tolist() == pytest.approx([0, 0, G * G])
  # Step 3: env 1 truncated: 201 (k = 2) and 202 (k = 1) complete; env 0 restarted.
  assert t3.env.tolist() == [1, 1]
  assert t3.start_id.tolist() == [201, 202]
  assert t3.reward.tolist() == pytest.approx([20 + G * 30, 30])
  assert t3.discount.tolist() == pytest.approx([G * G, G])
  assert t3.action.tolist() == [4, 5]


def test_n_step_one_step_transitions():
  b = n_step.NStepBuilder(1, n=1, gamma=G)
  out = _run(b, [(F, 0, 1, 1), (M, 3, 1, 2), (L, 5, 0, 9), (F, 0, 1, 4)])
  assert [o[:5] for o in out] == [(0, 1, 1, 1, 3.0), (1, 2, 1, 2, 5.0)]
  assert [o[5] for o in out] == pytest.approx([G, 0.0])


# --- priorities and importance weights --------------------------------------------------------

def test_initial_priority_is_the_double_q_td_error_with_one_network():
  q_taken = np.array([1.0, 0.0], np.float32)
  reward = np.array([0.5, 1.0], np.float32)
  discount = np.array([0.9, 0.0], np.float32)
  next_q = np.array([[2.0, 3.0], [7.0, -1.0]], np.float32)
  p = priorities.initial_priorities(q_taken, reward, discount, next_q)
  assert p == pytest.approx([abs(0.5 + 0.9 * 3.0 - 1.0) + 1e-6, 1.0 + 1e-6])
  td = priorities.double_q_td_errors_np(q_taken, reward, discount,
                                        next_q_online=[[5.0, 0.0], [0.0, 1.0]],
                                        next_q_target=next_q)
  assert td == pytest.approx([0.5 + 0.9 * 2.0 - 1.0, 1.0])


def test_importance_weights_by_hand():
  probs = np.array([0.1, 0.2, 0.4])
  size = np.array([10, 10, 10])
  expected = np.array([1.0, 2 ** -0.4, 4 ** -0.4])   # (N P)^-0.4 / max; max is the first
  assert prioritized.importance_weights(probs, size, 0.4).numpy() == pytest.approx(expected,
                                                                                   rel=1e-6)
  assert prioritized.importance_weights_np(probs, size, 0.4) == pytest.approx(expected, rel=1e-6)
  # beta 0: uniform weights; table size cancels in the normalization.
  assert prioritized.importance_weights(probs, size, 0.0).numpy() == pytest.approx([1, 1, 1])
  assert prioritized.importance_weights(probs, size * 7, 0.4).numpy() == pytest.approx(
      expected, rel=1e-6)
  assert prioritized.importance_weights(probs, size, 1.0).numpy() == pytest.approx(
      [1.0, 0.5, 0.25], rel=1e-6)


def test_priorities_from_td_are_float64_absolute_errors():
  p = prioritized.priorities_from_td(tf.constant([-2.0, 0.0, 0.5]))
  assert p.dtype == tf.float64
  assert p.numpy() == pytest.approx([2.0 + 1e-6, 1e-6, 0.5 + 1e-6])
  p_np = prioritized.priorities_from_td_np(np.array([-2.0, 0.0, 0.5], np.float32))
  assert p_np.dtype == np.float64
  assert p_np == pytest.approx([2.0 + 1e-6, 1e-6, 0.5 + 1e-6])


# --- losses -------------------------------------------------------------------------------------

def test_double_q_targets_take_the_target_value_of_the_online_argmax():
  targets = losses.double_q_targets(
      reward=[1.0, 2.0], discount=[0.5, 0.0],
      next_q_online=tf.constant([[1.0, 5.0], [3.0, 0.0]]),
      next_q_target=tf.constant([[10.0, 20.0], [30.0, 40.0]]))
  assert targets.numpy() == pytest.approx([1.0 + 0.5 * 20.0, 2.0])


def test_huber_and_weighted_loss():
  x = tf.constant([0.5, -2.0, 1.0])
  assert losses.huber(x).numpy() == pytest.approx([0.125, 1.5, 0.5])
  assert losses.weighted_huber_loss(x, [1.0, 0.5, 0.0]).numpy() == pytest.approx(
      (0.125 + 0.75) / 3)
  assert losses.chosen_q(tf.constant([[1.0, 2.0], [3.0, 4.0]]), [1, 0]).numpy() == (
      pytest.approx([2.0, 3.0]))


def test_loss_gradient_does_not_flow_into_targets():
  v = tf.Variable([[1.0, 2.0]])
  with tf.GradientTape() as tape:
    targets = losses.double_q_targets([0.0], [1.0], v, v)
    loss = tf.reduce_sum(targets)
  assert tape.gradient(loss, v) is None
