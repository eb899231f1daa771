"""Typed tables of settings: one reader for every recipe's config tables.

A recipe declares a table as a dataclass, each field with its type and default, and each
numeric field with its allowed range (:mod:`nemot.ranges`); :func:`settings` reads a TOML
table into it, refusing unknown keys, values of the wrong type and values out of range
with one error that names the file, the table and the key.

Example:
    >>> from nemot.ranges import Count, PositiveFloat
    >>> @dataclasses.dataclass(frozen=True)
    ... class Train:
    ...     epochs: Count = 3
    ...     learning_rate: PositiveFloat = 1e-3
    ...     sampling: typing.Literal["uniform", "annealed"] = "uniform"
    >>> settings(Train, {"epochs": 5}, "x.toml: [train]")
    Train(epochs=5, learning_rate=0.001, sampling='uniform')
    >>> settings(Train, {"epochs": "5"}, "x.toml: [train]")
    Traceback (most recent call last):
    ValueError: x.toml: [train]: epochs = '5': expected an integer
    >>> settings(Train, {"learning_rate": -1e-3}, "x.toml: [train]")
    Traceback (most recent call last):
    ValueError: x.toml: [train]: learning_rate = -0.001: expected > 0
"""

import dataclasses
import types
import typing

from nemot import ranges

# Type -> what an error says was expected.
_EXPECTED = {int: "an integer", float: "a number", bool: "true or false", str: "a string",
             tuple: "a list", list: "a list", dict: "a table"}


def keys(values, known, where):
    """Check that the table ``values`` has only keys among ``known``."""
    if not isinstance(values, dict):
        raise ValueError(f"{where}: expected a table, got {values!r}")
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown}; expected some of {sorted(known)}")


def settings(cls, values, where):
    """``cls(**values)`` for a dataclass ``cls`` and a config table ``values``.

    Missing keys take the fields' defaults. Each value is checked against its field's
    annotation: ``int``, ``float`` (an integer is taken as a float), ``bool``, ``str``,
    ``tuple`` (from a TOML list), ``list``, ``dict``, ``typing.Literal[...]`` (one of the
    choices), ``X | None``, ``typing.Annotated[X, Range(...)]`` (a number in the range);
    ``object`` takes anything. Errors (unknown key, wrong type, out of range, a missing
    required key, what ``cls.__post_init__`` refuses) raise ``ValueError`` naming
    ``where`` (``"configs/x.toml: [train]"``) and the key. A table whose numeric field
    declares no range is a mistake of the recipe: ``TypeError``.
    """
    unranged = ranges.unranged(cls)
    if unranged:
        raise TypeError(f"{cls.__qualname__}: numeric field(s) {unranged} declare no range "
                        "(nemot.ranges)")
    hints = typing.get_type_hints(cls, include_extras=True)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    keys(values, fields, where)
    converted = {key: _check(hints[key], value, f"{where}: {key} = {value!r}")
                 for key, value in values.items()}
    missing = [name for name, f in fields.items() if name not in values
               and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if missing:
        raise ValueError(f"{where}: {missing[0]}: required, not given")
    try:
        ranges.check_values(cls, converted)
        return cls(**converted)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{where}: {error}") from None


def _check(hint, value, where):
    """``value`` checked against the annotation ``hint`` (and a list made a tuple where
    the field is a tuple)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        return _check(args[0], value, where)
    if hint is object or hint is typing.Any:
        return value
    if origin is typing.Literal:
        if value not in args:
            raise ValueError(f"{where}: expected one of {list(args)}")
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        for option in options:
            try:
                return _check(option, value, where)
            except ValueError:
                continue
        raise ValueError(f"{where}: expected "
                         f"{' or '.join(_EXPECTED.get(o, str(o)) for o in options)}")
    base = origin or hint
    if base is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if base is tuple and isinstance(value, list):
        return tuple(value)
    if not isinstance(value, base) or (base is int and isinstance(value, bool)):
        raise ValueError(f"{where}: expected {_EXPECTED.get(base, base.__name__)}")
    return value
