"""Every numeric setting of every config section refuses a value out of its range where
the config is read, naming the file, the key, the value and the range (nemot.ranges): the
run config's tables, the learning-rate schedules, the comparison's model settings, and
each experiment recipe's tables, found by reading every packaged recipe."""

import dataclasses
import math
import re

import pytest

from nemot import ranges, recipes
from nemot.compare.model import Settings as CompareSettings
from nemot.config import NeMoTConfig
from nemot.data.config import DataConfig
from nemot.experiments import config as experiment_config
from nemot.experiments import protocol
from nemot.training import run_config, schedules
from nemot.training.loop import TrainConfig

RUN_TABLES = {"model": NeMoTConfig, "data": DataConfig, "train": TrainConfig,
              "loss": run_config.LossWeights}
BASE = {"name": "x", "kind": "finetune", "data": {"dataset": "race"},
        "model": {"preset": "tiny"}}
# A valid value of every schedule field, beside which one bad value is given at a time.
VALID_SCHEDULE = {"rate": 1e-3, "decay_steps": 10, "alpha": 0.0, "start": 0.0, "peak": 1e-3,
                  "floor": 0.0, "warmup_steps": 0}


def bad_values(cls):
    """``(field, value, message)`` for every numeric field of ``cls`` and each value just
    outside its range (below it, above it where it is bounded there, NaN for a float),
    with the message it must be refused with."""
    for name, (kind, declared) in ranges.numeric_fields(cls).items():
        step = 1 if kind is int else 0.5
        values = [math.nan] if kind is float else []
        if declared.low is not None:
            values.append(declared.low if declared.low_open else declared.low - step)
        if declared.high is not None:
            values.append(declared.high if declared.high_open else declared.high + step)
        for value in map(kind, values):
            yield name, value, f"{name} = {value!r}: expected {declared}"


def _run_config(table, value):
    data = {key: dict(v) if isinstance(v, dict) else v for key, v in BASE.items()}
    data.setdefault(table, {}).update(value)
    return run_config.run_config_from_dict(data, source="x.toml")


@pytest.mark.parametrize("table", sorted(RUN_TABLES))
def test_every_numeric_field_of_the_run_config_is_refused_out_of_range(table):
    cls = RUN_TABLES[table]
    assert not ranges.unranged(cls)
    where = "[model]: " if table == "model" else f"{table}."
    refused = 0
    for name, value, message in bad_values(cls):
        with pytest.raises(run_config.RunConfigError) as raised:
            _run_config(table, {name: value})
        assert str(raised.value) == f"x.toml: {where}{message}"
        refused += 1
    assert refused >= len(ranges.numeric_fields(cls)) >= 3


@pytest.mark.parametrize("kind", sorted(schedules.TABLES))
def test_every_schedule_field_is_refused_out_of_range(kind):
    cls = schedules.TABLES[kind]
    assert not ranges.unranged(cls)
    valid = {f.name: VALID_SCHEDULE[f.name] for f in dataclasses.fields(cls)}
    _run_config("schedule", dict(valid, type=kind))
    for name, value, message in bad_values(cls):
        with pytest.raises(run_config.RunConfigError) as raised:
            _run_config("schedule", dict(valid, type=kind, **{name: value}))
        assert str(raised.value) == f"x.toml: [schedule]: {message}"


def test_a_learning_rate_of_the_wrong_sign_stops_before_training():
    with pytest.raises(run_config.RunConfigError,
                       match=r"^x.toml: \[schedule\]: rate = -0.0001: expected > 0$"):
        _run_config("schedule", {"type": "constant", "rate": -1e-4})


@pytest.fixture(scope="module")
def experiment_tables():
    """``{table class: values a recipe gave it}`` for every table the experiment recipes
    read, found by reading every packaged experiment recipe through its reproduction's
    loader."""
    seen = {}
    read = experiment_config.settings

    def spy(cls, values, where):
        table = read(cls, values, where)
        seen.setdefault(cls, dict(values))
        return table

    loaded = 0
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(experiment_config, "settings", spy)
        for reproduction in protocol.REPRODUCTIONS:
            module = protocol.experiment_module(reproduction)
            if getattr(module, "settings", None) is read:  # imported by name
                patch.setattr(module, "settings", spy)
        for name in recipes.names():
            if "reproduction" in protocol.read_config(recipes.path(name)):
                protocol.load(recipes.path(name))
                loaded += 1
    assert loaded >= 10
    return seen


def test_every_numeric_field_of_every_experiment_table_is_refused_out_of_range(
        experiment_tables):
    assert len(experiment_tables) >= 10
    for cls, valid in experiment_tables.items():
        assert not ranges.unranged(cls), cls
        for name, value, message in bad_values(cls):
            with pytest.raises(ValueError) as raised:
                experiment_config.settings(cls, dict(valid, **{name: value}), "x.toml: [t]")
            assert str(raised.value) == f"x.toml: [t]: {message}", cls


def test_the_comparison_model_settings_refuse_values_out_of_range():
    assert not ranges.unranged(CompareSettings)
    for name, value, message in bad_values(CompareSettings):
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            CompareSettings(**{"vocab_size": 8, name: value})
