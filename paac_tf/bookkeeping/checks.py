"""What each gin-settable parameter allows, declared in its configurable's signature.

A parameter's annotation says what values it allows (`typing.Annotated` with a `Check`):

  @checks.configurable("paac")
  @dataclasses.dataclass(frozen=True)
  class PaacSettings:
    num_envs: checks.Count = 32
    network: checks.one_of(torsos.TORSOS) = "arch_nips"

`configurable` is `gin.configurable` that also records the checks the signature declares;
`declared()` maps each binding (`'paac.num_envs'`) to its Check, for
runners/validation.py, which checks the parsed configuration before a run starts. A Check
is a predicate and the words that say what it allows ('an integer >= 1'), and optionally a
`resolve` that turns an accepted value into what it names (an environment, an algorithm),
raising a UserError that says why it names nothing.
"""
import inspect
import math
from typing import Annotated, Optional

import gin

_DECLARED = {}   # binding -> Check, in the order the configurables were declared


class Check:
  """A predicate on a value and the words that say what it allows ('an integer >= 1');
  `allowed` may be a callable (words that change, e.g. the registered algorithms)."""

  def __init__(self, allowed, accepts, resolve=None):
    self._allowed = allowed
    self.accepts = accepts
    self.resolve = resolve

  @property
  def allowed(self):
    return self._allowed() if callable(self._allowed) else self._allowed


def _is_int(value):
  return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
  return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)


def integer(low, high=None):
  """An int (not a bool) in [low, high] (high None: no upper bound)."""
  allowed = ("an integer >= %d" % low if high is None else
             "an integer in [%d, %d]" % (low, high))
  return Check(allowed, lambda v: _is_int(v) and v >= low and (high is None or v <= high))


def number(low=None, high=None, low_open=False, high_open=False):
  """A finite int or float in the interval from low to high, each end open or closed."""
  def inside(v):
    return _is_number(v) and (low is None or (v > low if low_open else v >= low)) and (
        high is None or (v < high if high_open else v <= high))
  if high is None:
    allowed = ("a number" if low is None else
               "a number %s %g" % (">" if low_open else ">=", low))
  else:
    allowed = "a number in %s%g, %g%s" % ("(" if low_open else "[", low,
                                          high, ")" if high_open else "]")
  return Check(allowed, inside)


def choice(options):
  return Check("one of %s" % ", ".join(repr(o) for o in options), lambda v: v in options)


def optional(check):
  return Check("None or " + check.allowed, lambda v: v is None or check.accepts(v))


BOOL = Check("True or False", lambda v: isinstance(v, bool))
POSITIVE = number(0, low_open=True)
NON_NEGATIVE = number(0)
FRACTION = number(0, 1, low_open=True)            # discounts: (0, 1]
DECAY = number(0, 1, high_open=True)               # moving-average decays: [0, 1)
PROBABILITY = number(0, 1)
COUNT = integer(1)
SEED = integer(0, 2 ** 31 - 1)
UNITS = Check("a tuple of integers >= 1, e.g. (64, 64)", lambda v: isinstance(
    v, (tuple, list)) and all(_is_int(u) and u >= 1 for u in v))


def allows(check, kind=object):
  """The annotation of a parameter that allows what `check` accepts."""
  return Annotated[kind, check]


def one_of(options):
  """The annotation of a parameter that allows one of `options`."""
  return allows(choice(options))


Bool = allows(BOOL, bool)
Count = allows(COUNT, int)                          # an integer >= 1
NonNegativeInt = allows(integer(0), int)
Seed = allows(SEED, int)
Positive = allows(POSITIVE, float)
NonNegative = allows(NON_NEGATIVE, float)
Fraction = allows(FRACTION, float)
Decay = allows(DECAY, float)
Probability = allows(PROBABILITY, float)
Units = allows(UNITS, tuple)
OptionalCount = allows(optional(COUNT), Optional[int])
OptionalNonNegativeInt = allows(optional(integer(0)), Optional[int])
OptionalPositive = allows(optional(POSITIVE), Optional[float])
OptionalNumber = allows(optional(number()), Optional[float])


def signature_checks(fn_or_cls):
  """{parameter: Check} that the signature of a function or of a class's __init__ declares."""
  target = fn_or_cls.__init__ if inspect.isclass(fn_or_cls) else fn_or_cls
  out = {}
  for name, parameter in inspect.signature(target).parameters.items():
    found = [m for m in getattr(parameter.annotation, "__metadata__", ()) if isinstance(m, Check)]
    if found:
      out[name] = found[0]
  return out


def configurable(*args, **kwargs):
  """`gin.configurable` (same arguments) that also records the checks the signature
  declares, under the configurable's name (`declared`)."""
  def decorate(fn_or_cls):
    given = args[0] if args and isinstance(args[0], str) else kwargs.get("name_or_fn")
    name = given or fn_or_cls.__name__
    for parameter, check in signature_checks(fn_or_cls).items():
      _DECLARED["%s.%s" % (name, parameter)] = check
    return gin.configurable(*args, **kwargs)(fn_or_cls)
  return decorate


def declared():
  """{binding: Check} of every parameter a configurable declared so far (the modules that
  define them are imported)."""
  return dict(_DECLARED)
