import dataclasses

import pytest

import nemot
from nemot.config import THESIS_OUTPUT_BLOCKS


def test_thesis_preset_has_the_thesis_sizes():
    cfg = nemot.NeMoTConfig.preset("thesis")
    assert (cfg.num_vanilla_layers, cfg.num_nm_layers, cfg.num_output_layers) == (12, 12, 3)
    assert (cfg.d_model, cfg.num_heads, cfg.d_ff, cfg.vocab_size) == (768, 12, 3072, 50313)
    assert cfg.sequence_length == 771
    assert cfg.output_blocks == THESIS_OUTPUT_BLOCKS and cfg.num_output_blocks == 6


def test_config_is_frozen_and_replace_returns_a_new_one():
    cfg = nemot.NeMoTConfig.preset("tiny")
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.d_model = 8
    two = cfg.replace(num_output_blocks=2)
    assert two.output_blocks == ("lm", "mqa") and cfg.num_output_blocks == 3
    with pytest.raises(TypeError, match="unknown NeMoTConfig field"):
        cfg.replace(hidden_size=3)


def test_growing_num_output_blocks_adds_the_thesis_names():
    cfg = nemot.NeMoTConfig.preset("tiny").replace(num_output_blocks=4)
    assert cfg.output_blocks == ("lm", "mqa", "gqa", "highlighting_rs")


def test_block_without_task_token_is_an_error():
    with pytest.raises(ValueError, match="no task token"):
        nemot.NeMoTConfig.preset("tiny").replace(output_blocks=("lm", "qa"))


def test_from_file_starts_from_a_preset(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('[model]\npreset = "tiny"\nd_model = 16\noutput_blocks = ["mqa", "gqa"]\n')
    cfg = nemot.NeMoTConfig.from_file(path)
    assert cfg.d_model == 16 and cfg.num_heads == 2 and cfg.output_blocks == ("mqa", "gqa")
    path.write_text('[model]\npreset = "tiny"\nwidth = 16\n')
    with pytest.raises(ValueError, match="width"):
        nemot.NeMoTConfig.from_file(path)


def test_every_public_name_resolves():
    for name in nemot.__all__:
        assert getattr(nemot, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        nemot.nonexistent


def test_a_saved_model_loads_after_a_plain_import(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "tiny.keras"
    nemot.build_model(nemot.NeMoTConfig.preset("tiny")).save(path)
    code = f"import keras, nemot; print(type(keras.models.load_model({str(path)!r})).__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "NeMoT"
