"""User-facing errors: each is reported as one clear line and a non-zero exit."""


class UserError(Exception):
  """Bad input or a state the user must fix; the entry points print it without a traceback."""


class ConfigError(UserError):
  """A gin file or binding is missing, malformed or unknown."""


class CheckpointMismatchError(UserError):
  """A root_dir holds a run made with another configuration."""


class TrainingDivergedError(UserError):
  """NaN or Inf appeared in the loss or gradients."""
