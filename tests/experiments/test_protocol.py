"""The protocol's Experiment, epoch selection and resolved run config
(nemot.experiments.protocol)."""

import csv
import dataclasses
import tomllib

import pytest

from nemot.experiments.protocol import Experiment, protocol_keys, resolved_toml, select_epoch


def write_results(run_dir, rows):
    run_dir.mkdir(parents=True, exist_ok=True)
    with open(run_dir / "results.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


ROWS = [  # the trainer's columns, then two splits' scores
    {"epoch": 1, "loss": 0.9, "val_loss": 0.8, "val_metric": 0.5, "val_acc": 0.5, "val_f1": 0.7,
     "test_acc": 0.4},
    {"epoch": 2, "loss": 0.5, "val_loss": 0.6, "val_metric": 0.8, "val_acc": 0.8, "val_f1": 0.6,
     "test_acc": 0.9},
    {"epoch": 3, "loss": 0.4, "val_loss": 0.7, "val_metric": 0.8, "val_acc": 0.6, "val_f1": 0.9,
     "test_acc": 0.3},
]


def test_last_and_best_epoch_on_the_named_split(tmp_path):
    write_results(tmp_path, ROWS)
    assert select_epoch(tmp_path) == {"acc": 0.6, "f1": 0.9, "epoch": 3.0}
    assert select_epoch(tmp_path, "best_acc") == {"acc": 0.8, "f1": 0.6, "epoch": 2.0}
    assert select_epoch(tmp_path, "best_f1")["epoch"] == 3.0
    # A tie keeps the first epoch, as the trainer's best model does.
    assert select_epoch(tmp_path, "best_metric")["epoch"] == 2.0
    assert select_epoch(tmp_path, "best_acc", split="test") == {"acc": 0.9, "epoch": 2.0}


def test_a_bad_selection_is_named(tmp_path):
    write_results(tmp_path, ROWS)
    with pytest.raises(ValueError, match=r"results.csv: select = 'best_avg': expected 'last' "
                                         r"or 'best_<metric>' with <metric> one of \['loss', "
                                         r"'metric', 'acc', 'f1'\]"):
        select_epoch(tmp_path, "best_avg")
    (tmp_path / "results.csv").write_text("epoch,val_acc\n")
    with pytest.raises(ValueError, match="results.csv: no epochs"):
        select_epoch(tmp_path)


def test_resolved_toml_is_the_runs_config():
    text = resolved_toml("pals", "table2", "half", 3, {
        "model": {"backbone": {"num_layers": 2}, "tokenizer": None, "pals": "half"},
        "train": {"epochs": 2}, "per_task": False})
    assert tomllib.loads(text) == {
        "reproduction": "pals", "name": "table2", "variant": "half", "seed": 3,
        "model": {"pals": "half", "backbone": {"num_layers": 2}}, "train": {"epochs": 2},
        "per_task": False}


def test_a_recipe_extends_the_protocols_experiment_with_its_tables():
    @dataclasses.dataclass(frozen=True)
    class Recipe(Experiment):
        train: dict

    raw = {"name": "x", "output_dir": "out", "seeds": [1, 2], "variants": {"a": {}},
           "train": {"epochs": 1}}
    recipe = Recipe(**protocol_keys(raw, ("train",)), train=raw["train"], source="x.toml")
    assert (recipe.name, recipe.output_dir, recipe.seeds, list(recipe.variants)) == (
        "x", "out", (1, 2), ["a"])
    assert recipe.train == {"epochs": 1} and recipe.source == "x.toml"
    assert Recipe("y", "o", (0,), {}, train={}).source == "<dict>"  # source: keyword only
