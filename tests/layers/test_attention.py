"""Fused attention (keras.ops.dot_product_attention, padded to the kernel's length
multiple) equals the unfused path to 1e-5 in float32: the layer, the whole model in
both modes with padding, and cached decoding. The JAX backend runs the same checks in
tests/test_jax_backend.py."""

import keras
import numpy as np
import pytest
from keras import ops

import nemot
from nemot import dropout as drop
from nemot import vocab
from nemot.evaluation.decoding import generate
from nemot.layers import MultiHeadAttention
from nemot.layers.masks import mask_from_positions


def pair(**kwargs):
    """A fused and an unfused layer with the same weights."""
    fused = MultiHeadAttention(num_heads=2, key_dim=8, fused=True, **kwargs)
    unfused = MultiHeadAttention(num_heads=2, key_dim=8, fused=False, **kwargs)
    for layer in (fused, unfused):
        layer.build((None, None, 16))
    unfused.set_weights(fused.get_weights())
    return fused, unfused


def random_mask(rng, batch, length, num_aux):
    valid = np.arange(length)[None] < rng.integers(num_aux + 1, length + 1, (batch, 1))
    is_enc = rng.random(batch) < 0.5
    positions = np.arange(length, dtype="int32")
    return mask_from_positions(positions, positions, valid, is_enc, num_aux)


@pytest.mark.parametrize("length_multiple", [None, 64])
def test_fused_equals_unfused_on_random_masks(length_multiple):
    rng = np.random.default_rng(0)
    fused, unfused = pair()
    fused.length_multiple = length_multiple  # 64: pads 67 to 128 as on a GPU
    x = rng.normal(size=(4, 67, 16)).astype("float32")
    mask = random_mask(rng, 4, 67, num_aux=3)
    a, _ = fused(x, mask)
    b, _ = unfused(x, mask)
    np.testing.assert_allclose(ops.convert_to_numpy(a), ops.convert_to_numpy(b), atol=1e-5)


def test_training_with_probability_dropout_runs_the_unfused_path():
    fused, unfused = pair(dropout=0.5)
    x = np.random.default_rng(1).normal(size=(2, 9, 16)).astype("float32")
    mask = np.ones((2, 9, 9), bool)
    seed = drop.draw_seed(keras.random.SeedGenerator(3), training=True)
    a, _ = fused(x, mask, training=True, dropout_seed=seed)
    b, _ = unfused(x, mask, training=True, dropout_seed=seed)
    np.testing.assert_array_equal(ops.convert_to_numpy(a), ops.convert_to_numpy(b))
    with pytest.raises(ValueError, match="dropout_seed"):
        fused(x, mask, training=True)


@pytest.fixture(scope="module")
def models():
    cfg = nemot.NeMoTConfig.preset("tiny").replace(max_text_length=40,
                                                   output_blocks=("lm", "gqa"))
    fused = nemot.build_model(cfg.replace(attention_implementation="fused"))
    unfused = nemot.build_model(cfg.replace(attention_implementation="unfused"))
    unfused.set_weights(fused.get_weights())
    return fused, unfused


def test_model_logits_equal_in_both_modes_with_padding(models):
    rng = np.random.default_rng(2)
    text = rng.integers(0, 5000, (4, 40)).astype("int32")
    text[1, 25:] = vocab.PAD_ID
    text[3, 9:] = vocab.PAD_ID
    modes = [vocab.DEC_ID, vocab.ENC_ID, vocab.ENC_ID, vocab.DEC_ID]
    tasks = [vocab.task_token_id(t) for t in ("lm", "gqa", "lm", "gqa")]
    aux = np.array([[vocab.CLS_ID, m, t] for m, t in zip(modes, tasks)], "int32")
    ids = np.concatenate([aux, text], axis=1)
    out = [m({"token_ids": ids}, return_gates=True) for m in models]
    for key in ("logits", "vanilla_logits", "gates"):
        np.testing.assert_allclose(ops.convert_to_numpy(out[0][key]),
                                   ops.convert_to_numpy(out[1][key]), atol=1e-5, err_msg=key)


def test_cached_decoding_equal(models):
    fused, unfused = models
    prompts = [[vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id("gqa"), 11, 12, 13, 14],
               [vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id("lm")] + list(range(20, 31))]
    aux = np.array([p[:3] for p in prompts[1:]], "int32")
    text = np.array([p[3:] for p in prompts[1:]], "int32")
    logits = []
    for model in models:
        cache = model.init_cache(1, 16)
        valid = np.arange(16)[None] < text.shape[1]
        step, cache = model.prefill(aux, text, cache, valid)
        nxt, _ = model.call_with_cache(aux, text[:, -1:], cache, text.shape[1], valid)
        logits += [np.concatenate([ops.convert_to_numpy(step), ops.convert_to_numpy(nxt)], 1)]
    np.testing.assert_allclose(logits[0], logits[1], atol=1e-5)
    assert generate(fused, prompts, max_new_tokens=5, stop_token_ids=()) == \
        generate(unfused, prompts, max_new_tokens=5, stop_token_ids=())


def test_auto_is_fused_only_where_a_fused_kernel_exists(models):
    from nemot import backend

    cfg = models[0].config.replace(attention_implementation="auto")
    layer = nemot.build_model(cfg).neuromodulatory_set.transformer_layers[0].self_attention
    assert layer.fused is None
    assert not backend.has_fused_attention()  # a CPU: the unfused path, 1.2x faster here
    with pytest.raises(ValueError, match="attention_implementation"):
        cfg.replace(attention_implementation="flash")
