"""PALBert: BERT weights loaded from a Hugging Face directory, equality with KerasHub's
BertBackbone without PALs, the zero-decoder identity, per-task gradients and heads, the
loss of each head, padding, saving."""

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from nemot.modulation.pals import pal_parameters
from nemot.pals.model import PAL_PRESETS, PALBert, PALsLoss, build_pal_bert, predictions
from tests.pals.helpers import write_hf_bert

TASKS = ("sst", "quora", "sts")
PALS = {"hidden_size": 4, "num_heads": 2}


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("hf_bert")
    write_hf_bert(directory)
    return directory


def inputs(batch=3, length=9, vocab=40, seed=0, tasks=(0, 1, 2)):
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, length), "int32")
    mask[1, length - 3:] = 0
    segments = np.zeros((batch, length), "int32")
    segments[:, length // 2:] = 1
    return {"token_ids": rng.integers(5, vocab, (batch, length)).astype("int32") * mask,
            "segment_ids": segments * mask, "padding_mask": mask,
            "task_index": np.array(tasks[:batch], "int32")}


def sequence(model, x):
    return ops.convert_to_numpy(model.encode(x, training=False))


def test_without_pals_the_stack_is_the_bert_backbone(hf_dir):
    backbone = keras_hub.models.BertBackbone.from_preset(str(hf_dir))
    x = inputs()
    expected = ops.convert_to_numpy(backbone({k: x[k] for k in (
        "token_ids", "segment_ids", "padding_mask")})["sequence_output"])
    # KerasHub's BertBackbone uses the tanh GELU; with it the copy is exact.
    model = build_pal_bert(str(hf_dir), tasks=TASKS, activation="gelu_tanh")
    np.testing.assert_allclose(sequence(model, x), expected, atol=2e-6)
    assert not model.bert.shared_modulations
    pooled = ops.convert_to_numpy(backbone.pooled_dense(expected[:, 0]))
    np.testing.assert_allclose(ops.convert_to_numpy(
        model.backbone.pooled_dense(sequence(model, x)[:, 0])),
                               pooled, atol=2e-6)
    # BERT's own (exact) GELU, the default, is a different function.
    exact = build_pal_bert(backbone, tasks=TASKS)
    assert exact.activation == "gelu" and np.abs(sequence(exact, x) - expected).max() > 1e-5


@pytest.mark.parametrize("setting", ["half", "full"])
def test_pals_with_a_zero_decoder_leave_bert_exactly_unchanged(hf_dir, setting):
    backbone = keras_hub.models.BertBackbone.from_preset(str(hf_dir))
    plain = build_pal_bert(backbone, tasks=TASKS)
    pals = dict(PAL_PRESETS[setting], hidden_size=4, num_heads=2, decoder_init="zeros")
    model = build_pal_bert(backbone, tasks=TASKS, pals=pals)
    x = inputs()
    np.testing.assert_array_equal(sequence(model, x), sequence(plain, x))
    hosting = [i for i, layer in enumerate(model.bert.transformer_layers) if layer.parallel]
    assert hosting == ([1] if setting == "half" else [0, 1])  # top half of 2 layers


def test_parameters_are_bert_plus_heads_plus_the_pal_formula_per_task(hf_dir):
    backbone = keras_hub.models.BertBackbone.from_preset(str(hf_dir))
    plain = build_pal_bert(backbone, tasks=TASKS)
    heads = (8 + 1) * (5 + 1 + 1)
    assert plain.count_params() == backbone.count_params() + heads
    model = build_pal_bert(backbone, tasks=TASKS, pals={"hidden_size": 4, "num_heads": 2})
    per_task = pal_parameters(8, 4, 2)
    assert model.pal_parameters_per_task() == per_task
    assert model.count_params() == plain.count_params() + 3 * per_task


def scrambled_model(seed=0, **kwargs):
    keras.utils.set_random_seed(seed)
    model = PALBert(vocabulary_size=40, num_layers=2, num_heads=2, hidden_dim=8,
                    intermediate_dim=16, max_sequence_length=32, tasks=TASKS,
                    pals=PALS, **kwargs)
    model.build()
    rng = np.random.default_rng(seed)
    for w in model.weights:  # large weights, so that every path shows in the output
        if w.path.endswith("kernel"):
            w.assign(rng.normal(0, 0.5, w.shape).astype("float32"))
    return model


def test_a_batch_of_one_task_trains_only_that_tasks_pals_and_head():
    model = scrambled_model()
    x = inputs(batch=2, tasks=(0, 0))
    y = np.array([[0, 3], [0, 1]], "float32")
    loss_fn = PALsLoss(TASKS)
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=False))
    grads = dict(zip([w.path for w in model.trainable_weights],
                     tape.gradient(loss, model.trainable_weights)))
    pal_grads = {p: ops.convert_to_numpy(g) for p, g in grads.items() if "pals" in p}
    assert len(pal_grads) == 4 + 2 * 6  # V^E, V^D; Q, K, V of both layers
    for path, g in pal_grads.items():
        assert np.abs(g[0]).max() > 0, path
        assert not g[1:].any(), path
    for task in ("quora", "sts"):
        assert not ops.convert_to_numpy(grads[f"{model.name}/head_{task}/kernel"]).any()
    assert np.abs(ops.convert_to_numpy(grads[f"{model.name}/head_sst/kernel"])).max() > 0


@pytest.mark.parametrize("rate", [None, 0.0])
def test_the_pals_attention_dropout_is_the_official_0_1_and_zero_switches_it_off(rate):
    # BERT's own dropouts off: the PALs' attention dropout is the only randomness left.
    pals = PALS if rate is None else dict(PALS, attention_dropout=rate)
    keras.utils.set_random_seed(0)
    model = PALBert(40, 2, 2, 8, 16, tasks=TASKS, pals=pals, dropout=0.0)
    model.build()
    for w in model.bert.shared_modulations[0].weights:  # a PAL term large enough to show
        w.assign(np.random.default_rng(1).normal(0, 0.5, w.shape).astype("float32"))
    assert {layer.parallel[0].attention_dropout for layer in model.bert.transformer_layers} == \
        {0.1 if rate is None else rate}
    x = inputs()
    first, second = (ops.convert_to_numpy(model.encode(x, training=True)) for _ in range(2))
    inference = sequence(model, x)
    np.testing.assert_array_equal(inference, sequence(model, x))
    if rate is None:
        assert np.abs(first - second).max() > 1e-4
    else:
        np.testing.assert_allclose(first, inference, atol=1e-6)
        np.testing.assert_allclose(second, inference, atol=1e-6)


def test_padding_does_not_change_the_real_positions():
    model = scrambled_model()
    x = inputs(batch=2, length=6, tasks=(1, 2))
    x["padding_mask"][:] = 1
    x["token_ids"][x["token_ids"] == 0] = 7
    longer = {k: np.pad(v, ((0, 0), (0, 4))) if v.ndim == 2 else v for k, v in x.items()}
    longer["token_ids"][:, 6:] = 0  # [PAD]
    np.testing.assert_allclose(sequence(model, longer)[:, :6], sequence(model, x), atol=1e-5)
    np.testing.assert_allclose(ops.convert_to_numpy(model(longer)), ops.convert_to_numpy(model(x)),
                               atol=1e-5)


def test_the_loss_is_each_examples_own_task_loss():
    tasks = ("sst", "quora", "sts")
    y_pred = np.array([[1, 2, 0, -1, 3, 0.5, 0.0],
                       [0, 0, 0, 0, 0, -1.5, 0.0],
                       [9, 9, 9, 9, 9, 9.0, 2.0]], "float32")
    y_true = np.array([[0, 4], [1, 1], [2, 3.5]], "float32")
    per_example = ops.convert_to_numpy(PALsLoss(tasks, reduction=None)(y_true, y_pred))
    logits = y_pred[0, :5]
    ce = np.log(np.exp(logits).sum()) - logits[4]
    bce = np.log1p(np.exp(1.5))  # -log(sigmoid(-1.5)) for label 1
    mse = (2.0 - 3.5) ** 2
    np.testing.assert_allclose(per_example, [ce, bce, mse], rtol=1e-5)


def test_predictions_read_each_head():
    model = scrambled_model()
    x = inputs(batch=3)
    arrays = {k: x[k] for k in ("token_ids", "segment_ids", "padding_mask")}
    for index, task in enumerate(TASKS):
        got = predictions(model, arrays, task)
        heads = model.task_outputs(ops.convert_to_numpy(
            model(dict(arrays, task_index=np.full(3, index, "int32")))))[task]
        expected = {"sst": heads.argmax(-1), "quora": (heads[:, 0] > 0).astype(int),
                    "sts": heads[:, 0]}[task]
        np.testing.assert_allclose(got, expected, atol=1e-5)


def test_save_and_load_round_trip(tmp_path):
    model = scrambled_model()
    model.compile(keras.optimizers.Adam(1e-3), loss=PALsLoss(model.tasks))
    model.optimizer.build(model.trainable_variables)
    path = tmp_path / "pals.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded, PALBert) and loaded.pals == PALS and loaded.tasks == TASKS
    x = inputs()
    np.testing.assert_allclose(ops.convert_to_numpy(loaded(x)), ops.convert_to_numpy(model(x)),
                               atol=1e-6)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="task 'mnli': expected one of"):
        PALBert(40, 2, 2, 8, 16, tasks=("sst", "mnli"))
    with pytest.raises(ValueError, match="unknown keys \\['size'\\]"):
        PALBert(40, 2, 2, 8, 16, pals={"size": 3})
