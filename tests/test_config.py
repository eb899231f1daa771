import dataclasses

import numpy as np

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


def run_python(code):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.mark.usefixtures("eager")  # one step makes the optimizer state to save; the new
def test_a_saved_model_loads_with_nemot_load_model(tmp_path):  # process fits eagerly too
    path = tmp_path / "tiny.keras"
    model = nemot.build_model(nemot.NeMoTConfig.preset("tiny").replace(
        num_vanilla_layers=1, num_nm_layers=1, output_blocks=("lm", "mqa")))
    # nemot's Adam: the saved optimizer names a class that nemot.load_model registers
    model.compile(nemot.optimizers.Adam(), loss=nemot.NeMoTLoss(lm_weight=0.0))
    ids = np.array([[50301, 50279, 50284, 5, 6, 7]], "int32")
    y = {"task_targets": np.array([[6, 7, -1]], "int32"),
         "lm_targets": np.array([[6, 7, -1]], "int32")}
    model.fit({"token_ids": ids}, y, verbose=0, shuffle=False)  # its optimizer has state
    model.save(path)
    code = (f"import warnings, numpy as np, nemot; warnings.simplefilter('error'); "
            f"m = nemot.load_model({str(path)!r}); "
            "ids = np.array([[50301, 50279, 50284, 5, 6, 7]], 'int32'); "
            "y = {'task_targets': np.array([[6, 7, -1]], 'int32'), "
            "'lm_targets': np.array([[6, 7, -1]], 'int32')}; "
            "m.run_eagerly = True; "
            "h = m.fit({'token_ids': ids}, y, verbose=0, shuffle=False).history; "
            "print(type(m).__name__, m.nemot_loss.lm_weight, m.optimizer.__class__.__name__, "
            "sorted(h))")
    # No warning while loading (compile is restored) or fitting again (an eager step warns
    # about what a traced one would, e.g. a loss term without gradients, without a trace).
    assert run_python(code) == \
        "NeMoTCausalLM 0.0 Adam ['loss', 'task_loss', 'vanilla_loss']"


def test_importing_nemot_and_its_tokenizer_loads_neither_tensorflow_nor_keras():
    code = ("import sys, nemot, nemot.data.tokenizer; "
            "print(sorted(m for m in ('tensorflow', 'keras', 'jax') if m in sys.modules))")
    assert run_python(code) == "[]"


def test_derived_values_are_not_fields_of_a_saved_config():
    data = nemot.NeMoTConfig.preset("tiny").to_dict()
    assert nemot.NeMoTConfig.from_dict(data) == nemot.NeMoTConfig.preset("tiny")
    data["num_aux_tokens"] = 3  # a property: always the three auxiliary tokens
    with pytest.raises(ValueError, match="unknown model field.*num_aux_tokens"):
        nemot.NeMoTConfig.from_dict(data)


def test_modulation_specs_round_trip_through_the_config_dict():
    spec = {"kind": "pals", "sets": ["vanilla"], "layers": "top_half", "hidden_size": 276}
    cfg = nemot.NeMoTConfig.preset("tiny").replace(modulation=[spec])
    assert cfg.modulation[0].kwargs == {"hidden_size": 276}
    assert cfg.modulation[0].layer_indices(4) == [2, 3]
    assert nemot.NeMoTConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="sets \\['decoder'\\]: expected some of"):
        cfg.replace(modulation=[{"kind": "pals", "sets": ["decoder"]}])
    with pytest.raises(ValueError, match="layers='middle'"):
        cfg.replace(modulation=[{"kind": "pals", "layers": "middle"}])
