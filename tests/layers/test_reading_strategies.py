"""AOI and highlighting layers (thesis eq. 3.15, §3.4.3) against hand and numpy references."""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from nemot import vocab
from nemot.data.pos_tags import POS_PAD_ID
from nemot.layers.reading_strategies import (AnswerOptionInteraction, Highlighting,
                                             ReadingStrategies, option_span)

Q, SEP, END, PAD = vocab.Q_ID, vocab.SEP_ID, vocab.END_ID, vocab.PAD_ID
OPT1, OPT2, OPT3 = vocab.OPTION_IDS[:3]


def numpy_aoi(x, w1, w2, w3, w4, biases=None):
    """Eq. 3.15 on one example's option rows ``x`` [N_ans, d], written out in numpy."""
    b = biases or [0.0] * 4
    h1 = x @ w1 + b[0]
    h2 = x @ w2 + b[1]
    scores = (h1 @ w3 + b[2]) @ h2.T
    g_int = np.exp(scores - scores.max(-1, keepdims=True))
    g_int /= g_int.sum(-1, keepdims=True)
    h_int = np.maximum(g_int @ h2, 0.0)
    reset = 1.0 / (1.0 + np.exp(-(np.concatenate([h_int, h1], -1) @ w4 + b[3])))
    return reset * h1 + (1.0 - reset) * h_int


def built_aoi(d, use_bias=False, seed=0):
    layer = AnswerOptionInteraction(dropout=0.5, use_bias=use_bias)
    layer.build((None, None, d))
    rng = np.random.default_rng(seed)
    kernels = [rng.normal(size=(d, d)), rng.normal(size=(d, d)), rng.normal(size=(d, d)) / d,
               rng.normal(size=(2 * d, d))]
    biases = [rng.normal(size=(d,)) for _ in range(4)] if use_bias else None
    for k, dense in enumerate((layer.w1, layer.w2, layer.w3, layer.w4)):
        dense.kernel.assign(kernels[k].astype("float32"))
        if use_bias:
            dense.bias.assign(biases[k].astype("float32"))
    return layer, kernels, biases


def test_option_span_runs_from_option_one_up_to_sep_per_example():
    ids = np.array([
        [Q, 11, OPT1, 12, OPT2, 13, SEP, OPT1, PAD],    # options; the label (1) after <sep>
        [vocab.P1_ID, 5, Q, 11, OPT1, 12, SEP, 14, END],  # passage first, one option
        [Q, 11, 12, SEP, OPT1, END, PAD, PAD, PAD],      # generation: "(1)" only in the answer
        [Q, 11, OPT1, 12, OPT2, 13, PAD, PAD, PAD],      # no <sep>: no span
    ], "int32")
    expected = np.zeros(ids.shape, bool)
    expected[0, 2:6] = True
    expected[1, 4:6] = True
    np.testing.assert_array_equal(np.asarray(option_span(ids)), expected)


def test_aoi_one_dimension_by_hand():
    """d = 1, W1 = W2 = W3 = 1, W4 = 0: g = 1/2, G = softmax([[1, 2], [2, 4]])."""
    layer = AnswerOptionInteraction(dropout=0.0)
    layer.build((None, None, 1))
    for dense in (layer.w1, layer.w2, layer.w3):
        dense.kernel.assign([[1.0]])
    layer.w4.kernel.assign([[0.0], [0.0]])
    x = np.array([[[5.0], [1.0], [2.0], [7.0]]], "float32")
    ids = np.array([[Q, OPT1, 12, SEP]], "int32")
    y = np.asarray(layer(x, ids))
    row1 = (math.exp(1) * 1 + math.exp(2) * 2) / (math.exp(1) + math.exp(2))  # (G H2)[0]
    row2 = (math.exp(2) * 1 + math.exp(4) * 2) / (math.exp(2) + math.exp(4))  # (G H2)[1]
    np.testing.assert_allclose(y[0, :, 0], [5.0, 0.5 * 1 + 0.5 * row1, 0.5 * 2 + 0.5 * row2, 7.0],
                               rtol=1e-6)


@pytest.mark.parametrize("use_bias", [False, True])
def test_aoi_matches_the_formula_on_the_span_and_leaves_the_rest(use_bias):
    d = 4
    layer, kernels, biases = built_aoi(d, use_bias)
    ids = np.array([[Q, 11, OPT1, 12, OPT2, 13, OPT3, SEP, 14, END],
                    [Q, 11, 12, 13, SEP, 14, 15, END, PAD, PAD],
                    [vocab.P1_ID, 5, 6, Q, 11, OPT1, 12, OPT2, SEP, OPT2]], "int32")
    x = np.random.default_rng(1).normal(size=(3, 10, d)).astype("float32")
    y = np.asarray(layer(x, ids, training=False))
    np.testing.assert_allclose(y[0, 2:7], numpy_aoi(x[0, 2:7], *kernels, biases), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(y[2, 5:8], numpy_aoi(x[2, 5:8], *kernels, biases), rtol=1e-4,
                               atol=1e-5)
    # Outside the span, and the whole example without options: the input, bit for bit.
    np.testing.assert_array_equal(y[0, :2], x[0, :2])
    np.testing.assert_array_equal(y[0, 7:], x[0, 7:])
    np.testing.assert_array_equal(y[1], x[1])
    np.testing.assert_array_equal(y[2, :5], x[2, :5])
    np.testing.assert_array_equal(y[2, 8:], x[2, 8:])
    assert len(layer.weights) == (8 if use_bias else 4)


def test_aoi_span_rows_do_not_read_positions_outside_the_span():
    layer, _, _ = built_aoi(4)
    ids = np.array([[Q, 11, OPT1, 12, OPT2, 13, SEP, 14]], "int32")
    x = np.random.default_rng(2).normal(size=(1, 8, 4)).astype("float32")
    changed = x.copy()
    changed[0, [0, 1, 6, 7]] += 3.0
    np.testing.assert_allclose(np.asarray(layer(x, ids))[0, 2:6],
                               np.asarray(layer(changed, ids))[0, 2:6], rtol=1e-6)


def test_aoi_dropout_acts_on_the_span_only_in_training():
    layer, _, _ = built_aoi(4)
    ids = np.array([[Q, 11, OPT1, 12, OPT2, 13, SEP, 14]], "int32")
    x = np.random.default_rng(3).normal(size=(1, 8, 4)).astype("float32") + 10.0
    y = np.asarray(layer(x, ids, training=True))
    assert (y[0, 2:6] == 0).any()  # rate 0.5 over 16 values
    np.testing.assert_array_equal(y[0, [0, 1, 6, 7]], x[0, [0, 1, 6, 7]])


def test_new_weights_start_glorot_uniform():
    d = 16
    aoi = AnswerOptionInteraction()
    aoi.build((None, None, d))
    for dense, fan_in in ((aoi.w1, d), (aoi.w2, d), (aoi.w3, d), (aoi.w4, 2 * d)):
        kernel = np.asarray(dense.kernel)
        limit = math.sqrt(6 / (fan_in + d))
        assert np.abs(kernel).max() <= limit and np.abs(kernel).max() > 0.5 * limit
        assert dense.bias is None  # the thesis has no biases
    high = Highlighting()
    high.build((None, None, d))
    vectors = np.asarray(high.vectors)
    assert vectors.shape == (8, d)
    limit = math.sqrt(6 / (8 + d))
    assert np.abs(vectors).max() <= limit and np.abs(vectors).max() > 0.5 * limit


def test_highlighting_adds_the_vector_of_each_tag():
    # "<q> The dog barks loudly ... " hand-tagged: special, other, noun, verb, adverb, numeral,
    # adjective, foreign word, then padding.
    tags = np.array([[7, 6, 0, 1, 3, 4, 2, 5, POS_PAD_ID]], "int32")
    high = Highlighting()
    high.build((None, None, 3))
    vectors = np.arange(24, dtype="float32").reshape(8, 3)
    high.vectors.assign(vectors)
    x = np.random.default_rng(4).normal(size=(1, 9, 3)).astype("float32")
    y = np.asarray(high(x, tags))
    np.testing.assert_allclose(y[0, :8], x[0, :8] + vectors[[7, 6, 0, 1, 3, 4, 2, 5]], rtol=1e-6)
    np.testing.assert_array_equal(y[0, 8], x[0, 8])


def test_highlighting_tags_must_cover_the_text_positions():
    high = Highlighting()
    high.build((None, None, 3))
    with pytest.raises(ValueError, match=r"pos_tags: expected int \[batch, 4\]"):
        high(np.zeros((1, 4, 3), "float32"), np.zeros((1, 5), "int32"))


def both_strategies(d=4):
    layer = ReadingStrategies(("aoi", "highlighting"), dropout=0.0)
    layer.build((None, None, d))
    return layer


def test_both_strategies_add_the_input_once():
    layer = both_strategies()
    ids = np.array([[Q, 11, OPT1, 12, OPT2, 13, SEP, 14]], "int32")
    tags = np.array([[7, 0, 7, 1, 7, 2, 7, 3]], "int32")
    x = np.random.default_rng(5).normal(size=(1, 8, 4)).astype("float32")
    y = np.asarray(layer(x, ids, tags))
    vectors = np.asarray(layer.highlighting.vectors)
    aoi_out = np.asarray(layer.aoi(x, ids))
    np.testing.assert_allclose(y, aoi_out + vectors[tags], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y[0, :2], x[0, :2] + vectors[[7, 0]], rtol=1e-6)


def test_highlighting_without_tags_is_a_clear_error():
    layer = ReadingStrategies(("highlighting",))
    layer.build((None, None, 4))
    with pytest.raises(ValueError, match="pos_tags"):
        layer(np.zeros((1, 3, 4), "float32"), np.zeros((1, 3), "int32"))


@pytest.mark.parametrize("strategies", [("aoi", "aoi"), ("reread",), ()])
def test_unknown_or_repeated_strategies_are_refused(strategies):
    with pytest.raises(ValueError, match="reading strategies"):
        ReadingStrategies(strategies)


def test_both_strategies_under_jit_compile_match_eager():
    layer = both_strategies()
    ids = np.array([[Q, 11, OPT1, 12, OPT2, 13, SEP, 14],
                    [Q, 11, 12, SEP, 13, END, PAD, PAD]], "int32")
    tags = np.array([[7, 0, 7, 1, 7, 2, 7, 3], [7, 0, 1, 7, 6, 7, -1, -1]], "int32")
    x = np.random.default_rng(6).normal(size=(2, 8, 4)).astype("float32")
    compiled = tf.function(lambda x, i, t: layer(x, i, t), jit_compile=True)
    np.testing.assert_allclose(np.asarray(compiled(x, ids, tags)), np.asarray(layer(x, ids, tags)),
                               rtol=1e-5, atol=1e-6)


def test_config_round_trip():
    layer = ReadingStrategies(("highlighting", "aoi"), dropout=0.2, aoi_bias=True)
    clone = ReadingStrategies.from_config(layer.get_config())
    assert clone.strategies == ("highlighting", "aoi") and clone.aoi_bias and clone.dropout == 0.2
    clone.build((None, None, 4))
    assert clone.aoi.w1.bias is not None
    assert isinstance(keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(clone)), ReadingStrategies)
