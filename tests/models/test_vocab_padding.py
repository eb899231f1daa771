"""A padded vocabulary (``NeMoTConfig.vocab_padding``): the heads' kernels have zero columns
up to a multiple, and the model scores, learns and decodes exactly as the unpadded one with
the same real weights; checkpoints load across paddings both ways (the JAX backend's check
is in tests/jax_worker.py)."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file

import nemot
from nemot import vocab
from nemot.evaluation.choices import answer_log_probs, predict_labels
from nemot.evaluation.perplexity import perplexity
from nemot.models import gpt2
from nemot.models.generation import generate, generate_by_recomputation
from nemot.models.heads import VocabularyHead
from nemot.models.weights import load_pretrained
from tests.models.gpt2_checkpoint import write_tiny_gpt2

# One layer per set and the two blocks the inputs select: the padding is the heads'.
TINY = nemot.NeMoTConfig.preset("tiny").replace(max_text_length=16, dropout=0.0,
                                                vanilla_attention_dropout=0.0,
                                                num_vanilla_layers=1, num_nm_layers=1,
                                                output_blocks=("lm", "gqa"))
PADDED = TINY.replace(vocab_padding=64)
GQA, LM = vocab.task_token_id("gqa"), vocab.task_token_id("lm")
TEXT = np.random.default_rng(0).integers(0, vocab.GPT2_VOCAB_SIZE, (3, 16)).astype("int32")
TEXT[2, 9:] = vocab.PAD_ID
X = {"token_ids": np.concatenate(
    [np.array([[vocab.CLS_ID, vocab.DEC_ID, GQA], [vocab.CLS_ID, vocab.ENC_ID, LM],
               [vocab.CLS_ID, vocab.DEC_ID, LM]], "int32"), TEXT], axis=1)}
TARGETS = np.where(TEXT == vocab.PAD_ID, vocab.IGNORE_ID, np.roll(TEXT, -1, axis=1))
Y = {"task_targets": np.where(np.arange(16) < 10, vocab.IGNORE_ID, TARGETS),
     "lm_targets": TARGETS}
PROMPTS = [[vocab.CLS_ID, vocab.DEC_ID, GQA, 464, 3290, 318, vocab.SEP_ID],
           [vocab.CLS_ID, vocab.DEC_ID, LM, 40, 41]]


def build(config, seed=7):
    keras.utils.set_random_seed(seed)
    return nemot.build_model(config, preprocessor=None)


def logits(model, x=X):
    return {key: np.asarray(value) for key, value in model(x).items()}


@pytest.fixture(scope="module")
def models():
    """The unpadded model, and the padded one of the same seed with its padded columns set
    to large values: they would win every softmax and argmax if any logit read them."""
    plain, padded = build(TINY), build(PADDED)
    for head in (padded.head, padded.vanilla_head):
        head.kernel.assign(np.concatenate([np.asarray(head.kernel)[:, :vocab.VOCAB_SIZE],
                                           np.full((32, 55), 3.0, "float32")], axis=1))
        head.bias.assign(np.concatenate([np.asarray(head.bias)[:vocab.VOCAB_SIZE],
                                         np.full(55, 50.0, "float32")]))
    return plain, padded


def test_the_padded_width_and_a_fresh_padded_head_equal_to_the_unpadded_one():
    assert (PADDED.padded_vocab_size, TINY.padded_vocab_size) == (50368, 50313)
    assert TINY.replace(vocab_padding=128).padded_vocab_size == 50432
    with pytest.raises(ValueError, match=r"vocab_padding = 0: expected >= 1"):
        TINY.replace(vocab_padding=0)
    plain, padded = build(TINY, seed=5), build(PADDED, seed=5)
    for ours, theirs in ((padded.head, plain.head), (padded.vanilla_head, plain.vanilla_head)):
        assert ours.kernel.shape == (32, 50368) and ours.bias.shape == (50368,)
        kernel = np.asarray(ours.kernel)
        np.testing.assert_array_equal(kernel[:, :vocab.VOCAB_SIZE], np.asarray(theirs.kernel))
        assert not kernel[:, vocab.VOCAB_SIZE:].any() and not np.asarray(ours.bias).any()
    out = padded(X)
    assert out["logits"].shape == out["vanilla_logits"].shape == (3, 16, vocab.VOCAB_SIZE)
    baseline = nemot.build_baseline(PADDED)  # the GPT-2 baseline's head too
    assert baseline.head.kernel.shape == (32, 50368)
    assert baseline(X)["logits"].shape == (3, 16, vocab.VOCAB_SIZE)


def test_logits_loss_terms_metrics_and_gradients_equal_the_unpadded_models(models):
    plain, padded = models
    expected, got = logits(plain), logits(padded)
    for key in expected:
        np.testing.assert_allclose(got[key], expected[key], atol=1e-5)

    def loss_metrics_and_gradients(model):
        for metric in model.metrics:
            metric.reset_state()
        with tf.GradientTape() as tape:
            loss = model.compute_loss(y=Y, y_pred=model(X, training=True))
        metrics = {m.name: float(m.result()) for m in model.metrics}
        return float(loss), metrics, tape.gradient(loss, [
            model.head.kernel, model.vanilla_head.bias,
            model.backbone.token_embedding.embeddings])

    (loss, metrics, grads), (plain_loss, plain_metrics, plain_grads) = map(
        loss_metrics_and_gradients, (padded, plain))
    assert loss == pytest.approx(plain_loss, rel=1e-6)
    assert {"task_loss", "lm_loss", "vanilla_loss"} <= set(plain_metrics)
    assert metrics == pytest.approx(plain_metrics, rel=1e-6)
    for ours, theirs in zip(grads, plain_grads):
        ours, theirs = tf.convert_to_tensor(ours).numpy(), tf.convert_to_tensor(theirs).numpy()
        if ours.shape != theirs.shape:  # a head: nothing reaches its padded columns
            assert not ours[..., vocab.VOCAB_SIZE:].any()
            ours = ours[..., :vocab.VOCAB_SIZE]
        np.testing.assert_allclose(ours, theirs, atol=1e-6)
    # The evaluation's metrics read the same logits.
    documents = [TEXT[0].tolist() + TEXT[1].tolist()]
    assert perplexity(padded, documents, window=16, stride=8).perplexity == pytest.approx(
        perplexity(plain, documents, window=16, stride=8).perplexity, rel=1e-6)
    assert predict_labels(padded, PROMPTS) == predict_labels(plain, PROMPTS)
    for ours, theirs in zip(answer_log_probs(padded, PROMPTS, [2, 1]),
                            answer_log_probs(plain, PROMPTS, [2, 1])):
        np.testing.assert_allclose(ours, theirs, atol=1e-5)


@pytest.mark.usefixtures("eager")  # the loop's graph and XLA paths: tests/models/test_generation.py
def test_greedy_ids_equal_the_unpadded_models(models):
    """The cached loop runs KerasHub's ``GreedySampler`` on the padded model's logits."""
    plain, padded = models
    expected = generate_by_recomputation(plain, PROMPTS, max_new_tokens=6, stop_token_ids=())
    assert generate(padded, PROMPTS, max_new_tokens=6, stop_token_ids=(),
                    jit_compile=False) == expected


def test_checkpoints_load_across_paddings_both_ways(models, tmp_path):
    plain, garbage = models
    expected = logits(plain)
    plain.save(tmp_path / "plain.keras")
    padded = build(PADDED, seed=4)
    padded.load_weights(tmp_path / "plain.keras")  # unpadded -> padded: zero-filled
    np.testing.assert_array_equal(logits(padded)["logits"], expected["logits"])
    assert not np.asarray(padded.head.kernel)[:, vocab.VOCAB_SIZE:].any()
    padded.save_weights(tmp_path / "padded.weights.h5")
    unpadded = build(TINY, seed=4)
    unpadded.load_weights(tmp_path / "padded.weights.h5")  # padded -> unpadded: dropped
    np.testing.assert_array_equal(logits(unpadded)["vanilla_logits"],
                                  expected["vanilla_logits"])
    start = load_pretrained(padded, tmp_path / "plain.keras")  # a run's train.init_from
    assert start.copied["head"] == (2, 2) and start.copied["vanilla_head"] == (2, 2)

    plain.save_to_preset(str(tmp_path / "preset"))
    from_preset = nemot.NeMoTCausalLM.from_preset(str(tmp_path / "preset"), vocab_padding=64)
    assert from_preset.config == PADDED and from_preset.head.kernel.shape == (32, 50368)
    np.testing.assert_array_equal(logits(from_preset)["logits"], expected["logits"])
    from_preset.save_to_preset(str(tmp_path / "padded_preset"))
    back = nemot.NeMoTCausalLM.from_preset(str(tmp_path / "padded_preset"), vocab_padding=1)
    assert back.config == TINY
    np.testing.assert_array_equal(logits(back)["logits"], expected["logits"])

    # Columns past the vocabulary that are not zero are another vocabulary, not padding.
    garbage.save_weights(tmp_path / "not_padding.weights.h5")
    with pytest.raises(ValueError, match=r"head has 50368 columns, non-zero past column 50313"):
        unpadded.load_weights(tmp_path / "not_padding.weights.h5")
    head = VocabularyHead(100, 128)
    head.build((None, 4))
    with pytest.raises(ValueError, match=r"has 64 columns; this head scores 100 tokens"):
        head.fit_columns(np.zeros((4, 64)), "small.weights.h5")


def test_gpt2_weights_load_into_a_padded_model_and_export_gpt2s_rows(tmp_path):
    source = write_tiny_gpt2(tmp_path / "gpt2")
    config = gpt2.config_from_gpt2(source, PADDED)
    model = nemot.build_model(config, gpt2=source, preprocessor=None)
    wte = load_file(str(source / "model.safetensors"))["wte.weight"]
    np.testing.assert_array_equal(
        np.asarray(model.backbone.token_embedding.embeddings)[:vocab.GPT2_VOCAB_SIZE], wte)
    assert model.head.kernel.shape == (32, 50368)
    out = gpt2.export_vanilla_set(model, tmp_path / "exported")
    assert json.loads((out / "config.json").read_text())["vocab_size"] == vocab.GPT2_VOCAB_SIZE
    np.testing.assert_array_equal(
        load_file(str(out / "model.safetensors"))["transformer.wte.weight"], wte)
