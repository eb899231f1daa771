"""The paper's models: parameter counts (Tables 1 and 3) and the LSTM variants' cells."""

import dataclasses

import keras
import pytest

from nemot.modact import models
from nemot.modact.models import ModelConfig
from nemot.modulation.activation import ModulatedConv2D, ModulatedLSTMCell


def test_cifar10_cnn_has_the_keras_example_count_and_four_modulators_add_1183():
    vanilla = models.build(ModelConfig("cnn"))
    modulated = models.build(ModelConfig("cnn", modulated=True))
    assert vanilla.count_params() == 1_250_858
    assert modulated.count_params() - vanilla.count_params() == 1_183
    convs = [layer for layer in modulated.layers if isinstance(layer, ModulatedConv2D)]
    # a 3x3 modulator on 3, 32, 32 and 64 input channels: 9 C_in + 1 each
    assert [layer.modulator.count_params() for layer in convs] == [28, 289, 289, 577]


def test_densenet_lite_modulators_add_one_3x3_filter_per_dense_layer():
    config = ModelConfig("densenet", growth_rate=10, dropout=0.5)
    vanilla = models.build(config).count_params()
    modulated = models.build(dataclasses.replace(config, modulated=True)).count_params()
    # dense-layer inputs 16 + 10 i, 136 + 10 i, 256 + 10 i (i < 12): 9 * sum + 36 biases
    inputs = sum(start + 10 * i for start in (16, 136, 256) for i in range(12))
    assert modulated - vanilla == 9 * inputs + 36 == 61_920  # the paper: +0.06 M
    assert vanilla == 737_650  # the paper: 0.71 M (ours counts BN's moving statistics too)


@pytest.mark.parametrize("variant,cell_type,hidden,position", [
    ("modulated", ModulatedLSTMCell, 32, "pre"), ("C1", keras.layers.LSTMCell, 40, None),
    ("C2", keras.layers.LSTMCell, 32, None), ("C3", ModulatedLSTMCell, 32, "post")])
def test_lstm_variants_are_the_papers_cells_with_table3_counts(variant, cell_type, hidden,
                                                               position):
    cell_kind, factor = models.LSTM_VARIANTS[variant]
    config = ModelConfig("lstm", cell=cell_kind, hidden=round(32 * factor), tau="sigmoid",
                         vocab_size=58, num_classes=18)
    model = models.build(config)
    cell = model.get_layer(index=2).cell
    assert type(cell) is cell_type and cell.units == hidden
    if position:
        assert cell.position == position and cell.tau == "sigmoid"
    assert models.recurrent_parameters(cell) == {"modulated": 5_120, "C1": 6_400, "C2": 4_096,
                                                 "C3": 5_120}[variant]
    assert model.output_shape == (None, 18)


def test_model_config_rejects_bad_values():
    with pytest.raises(ValueError, match="architecture='rnn': expected one of"):
        ModelConfig("rnn")
    with pytest.raises(ValueError, match="cell='gru': expected one of"):
        ModelConfig("lstm", cell="gru")
    with pytest.raises(ValueError, match="depth=41: a DenseNet needs depth = 3 n \\+ 4"):
        ModelConfig("densenet", depth=41)


@pytest.mark.parametrize("modulated", [False, True])
def test_densenet40_has_huang_et_al_block_structure(modulated):
    """Depth 40 = the stem, 3 x 12 dense-layer convolutions, 2 transitions and the
    classifier; each dense layer adds k = 12 channels; transitions keep the channels and
    halve the resolution (no compression, no bottleneck)."""
    model = models.build(ModelConfig("densenet", depth=40, growth_rate=12, dropout=0.5,
                                     modulated=modulated))
    conv_types = (keras.layers.Conv2D, ModulatedConv2D)
    convs = [layer for layer in model.layers if isinstance(layer, conv_types)]
    dense = [layer for layer in convs if layer.kernel_size in (3, (3, 3))][1:]  # past the stem
    transitions = [layer for layer in convs if layer.kernel_size in (1, (1, 1))]
    heads = [layer for layer in model.layers if isinstance(layer, keras.layers.Dense)]
    assert len(convs) + len(heads) == 40 and len(dense) == 36 and len(transitions) == 2
    assert all(isinstance(layer, ModulatedConv2D) == modulated for layer in dense)
    assert convs[0].filters == 16 and all(layer.filters == 12 for layer in dense)
    # the input width of each dense layer: 16 + 12 i, then 160 + 12 i, then 304 + 12 i
    widths = [layer.input.shape[-1] for layer in dense]
    assert widths == [start + 12 * i for start in (16, 160, 304) for i in range(12)]
    assert [(t.input.shape[1], t.input.shape[-1], t.filters) for t in transitions] == [
        (32, 160, 160), (16, 304, 304)]
    assert heads[0].input.shape[-1] == 448 and len(heads) == 1
    pooled = [layer for layer in model.layers if isinstance(layer, keras.layers.AveragePooling2D)]
    assert [layer.output.shape[1] for layer in pooled] == [16, 8]
    dropouts = [layer for layer in model.layers if isinstance(layer, keras.layers.Dropout)]
    assert len(dropouts) == 38 and all(layer.rate == 0.5 for layer in dropouts)
