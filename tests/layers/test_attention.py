"""Fused attention (keras.ops.dot_product_attention, padded to the kernel's length
multiple) equals the unfused path to 1e-5 in float32: the layer on every mask NeMoT
builds (outputs and gradients), the whole model in both modes with padding (inference
and a training step), and cached decoding; and the vanilla set takes the fused path in
training once its attention dropout is 0. The JAX backend runs the layer and model
checks in tests/test_jax_backend.py."""

import keras
import numpy as np
import pytest
from keras import ops

import nemot
from nemot import dropout as drop
from nemot import vocab
from nemot.models.generation import generate
from nemot.layers import MultiHeadAttention
from nemot.layers.masks import mask_from_positions
from tests.layers import attention_cases


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


@pytest.mark.parametrize("length_multiple", [None, 64])
def test_fused_equals_unfused_outputs_and_gradients_on_every_mask(length_multiple):
    differences = attention_cases.differences(length_multiple)
    assert set(differences) == set(attention_cases.MASKS)
    for name, (output, gradient, largest) in differences.items():
        assert output < 1e-5, name
        assert gradient < 1e-5, name
        assert largest > 1e-2, name  # the gradients compared are not all zeros


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
    text = np.array([p[3:] for p in prompts[1:]], "int32")
    buffer = np.full((1, 3 + 16), vocab.PAD_ID, "int32")
    buffer[0, :3 + text.shape[1]] = prompts[1]
    prompt_mask = np.arange(3 + 16)[None] - 3 < text.shape[1]
    prompt_mask[:, :3] = False
    logits = []
    for model in models:
        hidden, cache = model._build_cache(buffer, prompt_mask)
        step = model.head(hidden[:, :text.shape[1]])
        nxt, _, _ = model.call_with_cache(text[:, -1:], cache, text.shape[1])
        logits += [np.concatenate([ops.convert_to_numpy(step), ops.convert_to_numpy(nxt)], 1)]
    np.testing.assert_allclose(logits[0], logits[1], atol=1e-5)
    assert generate(fused, prompts, max_new_tokens=5, stop_token_ids=()) == \
        generate(unfused, prompts, max_new_tokens=5, stop_token_ids=())


def test_auto_is_fused_only_where_a_fused_kernel_exists(models):
    from nemot import backend

    cfg = models[0].config.replace(attention_implementation="auto")
    backbone = nemot.build_model(cfg).backbone
    layer = backbone.neuromodulatory_set.transformer_layers[0].self_attention
    assert layer.fused is None
    assert not backend.has_fused_attention()  # a CPU: the unfused path, 1.2x faster here
    with pytest.raises(ValueError, match="attention_implementation"):
        cfg.replace(attention_implementation="flash")


def test_vanilla_set_takes_the_fused_path_in_training_once_its_dropout_is_0(monkeypatch):
    """``attention_implementation="auto"`` on a device with a fused kernel (JAX on a GPU,
    pretended here): the NM and output sets always run it; the vanilla set in training
    only without probability dropout (GPT-2's 0.1 keeps it unfused)."""
    from nemot import backend

    monkeypatch.setattr(backend, "has_fused_attention", lambda: True)
    paths = []
    for method, kind in (("_fused_attention", "fused"), ("_attention", "unfused")):
        def spy(self, *args, _original=getattr(MultiHeadAttention, method), _kind=kind):
            paths.append((_kind, self.path))
            return _original(self, *args)

        monkeypatch.setattr(MultiHeadAttention, method, spy)
    cfg = nemot.NeMoTConfig.preset("tiny").replace(num_vanilla_layers=2, num_nm_layers=1,
                                                   output_blocks=("lm",), max_text_length=8)
    ids = np.array([[vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id("lm")] + [5] * 8])
    for rate, training, expected in ((0.1, True, "unfused"), (0.1, False, "fused"),
                                     (0.0, True, "fused")):
        model = nemot.build_model(cfg.replace(vanilla_attention_dropout=rate))
        paths.clear()
        model({"token_ids": ids}, training=training)
        vanilla = [kind for kind, path in paths if path.startswith("vanilla_set/")]
        others = {kind for kind, path in paths if not path.startswith("vanilla_set/")}
        assert vanilla == [expected] * 2, (rate, training, paths)
        assert others == {"fused"}, (rate, training, paths)


def test_a_training_step_without_vanilla_attention_dropout_is_the_same_fused(models):
    """Loss and every gradient of a training call (dropout 0.1 elsewhere, a batch mixing
    modes, tasks and padding) equal on both paths."""
    import tensorflow as tf

    cfg = models[0].config.replace(vanilla_attention_dropout=0.0, num_vanilla_layers=1,
                                   num_nm_layers=1)
    pair = [nemot.build_model(cfg.replace(attention_implementation=path))
            for path in ("fused", "unfused")]
    for a, b in zip(pair[0].variables, pair[1].variables):  # seed generators included
        b.assign(a)
    rng = np.random.default_rng(4)
    text = rng.integers(0, 5000, (4, 40)).astype("int32")
    text[1, 30:] = vocab.PAD_ID
    text[2, 6:] = vocab.PAD_ID
    aux = np.array([[vocab.CLS_ID, m, vocab.task_token_id(t)] for m, t in
                    zip((vocab.DEC_ID, vocab.ENC_ID, vocab.DEC_ID, vocab.ENC_ID),
                        ("lm", "gqa", "gqa", "lm"))], "int32")
    x = {"token_ids": np.concatenate([aux, text], 1)}
    y = {"task_targets": np.where(text == vocab.PAD_ID, vocab.IGNORE_ID, np.roll(text, -1, 1)),
         "lm_targets": np.roll(text, -1, 1)}
    results = []
    for model in pair:
        with tf.GradientTape() as tape:
            loss = nemot.NeMoTLoss()(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        results.append([float(loss)] + [ops.convert_to_numpy(g) for g in grads if g is not None])
    assert len(results[0]) == len(results[1]) > 1
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6)
    for g, h in zip(results[0][1:], results[1][1:]):
        np.testing.assert_allclose(g, h, atol=1e-5)
