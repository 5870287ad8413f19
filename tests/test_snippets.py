"""`paac_tf.train` with worker processes from every kind of caller (`paac_tf/envs/
main_module.py`): a snippet on stdin (`python -`), `python -c`, a script without
`if __name__ == "__main__":` all train, with no worker traceback; a script with the guard
keeps multiprocessing's usual start (an environment it registers reaches the workers)."""
import json
import os
import subprocess
import sys

import pytest

from conftest import REPO

TRAIN = """\
import json
import paac_tf
result = paac_tf.train("cartpole.gin", ["train_eval.total_steps=2000",
                                        "paac.num_workers=2"], root_dir=%r)
print(json.dumps({"agent_steps": result.agent_steps, "reason": result.reason}))
"""

GUARDED_ENV = """\
import json
import gymnasium as gym
import numpy as np
import paac_tf


class Corridor(gym.Env):
  observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
  action_space = gym.spaces.Discrete(2)

  def reset(self, seed=None, options=None):
    super().reset(seed=seed)
    return np.zeros(2, np.float32), {}

  def step(self, action):
    return np.zeros(2, np.float32), 1.0, True, False, {}


gym.register("ScriptCorridor-v0", entry_point=Corridor)   # the workers register it again

if __name__ == "__main__":
  with paac_tf.make_env("ScriptCorridor-v0", num_envs=2, num_workers=2) as env:
    env.reset()
    rewards = env.step(np.zeros(2, np.int64)).reward.tolist()
    print(json.dumps({"rewards": rewards, "workers": len(env.worker_pids)}))
"""


def _run(caller, code, tmp_path):
  """Runs `code` as `caller` would ('stdin', 'c' or 'script') from tmp_path, with this
  checkout's paac_tf; returns the CompletedProcess."""
  env = dict(os.environ, PYTHONPATH=REPO)
  env.pop("TF_CPP_MIN_LOG_LEVEL", None)   # as a user runs it
  kwargs = dict(cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=600)
  if caller == "stdin":
    return subprocess.run([sys.executable, "-"], input=code, **kwargs)
  if caller == "c":
    return subprocess.run([sys.executable, "-c", code], **kwargs)
  script = tmp_path / "snippet.py"
  script.write_text(code)
  return subprocess.run([sys.executable, str(script)], **kwargs)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("caller", [   # stdin and -c: whole runs too, `make test-system`
    pytest.param("stdin", marks=pytest.mark.system), pytest.param("c", marks=pytest.mark.system),
    "script"])
def test_train_with_workers_from_a_snippet_or_an_unguarded_script(caller, tmp_path):
  root = str(tmp_path / "run")
  proc = _run(caller, TRAIN % root, tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  for word in ("Traceback", "FileNotFoundError", "WorkerError", "bootstrapping phase"):
    assert word not in proc.stderr, proc.stderr[-3000:]
  assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"agent_steps": 2000,
                                                              "reason": "done"}
  with open(os.path.join(root, "operative_config.gin")) as f:
    assert "paac.num_workers = 2" in f.read()


@pytest.mark.timeout(600)
def test_a_guarded_script_still_gives_its_workers_its_own_environments(tmp_path):
  proc = _run("script", GUARDED_ENV, tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
  assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"rewards": [1.0, 1.0],
                                                              "workers": 2}


ASK = "from paac_tf.envs import main_module\nprint(repr(main_module.rerun_is_unsafe()))\n"
# start() and join() on one line: the main thread is on line 4 whichever it is in when the
# thread asks (on two lines the answer raced between them).
IN_A_THREAD = ("import threading\nfrom paac_tf.envs import main_module\n"
               "t = threading.Thread(target=lambda: print(repr(main_module.rerun_is_unsafe())))\n"
               "t.start(); t.join()\n")


@pytest.mark.parametrize("caller, code, expected", [
    ("stdin", ASK, "the main module <stdin> has no file to run again"),
    ("c", ASK, "None"),
    ("script", ASK, "line 2 of SCRIPT runs outside"),
    ("script", IN_A_THREAD, "line 4 of SCRIPT runs outside"),   # the main thread's line
    ("script", "if __name__ == '__main__':\n  " + ASK.replace("\n", "\n  "), "None"),
], ids=["stdin", "c", "script", "script-thread", "guarded-script"])
def test_which_callers_the_workers_start_without(caller, code, expected, tmp_path):
  proc = _run(caller, code, tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  expected = expected.replace("SCRIPT", str(tmp_path / "snippet.py"))
  assert expected in proc.stdout, proc.stdout
