"""What travels through Reverb in Ape-X: table names, the replay item layout, the writer.

Tables of the one Reverb server (built in `replay.py`):
  REPLAY_TABLE   prioritized n-step transitions (actors insert, the learner samples and
                 rewrites priorities);
  WEIGHTS_TABLE  the learner's latest network weights, one item (learner inserts, actors
                 sample without consuming);
  STATS_TABLE    actors' progress reports: agent steps and finished episodes (each with
                 the epsilon that played it) since their previous report (actors insert,
                 the learner drains it; items: `actor_reports.report_item`);
  MARKER_TABLE   the replay's durability marker, one item (`durability.py`).

Replay layout: each environment of each actor is one stream of *frames* written once by a
Reverb `TrajectoryWriter`; an item only references frames of that stream, so no
observation is copied per transition. With `single_frames` (default) and Atari's stacked
observations (H, W, S) a frame is the newest image of the stack, (H, W): observation t
is frames [t-S+1 .. t] (the env shifts its stack by one image per step, which the writer
checks). Otherwise (vector observations, or single_frames=False) a frame is the whole
observation and S = 1.

An item (one n-step transition s_t -> s_{t+k}, see `paac_tf/runners/apex/n_step.py`) is
  frames      [S + n, *frame_shape]  frames t-S+1 .. t+n of its stream
  transition  float32 [A + 3]        (a_t, R, D, k), unpacked by `ReplayLayout.unpack`:
                a_t  the action: one integer (A = 1) for discrete actions, the A floats of a
                     continuous action (its shape flattened),
                R    the discounted n-step reward,
                D    the multiplier of the bootstrap value (0: no bootstrap),
                k    s_t is frames[0:S], s_{t+k} is frames[k:k+S].
The scalars share one float32 column (a discrete a_t and k are small integers, exact in
float32) because Reverb's in-memory cost per item grows with its number of columns: with
one column instead of four an item costs ~1 KB less (measured: ~1.1 KB vs ~2.0 KB per item
besides the frame data), i.e. ~2 GB less for 2M transitions.
Stream rules that keep every window inside one episode's valid frames: at FIRST the S-1
older images of the reset stack are written before its newest image; after LAST, n-1
copies of the final frame pad the stream, so transitions that end early (k < n) still
have a full window. The transition column is sparse: one stream step per completed
transition carries it.
"""
import collections
import time

import numpy as np
from reverb import errors as reverb_errors
import tensorflow as tf

from paac_tf.runners.apex import n_step
from paac_tf.bookkeeping import checks

REPLAY_TABLE = "replay"
WEIGHTS_TABLE = "weights"
STATS_TABLE = "actor_stats"
MARKER_TABLE = "durability"

TRANSITION_FIELDS = ("action", "reward", "discount", "next_offset")
_SCALARS = 3   # R, D, k after the action's A values


class FrameStackError(RuntimeError):
  """An environment's observation stacks do not shift by one image per step."""


@checks.configurable(module="apex", denylist=["observation_spec", "action_spec"])
class ReplayLayout:
  """How transitions of an environment with `observation_spec` are stored in replay.

  Args:
    observation_spec: the batched env's observation spec (ArraySpec or TensorSpec).
    action_spec: its action spec: a scalar integer (discrete, the default) or a float
      array (continuous) spec.
    n_step: n of the n-step transitions (Ape-X: 3).
    single_frames: store each image of stacked (H, W, S) observations once (S = 4 on
      Atari), rather than each observation once; no effect on vector observations.
  """

  def __init__(self, observation_spec, action_spec=None, n_step: checks.Count = 3,
               single_frames: checks.Bool = True):
    self.observation_shape = tuple(int(d) for d in observation_spec.shape)
    self.dtype = tf.as_dtype(observation_spec.dtype)
    self.action_shape = () if action_spec is None else tuple(int(d) for d in action_spec.shape)
    self.discrete_actions = action_spec is None or (
        self.action_shape == () and tf.as_dtype(action_spec.dtype).is_integer)
    self.action_size = int(np.prod(self.action_shape, dtype=np.int64))
    self.n_step = int(n_step)
    if self.n_step < 1:
      raise ValueError("ReplayLayout.n_step must be >= 1, got %d." % self.n_step)
    stacked = len(self.observation_shape) == 3 and self.observation_shape[-1] > 1
    self.single_frames = bool(single_frames) and stacked
    if self.single_frames:
      self.stack = self.observation_shape[-1]
      self.frame_shape = self.observation_shape[:-1]
    else:
      self.stack = 1
      self.frame_shape = self.observation_shape
    self.window = self.stack + self.n_step

  def __repr__(self):
    actions = "" if self.discrete_actions else ", actions %s float32" % (self.action_shape,)
    return "ReplayLayout(observation %s %s, frames %s x %d, n=%d%s)" % (
        self.observation_shape, self.dtype.name, self.frame_shape, self.window, self.n_step,
        actions)

  # --- what an item holds ---------------------------------------------------------------
  def item_signature(self):
    return {
        "frames": tf.TensorSpec([self.window, *self.frame_shape], self.dtype),
        "transition": tf.TensorSpec([self.action_size + _SCALARS], tf.float32),
    }

  def transition_row(self, action, reward, discount, length):
    """numpy: one item's transition column, float32 [A + 3]."""
    return np.concatenate([np.asarray(action, np.float32).reshape(self.action_size),
                           np.array([reward, discount, length], np.float32)])

  def unpack(self, data):
    """TF: an item batch {frames, transition} -> frames, action (int32 [B] if discrete,
    float32 [B, *action_shape] if continuous), reward, discount, next_offset (int32)."""
    transition, a = data["transition"], self.action_size
    if self.discrete_actions:
      action = tf.cast(tf.round(transition[..., 0]), tf.int32)
    else:
      action = tf.reshape(transition[..., :a], [-1, *self.action_shape])
    return {"frames": data["frames"], "action": action,
            "reward": transition[..., a],
            "discount": transition[..., a + 1],
            "next_offset": tf.cast(tf.round(transition[..., a + 2]), tf.int32)}

  def unpack_np(self, data):
    """numpy twin of `unpack` for one item."""
    transition, a = np.asarray(data["transition"], np.float32), self.action_size
    action = (int(round(transition[0])) if self.discrete_actions
              else transition[:a].reshape(self.action_shape))
    return {"frames": np.asarray(data["frames"]), "action": action,
            "reward": float(transition[a]), "discount": float(transition[a + 1]),
            "next_offset": int(round(transition[a + 2]))}

  def frame_bytes(self):
    return int(np.prod(self.frame_shape)) * self.dtype.size

  # --- numpy, in the actor ------------------------------------------------------------
  def newest_frames(self, observations):
    """[B, *obs_shape] -> [B, *frame_shape]: what each time step adds to its stream."""
    observations = np.asarray(observations)
    return observations[..., -1] if self.single_frames else observations

  def older_frames(self, observation):
    """The S-1 images of one observation before its newest one (written at FIRST)."""
    if not self.single_frames:
      return []
    return [observation[..., j] for j in range(self.stack - 1)]

  # --- rebuilding observations from items -----------------------------------------------
  def observations(self, frames, next_offset):
    """TF: item frames [B, W, *frame_shape] and k [B] -> (s_t, s_{t+k}), [B, *obs_shape]."""
    offsets = tf.range(self.stack, dtype=tf.int32)
    first = tf.broadcast_to(offsets, [tf.shape(frames)[0], self.stack])
    following = tf.cast(next_offset, tf.int32)[:, None] + offsets[None, :]
    obs = tf.gather(frames, first, batch_dims=1)
    next_obs = tf.gather(frames, following, batch_dims=1)
    if self.single_frames:   # [B, S, H, W] -> [B, H, W, S]
      obs = tf.transpose(obs, [0, 2, 3, 1])
      next_obs = tf.transpose(next_obs, [0, 2, 3, 1])
    else:                    # [B, 1, ...] -> [B, ...]
      obs, next_obs = obs[:, 0], next_obs[:, 0]
    return obs, next_obs

  def observations_np(self, frames, next_offset):
    """numpy twin of `observations` for one item: frames [W, ...], k -> (s_t, s_{t+k})."""
    frames = np.asarray(frames)
    k = int(next_offset)
    if self.single_frames:
      return (np.moveaxis(frames[:self.stack], 0, -1),
              np.moveaxis(frames[k:k + self.stack], 0, -1))
    return frames[0], frames[k]


# --- the actor's writer ---------------------------------------------------------------------

WriteStats = collections.namedtuple("WriteStats", ["items", "frames"])


class TransitionWriter:
  """Writes the frame streams of `num_envs` environments and their transition items.

  Per batched step, the actor calls `observation_ids(step_type)` (the stream positions the
  new observations will take; give them to `NStepBuilder.step` as `ids`), then
  `write(...)` with the transitions completed at this step and their priorities.
  """

  def __init__(self, client, layout, num_envs, table=REPLAY_TABLE, chunk_length=16,
               check_frame_shift=True, retain=False, audit_table=None):
    """`retain`: also keep each item as a record (`take_kept`) that `resend` can write
    again, for the actor's retention (`retention.py`): (its stream, priority, its frames,
    its transition row, its id), the frames shared between the items of a stream (copied
    once per step), so a kept Atari item costs about one frame. Stream `num_envs` is
    `resend`'s.

    `audit_table` (measurements only, tools/apex/audit.py): each item's carrier step also
    carries its int64 `id` (`write`'s `ids`) in an `id` column, and an item of
    `audit_table` references it, written with the replay item (resent with it too); the
    replay item references the layout's columns only (its signature is unchanged)."""
    self.layout = layout
    self._client = client
    self.retain = bool(retain)
    self.keep_items = self.retain     # records made (the retention turns it off while idle)
    self.audit_table = audit_table
    self._kept = []
    self._resender = None
    self.num_envs = int(num_envs)
    self.table = table
    self.chunk_length = int(chunk_length)
    self.check_frame_shift = bool(check_frame_shift)
    n, s = layout.n_step, layout.stack
    # Largest look-back of an item when created (after LAST and its padding), and room
    # for one open chunk: references older than this are released by the writer.
    self.keep_alive = max(self.chunk_length, 2 * n + s + 1) + self.chunk_length
    # Items may wait for their chunks to fill; beyond this many unconfirmed items per
    # stream, `flush` blocks (this is how the replay rate limiter slows actors down).
    self.max_unconfirmed = 2 * (self.chunk_length + s + n)
    self._writers = []
    for _ in range(self.num_envs):
      writer = client.trajectory_writer(num_keep_alive_refs=self.keep_alive)
      for column in ("frame", "transition"):
        writer.configure((column,), num_keep_alive_refs=self.keep_alive,
                         max_chunk_length=self.chunk_length)
      self._writers.append(writer)
    # With `retain`: each stream's last `keep_alive` frames, as its items reference them.
    self._recent = [collections.deque(maxlen=self.keep_alive) for _ in range(self.num_envs)]
    self._histories = [None] * self.num_envs
    self._positions = np.zeros(self.num_envs, np.int64)   # steps written per stream
    self._previous_newest = None                            # last frame per stream
    self._has_previous = np.zeros(self.num_envs, bool)
    self.items_written = 0
    self.frames_written = 0

  def observation_ids(self, step_type):
    """Stream positions that this step's observations (their newest frames) will take."""
    step_type = np.asarray(step_type)
    return self._positions + np.where(step_type == n_step.FIRST, self.layout.stack - 1, 0)

  def write(self, step_type, observations, transitions, priorities, ids=None):
    """Appends this step's frames, then creates one item per completed transition.

    step_type [B]; observations [B, *obs_shape]; transitions: `n_step.Transitions`
    completed at this step (their `start_id`/`next_id` are stream positions from
    `observation_ids`); priorities [M] (float); ids [M] (int64, with `audit_table`).
    """
    step_type = np.asarray(step_type)
    newest = self.layout.newest_frames(observations)
    if self.retain:   # kept past this step: batched envs may reuse their buffers
      newest = np.array(newest)
    if self.check_frame_shift:
      self._check_shift(step_type, observations, newest)
    priorities = np.asarray(priorities, np.float64)
    per_env = np.searchsorted(transitions.env, np.arange(self.num_envs + 1))
    items = frames = 0
    for e in range(self.num_envs):
      writer = self._writers[e]
      obs = observations[e]
      steps = []
      if step_type[e] == n_step.FIRST:
        steps += [{"frame": np.array(f) if self.retain else f}
                  for f in self.layout.older_frames(obs)]
      steps.append({"frame": newest[e]})
      if step_type[e] == n_step.LAST:
        steps += [{"frame": newest[e]} for _ in range(self.layout.n_step - 1)]
      # The transitions completed here (their scalars) ride on the steps from this
      # observation's frame on: at most one on a MID step, at most n on a LAST (the frame
      # and its n-1 padding copies), none on a FIRST.
      lo, hi = per_env[e], per_env[e + 1]
      first_carrier = len(steps) - (1 if step_type[e] != n_step.LAST else self.layout.n_step)
      if hi - lo > len(steps) - first_carrier:
        raise AssertionError("More transitions than stream steps; this is a bug.")
      for j, i in enumerate(range(lo, hi)):
        steps[first_carrier + j]["transition"] = self.layout.transition_row(
            transitions.action[i], transitions.reward[i], transitions.discount[i],
            transitions.length[i])
        if self.audit_table is not None:
          steps[first_carrier + j]["id"] = np.int64(ids[i])
      for step in steps:
        writer.append(step)
      if self.retain:
        self._recent[e].extend(step["frame"] for step in steps)
      base = int(self._positions[e])
      self._positions[e] += len(steps)
      frames += len(steps)
      if hi > lo:
        self._create_items(writer, base, first_carrier, transitions, priorities, lo, hi, ids)
        items += hi - lo
    self.items_written += items
    self.frames_written += frames
    return WriteStats(items, frames)

  def _check_shift(self, step_type, observations, newest):
    """Single frames are only right if each observation's stack is the previous one
    shifted by one image: its second-newest image must be the previous newest (one image
    compared per environment, for the whole batch at once)."""
    if not self.layout.single_frames or self.layout.stack < 2:
      return
    if self._previous_newest is not None:
      follows = (step_type != n_step.FIRST) & self._has_previous
      if follows.any():
        same = np.all((np.asarray(observations)[..., -2] == self._previous_newest)
                      .reshape(self.num_envs, -1), axis=1)
        bad = np.flatnonzero(follows & ~same)
        if bad.size:
          raise FrameStackError(
              "Environment %d's observation stack did not shift by one image; storing "
              "single frames would corrupt replay. Set ReplayLayout.single_frames = False."
              % bad[0])
      self._previous_newest[...] = newest    # a copy: batched envs may reuse their buffers
    else:
      self._previous_newest = np.array(newest)
    self._has_previous[:] = True

  def _history(self, e):
    """Stream e's column history ({'frame', 'transition'} of `_ColumnHistory`); built
    once both columns exist (the writer rebuilds this dict on every `history` access)."""
    history = self._histories[e]
    if history is None:
      history = self._writers[e].history
      if "transition" in history:
        self._histories[e] = history
    return history

  def _create_items(self, writer, base, first_carrier, transitions, priorities, lo, hi,
                    ids=None):
    history = self._history(int(transitions.env[lo]))
    total = int(self._positions[transitions.env[lo]])
    s, n = self.layout.stack, self.layout.n_step
    for j, i in enumerate(range(lo, hi)):
      start = int(transitions.start_id[i]) - s + 1 - total     # negative offsets
      stop = int(transitions.start_id[i]) + n + 1 - total
      carrier = base + first_carrier + j - total
      frames = history["frame"][start:stop] if stop < 0 else history["frame"][start:]
      writer.create_item(self.table, float(priorities[i]),
                         {"frames": frames, "transition": history["transition"][carrier]})
      if self.audit_table is not None:
        writer.create_item(self.audit_table, 1.0, {"id": history["id"][carrier]})
      if self.keep_items:
        recent = list(self._recent[int(transitions.env[i])])
        self._kept.append((int(transitions.env[i]), float(priorities[i]),
                           tuple(recent[start:stop] if stop < 0 else recent[start:]),
                           self.layout.transition_row(
                               transitions.action[i], transitions.reward[i],
                               transitions.discount[i], transitions.length[i]),
                           None if ids is None else int(ids[i])))

  def take_kept(self):
    """The records of the items written since the last call (with `retain`)."""
    kept, self._kept = self._kept, []
    return kept

  def resend(self, records):
    """Writes kept records again (to a replay that replaced the one they went to), one
    item per step of a writer of their own (its frames stacked: W frames per item);
    returns them as records of that writer's stream."""
    if self._resender is None:
      self._resender = self._client.trajectory_writer(num_keep_alive_refs=1)
    written = []
    for _, priority, frames, row, item_id in records:
      step = {"frames": np.stack(frames), "transition": row}
      if self.audit_table is not None:
        step["id"] = np.int64(item_id)
      self._resender.append(step)
      history = self._resender.history
      self._resender.create_item(self.table, priority, {
          "frames": history["frames"][-1], "transition": history["transition"][-1]})
      if self.audit_table is not None:
        self._resender.create_item(self.audit_table, 1.0, {"id": history["id"][-1]})
      written.append((self.num_envs, priority, frames, row, item_id))
    return written

  def unconfirmed(self, most):
    """Items each stream's writer (and `resend`'s, last) has not had confirmed, each
    counted up to `most[stream]`: the least k for which a flush down to k items returns
    at once (a binary search; it finalizes their chunks)."""
    counts = []
    for writer, high in zip(self._writers + [self._resender], most):
      low = 0
      while writer is not None and low < high:
        k = (low + high) // 2
        try:
          writer.flush(block_until_num_items=k, timeout_ms=1)
          high = k
        except reverb_errors.DeadlineExceededError:
          low = k + 1
      counts.append(low if writer is not None else 0)
    return counts

  def flush(self, timeout_ms=None, everything=False):
    """Blocks until at most `max_unconfirmed` items per stream (0 if `everything`) await
    the server's confirmation. Raises reverb.errors.DeadlineExceededError after
    `timeout_ms` in all."""
    keep = 0 if everything else self.max_unconfirmed
    deadline = None if timeout_ms is None else time.monotonic() + timeout_ms / 1000.0
    for writer in self._writers + ([self._resender] if self._resender else []):
      writer.flush(block_until_num_items=keep, timeout_ms=None if deadline is None else max(
          1, int(1000 * (deadline - time.monotonic()))))

  def close(self):
    for writer in self._writers + ([self._resender] if self._resender else []):
      try:
        writer.close()
      except Exception:  # pylint: disable=broad-except
        pass
    self._writers = []
    self._resender = None
