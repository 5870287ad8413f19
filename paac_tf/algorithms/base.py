"""What an algorithm provides to the rest of the package: the one seam between them.

An algorithm is one object, a subclass of `Algorithm` registered under its name
(`registry.register`). Nothing outside its package asks which algorithm it is; it asks
the object:

- the runner that trains it (`runner`): 'sync' (runners/sync/: rollouts of n_e
  environments and one update of the algorithm's loss each: `paac.algorithm.Paac`'s
  settings, make_model, make_optimizer, loss and train_step, which an on-policy algorithm
  subclasses)
  or 'replay' (runners/apex/: the Ape-X replay, actors and learner,
  `replay.algorithm.ReplayAlgorithm`); runners/dispatch.py starts it, the algorithm owns no
  loop;
- its configuration's cross-parameter checks (`check_config`; each parameter's own
  allowed values sit in its configurable's signature, `bookkeeping/checks.py`), and the
  actions it takes (`action_kind`, `check_actions`: discrete or continuous);
- its network: the spec training records in train/run_config.json (`network_spec`), the
  network rebuilt from it (`build_network`), the gin configurable that held its settings in
  runs recorded before the spec was (`network_configurable`, `network_parameters`), and
  the key of the trained network in its checkpoints (`checkpoint_model_key`);
- its exported policy (`policy_scores`, `output_names`, `exploration`, `export_greedy`,
  `eval_epsilon`): what the SavedModel's serving signature returns and how it picks an
  action, read by policies/saved_model.py, checkpoint_export.py and evaluation.py.
"""
from paac_tf import errors
from paac_tf.algorithms import registry
from paac_tf.envs import batched
from paac_tf.envs import environment


class Algorithm:
  """The interface; subclasses set the attributes and implement the methods.

  Attributes:
    name: the name configs, run records and export metadata use (train_eval.algorithm).
    display_name: the name in tables and messages ('PAAC', 'Ape-X').
    runner: the runner that trains it, 'sync' or 'replay' (runners/dispatch.py).
    action_kind: the actions it takes: 'discrete' (one of N: gymnasium's Discrete, every
      Atari game) or 'continuous' (a bounded float vector: gymnasium's Box).
    checkpoint_model_key: the trained network's key in the run's checkpoints.
    network_configurable, network_parameters: the gin configurable that holds the
      network's settings and those settings, as runs that predate the recorded spec
      wrote them in their operative config.
    output_names: the serving signature's outputs, 'action' first.
    exploration: how a non-greedy export acts: 'sample' (from softmax(scores)) or
      'epsilon_greedy' (argmax, a uniform random action with probability epsilon); or
      'deterministic': the scores are the (continuous) actions themselves.
    export_greedy: whether an export is greedy (argmax) unless asked otherwise.
  """
  name = None
  runner = None
  action_kind = "discrete"
  checkpoint_model_key = "model"
  network_configurable = None
  network_parameters = ()
  output_names = ("action",)
  exploration = "sample"
  export_greedy = False

  def __repr__(self):
    return "<algorithm %r>" % self.name

  @property
  def display_name(self):
    """The name in tables and messages: a built-in algorithm's registry line's (subclasses
    defined elsewhere set their own)."""
    return registry.BUILTIN[self.name][1] if self.name in registry.BUILTIN else self.name

  # --- the configuration -------------------------------------------------------------------
  def check_config(self, bound):
    """Checks of the parsed configuration that span parameters; `bound(binding, default)`
    reads a bound value. Raises errors.ConfigError."""
    del bound

  def check_actions(self, env, action_spec):
    """Raises errors.UserError unless the algorithm takes the actions of `env` (an
    `envs.names.Environment`), whose action spec is `action_spec`."""
    kind = "discrete" if batched.is_discrete_spec(action_spec) else "continuous"
    if kind == self.action_kind:
      return
    takers = [a.display_name for a in registry.algorithms() if a.action_kind == kind]
    raise errors.UserError("%s has %s; %s takes %s actions only%s." % (
        env, environment.describe_actions(action_spec), self.display_name, self.action_kind,
        " (%s takes %s ones)" % (" or ".join(takers), kind) if takers else ""))

  # --- the network --------------------------------------------------------------------------
  def network_spec(self, action_spec, observation_spec, **settings):
    """The JSON-able spec (networks/specs.py) of the network with these settings for an
    environment of `action_spec` and `observation_spec`."""
    raise NotImplementedError

  def build_network(self, spec):
    """The network of a spec, with fresh variables (to restore a checkpoint into)."""
    raise NotImplementedError

  # --- the exported policy ------------------------------------------------------------------
  def policy_scores(self, model, observation):
    """(scores [B, A] that actions are chosen from, {output name: tensor} of the serving
    signature's other outputs) for a batch of observations."""
    raise NotImplementedError

  def policy_action_spec(self, model):
    """A 'deterministic' algorithm's exported action spec (a BoundedTensorSpec of the
    model's actions); the others' actions are the argmax or a sample of the scores."""
    raise NotImplementedError

  def eval_epsilon(self, greedy):
    """The evaluation epsilon of an export of this algorithm (greedy or not) unless the
    user gives one."""
    del greedy
    return 0.0
