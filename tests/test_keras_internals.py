"""The Keras and KerasHub implementation details nemot relies on (nemot/keras_internals.py)
hold for the installed versions, and no other nemot module relies on any."""

import json
import re
import subprocess
from pathlib import Path

import keras
import keras_hub
import numpy as np
import pytest

from nemot import keras_internals, optimizers

ROOT = Path(__file__).resolve().parents[1]
VERSIONS = f"Keras {keras.version()}, KerasHub {keras_hub.version()}"


@pytest.mark.parametrize("optimizer_class", [optimizers.Adam, keras.optimizers.Adam,
                                             keras.optimizers.SGD])
def test_optimizer_slots_are_the_optimizers_own(optimizer_class):
    """Paths that prefix one another ("dense/kernel" and "dense/kernel_1" style) find
    their own slots; the mapping is the one Keras keeps privately."""
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, name="d"),
                              keras.layers.Dense(4, name="d_kernel"), keras.layers.Dense(2)])
    optimizer = optimizer_class(**({"momentum": 0.9} if optimizer_class is
                                   keras.optimizers.SGD else {}))
    optimizer.build(model.trainable_variables)
    found = keras_internals.optimizer_slots(optimizer, model.trainable_variables)
    private = ({"momentum": optimizer._momentums, "velocity": optimizer._velocities}
               if hasattr(optimizer, "_velocities") else {"momentum": optimizer.momentums})
    for index, variable in enumerate(model.trainable_variables):
        expected = {name: slots[index] for name, slots in private.items()}
        assert found.get(id(variable)) == expected, (
            f"{VERSIONS}: the optimizer slots of {variable.path} are no longer found by "
            "their names; update nemot/keras_internals.py's optimizer_slots")
        assert keras_internals.variable_index(optimizer, variable) == index, VERSIONS
        if keras.backend.backend() == "tensorflow":
            assert keras_internals.variable_index(optimizer, variable.value) == index, \
                VERSIONS


def test_preset_config_reads_both_layouts(tmp_path):
    backbone = keras_hub.models.GPT2Backbone(vocabulary_size=16, num_layers=1, num_heads=2,
                                             hidden_dim=4, intermediate_dim=8,
                                             max_sequence_length=8)
    backbone.save_to_preset(str(tmp_path / "hub"))
    config, backbone_class, from_transformers = keras_internals.preset_config(
        str(tmp_path / "hub"))
    assert (backbone_class, from_transformers) == (keras_hub.models.GPT2Backbone, False), \
        VERSIONS
    assert config["config"]["hidden_dim"] == 4, VERSIONS
    hf_config = {"model_type": "gpt2", "n_embd": 4}
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text(json.dumps(hf_config))
    config, backbone_class, from_transformers = keras_internals.preset_config(
        str(tmp_path / "hf"))
    assert (backbone_class, from_transformers) == (keras_hub.models.GPT2Backbone, True), \
        VERSIONS
    assert config == hf_config, VERSIONS


def test_keras_hubs_tanh_gelu_is_registered():
    """nemot.hosts.t5 builds Hugging Face T5s with KerasHub's registered tanh GELU."""
    gelu = keras.saving.get_registered_object("keras_hub>gelu_approximate")
    assert gelu is not None, VERSIONS
    x = np.linspace(-3, 3, 7, dtype="float32")
    np.testing.assert_allclose(keras.ops.convert_to_numpy(gelu(x)), keras.ops.convert_to_numpy(
        keras.activations.gelu(x, approximate=True)), err_msg=VERSIONS)


def test_no_other_module_reaches_into_keras():
    found = subprocess.run(
        ["git", "grep", "-n", "-E", r"keras\.src|keras_hub\.src|optimizer\._|keras/src",
         "--", "nemot/"], cwd=ROOT, capture_output=True, text=True).stdout
    others = [line for line in found.splitlines()
              if not line.startswith("nemot/keras_internals.py:")]
    assert others == []
    assert re.search(r"keras_hub\.src", (ROOT / "nemot/keras_internals.py").read_text())
