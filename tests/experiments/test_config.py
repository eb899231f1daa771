"""The protocol's reader of typed settings tables (nemot.experiments.config)."""

import dataclasses
import typing

import pytest

from nemot.experiments.config import keys, settings
from nemot.ranges import Count, PositiveFloat


@dataclasses.dataclass(frozen=True)
class Train:
    epochs: Count
    learning_rate: PositiveFloat = 1e-3
    sampling: typing.Literal["uniform", "annealed"] = "uniform"
    tasks: tuple = ("a",)
    tokenizer: str | None = None
    backbone: object = "base"
    jit_compile: bool = False

    def __post_init__(self):
        if not self.tasks:
            raise ValueError("tasks: expected at least one")


def test_defaults_conversions_and_any_value():
    got = settings(Train, {"epochs": 2, "learning_rate": 1, "tasks": ["a", "b"],
                           "backbone": {"layers": 2}}, "x.toml: [train]")
    assert got == Train(2, 1.0, "uniform", ("a", "b"), None, {"layers": 2}, False)
    assert isinstance(got.learning_rate, float) and isinstance(got.tasks, tuple)
    assert settings(Train, {"epochs": 1, "tokenizer": "vocab.txt"}, "x").tokenizer == "vocab.txt"


@pytest.mark.parametrize("values, message", [
    ({"epochs": 1, "lr": 1}, r"^x.toml: \[train\]: unknown key\(s\) \['lr'\]; expected some of "
                             r"\['backbone', 'epochs', "),
    ({"epochs": "5"}, r"^x.toml: \[train\]: epochs = '5': expected an integer$"),
    ({"epochs": True}, r"^x.toml: \[train\]: epochs = True: expected an integer$"),
    ({"epochs": 1, "learning_rate": "fast"}, r"learning_rate = 'fast': expected a number$"),
    ({"epochs": 1, "jit_compile": 1}, r"jit_compile = 1: expected true or false$"),
    ({"epochs": 1, "sampling": "sqrt"}, r"sampling = 'sqrt': expected one of \['uniform', "
                                        r"'annealed'\]$"),
    ({"epochs": 1, "tasks": "a"}, r"tasks = 'a': expected a list$"),
    ({"epochs": 1, "tokenizer": 3}, r"tokenizer = 3: expected a string$"),
    ({}, r"^x.toml: \[train\]: epochs: required, not given$"),
    ({"epochs": 0}, r"^x.toml: \[train\]: epochs = 0: expected >= 1$"),
    ({"epochs": 1, "learning_rate": -1e-3}, r"learning_rate = -0.001: expected > 0$"),
    ({"epochs": 1, "learning_rate": float("nan")}, r"learning_rate = nan: expected > 0$"),
    ({"epochs": 1, "tasks": []}, r"^x.toml: \[train\]: tasks: expected at least one$"),
])
def test_errors_name_the_file_table_and_key(values, message):
    with pytest.raises(ValueError, match=message):
        settings(Train, values, "x.toml: [train]")


def test_a_table_must_be_a_table_of_known_keys():
    with pytest.raises(ValueError, match=r"^x.toml: \[data\]: expected a table, got 3$"):
        settings(Train, 3, "x.toml: [data]")
    keys({"dir": "d"}, ("dir", "tasks"), "x")
    with pytest.raises(ValueError, match=r"^x: unknown key\(s\) \['folder'\]"):
        keys({"folder": "d"}, ("dir", "tasks"), "x")


def test_a_numeric_field_without_a_range_is_the_recipes_mistake():
    @dataclasses.dataclass(frozen=True)
    class Loose:
        steps: int = 3

    with pytest.raises(TypeError, match=r"Loose: numeric field\(s\) \['steps'\] declare no range"):
        settings(Loose, {}, "x.toml: [train]")
