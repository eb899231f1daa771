"""Run configs as TOML: reading a file, a ``KEY=VALUE`` override, writing values and tables.

Without Keras or TensorFlow (:mod:`nemot.training.run_config` builds the configs from
them): a run process of ``nemot runs`` reads and records its settings with these, and a
recipe that needs no backend starts without one.
"""

import tomllib
from pathlib import Path

from nemot import files
from nemot.errors import ConfigError


class RunConfigError(ConfigError):
    """A run config value is wrong; the message names the file and the key."""


def parse_override(text):
    """``"train.batch_size=4"`` -> ``(("train", "batch_size"), 4)``; TOML values, else a string."""
    if "=" not in text:
        raise RunConfigError(f"override {text!r}: expected KEY=VALUE, e.g. train.batch_size=4")
    key, raw = text.split("=", 1)
    path = tuple(part.strip() for part in key.strip().split("."))
    if not all(path) or len(path) > 2:
        raise RunConfigError(f"override {text!r}: expected a key like 'seed' or 'train.batch_size'")
    try:
        value = tomllib.loads(f"value = {raw.strip()}")["value"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    return path, value


def read_toml(path):
    """The TOML dict of the run config at ``path``; errors name the file."""
    path = Path(path)
    try:
        return tomllib.loads(files.read_text(path, RunConfigError))
    except FileNotFoundError:
        raise RunConfigError(f"{path}: no such run config") from None
    except (ValueError, RecursionError) as error:  # TOMLDecodeError is a ValueError
        if isinstance(error, RunConfigError):
            raise
        raise RunConfigError(f"{path}: not valid TOML: {error}") from None


def toml_value(v):
    """``v`` written as a TOML value (``true``, ``4``, ``"tiny"``, ``["lm", "mqa"]``)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + "}"
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


def dump_toml(data):
    """A small TOML writer for :meth:`RunConfig.to_dict` (scalars, lists, one level of tables)."""
    value = toml_value
    lines = [f"{k} = {value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for table, items in data.items():
        if isinstance(items, dict):
            lines += ["", f"[{table}]"]
            lines += [f"{k} = {value(v)}" for k, v in items.items() if v is not None]
    return "\n".join(lines) + "\n"
