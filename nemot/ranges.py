"""The allowed range of every numeric setting, declared in its field's annotation.

A config table is a dataclass; a numeric field names its range with one of the annotated
types below (``batch_size: Count = 32``, ``dropout: DropoutRate = 0.1``) or its own
``typing.Annotated[float, Range(...)]``. :func:`check` refuses a value outside it, and
NaN or infinity, with the key, the value and the range, where the config is read: the
run config's tables, the model config and every experiment recipe's tables
(:func:`nemot.experiments.config.settings`, which refuses a table with a numeric field
that declares no range). A command-line option takes a number through :func:`option`, whose
argparse error names the option, the value and the range.

Example:
    >>> @dataclasses.dataclass(frozen=True)
    ... class Train:
    ...     epochs: Count = 3
    ...     rate: PositiveFloat = 1e-3
    >>> check(Train(rate=-0.1))
    Traceback (most recent call last):
    ValueError: rate = -0.1: expected > 0
"""

import argparse
import dataclasses
import math
import numbers
import types
import typing


@dataclasses.dataclass(frozen=True)
class Range:
    """The numbers from ``low`` to ``high`` (None: unbounded on that side); an ``open``
    end excludes its bound."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def __contains__(self, value):
        if not math.isfinite(value):
            return False
        if self.low is not None and (value < self.low or self.low_open and value == self.low):
            return False
        return self.high is None or not (value > self.high
                                         or self.high_open and value == self.high)

    def __str__(self):
        if self.high is None:
            return f"{'>' if self.low_open else '>='} {self.low:g}"
        if self.low is None:
            return f"{'<' if self.high_open else '<='} {self.high:g}"
        return (f"in {'(' if self.low_open else '['}{self.low:g}, "
                f"{self.high:g}{')' if self.high_open else ']'}")


# Batch sizes, epochs, widths, layers, lengths: at least one.
Count = typing.Annotated[int, Range(1)]
# Steps, examples, limits where 0 means "none" or "off".
NonNegativeInt = typing.Annotated[int, Range(0)]
# Learning rates, epsilons, temperatures.
PositiveFloat = typing.Annotated[float, Range(0, low_open=True)]
# Loss weights and regularisation factors (0 switches the term off).
NonNegativeFloat = typing.Annotated[float, Range(0)]
# Dropout: a rate of 1 drops everything.
DropoutRate = typing.Annotated[float, Range(0, 1, high_open=True)]
Probability = typing.Annotated[float, Range(0, 1)]
# Shares held out, momentum factors: from 0 up to, not including, 1.
Fraction = typing.Annotated[float, Range(0, 1, high_open=True)]
# Keras's verbose: none (0), a progress bar (1), one line per epoch (2).
Verbosity = typing.Annotated[int, Range(0, 2)]


def range_of(hint):
    """The :class:`Range` an annotation declares (``X | None`` around it included), or
    None."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        found = [range_of(arg) for arg in typing.get_args(hint)]
        return next((r for r in found if r is not None), None)
    if typing.get_origin(hint) is typing.Annotated:
        return next((m for m in hint.__metadata__ if isinstance(m, Range)), None)
    return None


def _base(hint):
    """The plain type under ``Annotated`` and ``| None``."""
    if typing.get_origin(hint) is typing.Annotated:
        return _base(typing.get_args(hint)[0])
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) is not None and len(args) == 1:
        return _base(args[0])
    return hint


def numeric_fields(cls):
    """``{name: (int or float, Range or None)}`` of the dataclass ``cls``'s numeric
    fields."""
    hints = typing.get_type_hints(cls, include_extras=True)
    return {f.name: (_base(hints[f.name]), range_of(hints[f.name]))
            for f in dataclasses.fields(cls) if _base(hints[f.name]) in (int, float)}


def unranged(cls):
    """The names of ``cls``'s numeric fields that declare no range."""
    return [name for name, (_, declared) in numeric_fields(cls).items() if declared is None]


def check(instance):
    """Raise ``ValueError`` ``"<key> = <value>: expected <range>"`` for the first numeric
    field of the dataclass ``instance`` that holds no number of its type (an integer field
    a whole number, a float field any number; None where the field's default is None) or
    one outside its declared range."""
    check_values(type(instance), {f.name: getattr(instance, f.name)
                                  for f in dataclasses.fields(instance)})


def check_values(cls, values):
    """:func:`check` on ``values``, a dict of some of the dataclass ``cls``'s fields, before
    ``cls`` is built from them (its ``__post_init__`` may compute with them)."""
    for name, (kind, declared) in numeric_fields(cls).items():
        value = values.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(
                value, numbers.Integral if kind is int else numbers.Real):
            raise ValueError(f"{name} = {value!r}: expected "
                             f"{'an integer' if kind is int else 'a number'}")
        if declared is not None and value not in declared:
            raise ValueError(f"{name} = {value!r}: expected {declared}")


def option(declared, kind=int):
    """An argparse ``type`` reading a ``kind`` number in ``declared``; anything else is
    argparse's one-line usage error ``argument --x: '0': expected a whole number >= 1``."""

    def read(text):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or value not in declared:
            raise argparse.ArgumentTypeError(
                f"{text!r}: expected {'a whole number' if kind is int else 'a number'} "
                f"{declared}")
        return value

    read.range, read.kind = declared, kind
    return read


# Sizes, counts, steps, jobs; seeds.
COUNT_OPTION = option(Range(1))
SEED_OPTION = option(Range(0))
