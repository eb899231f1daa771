"""``model.summary()`` works for every model the package builds, at tiny sizes: NeMoT (also
hosting modulations and reading strategies, and reloaded from a file), the GPT-2 baseline,
NGT, PALBert, HyperGridT5 and the modulated-activation CNN and LSTM."""

import keras_hub
import numpy as np
import pytest

import nemot
from nemot import vocab
from nemot.hypergrid.model import HyperGridT5
from nemot.modact import models as modact
from nemot.models.baseline import build_baseline
from nemot.ngt.model import NGTModel
from nemot.pals.model import PALBert

TINY = nemot.NeMoTConfig.preset("tiny")


def bert():
    return keras_hub.models.BertBackbone(vocabulary_size=50, num_layers=2, num_heads=2,
                                         hidden_dim=8, intermediate_dim=16,
                                         max_sequence_length=16)


def pal_bert():
    model = PALBert(40, 2, 2, 8, 16, max_sequence_length=8,
                    pals={"hidden_size": 4, "num_heads": 2})
    model.build()  # as PALBert.from_backbone builds it
    return model


def hypergrid_t5():
    backbone = keras_hub.models.T5Backbone(vocabulary_size=64, num_layers=2, num_heads=2,
                                           hidden_dim=16, intermediate_dim=32,
                                           use_gated_activation=False)
    return HyperGridT5(backbone, 2, {"mode": "LG", "grid": [4, 4]})


BUILDERS = {
    "nemot": lambda: nemot.build_model(TINY),
    "nemot_modulated_reading": lambda: nemot.build_model(TINY.replace(
        reading_strategies=("aoi", "highlighting"),
        modulation=[{"kind": "pals", "sets": ["vanilla"], "hidden_size": 8, "num_heads": 2},
                    {"kind": "hypergrid", "sets": ["output"], "mode": "LG", "grid": [8, 4],
                     "conditioning": "context", "placement": "ffn1"}])),
    "gpt2_baseline": lambda: build_baseline("tiny"),
    "ngt": lambda: NGTModel(bert(), gate_position=1, num_gating_layers=1),
    "pal_bert": pal_bert,
    "hypergrid_t5": hypergrid_t5,
    "modact_cnn": lambda: modact.build(modact.ModelConfig("cnn", modulated=True)),
    "modact_lstm": lambda: modact.build(modact.ModelConfig(
        "lstm", cell="modulated", hidden=8, tau="sigmoid", vocab_size=20, num_classes=3)),
}


def summary_text(model, expand_nested=False):
    lines = []
    model.summary(expand_nested=expand_nested, print_fn=lambda line, **_: lines.append(line))
    return "\n".join(lines)


@pytest.mark.parametrize("name", BUILDERS)
def test_summary_lists_every_parameter(name):
    model = BUILDERS[name]()
    for expand_nested in (False, True):
        text = summary_text(model, expand_nested)
        assert f"Total params: {model.count_params():,}" in text, text[-400:]


def test_summary_of_a_called_and_of_a_reloaded_nemot(tmp_path):
    model = nemot.build_model(TINY)
    ids = np.array([[vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id("lm"), 5, 6, 7]], "int32")
    model({"token_ids": ids})
    text = summary_text(model, expand_nested=True)
    # The auxiliary embedding's row shows its output: 3 tokens of d_model each.
    assert any("aux_embedding" in line and f"(None, {vocab.NUM_AUX}, {TINY.d_model})" in line
               for line in text.splitlines()), text
    model.save(tmp_path / "m.keras")
    reloaded = nemot.load_model(tmp_path / "m.keras")
    assert f"Trainable params: {model.count_params():,}" in summary_text(reloaded)
