"""The GPT-2 baseline of the thesis: GPT-2 plus a new head, its loss, cache and counts."""

from pathlib import Path

import keras
import numpy as np
import pytest

import nemot
from nemot import vocab
from nemot.models import registry
from nemot.models.baseline import GPT2BaselineCausalLM, baseline_config, build_baseline
from nemot.models.losses import NeMoTLoss
from tests.models.gpt2_checkpoint import TINY_GPT2, padded_text_ids

TINY = nemot.NeMoTConfig.preset("tiny")
D = TINY_GPT2["n_embd"]
LAYERS = TINY_GPT2["n_layer"]
AUX = [vocab.CLS_ID, vocab.DEC_ID, vocab.ADDED_TOKEN_IDS["<gqa>"]]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def baseline(hf_dir):
    return build_baseline(None, gpt2=hf_dir, seed=0)


def with_aux(text_ids, aux=AUX):
    return np.concatenate([np.tile(np.asarray(aux, "int32"), (len(text_ids), 1)), text_ids], 1)


def test_baseline_drops_the_auxiliary_tokens(baseline):
    text = padded_text_ids()
    logits = baseline({"token_ids": with_aux(text)})["logits"].numpy()
    assert logits.shape == (3, 12, vocab.VOCAB_SIZE)
    other_aux = [vocab.CLS_ID, vocab.ENC_ID, vocab.ADDED_TOKEN_IDS["<mqa>"]]
    np.testing.assert_array_equal(logits, baseline({"token_ids": with_aux(text, other_aux)})["logits"])
    direct = baseline.head(baseline.backbone.vanilla_set(text)).numpy()
    np.testing.assert_allclose(logits, direct, atol=1e-5)


def test_baseline_default_loss_is_l1_plus_point_two_l2(baseline):
    baseline.compile(nemot.optimizers.Adam(1e-3))
    assert baseline.nemot_loss == NeMoTLoss(task_weight=1.0, lm_weight=0.2, vanilla_weight=0)
    text = padded_text_ids()
    rng = np.random.default_rng(5)
    task = np.full(text.shape, vocab.IGNORE_ID, "int32")
    task[:, 2:5] = rng.integers(0, vocab.VOCAB_SIZE, (3, 3))
    lm = np.where(text != vocab.PAD_ID, rng.integers(0, vocab.VOCAB_SIZE, text.shape),
                  vocab.IGNORE_ID).astype("int32")
    y_pred = baseline({"token_ids": with_aux(text)})
    loss = float(baseline.compute_loss(y={"task_targets": task, "lm_targets": lm},
                                       y_pred=y_pred))

    logits = y_pred["logits"].numpy().astype("float64")
    log_probs = logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1,
                                keepdims=True)) - logits.max(-1, keepdims=True)

    def mean_ce(targets):
        rows, cols = np.nonzero(targets != vocab.IGNORE_ID)
        return -log_probs[rows, cols, targets[rows, cols]].mean()

    assert loss == pytest.approx(mean_ce(task) + 0.2 * mean_ce(lm), rel=1e-5)
    assert set(baseline._loss_term_trackers) == {"task", "lm"}
    assert float(baseline._loss_term_trackers["lm"].result()) == pytest.approx(mean_ce(lm),
                                                                               rel=1e-5)


def memorise_examples():
    """Two QA examples in the unified layout; targets from <sep> on and LM targets."""
    p1, q, sep, end = vocab.P1_ID, vocab.Q_ID, vocab.SEP_ID, vocab.END_ID
    texts = [[p1, 11, 12, 13, q, 14, 15, sep, 21, 22, end],
             [p1, 31, 32, q, 33, sep, 41, end]]
    n = 14
    ids = np.full((2, n), vocab.PAD_ID, "int32")
    task = np.full((2, n), vocab.IGNORE_ID, "int32")
    lm = np.full((2, n), vocab.IGNORE_ID, "int32")
    for row, text in enumerate(texts):
        ids[row, :len(text)] = text
        lm[row, :len(text) - 1] = text[1:]
        start = text.index(sep)
        task[row, start:len(text) - 1] = text[start + 1:]
    return texts, with_aux(ids), {"task_targets": task, "lm_targets": lm}


def test_baseline_trains_and_decodes_greedily():
    keras.utils.set_random_seed(0)
    model = build_baseline("tiny")
    model.compile(nemot.optimizers.Adam(1e-2))
    texts, x, y = memorise_examples()
    history = model.fit({"token_ids": x}, y, batch_size=2, epochs=40, verbose=0).history
    assert "vanilla_loss" not in history
    assert history["loss"][-1] < 0.2 * history["loss"][0]
    assert history["task_loss"][-1] < history["task_loss"][0]

    prompts = [AUX + text[:text.index(vocab.SEP_ID) + 1] for text in texts]
    assert nemot.generate(model, prompts, max_new_tokens=6) == [[21, 22], [41]]


def test_baseline_cached_decoding_equals_recomputation(baseline):
    """The baseline's cache gives the logits of the full forward pass at every position."""
    text = padded_text_ids(seed=4)[:1, :7]
    x = {"token_ids": with_aux(text)}
    full = baseline(x)["logits"].numpy()
    n = 8
    buffer = np.zeros((1, 3 + n), "int32")
    buffer[:, :3 + 7] = with_aux(text)
    prompt_mask = np.zeros((1, 3 + n), bool)
    prompt_mask[0, 3:3 + 4] = True  # the cache is seeded with the first four positions
    hidden, cache = baseline._build_cache(buffer, prompt_mask)
    np.testing.assert_allclose(np.asarray(baseline.head(hidden))[:, :4], full[:, :4], atol=1e-5)
    for index in range(4, 7):
        logits, _, cache = baseline.call_with_cache(text[:, index:index + 1], cache, index)
        np.testing.assert_allclose(np.asarray(logits)[:, 0], full[:, index], atol=1e-5)


def test_baseline_is_serialisable(baseline, tmp_path):
    clone = GPT2BaselineCausalLM.from_config(baseline.get_config())
    assert clone.config == baseline.config
    path = tmp_path / "baseline.keras"
    baseline.save(path)
    loaded = keras.saving.load_model(path, compile=False)
    assert isinstance(loaded, GPT2BaselineCausalLM)
    x = {"token_ids": with_aux(padded_text_ids())}
    np.testing.assert_allclose(loaded(x)["logits"], baseline(x)["logits"], atol=1e-6)


def test_baseline_parameter_counts(baseline):
    d, v, p, ff = D, vocab.VOCAB_SIZE, TINY_GPT2["n_positions"], 4 * D
    layer = 4 * (d * d + d) + (d * ff + ff) + (ff * d + d) + 4 * d
    counts = baseline.parameter_breakdown()
    assert counts["vanilla_set"] == v * d + p * d + LAYERS * layer + 2 * d
    assert counts["head"] == d * v + v
    assert counts["total"] == baseline.count_params()


def test_gpt2_medium_baseline_count(undrawn_weights):
    """The one thesis-size test: GPT-2 Medium's published 354,823,168 + 56 rows + head."""
    counts = build_baseline("gpt2_medium").parameter_breakdown()
    assert undrawn_weights  # the weights were not drawn
    added_rows = (vocab.VOCAB_SIZE - vocab.GPT2_VOCAB_SIZE) * 1024
    assert counts["vanilla_set"] == 354_823_168 + added_rows
    assert counts["head"] == 1024 * vocab.VOCAB_SIZE + vocab.VOCAB_SIZE


def test_baseline_config_file_matches_the_preset():
    path = REPO / "configs" / "baseline" / "gpt2_medium.toml"
    assert nemot.NeMoTConfig.from_file(path) == baseline_config("gpt2_medium")


def test_model_factory():
    assert isinstance(registry.build("nemot", TINY), nemot.NeMoTCausalLM)
    assert isinstance(registry.build("gpt2_baseline", TINY), GPT2BaselineCausalLM)
    with pytest.raises(ValueError, match="expected one of \\('nemot', 'gpt2_baseline'\\)"):
        registry.build("bert", TINY)
    with pytest.raises(ValueError, match="unknown baseline preset 'gpt3'"):
        build_baseline("gpt3")
