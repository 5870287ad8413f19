"""The Ape-X learner's rates between two housekeeping passes: Perf/learner_steps_per_second,
Perf/agent_steps_per_second, Perf/inserts_per_second and Replay/samples_per_insert (the
ratio the replay's rate limiter holds near `apex_replay.samples_per_insert`)."""
import dataclasses


@dataclasses.dataclass(frozen=True)
class Tally:
  """The counters at one housekeeping pass."""
  seconds: float        # training's clock: time.monotonic() less the time spent evaluating
  learner_steps: int
  agent_steps: int      # summed over the actors, as they reported
  inserts: int          # items the replay table has taken in


def rates(before, after, batch_size):
  """{tag: value} of the rates from Tally `before` to Tally `after`; samples per insert only
  where items were inserted in between."""
  seconds = max(after.seconds - before.seconds, 1e-9)
  learner_steps = after.learner_steps - before.learner_steps
  inserts = after.inserts - before.inserts
  values = {"Perf/learner_steps_per_second": learner_steps / seconds,
            "Perf/agent_steps_per_second": (after.agent_steps - before.agent_steps) / seconds,
            "Perf/inserts_per_second": inserts / seconds}
  if inserts > 0:
    values["Replay/samples_per_insert"] = learner_steps * batch_size / inserts
  return values
