"""The comparison's model: each variant adds what its paper's formula says over the plain
encoder, every mechanism but `none` makes the encoding depend on the task, the loss and
the settings' errors."""

import keras
import numpy as np
import pytest

from nemot.compare.model import HEADS, CompareModel, Settings, predict_tasks
from nemot.hosts.losses import TaskHeadsLoss
from nemot.modulation.pals import pal_parameters

D, FF, LAYERS, NUM_HEADS, TASKS = 16, 32, 2, 2, 3
OPTIONS = {
    "none": {},
    "nemot_gate": {"nm_layers": 2, "output_layers": 1},
    "ngt_block": {"num_layers": 3, "position": 1},
    "pals": {"hidden_size": 6, "num_heads": 2},
    "hypergrid": {"grid": [4, 8], "mode": "LG", "heads": 2},
    "modulated_ffn": {"mod_units": 1, "tau": "sigmoid", "per_task": True},
}


def settings(mechanism, **changes):
    values = dict(vocab_size=30, sequence_length=8, d_model=D, num_heads=NUM_HEADS, d_ff=FF,
                  num_layers=LAYERS, mechanism=mechanism, options=OPTIONS[mechanism])
    return Settings(**{**values, **changes})


def built(mechanism, **changes):
    model = CompareModel(settings(mechanism, **changes))
    model.build()
    return model


def layer(d, d_ff):
    """A transformer layer: Q, K, V, O with biases, the FFN, two LayerNorms."""
    return 4 * (d * d + d) + (d * d_ff + d_ff) + (d_ff * d + d) + 2 * 2 * d


# Each mechanism's added parameters, from its paper's formula at these sizes.
FORMULAS = {
    "none": 0,
    # M neuromodulatory layers, T output blocks of Z post-LN layers + final LayerNorm,
    # the task-token embedding (T x d).
    "nemot_gate": 2 * layer(D, FF) + TASKS * (layer(D, FF) + 2 * D) + TASKS * D,
    # n = 3 BERT-shaped layers and the task token.
    "ngt_block": 3 * layer(D, FF) + TASKS * D,
    # Stickland & Murray: 2 d d_s + d + d_s + L 3 (d_s^2 + d_s), per task.
    "pals": TASKS * pal_parameters(D, 6, LAYERS),
    # LG: d d_r + d_c per layer (paper s.3), plus the MHSA conditioning (4 d^2 + 4 d) and
    # the task embedding T x d of each layer.
    "hypergrid": LAYERS * (D * 4 + 8 + 4 * D * D + 4 * D + TASKS * D),
    # One modulator (d weights + bias) per FFN layer, per task.
    "modulated_ffn": LAYERS * TASKS * (D + 1),
}


def test_each_variant_adds_what_its_formula_says():
    plain = built("none").count_params()
    assert plain == 30 * D + 8 * D + LAYERS * layer(D, FF) + 2 * D + (D * D + D) \
        + (D * 5 + 5) + (D + 1) + (D + 1)  # embeddings, layers, final LN, pooler, heads
    for mechanism, added in FORMULAS.items():
        assert built(mechanism).count_params() - plain == added, mechanism


def randomised(mechanism):
    """A model whose every weight is random, so no mechanism starts task-neutral (the
    modulated FFN's zero-initialised modulators do)."""
    model = built(mechanism, dropout=0.0)
    rng = np.random.default_rng(0)
    for weight in model.weights:
        weight.assign(rng.normal(0, 0.3, weight.shape).astype("float32"))
    return model


@pytest.mark.parametrize("mechanism", list(OPTIONS))
def test_the_task_changes_the_encoding_for_every_mechanism_but_none(mechanism):
    model = randomised(mechanism)
    ids = np.array([[2, 5, 6, 3, 7, 8, 3, 0]] * TASKS, "int32")
    encoded = np.asarray(model.encode({"token_ids": ids,
                                       "task_index": np.arange(TASKS, dtype="int32")}))
    difference = np.abs(encoded[1:] - encoded[:1]).max()
    if mechanism == "none":
        assert difference == 0.0
    else:
        assert difference > 1e-5  # float32 rounding is ~1e-7; `none` is exactly 0


def test_padding_is_never_attended_to():
    model = randomised("pals")
    ids = np.array([[2, 5, 6, 3, 0, 0, 0, 0], [2, 5, 6, 3, 9, 9, 9, 9]], "int32")
    padded = np.array([[2, 5, 6, 3, 0, 0, 0, 0], [2, 5, 6, 3, 0, 0, 0, 0]], "int32")
    first = np.asarray(model.encode({"token_ids": ids, "task_index": np.array([1, 1])}))
    again = np.asarray(model.encode({"token_ids": padded, "task_index": np.array([1, 1])}))
    np.testing.assert_allclose(first[0, :4], again[0, :4], atol=1e-5)
    assert np.abs(first[1, :4] - again[1, :4]).max() > 1e-3  # real tokens are seen


def test_each_example_takes_its_own_tasks_loss():
    loss = TaskHeadsLoss([HEADS[t] for t in ("sst", "quora", "sts")])
    # heads side by side: sst 5 logits, quora 1 logit, sts 1 value
    outputs = np.array([[0, 0, 9, 0, 0, 4, 1.5], [0, 0, 0, 0, 0, -3, 2.5],
                        [0, 0, 0, 0, 0, 0, 0.5]], "float32")
    targets = np.array([[0, 2], [1, 1], [2, 2.5]], "float32")
    per_example = np.asarray(loss.call(targets, outputs))
    sst = -np.log(np.exp(9) / (np.exp(9) + 4))
    quora = np.log1p(np.exp(3))  # BCE of logit -3 against 1
    np.testing.assert_allclose(per_example, [sst, quora, 4.0], rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="heads \\[\\('binary', 2\\)\\]: expected"):
        TaskHeadsLoss([("classes", 5), ("binary", 2)])


def test_predictions_follow_each_head_and_each_examples_task():
    model = randomised("pals")  # PALs: each example's encoding depends on its task
    rng = np.random.default_rng(0)
    ids = {t: np.concatenate([np.full((n, 1), 2), rng.integers(4, 30, (n, 7))], axis=1)
           .astype("int32") for t, n in (("sst", 5), ("quora", 4), ("sts", 3))}
    # compiled, in mixed batches of 5 (every batch but the first holds two tasks), and
    # eager, in one batch
    predicted = predict_tasks(model, ids, batch_size=5)
    assert list(predicted) == ["sst", "quora", "sts"]
    for task, values in predict_tasks(model, ids).items():
        np.testing.assert_allclose(values, predicted[task], rtol=1e-5, atol=1e-6)
    for index, (task, token_ids) in enumerate(ids.items()):
        alone = model.task_outputs(np.asarray(model(
            {"token_ids": token_ids, "task_index": np.full((len(token_ids),), index, "int32")},
            training=False)))[task]
        expected = {"sst": np.argmax(alone, axis=-1), "quora": (alone[:, 0] > 0),
                    "sts": alone[:, 0]}[task]
        assert predicted[task].shape == (len(token_ids),)
        np.testing.assert_allclose(predicted[task], expected, rtol=1e-5, atol=1e-6)
    assert set(predicted["sst"]) <= set(range(5)) and set(predicted["quora"]) <= {0, 1}
    assert predicted["sst"].dtype == predicted["quora"].dtype == np.int64
    assert predicted["sts"].dtype == np.float64


def test_the_model_saves_and_loads(tmp_path):
    model = randomised("nemot_gate")
    path = tmp_path / "model.keras"
    model.save(path)
    again = keras.saving.load_model(path, compile=False)
    x = {"token_ids": np.array([[2, 5, 6, 3, 0, 0, 0, 0]], "int32"),
         "task_index": np.array([2], "int32")}
    np.testing.assert_allclose(np.asarray(again(x)), np.asarray(model(x)), atol=1e-6)


@pytest.mark.parametrize("changes,message", [
    ({"mechanism": "adapters"}, "mechanism='adapters': expected one of"),
    ({"tasks": ("sst", "mnli")}, r"tasks=\['sst', 'mnli'\]: expected distinct names"),
    ({"mechanism": "none", "options": {"x": 1}}, "mechanism 'none' takes no options"),
    ({"mechanism": "ngt_block", "options": {"position": 2}},
     r"ngt_block: position=2: expected 1 <= k < 2"),
    ({"mechanism": "nemot_gate", "options": {"layers": 2}},
     r"nemot_gate: unknown option\(s\) \['layers'\]"),
])
def test_bad_settings_name_the_problem(changes, message):
    values = dict(vocab_size=30, d_model=D, num_heads=NUM_HEADS, d_ff=FF, num_layers=LAYERS)
    with pytest.raises(ValueError, match=message):
        Settings(**{**values, **changes})


def test_defaults_scale_the_papers_positions():
    eight = dict(vocab_size=30, d_model=D, num_heads=NUM_HEADS, d_ff=FF, num_layers=8)
    # NGT gates layer 21 of 24; NeMoT has M = Y and Z = Y / 4.
    assert Settings(**eight, mechanism="ngt_block").mechanism_options()["position"] == 7
    assert Settings(**eight, mechanism="nemot_gate").mechanism_options() == {
        "nm_layers": 8, "output_layers": 2}


# ------------------------------------------------ GPT-2 conditioned on the task token

def gpt2_model(**changes):
    import nemot
    from nemot.compare.model import conditioned_gpt2

    config = nemot.NeMoTConfig.preset("tiny").replace(output_blocks=("mqa", "gqa"),
                                                      dropout=0.0, **changes.pop("config", {}))
    model = conditioned_gpt2(config, **changes)
    rng = np.random.default_rng(1)
    for weight in model.weights:
        weight.assign(rng.normal(0, 0.3, weight.shape).astype("float32"))
    return model


def token_ids(tasks, texts):
    from nemot import vocab

    return np.array([[vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id(t), *text]
                     for t, text in zip(tasks, texts)], "int32")


@pytest.mark.parametrize("changes", [
    {"gating": {"num_layers": 1, "position": 1}},
    {"config": {"modulation": ({"kind": "pals", "sets": ["vanilla"], "hidden_size": 4,
                                "num_heads": 2},)}},
])
def test_gpt2_reads_the_task_token_and_stays_causal(changes):
    model = gpt2_model(**changes)
    same = [[5, 6, 7, 8]] * 2
    logits = np.asarray(model({"token_ids": token_ids(("mqa", "gqa"), same)})["logits"])
    assert np.abs(logits[0] - logits[1]).max() > 1e-4  # the task token conditions it
    later = np.asarray(model({"token_ids": token_ids(("mqa", "mqa"),
                                                     [[5, 6, 7, 8], [5, 6, 9, 10]])})["logits"])
    np.testing.assert_allclose(later[0, :2], later[1, :2], atol=1e-5)  # no peeking ahead
    assert np.abs(later[0, 2:] - later[1, 2:]).max() > 1e-4


def test_gpt2_without_a_mechanism_is_the_thesis_baseline():
    from nemot.models.baseline import build_baseline

    model = gpt2_model()
    baseline = build_baseline(model.config)
    for a, b in zip(baseline.weights, model.weights, strict=True):
        a.assign(b)
    ids = token_ids(("mqa", "gqa"), [[5, 6, 7, 8]] * 2)
    np.testing.assert_allclose(np.asarray(model({"token_ids": ids})["logits"]),
                               np.asarray(baseline({"token_ids": ids})["logits"]), atol=1e-6)
    assert model.backbone.supports_cache and not gpt2_model(
        gating={"num_layers": 1, "position": 1}).backbone.supports_cache
