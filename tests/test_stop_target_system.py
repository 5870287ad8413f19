"""Whole Ape-X runs of the shipped configs that set a stop-at-return target, each on another
environment: they do not stop on the config's target, and they say which target applies
(paac_tf/bookkeeping/stop_target.py; PAAC's cartpole.gin: tests/test_stop_target.py)."""
import pytest

from conftest import run_module

pytestmark = [pytest.mark.usefixtures("no_new_children"), pytest.mark.system,
              pytest.mark.timeout(600)]

JACKPOT = "tests.custom_env_module:Jackpot-v0"   # 1-step episodes of return 1000


@pytest.mark.parametrize("gin_file,env_name,total_steps,line", [
    # apex_cartpole.gin's 475 is met by Jackpot's first 100 episodes (before this: a stop on
    # the target at 5,104 agent steps); it has no threshold. 20000 steps: the learner checks
    # the target before the actors, which step while it starts, report the total.
    ("apex_cartpole.gin", JACKPOT, 20000,
     "No stop target (%s has no reward_threshold; the config's 475.0 is for CartPole-v1)."
     % JACKPOT),
    # The run: apex_dpg_pendulum.gin's -200 stopped InvertedPendulum at 5,704 agent
    # steps with an average return of 2.03; InvertedPendulum's own threshold is 950.
    ("apex_dpg_pendulum.gin", "InvertedPendulum-v5", 8000,
     "Stop target: 950.0 (InvertedPendulum-v5's reward_threshold; the config's -200.0 is for "
     "Pendulum-v1)."),
])
def test_apex_on_another_environment_does_not_stop_on_the_configs_target(
    tmp_path, gin_file, env_name, total_steps, line):
  proc = run_module("paac_tf.train", "--gin_file=" + gin_file,
                    "--root_dir=%s" % (tmp_path / "run"),
                    "--gin_bindings=train_eval.env_name=%r" % env_name,
                    "--gin_bindings=train_eval.total_steps=%d" % total_steps,
                    timeout=540, env={"PYTHONUNBUFFERED": "1"})
  assert proc.returncode == 0, proc.stderr[-4000:]
  assert line in proc.stderr, proc.stderr[-4000:]
  assert "Finished (done)" in proc.stderr, proc.stderr[-4000:]
  assert "Reached the stop target" not in proc.stderr
