"""n-step transitions built by an actor, batched over its environments (pure numpy).

The actor calls `NStepBuilder.step` once per batched environment step with the time step
it just observed (its step type, and the reward and discount of arriving there) and the
action it chose there. A transition starts at every time step that is not LAST and is
complete after n more steps, or earlier when its episode ends:

  start s_t, action a_t, bootstrap observation s_{t+k}, k <= n, with
  reward   R = sum_{i=1..k} gamma^(i-1) * (d_{t+1} ... d_{t+i-1}) * r_{t+i}
  discount D = gamma^k * d_{t+1} ... d_{t+k}

so that the learner's target is R + D * Q_target(s_{t+k}, argmax_a Q(s_{t+k}, a)).

Episode ends follow the batched-env contract (TF-Agents auto-reset, see
`paac_tf/envs/atari_vector.py`):
- LAST completes every pending transition of that environment with k < n if needed:
  terminated (d = 0) gives D = 0, no bootstrap; truncated (d = 1) bootstraps from the true
  final observation, which LAST carries;
- the action given at a LAST time step is ignored by the env (the next step is FIRST), so
  no transition starts there, and none ever straddles a FIRST;
- a MID step with discount 0 cuts the return and the bootstrap (D = 0) but not the
  stream: transitions still run n steps. (Episodic life gives a LAST with discount 0 at a
  lost life instead, then FIRST: see paac_tf/envs/atari_vector.py.)
"""
import collections

import numpy as np

from paac_tf.envs import batched

FIRST, MID, LAST = batched.FIRST, batched.MID, batched.LAST

Transitions = collections.namedtuple("Transitions", [
    "env",        # int64 [M]   environment index in the batch
    "start_id",   # int64 [M]   id of s_t (the caller's id, see NStepBuilder.step)
    "next_id",    # int64 [M]   id of s_{t+k}: always the time step given to this call
    "length",     # int64 [M]   k, 1 <= k <= n
    "action",     # [M, *action_shape] a_t (int64 [M] for discrete actions)
    "reward",     # float32 [M] R
    "discount",   # float32 [M] D
    "q_taken",    # float32 [M] Q(s_t, a_t) as given at the start (NaN if not given)
])


def empty_transitions(action_shape=(), action_dtype=np.int64):
  i, f = np.zeros(0, np.int64), np.zeros(0, np.float32)
  return Transitions(i, i, i, i, np.zeros((0, *action_shape), action_dtype), f, f, f)


class NStepBuilder:
  """Pending n-step transitions of `num_envs` environments; emits completed ones.

  Actions are one integer per environment (`action_shape` (), the default) or arrays of
  `action_shape` and `action_dtype` (continuous actions: float32).
  """

  def __init__(self, num_envs, n=3, gamma=0.99, action_shape=(), action_dtype=np.int64):
    if int(n) < 1:
      raise ValueError("n must be >= 1, got %r." % (n,))
    self.num_envs, self.n, self.gamma = int(num_envs), int(n), float(gamma)
    self.action_shape = tuple(int(d) for d in action_shape)
    self.action_dtype = np.dtype(action_dtype)
    shape = (self.num_envs, self.n)
    # One slot per possibly pending start: a transition started at an environment's
    # c-th call lives in slot c mod n; it is complete by call c + n at the latest.
    self._active = np.zeros(shape, bool)
    self._return = np.zeros(shape, np.float64)
    self._weight = np.ones(shape, np.float64)   # multiplier of the next reward (= D so far)
    self._length = np.zeros(shape, np.int64)
    self._action = np.zeros(shape + self.action_shape, self.action_dtype)
    self._q_taken = np.zeros(shape, np.float32)
    self._start_id = np.zeros(shape, np.int64)
    self._calls = np.zeros(self.num_envs, np.int64)

  @property
  def num_pending(self):
    return int(self._active.sum())

  def step(self, step_type, reward, discount, action, q_taken=None, ids=None):
    """Advances every environment by the time step just observed.

    Args:
      step_type, reward, discount: [B] of the time step just observed (the reward and
        discount of arriving there; ignored on FIRST).
      action: [B, *action_shape] actions chosen at this time step (ignored where it is
        LAST).
      q_taken: optional [B] Q(s, action) under the actor's network, kept for priorities.
      ids: optional [B] int64 ids of this time step's observations (e.g. positions in a
        replay stream); default: the number of previous calls for that environment.
    Returns:
      `Transitions` completed at this time step, ordered by environment then start; their
      bootstrap observation is this time step's observation of environment `env`.
    """
    step_type = np.asarray(step_type).reshape(self.num_envs)
    reward = np.asarray(reward, np.float64).reshape(self.num_envs, 1)
    discount = np.asarray(discount, np.float64).reshape(self.num_envs, 1)
    action = np.asarray(action, self.action_dtype).reshape(self.num_envs, *self.action_shape)
    q_taken = (np.full(self.num_envs, np.nan, np.float32) if q_taken is None
               else np.asarray(q_taken, np.float32).reshape(self.num_envs))
    ids = self._calls.copy() if ids is None else np.asarray(ids, np.int64).reshape(self.num_envs)
    first = step_type == FIRST
    last = step_type == LAST

    # A FIRST never continues earlier transitions (under the contract none is pending:
    # the LAST before it completed them all).
    self._active[first] = False

    # Accumulate this step's reward and discount into every pending transition.
    upd = self._active
    self._return += np.where(upd, self._weight * reward, 0.0)
    self._weight = np.where(upd, self._weight * self.gamma * discount, self._weight)
    self._length += upd

    # Complete the transitions that reached n steps, and all of those of an ended episode.
    done = upd & ((self._length >= self.n) | last[:, None])
    out = self._collect(done, ids)
    self._active[done] = False

    # Start a transition at every time step that is not LAST.
    rows = np.flatnonzero(~last)
    slots = self._calls[rows] % self.n
    if self._active[rows, slots].any():
      raise AssertionError("n-step slot still in use; this is a bug.")
    self._active[rows, slots] = True
    self._return[rows, slots] = 0.0
    self._weight[rows, slots] = 1.0
    self._length[rows, slots] = 0
    self._action[rows, slots] = action[rows]
    self._q_taken[rows, slots] = q_taken[rows]
    self._start_id[rows, slots] = ids[rows]
    self._calls += 1
    return out

  def _collect(self, done, ids):
    env, slot = np.nonzero(done)
    if env.size == 0:
      return empty_transitions(self.action_shape, self.action_dtype)
    start = self._start_id[env, slot]
    order = np.lexsort((start, env))
    env, slot, start = env[order], slot[order], start[order]
    return Transitions(
        env=env.astype(np.int64), start_id=start, next_id=ids[env],
        length=self._length[env, slot].copy(), action=self._action[env, slot].copy(),
        reward=self._return[env, slot].astype(np.float32),
        discount=self._weight[env, slot].astype(np.float32),
        q_taken=self._q_taken[env, slot].copy())
