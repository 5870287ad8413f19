"""Reads the scalar summaries of runs from their TensorBoard event files.

A run directory (what `paac_tf.train` writes) holds `train/` with the event files and
`run_config.json`. Resumed runs have several event files: they are read in the order
they were started, and, as TensorBoard does, the points a restarted writer re-logs
(steps at or after the first step it writes for a tag) replace the older file's.

  run = events.read_run_events("runs/pong_paac/train")
  run.series(events.RETURN_VS_AGENT_STEPS)   # [ScalarPoint(step, wall_time, value), ...]

TensorFlow is imported only when event files are read.
"""
import bisect
import contextlib
import csv
import dataclasses
import fnmatch
import json
import os
import statistics
from typing import Dict, List, Optional, Tuple

from absl import logging

from paac_tf import errors
from paac_tf.algorithms import registry
from paac_tf.bookkeeping import reference_curve
from paac_tf.bookkeeping import summary_tags

EVENT_FILE_PATTERN = "events.out.tfevents*"
RUN_CONFIG = "run_config.json"
RETURN_VS_UPDATES = summary_tags.RETURN_VS_UPDATES            # step: learner updates
RETURN_VS_AGENT_STEPS = summary_tags.RETURN_VS_AGENT_STEPS    # step: agent steps
# Ape-X: the episodes of its least-exploring environments (epsilon <= apex_learner.low_epsilon),
# the near-greedy policy's training return; `RunEvents.training_returns` prefers it.
LOW_EPSILON_RETURN_VS_AGENT_STEPS = summary_tags.LOW_EPSILON_RETURN_VS_AGENT_STEPS
# Ape-X learner summaries (step: learner steps).
# Written at every learner summary by each algorithm on the Ape-X machinery (prioritized
# replay's importance weights): its step is the learner step.
LEARNER_STEP_TAG = "Replay/mean_importance_weight"
LEARNER_STEPS_PER_SECOND = "Perf/learner_steps_per_second"
SAMPLES_PER_INSERT = "Replay/samples_per_insert"
_EVENT_SUBDIRS = ("train", "eval")   # a run's event folders; the run is their parent
# SavedModel internals, and an Ape-X run's per-actor summaries (actors/actor_i): they belong
# to that run, whose curve is the learner's train/ (it aggregates the actors' episodes).
_SKIP_DIRS = ("variables", "assets", "__pycache__", "actors")
# A longer gap between consecutive summaries is a pause, not training: the time between a
# run's resumed parts, or a process stopped (SIGSTOP) while another measurement ran alone.
PAUSE_S = 300


def training_return_tag(curves):
  """The tag of a run's training-return curve against agent steps, given its curves
  ({tag: points}): Ape-X's near-greedy episodes where the run has them, else the average
  over all episodes."""
  return (LOW_EPSILON_RETURN_VS_AGENT_STEPS if curves.get(LOW_EPSILON_RETURN_VS_AGENT_STEPS)
          else RETURN_VS_AGENT_STEPS)


@dataclasses.dataclass(frozen=True)
class ScalarPoint:
  step: int
  wall_time: float
  value: float


@dataclasses.dataclass
class RunEvents:
  """The scalar summaries of one event directory.

  Attributes:
    directory: the directory the files were read from.
    files: the event files, in the order they were started.
    scalars: {tag: [ScalarPoint]} sorted by step.
    spans: (first, last) wall time of each stretch of a file's records without a pause (a
      gap over PAUSE_S), in file order: the time the run trained.
    truncated: files whose last record was incomplete (a run still writing, or killed);
      their complete records are kept.
  """
  directory: str
  files: List[str]
  scalars: Dict[str, List[ScalarPoint]]
  spans: List[Tuple[float, float]]
  truncated: List[str] = dataclasses.field(default_factory=list)

  def tags(self):
    return sorted(self.scalars)

  def series(self, tag):
    return list(self.scalars.get(tag, ()))

  def last(self, tag):
    points = self.scalars.get(tag)
    return points[-1] if points else None

  def training_return_tag(self):
    """The tag of the run's training-return curve against agent steps (`training_return_tag`)."""
    return training_return_tag(self.scalars)

  def wall_time_s(self):
    """Seconds the run trained: its spans summed (resumes and pauses left out)."""
    return float(sum(max(0.0, end - start) for start, end in self.spans))

  def elapsed_s(self, wall_time):
    """Training seconds up to `wall_time`: resumes and pauses left out."""
    elapsed = 0.0
    for start, end in self.spans:
      if wall_time <= end:
        return elapsed + max(0.0, wall_time - start)
      elapsed += max(0.0, end - start)
    return elapsed

  def last_env_step(self):
    """The last agent step with a summary (None without the env-steps series)."""
    point = self.last(RETURN_VS_AGENT_STEPS)
    return point.step if point else None

  def agent_steps_at_update(self, update):
    """Agent steps at learner update `update`, from the paired return summaries.

    Both return series are written together (one at the update count, one at the agent
    step); linear interpolation between pairs, proportional extrapolation past the last.
    None without both series.
    """
    pairs = _update_env_step_pairs(self.series(RETURN_VS_UPDATES),
                                   self.series(RETURN_VS_AGENT_STEPS))
    if not pairs or update is None:
      return None
    update = float(update)
    updates = [u for u, _ in pairs]
    i = bisect.bisect_left(updates, update)
    if i < len(pairs) and pairs[i][0] == update:
      return int(pairs[i][1])
    if i == 0:
      u, e = pairs[0]
      return int(round(e * update / u)) if u > 0 else int(e)
    if i == len(pairs):
      u, e = pairs[-1]
      return int(round(e * update / u)) if u > 0 else int(e)
    (u0, e0), (u1, e1) = pairs[i - 1], pairs[i]
    return int(round(e0 + (e1 - e0) * (update - u0) / (u1 - u0)))


def _update_env_step_pairs(by_update, by_env_step):
  """[(update, env_step)] matched by wall time (the two are written in the same call)."""
  if not by_update or not by_env_step:
    return []
  if len(by_update) == len(by_env_step):
    pairs = [(a.step, b.step) for a, b in zip(by_update, by_env_step)]
  else:
    times = sorted((p.wall_time, p.step) for p in by_env_step)
    keys = [t for t, _ in times]
    pairs = []
    for p in by_update:
      i = bisect.bisect_left(keys, p.wall_time)
      near = [j for j in (i - 1, i) if 0 <= j < len(times)]
      j = min(near, key=lambda j: abs(keys[j] - p.wall_time))
      pairs.append((p.step, times[j][1]))
  pairs = sorted(set(pairs))
  # Keep one env step per update (the latest), so that bisect sees a function.
  unique = {}
  for u, e in pairs:
    unique[u] = max(e, unique.get(u, e))
  return sorted(unique.items())


# --- finding files and runs ---------------------------------------------------------------

def is_event_file(name):
  return fnmatch.fnmatch(os.path.basename(name), EVENT_FILE_PATTERN)


def event_files(directory):
  """The event files directly in `directory` (not in its subdirectories), by name."""
  try:
    names = os.listdir(directory)
  except OSError:
    return []
  return sorted(os.path.join(directory, n) for n in names
                if is_event_file(n) and os.path.isfile(os.path.join(directory, n)))


@dataclasses.dataclass
class RunDir:
  """A training run found on disk.

  Attributes:
    root: the run directory (the parent of train/ when the events are in train/).
    event_dir: the directory whose event files hold the training summaries, or None.
    run_config: run_config.json's contents ({} if absent or unreadable).
  """
  root: str
  event_dir: Optional[str]
  run_config: dict


def read_json(path):
  """A JSON object from `path`, or None (with a warning) if it is not one."""
  try:
    with open(path, encoding="utf-8") as f:
      data = json.load(f)
  except (OSError, ValueError) as e:
    logging.warning("Skipping %s: not readable JSON (%s).", path, e)
    return None
  if not isinstance(data, dict):
    logging.warning("Skipping %s: not a JSON object.", path)
    return None
  return data


def walk(path):
  """os.walk over `path`, skipping hidden folders and SavedModel internals."""
  for dirpath, dirnames, filenames in os.walk(path):
    dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS)
    yield dirpath, dirnames, sorted(filenames)


def _run_root(directory):
  if os.path.basename(os.path.normpath(directory)) in _EVENT_SUBDIRS:
    return os.path.dirname(os.path.normpath(directory))
  return os.path.normpath(directory)


def _load_run_config(root, event_dirs):
  for directory in [d for d in event_dirs if d] + [os.path.join(root, "train"), root]:
    path = os.path.join(directory, RUN_CONFIG)
    if os.path.isfile(path):
      return read_json(path) or {}
  return {}


def find_run_dirs(path):
  """The training runs under `path` (itself one, or a folder of them), sorted by root.

  A run is recognised by event files or a run_config.json; when they sit in a `train/`
  (or `eval/`) folder, the run is that folder's parent. Raises UserError if `path` does
  not exist.
  """
  path = os.path.abspath(os.path.expanduser(path))
  if not os.path.exists(path):
    raise errors.UserError("%s does not exist." % path)
  if not os.path.isdir(path):
    raise errors.UserError("%s is not a directory (give a run or results directory)." % path)
  found = {}
  for dirpath, _, filenames in walk(path):
    if (os.path.basename(dirpath) == reference_curve.REFERENCE_DIR
        and os.path.isdir(os.path.join(os.path.dirname(dirpath), "train"))):
      continue   # a run's copy of its reference curve, for TensorBoard: not a run
    has_events = any(is_event_file(n) for n in filenames)
    if not has_events and RUN_CONFIG not in filenames:
      continue
    root = _run_root(dirpath)   # may be above `path` when `path` is a train/ folder
    entry = found.setdefault(root, [])
    if has_events:
      entry.append(dirpath)
  runs = []
  for root in sorted(found):
    dirs = found[root]

    def preference(d, root=root):
      base = os.path.basename(d)
      return (0 if base == "train" else 1 if d == root else 2, d)
    dirs = sorted(dirs, key=preference)
    runs.append(RunDir(root=root, event_dir=dirs[0] if dirs else None,
                       run_config=_load_run_config(root, dirs)))
  return runs


def run_label(run_config, root):
  """`Pong PAAC` from run_config.json, else the run directory's name."""
  env = (run_config or {}).get("env_name")
  algorithm = (run_config or {}).get("algorithm")
  parts = [str(env)] if env else []
  if algorithm:
    parts.append(registry.display_name(str(algorithm)))
  return " ".join(parts) if parts else os.path.basename(os.path.normpath(root))


# --- reading ------------------------------------------------------------------------------

def _read_file(path):
  """(per-tag points in file order, its spans without a pause (active_spans), truncated) of
  one file."""
  # Lazy: TensorFlow (seconds to import) loads only to read event files; the tools that read results
  # folders (CSV, JSON) run without it.
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  points = {}
  plugins = {}
  wall_times = []
  truncated = False
  try:
    for event in _summary_iterator(tf, path):
      wall_time = float(event.wall_time)
      wall_times.append(wall_time)
      if not event.HasField("summary"):
        continue
      for value in event.summary.value:
        if value.HasField("metadata") and value.metadata.plugin_data.plugin_name:
          plugins[value.tag] = value.metadata.plugin_data.plugin_name
        number = _scalar(tf, value, plugins.get(value.tag, ""))
        if number is not None:
          points.setdefault(value.tag, []).append(
              ScalarPoint(int(event.step), wall_time, number))
  except tf.errors.DataLossError:
    truncated = True
  except tf.errors.OpError as e:
    raise errors.UserError("Cannot read the event file %s (%s)." % (path, e.message)) from None
  return points, active_spans(sorted(wall_times), PAUSE_S), truncated


def _summary_iterator(tf, path):
  """tf.compat.v1.train.summary_iterator without its deprecation warning."""
  try:
    # Lazy: a private TensorFlow module, only to silence a deprecation; absent from other TF
    # versions (ImportError).
    from tensorflow.python.util import deprecation  # pylint: disable=import-outside-toplevel
    silence = deprecation.silence()
  except (ImportError, AttributeError):
    silence = contextlib.nullcontext()
  with silence:
    iterator = tf.compat.v1.train.summary_iterator(path)
    yield from iterator


def _scalar(tf, value, plugin):
  kind = value.WhichOneof("value")
  if kind == "simple_value":
    return float(value.simple_value)
  if kind != "tensor" or plugin not in ("scalars", ""):
    return None
  try:
    array = tf.make_ndarray(value.tensor)
  except Exception:  # pylint: disable=broad-except
    return None
  if array.size != 1 or array.dtype.kind not in "fiub":
    return None
  return float(array.reshape(()))


def read_event_files(files, directory=None):
  """RunEvents from event files (one run, possibly resumed several times)."""
  if not files:
    raise errors.UserError("No TensorBoard event files (%s) in %s."
                           % (EVENT_FILE_PATTERN, directory or "the given list"))
  read = []
  for path in files:
    points, spans, truncated = _read_file(path)
    if not spans:
      logging.warning("Skipping the empty event file %s.", path)
      continue
    read.append((spans, path, points, truncated))
  read.sort(key=lambda r: (r[0][0][0], r[1]))
  scalars = {}
  for _, _, points, _ in read:
    for tag, new in points.items():
      if not new:
        continue
      restart = min(p.step for p in new)
      kept = [p for p in scalars.get(tag, ()) if p.step < restart]
      scalars[tag] = kept + new
  for tag in scalars:
    scalars[tag].sort(key=lambda p: p.step)   # stable: file order within a step
  return RunEvents(directory=directory or os.path.dirname(files[0]),
                   files=[r[1] for r in read], scalars=scalars,
                   spans=[span for r in read for span in r[0]],
                   truncated=[r[1] for r in read if r[3]])


def read_run_events(directory):
  """RunEvents of the event files directly in `directory` (e.g. RUN/train)."""
  return read_event_files(event_files(directory), directory)


def write_csv(run_events, path):
  """Writes `step,wall_time,tag,value` rows (by tag, then step); returns the row count."""
  directory = os.path.dirname(os.path.abspath(path))
  os.makedirs(directory, exist_ok=True)
  tmp = path + ".tmp"
  rows = 0
  with open(tmp, "w", newline="", encoding="utf-8") as f:
    writer = csv.writer(f)
    writer.writerow(["step", "wall_time", "tag", "value"])
    for tag in run_events.tags():
      for p in run_events.scalars[tag]:
        writer.writerow([p.step, repr(p.wall_time), tag, repr(p.value)])
        rows += 1
  os.replace(tmp, path)
  return rows


SUMMARIES_CSV = reference_curve.SUMMARIES_CSV   # a results folder's training summaries


def read_series(folder, tags):
  """{tag: {agent step: (wall time, value)}} of `tags` from the folder's summaries.csv."""
  if not os.path.exists(os.path.join(folder, SUMMARIES_CSV)):
    raise errors.UserError("%s has no %s: publish the run with "
                           "tools/campaign/publish_run.py first." % (folder, SUMMARIES_CSV))
  return reference_curve.read_series(folder, tags)


def training_seconds(wall_times, max_gap_s):
  """Elapsed training seconds at each point: the sum of the gaps between consecutive points,
  leaving out gaps over `max_gap_s` (a pause between a run's resumed parts)."""
  out, total = [], 0.0
  for i, t in enumerate(wall_times):
    if i:
      gap = t - wall_times[i - 1]
      total += gap if 0 <= gap <= max_gap_s else 0.0
    out.append(total)
  return out


def active_spans(wall_times, max_gap_s):
  """(first, last) of each stretch of the sorted `wall_times` without a gap over `max_gap_s`;
  their lengths sum to training_seconds(wall_times, max_gap_s)[-1]."""
  spans = []
  for t in wall_times:
    if spans and t - spans[-1][1] <= max_gap_s:
      spans[-1] = (spans[-1][0], t)
    else:
      spans.append((t, t))
  return spans


def summaries_rows(folder):
  """(agent step, tag, wall time) of every row of the folder's summaries.csv, in time order;
  None without the file."""
  path = os.path.join(folder, SUMMARIES_CSV)
  if not os.path.isfile(path):
    return None
  with open(path, newline="", encoding="utf-8") as f:
    rows = [(int(float(row["step"])), row["tag"], float(row["wall_time"]))
            for row in csv.DictReader(f)]
  return sorted(rows, key=lambda row: row[2])


def summaries_training_seconds(rows, to_agent_step=None):
  """Training seconds of a published run from its summaries_rows: the gaps between consecutive
  summaries (every tag, in time order) summed, pauses (gaps over PAUSE_S: resumes, a stopped
  process) left out; to the last return summary at or before `to_agent_step` if given (a
  policy saved before the run's end). The points a resumed part re-logged replaced the older
  ones there (write_csv), so work redone after a resume counts once. None with fewer than two
  summaries to count."""
  walls = [wall for _, _, wall in rows]
  if to_agent_step is not None:
    returns = [(step, wall) for step, tag, wall in rows
               if tag == RETURN_VS_AGENT_STEPS and step <= to_agent_step]
    if not returns:
      return None
    walls = walls[:bisect.bisect_right(walls, max(returns)[1])]
  return training_seconds(walls, PAUSE_S)[-1] if len(walls) > 1 else None


LEARNER_RATE_KEYS = ("learner_steps", "learner_steps_per_second",
                     "learner_steps_per_second_median", "samples_per_insert_median")


def learner_rates(run):
  """An Ape-X run's learner figures from its summaries (RunEvents of its train/): learner
  steps (the last `Replay/mean_importance_weight` step, which every algorithm of the Ape-X
  machinery writes), learner steps per second over the run's wall time
  and the median of its `Perf/learner_steps_per_second` summaries, and the median of
  `Replay/samples_per_insert` (the replay ratio). {} for a run without learner summaries."""
  loss = run.last(LEARNER_STEP_TAG)
  if loss is None:
    return {}
  rates = [p.value for p in run.series(LEARNER_STEPS_PER_SECOND)]
  ratios = [p.value for p in run.series(SAMPLES_PER_INSERT)]
  wall = run.wall_time_s()
  return dict(zip(LEARNER_RATE_KEYS, (
      int(loss.step), loss.step / wall if wall > 0 else None,
      statistics.median(rates) if rates else None,
      statistics.median(ratios) if ratios else None)))
