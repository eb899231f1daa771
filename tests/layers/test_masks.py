import numpy as np
import pytest
from keras import ops

from nemot import attention_mask, vocab
from nemot.layers.attention import MultiHeadAttention

CLS, DEC, ENC, LM, PAD = vocab.CLS_ID, vocab.DEC_ID, vocab.ENC_ID, vocab.task_token_id("lm"), vocab.PAD_ID
T, F = True, False


def test_dec_mask_truth_table_with_padding():
    ids = [[CLS, DEC, LM, 11, 12, 13, PAD]]
    mask = np.asarray(attention_mask(ids, mode="dec", num_aux=3))[0]
    expected = np.array([
        # aux rows: aux columns only
        [T, T, T, F, F, F, F],
        [T, T, T, F, F, F, F],
        [T, T, T, F, F, F, F],
        # text rows: every aux column, text columns up to the row
        [T, T, T, T, F, F, F],
        [T, T, T, T, T, F, F],
        [T, T, T, T, T, T, F],
        # the padded row: never the pad column itself
        [T, T, T, T, T, T, F],
    ])
    np.testing.assert_array_equal(mask, expected)


def test_enc_mask_truth_table_with_padding():
    ids = [[CLS, ENC, LM, 11, 12, PAD, PAD]]
    mask = np.asarray(attention_mask(ids, mode="enc", num_aux=3))[0]
    expected = np.tile([T, T, T, T, T, F, F], (7, 1))
    np.testing.assert_array_equal(mask, expected)


def test_auto_mode_reads_each_examples_mode_token():
    ids = [[CLS, DEC, LM, 11, 12], [CLS, ENC, LM, 11, 12]]
    mask = np.asarray(attention_mask(ids, mode="auto", num_aux=3))
    np.testing.assert_array_equal(mask[0], np.asarray(attention_mask(ids[:1], "dec"))[0])
    np.testing.assert_array_equal(mask[1], np.asarray(attention_mask(ids[1:], "enc"))[0])
    assert not mask[0, 3, 4] and mask[1, 3, 4]


def test_text_only_rule_is_causal_and_masks_padding():
    mask = np.asarray(attention_mask([[5, 6, PAD]], mode="dec", num_aux=0))[0]
    np.testing.assert_array_equal(mask, [[T, F, F], [T, T, F], [T, T, F]])


def test_unknown_mode_is_an_error():
    with pytest.raises(ValueError, match="mode"):
        attention_mask([[CLS, DEC, LM]], mode="bidirectional")


def test_fully_padded_rows_give_no_nan():
    ids = [[PAD, PAD, PAD]]
    mask = attention_mask(ids, mode="dec", num_aux=0)
    assert not np.asarray(mask).any()
    layer = MultiHeadAttention(num_heads=2, key_dim=4)
    out, _ = layer(ops.ones((1, 3, 8)), attention_mask=mask)
    assert np.isfinite(np.asarray(out)).all()
