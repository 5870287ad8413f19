"""Validation of user-settable parameters before any work starts (runners/validation.py),
against the checks each configurable declares in its signature (bookkeeping/checks.py)."""
import os
import re

import gin
import pytest

from conftest import run_module
from paac_tf import errors
from paac_tf.envs import names
from paac_tf.runners import train_eval
from paac_tf.runners import validation
from paac_tf.bookkeeping import checks
from paac_tf.bookkeeping import config

train_eval.load_configurables()   # the configurables the configs name

pytestmark = pytest.mark.timeout(120)

PAAC, APEX, DPG = "cartpole.gin", "apex_cartpole.gin", "apex_dpg_pendulum.gin"

# (config, binding, what the error must say the binding allows), every kind of parameter.
BAD_BINDINGS = [
    # environment counts
    (PAAC, "paac.num_envs = 0", "an integer >= 1"),
    (PAAC, "paac.num_workers = -1", "an integer >= 0"),
    (APEX, "apex_actor.num_envs = 2.5", "an integer >= 1"),
    (APEX, "run_local.num_actors = 0", "an integer >= 1"),
    (PAAC, "make_environment.num_threads = 0", "None or an integer >= 1"),
    (PAAC, "paac.t_max = 0", "an integer >= 1"),
    # learning rates, coefficients, discounts
    (PAAC, "paac.learning_rate = 0.0", "a number > 0"),
    (PAAC, "paac.learning_rate = 1e999", "a number > 0"),
    (APEX, "ApexLearnerStep.learning_rate = -0.0003", "a number > 0"),
    (PAAC, "paac.entropy_coef = -0.01", "a number >= 0"),
    (PAAC, "paac.value_coef = 'half'", "a number >= 0"),
    (PAAC, "paac.loss_scale = 0", "a number > 0"),
    (PAAC, "paac.gamma = 0.0", "a number in (0, 1]"),
    (PAAC, "paac.gamma = 1.01", "a number in (0, 1]"),
    (APEX, "apex_actor.discount = 1.5", "a number in (0, 1]"),
    (PAAC, "paac.rmsprop_decay = 1.0", "a number in [0, 1)"),
    # clip norms, epsilons
    (PAAC, "paac.max_grad_norm = 0.0", "a number > 0"),
    (APEX, "ApexLearnerStep.max_grad_norm = -10.0", "a number > 0"),
    (PAAC, "paac.rmsprop_epsilon = 0.0", "a number > 0"),
    (APEX, "ApexLearnerStep.adam_epsilon = -0.0001", "a number > 0"),
    (APEX, "apex_actor.epsilon_base = 1.5", "a number in [0, 1]"),
    # intervals
    (PAAC, "paac.checkpoint_interval = 0", "an integer >= 1"),
    (PAAC, "paac.summary_interval = -5", "an integer >= 1"),
    (PAAC, "paac.export_interval = 0", "None or an integer >= 1"),
    (APEX, "apex_learner.publish_interval = 0", "an integer >= 1"),
    (APEX, "apex_actor.report_interval_s = 0.0", "a number > 0"),
    # replay: capacities, batch sizes, n-step, priorities, rates, target periods
    (APEX, "apex_replay.capacity = 0", "an integer >= 1"),
    (APEX, "apex_learner.batch_size = 0", "an integer >= 1"),
    (APEX, "ReplayLayout.n_step = 0", "an integer >= 1"),
    (APEX, "apex_replay.priority_exponent = -0.6", "a number >= 0"),
    (APEX, "ApexLearnerStep.importance_beta = 1.5", "a number in [0, 1]"),
    (APEX, "apex_replay.samples_per_insert = 0.0", "a number > 0"),
    (APEX, "apex_replay.learning_starts = -1", "an integer >= 0"),
    (APEX, "ApexLearnerStep.target_update_period = 0", "an integer >= 1"),
    # the run: steps, seeds, choices, switches
    (PAAC, "train_eval.total_steps = 0", "an integer >= 1"),
    (PAAC, "train_eval.total_steps = 5e6", "write 5000000, not 5000000.0"),
    (PAAC, "train_eval.seed = -1", "an integer in [0, 2147483647]"),
    (PAAC, "train_eval.seed = 'one'", "an integer in [0, 2147483647]"),
    (PAAC, "train_eval.algorithm = 'dqn'", "one of 'paac', 'apex', 'apex_dpg'"),
    (PAAC, "train_eval.deterministic = 1", "True or False"),
    (PAAC, "paac.network = 'mlp2'", "one of 'arch_nips', 'arch_nature', 'mlp'"),
    (PAAC, "paac.mlp_units = (64, 0)", "a tuple of integers >= 1"),
    (APEX, "ApexLearnerStep.optimizer = 'sgd'", "one of 'rmsprop', 'adam'"),
    (PAAC, "make_environment.atari_backend = 'fast'", "one of 'vector', 'portable'"),
    (PAAC, "make_environment.reward_clipping = 'yes'", "True or False"),
    # Ape-X DPG's own: its update, its networks, its exploration noise
    (DPG, "ApexDpgLearnerStep.target_update_tau = 2.0", "None or a number in (0, 1]"),
    (DPG, "ApexDpgLearnerStep.target_update_tau = 0.0", "None or a number in (0, 1]"),
    (DPG, "ApexDpgLearnerStep.actor_learning_rate = 0.0", "a number > 0"),
    (DPG, "ApexDpgLearnerStep.critic_learning_rate = -0.001", "a number > 0"),
    (DPG, "ApexDpgLearnerStep.actor_grad_clip = 0.0", "None or a number > 0"),
    (DPG, "ApexDpgLearnerStep.max_grad_norm = -40.0", "None or a number > 0"),
    (DPG, "ApexDpgLearnerStep.huber_delta = -1.0", "None or a number > 0"),
    (DPG, "ApexDpgLearnerStep.target_update_period = 0", "an integer >= 1"),
    (DPG, "ApexDpgLearnerStep.importance_beta = 1.5", "a number in [0, 1]"),
    (DPG, "ApexDpgLearnerStep.adam_epsilon = 0.0", "a number > 0"),
    (DPG, "dpg_exploration.noise_base = -1.0", "a number in (0, 1]"),
    (DPG, "dpg_exploration.noise_base = 1.5", "a number in (0, 1]"),
    (DPG, "apex_learner.low_epsilon = -0.1", "a number >= 0"),
    (DPG, "dpg_exploration.noise_alpha = -3.0", "a number >= 0"),
    (DPG, "dpg_networks.activation = 'sigmoid'", "one of 'relu', 'tanh', 'elu'"),
    (DPG, "dpg_networks.critic_units = (64, 0)", "a tuple of integers >= 1"),
    (DPG, "dpg_networks.layer_norm = 1", "True or False"),
]


@pytest.fixture(autouse=True)
def clean_gin():
  gin.clear_config()
  yield
  gin.clear_config()


def _error(gin_file, bindings):
  """The one-line message `check_bindings` gives for the configuration (None if none)."""
  config.parse([gin_file], bindings)
  try:
    validation.check_bindings()
  except errors.UserError as e:
    return errors.user_message(e)
  return None


@pytest.mark.parametrize("gin_file,binding,allowed", BAD_BINDINGS,
                         ids=[b for _, b, _ in BAD_BINDINGS])
def test_a_bad_binding_is_one_error_naming_it_and_the_allowed_values(gin_file, binding, allowed):
  name = binding.split("=", 1)[0].strip()
  message = _error(gin_file, [binding])
  assert message is not None
  assert message.startswith("%s = " % name) and ": must be " in message, message
  assert allowed in message, message
  assert "\n" not in message


def test_macros_are_followed_and_references_left_to_their_callee():
  assert "paac.gamma = 2.0: must be" in _error(PAAC, ["G = 2.0", "H = %G",
                                                           "paac.gamma = %H"])
  gin.clear_config()
  assert _error(PAAC, ["paac.t_max = @scoped/make_environment"]) is None


def test_environments_must_split_evenly_over_worker_processes():
  """n_e % n_w != 0 is refused where worker processes step the environments (gymnasium ids,
  the portable Atari backend), not for the C++ vector backend, whose n_w is threads."""
  message = _error(PAAC, ["paac.num_envs = 6", "paac.num_workers = 4"])
  assert message.startswith("paac.num_envs = 6 is not a multiple of "
                            "paac.num_workers = 4"), message
  gin.clear_config()
  assert _error(PAAC, ["paac.num_envs = 6", "paac.num_workers = 3"]) is None
  gin.clear_config()
  assert _error("atari.gin", ["paac.num_envs = 20"]) is None   # vector: 8 threads
  gin.clear_config()
  message = _error("atari.gin", ["paac.num_envs = 20",
                                 "make_environment.atari_backend = 'portable'"])
  assert "not a multiple of paac.num_workers = 8" in message, message
  gin.clear_config()
  assert "apex_actor.num_envs = 5 is not a multiple" in _error(
      APEX, ["apex_actor.num_envs = 5", "apex_actor.num_workers = 2"])


def test_unknown_environment_and_missing_required_bindings():
  message = _error(PAAC, ["train_eval.env_name = 'Pongg'"])
  assert message.startswith("train_eval.env_name = 'Pongg': Unknown environment"), message
  gin.clear_config()
  config.parse([], ["train_eval.total_steps = 100"])
  with pytest.raises(errors.ConfigError, match="train_eval.env_name is not set"):
    validation.check_bindings()


@pytest.mark.parametrize("gin_file", config.available_configs())
def test_every_binding_of_the_shipped_configs_is_checked_and_passes(gin_file):
  config.parse([gin_file], [])
  bound = re.findall(r"^([A-Za-z_]\w*\.\w+) = ", gin.config_str(), re.MULTILINE)
  assert bound
  assert not set(bound) - set(validation.checks()), "bindings without a check"
  validation.check_bindings()


def test_every_check_names_a_real_parameter():
  # gin refuses a binding of a parameter that its configurable does not have.
  gin.parse_config(["%s = None" % binding for binding in validation.checks()])


def test_checks_are_read_from_the_signatures():
  """A configurable's annotations are its checks: nothing else lists them."""
  @checks.configurable(module="test_checks")
  def made_up(count: checks.Count = 1, ratio: checks.Fraction = 0.5, name="x"):
    return count, ratio, name
  declared = checks.declared()
  assert declared["made_up.count"] is checks.COUNT and "made_up.name" not in declared
  assert declared["made_up.ratio"].allowed == "a number in (0, 1]"
  assert made_up() == (1, 0.5, "x")


def test_train_eval_checks_arguments_given_in_code(tmp_path):
  root = str(tmp_path / "run")
  with pytest.raises(errors.ConfigError, match=r"train_eval.total_steps = 0: must be"):
    train_eval.train_eval(root, env_name="CartPole-v1", total_steps=0)
  with pytest.raises(names.UnknownEnvironmentError, match="Closest valid names"):
    train_eval.train_eval(root, env_name="CartPol-v1", total_steps=10)
  assert not os.path.exists(root)


@pytest.mark.parametrize("gin_file,binding,message", [
    (PAAC, "paac.gamma=1.5", "error: paac.gamma = 1.5: must be a number in (0, 1]."),
    (APEX, "apex_replay.capacity=0",
     "error: apex_replay.capacity = 0: must be an integer >= 1."),
    (DPG, "ApexDpgLearnerStep.target_update_tau=2.0",
     "error: ApexDpgLearnerStep.target_update_tau = 2.0: must be None or a number in (0, 1]."),
])
def test_the_cli_prints_one_error_line_exits_2_and_writes_nothing(tmp_path, gin_file, binding,
                                                                 message):
  root = tmp_path / "run"
  proc = run_module("paac_tf.train", "--gin_file=" + gin_file, "--root_dir=%s" % root,
                    "--gin_bindings=" + binding, timeout=120)
  assert proc.returncode == 2, proc.stderr[-3000:]
  assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
  lines = proc.stderr.strip().splitlines()
  assert lines[-1] == message, proc.stderr[-3000:]
  assert [line for line in lines if line.startswith("error:")] == [message]
  assert not root.exists()


# Bindings of PAAC's settings before they were one namespace (paac.*), and of settings since
# removed: (binding, the one error line's start, what else it must say).
OLD_BINDINGS = [
    ("paac_train.num_envs=8",
     "error: paac_train.num_envs (--gin_bindings) is now paac.num_envs:", "one namespace"),
    ("PaacAgent.learning_rate=0.01",
     "error: PaacAgent.learning_rate (--gin_bindings) is now paac.learning_rate:",
     "one namespace"),
    ("paac.paac_train.t_max=4",
     "error: paac.paac_train.t_max (--gin_bindings) is now paac.t_max:", "one namespace"),
    ("paac_train.overlap_learner=True",
     "error: paac_train.overlap_learner (--gin_bindings): this setting was removed:",
     "original's order"),
    ("PaacAgent.reuse_activations=False",
     "error: PaacAgent.reuse_activations (--gin_bindings): this setting was removed:",
     "GradientTape"),
    ("make_environment.num_groups=2",
     "error: make_environment.num_groups (--gin_bindings): this setting was removed:",
     "one batch"),
]


@pytest.mark.parametrize("binding,start,detail", OLD_BINDINGS,
                         ids=[b for b, _, _ in OLD_BINDINGS])
def test_a_binding_of_an_old_name_is_a_config_error_naming_the_new_one(binding, start,
                                                                       detail):
  with pytest.raises(errors.ConfigError) as info:
    config.parse([PAAC], [binding])
  message = errors.user_message(info.value)
  assert ("error: " + message).startswith(start) and detail in message, message
  assert "\n" not in message


def test_an_old_name_in_a_gin_file_is_named_with_the_file(tmp_path):
  old = tmp_path / "old.gin"
  old.write_text("include 'cartpole.gin'\nPaacAgent.entropy_coef = 0.01\n")
  with pytest.raises(errors.ConfigError, match=re.escape(
      "PaacAgent.entropy_coef (%s) is now paac.entropy_coef" % old)):
    config.parse([str(old)], [])


@pytest.mark.parametrize("binding,start,detail", OLD_BINDINGS[:2] + OLD_BINDINGS[3:4],
                         ids=[b for b, _, _ in OLD_BINDINGS[:2] + OLD_BINDINGS[3:4]])
def test_the_cli_refuses_an_old_name_in_one_error_line(tmp_path, binding, start, detail):
  """`python -m paac_tf.train --gin_file=cartpole.gin --gin_bindings=paac_train.num_envs=8`
  (an old run's command): exit 2, one `error:` line that names the new binding."""
  root = tmp_path / "run"
  proc = run_module("paac_tf.train", "--gin_file=cartpole.gin", "--root_dir=%s" % root,
                    "--gin_bindings=" + binding, timeout=120)
  assert proc.returncode == 2, proc.stderr[-3000:]
  assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
  printed = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
  assert len(printed) == 1, proc.stderr[-3000:]
  assert printed[0].startswith(start) and detail in printed[0], printed
  assert not root.exists()


def test_a_flag_stands_in_for_its_binding():
  """flag_or_configured: the flag's value (checked, the error naming the flag) when given,
  else the configured binding, else the default."""
  assert validation.flag_or_configured("seed", "train_eval.seed", None, default=0) == 0
  gin.parse_config(["train_eval.seed = 7", "train_eval.total_steps = 500"])
  assert validation.flag_or_configured("seed", "train_eval.seed", None, default=0) == 7
  assert validation.flag_or_configured("seed", "train_eval.seed", 3, default=0) == 3
  assert validation.flag_or_configured("total_steps", "train_eval.total_steps", None) == 500
  with pytest.raises(errors.ConfigError, match=r"^--total_steps = 0: must be an integer"):
    validation.flag_or_configured("total_steps", "train_eval.total_steps", 0)


# The Ape-X programs of a multi-host run: (entry point, its flags besides the config).
APEX_PROGRAMS = {
    "paac_tf.commands.apex_replay": ["--port=1"],
    "paac_tf.commands.apex_actor": ["--replay_address=localhost:1", "--root_dir={root}"],
    "paac_tf.commands.apex_learner": ["--replay_address=localhost:1", "--root_dir={root}"],
}
BAD_CAPACITY = ("--gin_bindings=apex_replay.capacity=0",
                "error: apex_replay.capacity = 0: must be an integer >= 1.")


@pytest.mark.parametrize("module,bad_flag,message", [
    *[(module, *BAD_CAPACITY) for module in APEX_PROGRAMS],
    ("paac_tf.commands.apex_learner", "--env_name=Pongg",
     "error: --env_name = 'Pongg': Unknown environment"),
    # A flag that stands in for a binding is checked as the binding and named as a flag
    # (--total_steps=0 used to fall back to the config's value).
    ("paac_tf.commands.apex_learner", "--total_steps=0",
     "error: --total_steps = 0: must be an integer"),
    ("paac_tf.commands.apex_actor", "--seed=-1", "error: --seed = -1: must be an integer"),
])
def test_apex_programs_check_the_config_and_their_flags_before_any_work(
    tmp_path, module, bad_flag, message):
  """A bad binding or flag stops each Ape-X program with one error line and status 2,
  before it connects, serves or makes its run directory."""
  root = tmp_path / "run"
  program_flags = [f.format(root=root) for f in APEX_PROGRAMS[module]]
  proc = run_module(module, "--gin_file=" + APEX, *program_flags, bad_flag, timeout=120)
  assert proc.returncode == 2, proc.stderr[-3000:]
  assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
  errors_printed = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
  assert len(errors_printed) == 1 and errors_printed[0].startswith(message), proc.stderr[-3000:]
  assert not root.exists()
