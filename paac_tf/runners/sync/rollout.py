"""Collects rollouts and applies the agent's update, keeping env groups in flight.

With one env group this is the plain synchronous loop: act on s_t for all n_e envs, step
all envs, repeat t_max times, update. With G groups (n_e / G envs each) the groups are
stepped asynchronously and in turn: while group g's environments step, the actions of
group g+1 are computed, so environment stepping and action selection overlap. The rollouts
and the update are exactly those of one group.

`overlap_learner=True` goes one step further: the environment step of the next rollout's
first action (chosen, as always, with the bootstrap values, see below) starts before the
update is applied, so the update runs while the environments step. Off by default.

Observations are copied once between the environments and the train step: each rollout's
observations live in one preallocated [t_max, n_e, ...] array (two, used in turn, as the
last observation of a rollout is the first of the next), which an environment that can
(`recv(out=...)`, the Atari vector env) fills directly with its NHWC conversion, and which
action selection and the train step read without copying (`tensor_views.as_tensor`).

Each rollout's first actions are chosen together with the previous rollout's bootstrap
values, by one forward pass on its last observations, before that rollout's update: they
come from weights one update old (1/t_max of the actions), and no second forward pass on the
same observations runs after the update.

The forward pass runs once per observation: where the agent `stores_activations`, action
selection at steps 1..t_max-1 also returns the torso's activations, and the update takes its
gradients from them (networks/stored_activations.py) instead of running the torso forward on
the rollout again; it runs it only on step 0, whose activations are from the weights before
the last update. The activations stay in the tensors action selection returned, which go to
the update as they are; the loop reads each call's actions and values through a view of its
output (`tensor_views.numpy_view`), not a copy (the activations are 1.2 MB a step with
arch_nips and n_e 32). What each of these saves: docs/performance.md, "Less work per agent
step".
"""
import functools
import inspect

import numpy as np
import tensorflow as tf

from paac_tf.envs import batched
from paac_tf.networks import stored_activations
from paac_tf.runners.sync import packed_calls
from paac_tf.runners.sync import stored_update
from paac_tf.runners.sync import tensor_views

LAST = batched.LAST


class _GroupBuffer:
  """One group's rollout but its observations: actions/is_last/values per step, and the
  step results."""

  def __init__(self):
    self.clear()

  def clear(self):
    self.actions, self.is_last, self.values = [], [], []
    self.rewards, self.discounts, self.next_last = [], [], []

  def record_decision(self, time_step, actions, values):
    self.actions.append(actions)
    self.is_last.append(time_step.step_type == LAST)
    self.values.append(values)

  def record_outcome(self, time_step):
    self.rewards.append(time_step.reward)
    self.discounts.append(time_step.discount)
    self.next_last.append(time_step.step_type == LAST)


def concrete_function(function, *args):
  """The concrete function of the tf.function `function` for these arguments' shapes and
  dtypes. Calling it skips tf.function's per-call argument matching (its cost:
  docs/performance.md)."""
  return function.get_concrete_function(*(tf.TensorSpec(a.shape, a.dtype) for a in args))


class CompiledCalls:
  """The agent's acting and update as the loop calls them, each one `tf.function` (XLA with
  `agent.jit_compile`): `act_packed` / `train_packed` (packed_calls.py: one tensor out of
  each call) and, with `agent.reuse_activations` for the torsos
  networks/stored_activations.py supports (`stores_activations`), `act_stored` /
  `train_stored` (stored_update.py: the update takes the torso's gradients from the
  activations stored while acting, instead of a second forward pass on the same
  observations under the same weights): the same update, less CPU.

  The agent (algorithms/paac/agent.py) provides `model`, `policy`, `sample`, `update`,
  `loss`, `apply`, `metric_names`, `jit_compile` and `reuse_activations`.
  """

  def __init__(self, agent):
    compiled = functools.partial(tf.function, jit_compile=agent.jit_compile)
    self.act_packed = compiled(functools.partial(packed_calls.act, agent))
    self.train_packed = compiled(functools.partial(packed_calls.train, agent))
    torso = getattr(agent.model, "torso", None)
    self.stores_activations = bool(agent.reuse_activations and torso is not None and
                                   stored_activations.supports(torso))
    if self.stores_activations:
      self.activation_size = stored_activations.stored_size(torso)
      self.act_stored = compiled(functools.partial(stored_update.act, agent))
      self.train_stored = compiled(functools.partial(stored_update.train, agent))


class RolloutRunner:
  """Runs `t_max`-step rollouts on a batched env (grouped or not) and trains `agent` (its
  compiled `calls`: a `CompiledCalls` of it unless given)."""

  def __init__(self, env, agent, t_max, overlap_learner=False, calls=None):
    self.env = env
    self.agent = agent
    self.calls = calls or CompiledCalls(agent)
    self.t_max = int(t_max)
    self.overlap_learner = bool(overlap_learner)
    self.stores_activations = self.calls.stores_activations and self.t_max > 1
    self.groups = list(getattr(env, "groups", [env]))
    self.steps_per_update = int(env.batch_size) * self.t_max
    self._buffers = [_GroupBuffer() for _ in self.groups]
    self._decisions = None   # per group: (time_step, actions, values), numpy
    self._in_flight = False  # whether every group has a step sent and not yet received
    self._concrete_functions = {}
    spec = env.observation_spec()
    shape = (self.t_max, int(env.batch_size)) + tuple(spec.shape)
    # Observations of the current rollout and of the next one (its first step).
    self._obs = [tensor_views.aligned_empty(shape, spec.dtype) for _ in range(2)]
    # `act_stored`'s outputs of steps 1..t_max-1 per group, where the agent stores activations.
    self._acted = [[None] * len(self.groups) for _ in range(self.t_max - 1)]
    self._current = 0
    bounds = np.cumsum([0] + [int(g.batch_size) for g in self.groups])
    self._columns = [slice(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]
    self._recv_into = [_receives_into(g) for g in self.groups]

  def _concrete(self, function, *args):
    """Calls the tf.function `function` through its `concrete_function` for these
    arguments, kept per function, shapes and dtypes."""
    if not hasattr(function, "get_concrete_function"):   # a plain Python callable
      return function(*args)
    key = (function,) + tuple((tuple(a.shape), a.dtype) for a in args)
    concrete = self._concrete_functions.get(key)
    if concrete is None:
      concrete = concrete_function(function, *args)
      self._concrete_functions[key] = concrete
    return concrete(*args)

  def _act(self, k, t):
    """(actions int64 [B], values float32 [B]) as numpy for group k's observation of step
    t (`_slot`), from one packed tensor; at steps 1..t_max-1 that tensor, holding the
    activations if they are stored, is kept for the update (`_acted`)."""
    observation = tensor_views.as_tensor(self._slot(k, t))
    if self.stores_activations and 0 < t < self.t_max:
      packed = self._concrete(self.calls.act_stored, observation)
      self._acted[t - 1][k] = packed
    else:
      packed = self._concrete(self.calls.act_packed, observation)
    packed = tensor_views.numpy_view(packed)
    return packed[:, 0].astype(np.int64), packed[:, 1]

  def _slot(self, k, t):
    """Where group k's observation of step t of the current rollout lives (t = t_max: the
    first step of the next rollout)."""
    if t < self.t_max:
      return self._obs[self._current][t, self._columns[k]]
    return self._obs[1 - self._current][0, self._columns[k]]

  def _receive(self, k, t):
    """Group k's time step of step t, its observation in `_slot(k, t)`."""
    slot = self._slot(k, t)
    if self._recv_into[k]:
      return self.groups[k].recv(out=slot)
    time_step = self.groups[k].recv()
    np.copyto(slot, time_step.observation)
    return time_step

  def start(self):
    """Resets the envs and picks the first actions."""
    self._decisions = []
    for k, g in enumerate(self.groups):
      time_step = g.reset()
      np.copyto(self._slot(k, 0), time_step.observation)
      actions, values = self._act(k, 0)
      self._decisions.append((time_step, actions, values))
    self._in_flight = False

  def _send(self, k):
    time_step, actions, values = self._decisions[k]
    self._buffers[k].record_decision(time_step, actions, values)
    self.groups[k].send(actions)

  def run_update(self):
    """Collects one rollout, trains on it; returns the update's metrics {name: numpy float}."""
    if self._decisions is None:
      self.start()
    if not self._in_flight:
      for k in range(len(self.groups)):
        self._send(k)
    for t in range(self.t_max):
      for k in range(len(self.groups)):
        time_step = self._receive(k, t + 1)
        self._buffers[k].record_outcome(time_step)
        actions, values = self._act(k, t + 1)
        self._decisions[k] = (time_step, actions, values)
        if t + 1 < self.t_max:
          self._send(k)
    batch = self._batch()
    for buf in self._buffers:
      buf.clear()
    self._in_flight = self.overlap_learner
    if self.overlap_learner:
      for k in range(len(self.groups)):
        self._send(k)
    if self.stores_activations:
      acted = [packed for step in self._acted for packed in step]
      metrics = self._concrete(self.calls.train_stored, *batch, *acted).numpy()
    else:
      metrics = self._concrete(self.calls.train_packed, *batch).numpy()
    self._current = 1 - self._current
    return dict(zip(self.agent.metric_names, metrics))

  def _batch(self):
    """`train_packed`'s arguments: observations [T, n_e, ...] (the current rollout's array,
    shared), actions [T, n_e] concatenated over groups, step data [4, T, n_e] (rewards,
    discounts, next_is_last, is_last), values [T + 1, n_e]."""
    def cat(field, dtype=None):
      parts = [np.stack(getattr(b, field)) for b in self._buffers]
      out = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
      return out if dtype is None else out.astype(dtype, copy=False)
    values = [np.stack(b.values + [d[2]]) for b, d in zip(self._buffers, self._decisions)]
    values = values[0] if len(values) == 1 else np.concatenate(values, axis=1)
    step_data = np.stack([cat("rewards", np.float32), cat("discounts", np.float32),
                          cat("next_last", np.float32), cat("is_last", np.float32)])
    return tensor_views.as_tensor(self._obs[self._current]), cat("actions"), step_data, values


def _receives_into(env):
  """Whether `env.recv` can write the observations into a given array (`out`)."""
  try:
    return "out" in inspect.signature(env.recv).parameters
  except (TypeError, ValueError):
    return False
