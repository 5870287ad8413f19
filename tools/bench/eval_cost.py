r"""The cost of evaluation while training: short runs of one config with the evaluation
off and on, interleaved (the machine's other load falls on both alike).

  python -m tools.bench.eval_cost --gin_file=atari.gin --steps=16000 --eval_interval=8000 \
      --rounds=2 --output=/tmp/eval_cost.json
  python -m tools.bench.eval_cost --gin_file=apex_atari_small.gin --steps=40000 \
      --eval_interval=30000 --cadence=500000 --rounds=1

Each run is its own process (a fresh TensorFlow), in a new directory. Its loop speed is the
agent steps from its first update to its last over the time between them (the `on_update`
callback's clock: the start-up and the final evaluation fall outside); with the evaluation
on, one evaluation at `eval_interval` falls inside. An Ape-X config (its cadence settings
are the learner's, `--namespace=apex_learner`, found by itself) runs in the one-machine
launcher, its learner in the child process, so its callbacks count learner steps; its first
update comes after the replay's learning_starts transitions. The cost at a cadence of N agent steps
is then an evaluation's seconds over the N / (steps/s without it) seconds of training.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

from absl import app
from absl import flags

FLAGS = flags.FLAGS
flags.DEFINE_string("gin_file", "atari.gin", "The config.")
flags.DEFINE_integer("steps", 16000, "Agent steps per run.")
flags.DEFINE_integer("eval_interval", 8000, "<namespace>.eval_interval of the runs with "
                     "evaluation.")
flags.DEFINE_string("namespace", None, "The gin namespace of the config's cadence settings "
                    "(eval_interval, ...); None: its algorithm's settings' (sync runner) or "
                    "apex_learner (replay runner).")
REPLAY_LEARNER = "apex_learner"   # the replay runner's learner (runners/apex/learner.py)
flags.DEFINE_integer("rounds", 2, "Rounds of (off, on).")
flags.DEFINE_integer("cadence", 1_000_000, "The cadence whose cost is reported.")
flags.DEFINE_string("output", None, "A JSON file for the measurements.")

CHILD = r"""
import json, sys, time
import paac_tf
class Clock:
  def __init__(self): self.updates = []; self.evals = []
  def on_update(self, m): self.updates.append((time.monotonic(), m["agent_steps"]))
  def on_evaluation(self, r): self.evals.append(r["wall_time_s"])
clock = Clock()
paac_tf.train(sys.argv[1], json.loads(sys.argv[2]), root_dir=sys.argv[3], callbacks=[clock])
(t0, s0), (t1, s1) = clock.updates[0], clock.updates[-1]
print("RESULT " + json.dumps({"steps_per_s": (s1 - s0) / (t1 - t0), "evals_s": clock.evals}))
"""


def run_once(gin_file, bindings, root_dir):
  out = subprocess.run([sys.executable, "-c", CHILD, gin_file, json.dumps(bindings), root_dir],
                       check=True, capture_output=True, text=True).stdout
  return json.loads(out.split("RESULT ", 1)[1])


def cadence_namespace(gin_file):
  """The gin namespace of `gin_file`'s eval_interval and checkpoint, export and stop settings."""
  # Lazy: TensorFlow (through the runners) only once the flags parsed.
  from paac_tf.algorithms import registry  # pylint: disable=import-outside-toplevel
  from paac_tf.bookkeeping import config  # pylint: disable=import-outside-toplevel
  from paac_tf.runners import train_eval  # pylint: disable=import-outside-toplevel
  train_eval.load_configurables()
  config.parse([gin_file], [])
  algorithm = registry.get(config.configured_or_default(train_eval.train_eval, "algorithm"))
  return REPLAY_LEARNER if algorithm.runner == "replay" else algorithm.settings.namespace


def main(argv):
  del argv
  ns = FLAGS.namespace or cadence_namespace(FLAGS.gin_file)
  base = {"train_eval.total_steps": FLAGS.steps, ns + ".stop_at_average_return": None,
          ns + ".checkpoint_interval": 10**9, ns + ".export_interval": None}
  rows = []
  with tempfile.TemporaryDirectory() as top:
    for r in range(FLAGS.rounds):
      for label, interval in (("off", None), ("on", FLAGS.eval_interval)):
        started = time.time()
        got = run_once(FLAGS.gin_file, {**base, ns + ".eval_interval": interval},
                       os.path.join(top, "%s-%d" % (label, r)))
        rows.append({"round": r, "eval": label, **got, "wall_s": time.time() - started})
        print(json.dumps(rows[-1]), flush=True)
  off = [x["steps_per_s"] for x in rows if x["eval"] == "off"]
  on = [x["steps_per_s"] for x in rows if x["eval"] == "on"]
  evals = [e for x in rows for e in x["evals_s"]]
  mean_off = sum(off) / len(off)
  cost = (sum(evals) / len(evals)) / (FLAGS.cadence / mean_off)
  summary = {"steps_per_s_off": off, "steps_per_s_on": on, "eval_s": evals,
             "cost_at_cadence": cost, "cadence": FLAGS.cadence, "rows": rows}
  print(json.dumps({k: v for k, v in summary.items() if k != "rows"}))
  if FLAGS.output:
    with open(FLAGS.output, "w") as f:
      json.dump(summary, f, indent=2)


if __name__ == "__main__":
  app.run(main)
