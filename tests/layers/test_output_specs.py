"""The layers of NeMoT's functional graph say what they return without being traced
(``compute_output_spec``): each answer equals Keras's own, which traces ``call`` on
symbolic inputs, for known and unknown batch sizes and lengths, with and without a
key/value cache; and a symbolic input the layer cannot take is refused with the same
error."""

import keras
import pytest

import nemot
from nemot import vocab
from nemot.layers.sets import NeuromodulatorySet, OutputSet, VanillaSet
from nemot.models.nemot_backbone import TextToTextInputs

CONFIG = nemot.NeMoTConfig.preset("tiny")
D = CONFIG.d_model


def traced(layer, *args, **kwargs):
    """Keras's answer: ``call`` traced on the symbolic inputs (the base class's method)."""
    return keras.layers.Layer.compute_output_spec(layer, *args, **kwargs)


def specs(result):
    return [(tuple(t.shape), t.dtype) for t in keras.tree.flatten(result)]


def built(cls):
    layer = cls(CONFIG)
    layer.build(None)
    return layer


def ids(*shape):
    return keras.KerasTensor(shape, "int32")


def floats(*shape):
    return keras.KerasTensor(shape, "float32")


def masks(batch, queries, keys="queries"):
    return keras.KerasTensor((batch, queries, queries if keys == "queries" else keys), "bool")


def cache(batch, layers, length):
    return floats(batch, *layers, 2, length, CONFIG.num_heads, D // CONFIG.num_heads)


@pytest.mark.parametrize("batch, length", [(None, None), (2, 10), (None, 7)])
def test_the_inputs_layer(batch, length):
    layer = TextToTextInputs(CONFIG)
    assert specs(layer.compute_output_spec(ids(batch, length))) == specs(
        traced(layer, ids(batch, length)))


@pytest.mark.parametrize("shape", [(2, 3, 4), (2, vocab.NUM_AUX + CONFIG.max_position_embeddings
                                               + 1)])
def test_the_inputs_layer_refuses_what_its_call_refuses(shape):
    layer = TextToTextInputs(CONFIG)
    with pytest.raises(ValueError) as shortcut:
        layer.compute_output_spec(ids(*shape))
    with pytest.raises(ValueError) as call:
        traced(layer, ids(*shape))
    # Keras wraps the error of a traced call in its own words; the shortcut's is the same
    # error alone.
    assert str(shortcut.value) in str(call.value)


@pytest.mark.parametrize("batch, n", [(None, None), (2, 5)])
def test_the_three_sets(batch, n):
    m = None if n is None else vocab.NUM_AUX + n
    cases = [
        (built(VanillaSet), (ids(batch, n), masks(batch, n)), {}),
        (built(NeuromodulatorySet), (floats(batch, m, D), masks(batch, m)), {}),
        (built(OutputSet), (floats(batch, n, D), ids(batch), masks(batch, n)), {}),
        (built(VanillaSet), (ids(batch, n), masks(batch, n, 9)),
         {"cache": cache(batch, [CONFIG.num_vanilla_layers], 9)}),
        (built(NeuromodulatorySet), (floats(batch, m, D), masks(batch, m, 12)),
         {"cache": cache(batch, [CONFIG.num_nm_layers], 12)}),
        (built(OutputSet), (floats(batch, n, D), ids(batch), masks(batch, n, 9)),
         {"cache": cache(batch, [CONFIG.num_output_blocks, CONFIG.num_output_layers], 9)}),
    ]
    for layer, args, kwargs in cases:
        assert specs(layer.compute_output_spec(*args, **kwargs)) == specs(
            traced(layer, *args, **kwargs)), type(layer).__name__
