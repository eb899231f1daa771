"""Behaviour of the NeMoT model: masks in action, routing, gate, counts, saving."""

import numpy as np
import pytest
import tensorflow as tf
import keras
from keras import ops

import nemot
from nemot import vocab
from nemot.models.nemot_causal_lm import NeMoTCausalLM
from nemot.training import NeMoTLoss
from tests.conftest import draw_zeros

CLS, DEC, ENC, PAD = vocab.CLS_ID, vocab.DEC_ID, vocab.ENC_ID, vocab.PAD_ID
LM, MQA, GQA = (vocab.task_token_id(n) for n in ("lm", "mqa", "gqa"))
TINY = nemot.NeMoTConfig.preset("tiny")


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(0)
    return nemot.build_model(TINY)


def batch(texts, tasks=None, modes=None, length=12):
    rows = []
    for i, text in enumerate(texts):
        task = (tasks or [LM] * len(texts))[i]
        mode = (modes or [DEC] * len(texts))[i]
        rows.append([CLS, mode, task] + list(text) + [PAD] * (length - len(text)))
    return np.array(rows, "int32")


def logits(model, ids, **kwargs):
    return np.asarray(model({"token_ids": ids}, training=False, **kwargs)["logits"])


def test_output_shapes(model):
    out = model({"token_ids": batch([[5, 6, 7]])}, return_gates=True)
    assert out["logits"].shape == (1, 12, TINY.vocab_size)
    assert out["vanilla_logits"].shape == (1, 12, TINY.vocab_size)
    assert out["gates"].shape == (1, 15, TINY.d_model)
    gates = np.asarray(out["gates"])
    assert (gates > 0).all() and (gates < 1).all()


def test_dec_mode_is_causal(model):
    text = [5, 6, 7, 8, 9, 10]
    changed = list(text)
    changed[3] = 4000
    a, b = logits(model, batch([text, changed]))
    np.testing.assert_allclose(a[:3], b[:3], atol=1e-5)
    assert np.abs(a[3:6] - b[3:6]).max() > 1e-4


def test_enc_mode_sees_the_whole_text(model):
    text = [5, 6, 7, 8, 9, 10]
    changed = list(text)
    changed[3] = 4000
    a, b = logits(model, batch([text, changed], modes=[ENC, ENC]))
    assert np.abs(a[:3] - b[:3]).max() > 1e-4


def test_extra_padding_changes_no_real_position(model):
    text = [5, 6, 7, 8]
    short = logits(model, batch([text], length=6))[0]
    long = logits(model, batch([text], length=12))[0]
    np.testing.assert_allclose(short[:4], long[:4], atol=1e-5)
    enc_short = logits(model, batch([text], modes=[ENC], length=6))[0]
    enc_long = logits(model, batch([text], modes=[ENC], length=12))[0]
    np.testing.assert_allclose(enc_short[:4], enc_long[:4], atol=1e-5)


def test_task_token_changes_the_gate_and_selects_the_block(model):
    text = [5, 6, 7, 8]
    out = model({"token_ids": batch([text, text], tasks=[LM, MQA])}, return_gates=True)
    gates = np.asarray(out["gates"])
    assert np.abs(gates[0, 3:7] - gates[1, 3:7]).max() > 1e-5

    # Same block, other gate: feed MQA's gate through the lm block by hand.
    vanilla = model.backbone.vanilla_set(ops.convert_to_tensor(batch([text])[:, 3:]))
    x_gate = gates[1:2, 3:] * np.asarray(vanilla)
    mask = nemot.attention_mask(batch([text])[:, 3:], mode="dec", num_aux=0)
    for name, row in (("mqa", 1), ("lm", None)):
        y = model.backbone.output_set.blocks[name](x_gate, mask, training=False)
        by_hand = np.asarray(model.head(y))[0, :4]
        if row is not None:
            np.testing.assert_allclose(by_hand, np.asarray(out["logits"])[row, :4], atol=1e-4)
        else:
            assert np.abs(by_hand - np.asarray(out["logits"])[1, :4]).max() > 1e-4


def test_mixed_task_batch_equals_each_example_alone(model):
    texts = [[5, 6, 7], [8, 9, 10, 11], [12, 13]]
    tasks = [LM, GQA, MQA]
    together = logits(model, batch(texts, tasks))
    for i in range(3):
        alone = logits(model, batch([texts[i]], [tasks[i]]))[0]
        np.testing.assert_allclose(together[i], alone, atol=1e-5)


def rows_per_block(model, monkeypatch):
    """{block: examples it ran on}, filled as the model runs."""
    rows = {name: 0 for name in model.backbone.output_set.blocks}
    for name, block in model.backbone.output_set.blocks.items():
        def call(x, *args, _call=block.call, _name=name, **kwargs):
            rows[_name] += int(ops.shape(x)[0])
            return _call(x, *args, **kwargs)
        monkeypatch.setattr(block, "call", call)
    return rows


def test_single_task_batch_runs_and_trains_only_its_block(model, monkeypatch):
    rows = rows_per_block(model, monkeypatch)
    ids = batch([[5, 6, 7], [8, 9]], [GQA, GQA])
    with tf.GradientTape() as tape:
        loss = ops.mean(model({"token_ids": ids}, training=False)["logits"])
    assert rows == {"lm": 0, "mqa": 0, "gqa": 2}
    blocks = model.backbone.output_set.blocks
    variables = [v for n in ("lm", "mqa", "gqa") for v in blocks[n].trainable_variables]
    grads = tape.gradient(loss, variables)
    sizes = [len(blocks[n].trainable_variables) for n in ("lm", "mqa", "gqa")]
    lm_grads, mqa_grads, gqa_grads = np.split(np.array(grads, dtype=object), np.cumsum(sizes)[:2])
    for g in list(lm_grads) + list(mqa_grads):
        assert g is None or not np.asarray(g).any()
    assert any(np.asarray(g).any() for g in gqa_grads)


def test_a_mixed_batch_runs_each_example_through_its_block_only(model, monkeypatch):
    rows = rows_per_block(model, monkeypatch)
    logits(model, batch([[5, 6], [7, 8], [9], [10, 11]], [GQA, LM, GQA, GQA]))
    assert rows == {"lm": 1, "mqa": 0, "gqa": 3}


def test_partitioned_and_branched_routing_agree(model, monkeypatch):
    """TensorFlow outside XLA partitions the batch by block; under XLA (and on JAX) each
    block runs on the whole batch under a branch. Same outputs and gradients."""
    output_set = model.backbone.output_set
    x, weights = np.random.default_rng(0).normal(size=(2, 3, 6, TINY.d_model)).astype("float32")
    tasks = np.array([GQA, LM, GQA], "int32")
    text = batch([[5, 6, 7], [8, 9], [10, 11, 12, 13]], length=6)[:, 3:]
    mask = nemot.attention_mask(text, mode="dec", num_aux=0)
    variables = output_set.trainable_variables
    first_of_mqa = output_set.blocks["mqa"].trainable_variables[0]
    mqa = next(i for i, v in enumerate(variables) if v is first_of_mqa)

    def run(x, tasks):
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = output_set(x, tasks, mask, training=False)
            loss = ops.sum(out * weights)
        return out, tape.gradient(loss, [x] + variables)

    partitioned = run(tf.constant(x), tasks)
    rows = rows_per_block(model, monkeypatch)
    branched = tf.function(run, jit_compile=True)(tf.constant(x), tf.constant(tasks))
    assert rows == {"lm": 3, "mqa": 3, "gqa": 3}  # each branch traced on the whole batch
    np.testing.assert_allclose(np.asarray(branched[0]), np.asarray(partitioned[0]), atol=1e-5)
    for a, b in zip(branched[1], partitioned[1]):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)
    assert not np.asarray(partitioned[1][1 + mqa]).any()  # no example selects mqa
    assert np.asarray(partitioned[1][0])[1].any()  # the input's gradient reaches each row


def test_recomputed_layers_are_refused_on_tensorflow_with_the_key_to_change():
    """``remat_layers`` runs on JAX (tests/test_jax_backend.py: the same logits and
    gradients); TensorFlow's ``tf.recompute_grad`` fails inside the output set's branches
    under XLA, so a TensorFlow model refuses it by its key."""
    with pytest.raises(ValueError, match=r"KERAS_BACKEND=jax, or set model\.remat_layers = "
                                         r"false"):
        nemot.build_model(TINY.replace(remat_layers=True))


def test_gate_forced_to_one_is_vanilla_then_output_block(model, monkeypatch):
    ids = batch([[5, 6, 7, 8]], [GQA])
    # A large NM output: sigmoid(40) is 1 in float32, so every gate is open.
    monkeypatch.setattr(model.backbone.neuromodulatory_set, "call",
                        lambda x, *a, **k: ops.full_like(x, 40.0))
    gated = logits(model, ids)
    text = ids[:, 3:]
    mask = nemot.attention_mask(text, mode="dec", num_aux=0)
    y = model.backbone.output_set.blocks["gqa"](model.backbone.vanilla_set(text), mask, training=False)
    np.testing.assert_allclose(gated, np.asarray(model.head(y)), atol=1e-5)


def test_unknown_task_or_mode_token_is_a_clear_error(model):
    ids = batch([[5, 6]], [vocab.task_token_id("summarize_rs")])
    with pytest.raises(ValueError, match="token_ids: <summarize_rs> at auxiliary position 2 .*output blocks"):
        model({"token_ids": ids})
    with pytest.raises(ValueError, match="mode token"):
        model({"token_ids": batch([[5, 6]], modes=[LM])})


def test_compat_route_by_first_example():
    keras.utils.set_random_seed(1)
    compat = nemot.build_model(TINY.replace(compat_route_by_first_example=True))
    texts, tasks = [[5, 6, 7], [8, 9]], [MQA, GQA]
    together = logits(compat, batch(texts, tasks))
    # The second example keeps its own gate (its task token reaches the NM set)
    # but goes through the first example's block, mqa.
    alone = batch([texts[1]], [GQA])
    gates = np.asarray(compat({"token_ids": alone}, training=False, return_gates=True)["gates"])
    text = alone[:, 3:]
    x_gate = gates[:, 3:] * np.asarray(compat.backbone.vanilla_set(text))
    mask = nemot.attention_mask(text, mode="dec", num_aux=0)
    for name, expect_equal in (("mqa", True), ("gqa", False)):
        y = compat.backbone.output_set.blocks[name](x_gate, mask, training=False)
        by_hand = np.asarray(compat.head(y))[0]
        assert np.allclose(together[1], by_hand, atol=1e-5) == expect_equal, name


def test_compat_values_use_key_weights_has_no_value_projection():
    keras.utils.set_random_seed(2)
    compat = nemot.build_model(TINY.replace(compat_values_use_key_weights=True))
    for layers in (compat.backbone.neuromodulatory_set.transformer_layers,
                   compat.backbone.output_set.blocks["lm"].transformer_layers):
        assert not hasattr(layers[0].self_attention, "value_dense")
    # GPT-2, the vanilla set, always had W_V.
    assert hasattr(compat.backbone.vanilla_set.transformer_layers[0].self_attention, "value_dense")
    values = [w for w in compat.weights if "value" in w.path]
    assert values and all("vanilla_set" in w.path for w in values)
    assert np.isfinite(logits(compat, batch([[5, 6, 7]]))).all()


def layer_params(d, ff, values=True):
    attention = (3 if values else 2) * (d * d + d) + d * d + d
    return attention + 2 * 2 * d + d * ff + ff + ff * d + d


def expected_breakdown(cfg, values=True):
    d, v = cfg.d_model, cfg.vocab_size
    layer = layer_params(d, cfg.d_ff, values)
    block = cfg.num_output_layers * layer + 2 * d
    return {
        "vanilla_set": v * d + cfg.max_position_embeddings * d + cfg.num_vanilla_layers * layer + 2 * d,
        "aux_embedding": v * d,
        "neuromodulatory_set": cfg.num_nm_layers * layer,
        "output_set": cfg.num_output_blocks * block,
        "head": d * v + v,
        "vanilla_head": d * v + v,
    }


@pytest.fixture(scope="module")
def thesis_model():
    """One thesis-size NeMoT (~370M weights) for the tests of its counts and shapes, with
    its weights undrawn: Keras's random initializers give zeros, as the ``undrawn_weights``
    fixture of tests/conftest.py (drawing them was most of the 10 CPU s this cost; 2 s
    now). Neither test reads a value: the forward pass checks the thesis sizes' shapes;
    the values of a forward pass are tests/models/test_golden.py's."""
    with pytest.MonkeyPatch.context() as patch:
        draw_zeros(patch)
        return nemot.build_model(nemot.NeMoTConfig.preset("thesis"))


def test_thesis_parameter_breakdown_matches_an_independent_formula(thesis_model):
    cfg = nemot.NeMoTConfig.preset("thesis")
    counts = nemot.parameter_breakdown(thesis_model)
    expected = expected_breakdown(cfg)
    for key, value in expected.items():
        assert counts[key] == value, key
    assert counts["total"] == sum(expected.values())
    assert set(counts["output_blocks"]) == set(cfg.output_blocks)
    # GPT-2 small with the vocabulary resized to 50,313 (docs/spec.md §2.10: 124,482,816).
    assert counts["vanilla_set"] == 124_482_816


def test_thesis_count_with_the_original_attention_is_the_thesis_figure():
    """GPT-2 resized + NM set + one output block + one 50,313 x 768 matrix (no W_V in NM/output)."""
    cfg = nemot.NeMoTConfig.preset("thesis").replace(num_output_blocks=1, vanilla_head=False)
    compat = expected_breakdown(cfg, values=False)
    thesis_way = (expected_breakdown(cfg)["vanilla_set"] + compat["neuromodulatory_set"]
                  + compat["output_set"] + cfg.vocab_size * cfg.d_model)
    assert round(thesis_way / 1e6, 1) == 260.6


def test_thesis_model_forward_pass(thesis_model):
    out = thesis_model({"token_ids": batch([[464, 3290, 318]], length=8)}, training=False)
    assert out["logits"].shape == (1, 8, 50313)
    assert np.isfinite(np.asarray(out["logits"])).all()


def test_save_and_load_round_trip(model, tmp_path):
    path = tmp_path / "tiny.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded, NeMoTCausalLM) and loaded.config == model.config
    ids = batch([[5, 6, 7], [8, 9]], [LM, MQA])
    np.testing.assert_allclose(logits(loaded, ids), logits(model, ids), atol=1e-6)


# A training step under jit_compile (XLA: a batch of two tasks through the routing's
# branches, the thesis loss, Adam) is tests/models/test_reading_strategies_model.py's, on a
# model that also has both reading strategies: one XLA compile for both (it was one here
# too, 20 CPU s). Dropout under XLA: tests/training/test_runs.py's bf16 + XLA run.


def test_only_the_vanilla_set_drops_attention_probabilities():
    """GPT-2's attn_pdrop 0.1 in the vanilla set (and the baseline); none in the NM and
    output sets (the original code's own layers, docs/spec.md §2.7)."""
    assert TINY.vanilla_attention_dropout == 0.1 and TINY.attention_dropout == 0.0
    model = nemot.build_model(TINY.replace(dropout=0.0))
    rates = {name: [layer.self_attention.dropout for layer in stack.transformer_layers]
             for name, stack in (("vanilla", model.backbone.vanilla_set),
                                 ("nm", model.backbone.neuromodulatory_set),
                                 ("output", model.backbone.output_set.blocks["lm"]))}
    assert rates == {"vanilla": [0.1, 0.1], "nm": [0.0, 0.0], "output": [0.0]}
    text = batch([[5, 6, 7, 8]])[:, 3:]
    runs = [np.asarray(model.backbone.vanilla_set(text, training=True)) for _ in range(2)]
    assert np.abs(runs[0] - runs[1]).max() > 1e-4  # attention dropout at work
    x = np.random.default_rng(0).normal(size=(1, 7, TINY.d_model)).astype("float32")
    mask = nemot.attention_mask(batch([[5, 6, 7, 8]], length=4), num_aux=3)
    nm = [np.asarray(model.backbone.neuromodulatory_set(x, mask, training=True)) for _ in range(2)]
    np.testing.assert_array_equal(nm[0], nm[1])
    baseline = nemot.build_baseline(TINY)
    assert all(layer.self_attention.dropout == 0.1
               for layer in baseline.backbone.vanilla_set.transformer_layers)


@pytest.mark.usefixtures("eager")  # an eager step warns as a traced one, without the trace
def test_pretraining_freezes_the_unused_vanilla_head_and_logs_only_active_terms():
    import warnings

    keras.utils.set_random_seed(0)
    model = nemot.build_model(TINY)
    model.compile(nemot.optimizers.Adam(1e-3), loss=NeMoTLoss(lm_weight=0, vanilla_weight=0))
    assert not model.vanilla_head.trainable
    ids = batch([[5, 6, 7, 8], [9, 10]])
    targets = np.full((2, 12), vocab.IGNORE_ID, "int32")
    targets[0, :3] = [6, 7, 8]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = model.fit({"token_ids": ids}, {"task_targets": targets, "lm_targets": targets},
                            epochs=1, verbose=0).history
    assert not [w for w in caught if "Gradients do not exist" in str(w.message)]
    assert set(history) == {"loss", "task_loss"}
    model.compile(nemot.optimizers.Adam(1e-3))  # the thesis loss: the head trains again
    assert model.vanilla_head.trainable


@pytest.mark.parametrize("build", [nemot.build_model, nemot.build_baseline])
def test_fit_builds_the_optimizer_before_it_traces_the_train_step_once(build):
    """Adam's slots are made before the train step is traced: a first train step that made
    them would be traced twice (a tf.function creating variables is), ~20 s more per run
    on a CPU. Building and compiling a task make none (a thesis model's are 3.6 GB)."""
    keras.utils.set_random_seed(0)
    # The batch's one block (<lm>): each further block adds to the trace.
    model = build(TINY.replace(num_vanilla_layers=1, num_nm_layers=1, output_blocks=("lm",)))
    model.compile(nemot.optimizers.Adam(1e-3))  # the model's own loss
    assert not model.optimizer.built
    traces = []
    train_step = model.train_step
    model.train_step = lambda data: traces.append(1) or train_step(data)
    ids = batch([[5, 6, 7, 8], [9, 10]])
    targets = np.where(ids[:, 4:] == PAD, -1, ids[:, 4:])
    targets = np.pad(targets, ((0, 0), (0, 1)), constant_values=-1).astype("int32")
    history = model.fit({"token_ids": ids}, {"task_targets": targets, "lm_targets": targets},
                        batch_size=1, epochs=2, verbose=0).history
    assert len(traces) == 1 and model.optimizer.built
    assert history["loss"][1] < history["loss"][0]
