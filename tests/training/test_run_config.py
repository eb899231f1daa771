"""Run configs: the thesis files in configs/ mirror docs/spec.md section 5; overrides; errors."""

import tomllib
from pathlib import Path

import pytest

from nemot.training.run_config import (RunConfigError, apply_overrides, dump_toml,
                                       load_run_config, parse_override, run_config_from_dict)

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
TABLE_3_3 = {  # dataset: (batch, epochs, schedule)
    "race": (32, 30, {"type": "constant", "rate": 1e-5}),
    "squad_v2": (32, 20, {"type": "warmup_cosine", "start": 5e-5, "peak": 1e-4, "floor": 1e-5,
                          "warmup_steps": 2000, "decay_steps": 120000}),
    "boolq": (16, 30, {"type": "warmup_cosine", "start": 5e-5, "peak": 1e-4, "floor": 1e-5,
                       "warmup_steps": 250, "decay_steps": 18000}),
    "narrativeqa": (32, 20, {"type": "warmup_cosine", "start": 5e-5, "peak": 1e-4,
                             "floor": 1e-5, "warmup_steps": 2000, "decay_steps": 120000}),
    "commonsenseqa": (16, 20, {"type": "constant", "rate": 1e-5}),
    "piqa": (16, 20, {"type": "constant", "rate": 1e-5}),
    "mctest": (16, 20, {"type": "constant", "rate": 1e-5}),
    "winogrande": (16, 20, {"type": "constant", "rate": 1e-5}),
}


@pytest.mark.parametrize("name", sorted(TABLE_3_3))
def test_finetune_configs_mirror_table_3_3(name):
    cfg = load_run_config(CONFIGS / f"{name}.toml")
    batch, epochs, schedule = TABLE_3_3[name]
    assert (cfg.kind, cfg.data.dataset, cfg.train.batch_size, cfg.train.epochs) == (
        "finetune", name, batch, epochs)
    assert cfg.schedule == schedule
    assert (cfg.loss.task_weight, cfg.loss.lm_weight, cfg.loss.vanilla_weight) == (1, 0.2, 0.5)
    assert cfg.data.task_token == "lm" and cfg.model.d_model == 768


def test_pretrain_and_general_configs():
    pre = load_run_config(CONFIGS / "pretrain.toml")
    assert pre.kind == "pretrain" and pre.train.batch_size == 32
    assert pre.schedule == {"type": "cosine", "rate": 1e-4, "decay_steps": 1000000}
    assert pre.train.epochs * pre.train.steps_per_epoch == 1_000_000
    assert (pre.train.checkpoint_every, pre.train.keep_checkpoints) == (5000, 5)
    assert (pre.loss.lm_weight, pre.loss.vanilla_weight) == (0, 0)      # L1 only
    general = load_run_config(CONFIGS / "general.toml")
    assert general.kind == "general" and general.train.batch_size == 2
    assert general.train.epochs * general.train.steps_per_epoch == 400_000
    assert general.train.checkpoint_every == 10000 and general.train.init_blocks_from_lm
    assert general.schedule["decay_steps"] == 400000 and general.schedule["floor"] == 1e-5
    assert general.data.validation_split == "auto" and general.data.validation_examples == 500


def test_overrides_parse_toml_values():
    assert parse_override("train.batch_size=4") == (("train", "batch_size"), 4)
    assert parse_override("schedule.rate=1e-4") == (("schedule", "rate"), 1e-4)
    assert parse_override("data.dataset=race") == (("data", "dataset"), "race")
    assert parse_override('data.dir="/x y"') == (("data", "dir"), "/x y")
    assert parse_override("train.jit_compile=true") == (("train", "jit_compile"), True)
    cfg = load_run_config(CONFIGS / "race.toml", ["train.batch_size=4", "seed=7",
                                                  "schedule.type=\"cosine\"", "schedule.rate=1e-4",
                                                  "schedule.decay_steps=10"])
    assert (cfg.train.batch_size, cfg.seed) == (4, 7)
    assert cfg.schedule == {"type": "cosine", "rate": 1e-4, "decay_steps": 10}


def test_round_trip_through_dump_toml(tmp_path):
    # A modulation is a list of tables (inline tables in run_config.toml), which a resumed
    # run reads back to compare.
    cfg = load_run_config(CONFIGS / "general.toml", [
        "model.preset=\"tiny\"", 'model.modulation=[{kind = "pals", sets = ["vanilla"]}]'])
    path = tmp_path / "again.toml"
    path.write_text(dump_toml(cfg.to_dict()))
    again = load_run_config(path)
    assert again.to_dict() == cfg.to_dict()
    assert again.model.d_model == 32 and again.data.datasets == cfg.data.datasets
    assert again.model.modulation[0].kind == "pals"


@pytest.mark.parametrize("overrides, message", [
    (["train.batch_size=\"big\""], r"race.toml: train.batch_size = 'big': expected an integer"),
    (["train.bogus=1"], r"race.toml: \[train\]: unknown key\(s\) \['bogus'\]"),
    (["train.strategy=\"tpu\""], r"race.toml: train.strategy = 'tpu': expected one of"),
    (["kind=\"distill\""], r"race.toml: kind = 'distill': expected one of"),
    (["model.d_model=30"], r"race.toml: \[model\]: d_model=30 is not divisible"),
    (["schedule.type=\"cosine\""],
     r"race.toml: \[schedule\]: learning-rate schedule 'cosine': missing \['rate'"),
    (["model_name=\"gpt2_baseline\""], r"race.toml: loss.vanilla_weight = 0.5"),
    (["nonsense"], r"expected KEY=VALUE"),
    (["optimizer.lr=1"], r"unknown table 'optimizer'"),
])
def test_errors_name_the_file_and_key(overrides, message):
    with pytest.raises(RunConfigError, match=message):
        load_run_config(CONFIGS / "race.toml", overrides)


def test_missing_file_and_bad_toml(tmp_path):
    with pytest.raises(RunConfigError, match="no such run config"):
        load_run_config(tmp_path / "none.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \n")
    with pytest.raises(RunConfigError, match="bad.toml: not valid TOML"):
        load_run_config(bad)


def test_infinite_streams_need_steps_per_epoch():
    data = tomllib.loads((CONFIGS / "pretrain.toml").read_text())
    data = apply_overrides(data, ["train.steps_per_epoch=0"])
    with pytest.raises(RunConfigError, match="steps_per_epoch"):
        run_config_from_dict(data, source="pretrain.toml")
