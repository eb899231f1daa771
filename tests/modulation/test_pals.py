"""PALs (nemot.modulation.pals): the parameter formula, sharing, the exact identity at a
zero decoder, per-task gradients, padding, the dropout on the projected attention's
probabilities, and PALs inside NeMoT's vanilla set."""

import functools

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import ops

import nemot
from nemot import dropout as drop
from nemot import vocab
from nemot.layers.transformer import TransformerLayer
from nemot.models.losses import NeMoTLoss
from nemot.modulation.pals import PALProjections, ProjectedAttentionAdapter, pal_parameters
from nemot.modulation.spec import ModulationSpec
from nemot.modulation.stack import stack_modulations

TINY = nemot.NeMoTConfig.preset("tiny")


def distinct_parameters(layers):
    """Parameters of ``layers`` counting each variable once (every PAL tracks the shared
    projections too)."""
    weights = {id(w): w for layer in layers for w in layer.weights}
    return sum(int(np.prod(w.shape)) for w in weights.values())


def pal_stack(num_layers, hidden_size, layers, num_tasks=1, d_model=768, **options):
    spec = ModulationSpec("pals", sets=("bert",), layers=layers,
                          options=dict(hidden_size=hidden_size, **options))
    per_layer, shared = stack_modulations([spec], "bert", num_layers, num_tasks, d_model)
    pals = [m for modulations, _ in per_layer for m in modulations]
    for pal in pals:
        pal.build((None, None, d_model))
    return pals, shared


@pytest.mark.parametrize("hidden_size,layers,expected", [(204, "all", 1_819_836),
                                                         (276, "top_half", 1_801_116)])
def test_parameters_per_task_follow_the_formula(hidden_size, layers, expected):
    # BERT-base sizes: d_m = 768, 12 layers; the paper's full and half settings.
    pals, shared = pal_stack(12, hidden_size, layers)
    assert len(pals) == (12 if layers == "all" else 6)
    count = distinct_parameters(pals + shared)
    assert count == expected == pal_parameters(768, hidden_size, len(pals))
    three, shared3 = pal_stack(12, hidden_size, layers, num_tasks=3)
    assert distinct_parameters(three + shared3) == 3 * expected


def test_encoder_and_decoder_are_one_set_of_variables_in_every_layer():
    cfg = TINY.replace(modulation=[{"kind": "pals", "sets": ["vanilla"], "hidden_size": 8,
                                    "num_heads": 2}])
    model = nemot.build_model(cfg)
    pals = [layer.parallel[0] for layer in model.backbone.vanilla_set.transformer_layers]
    assert len(pals) == cfg.num_vanilla_layers >= 2
    assert all(p.shared is pals[0].shared for p in pals)
    paths = [w.path for w in model.weights]
    for name in ("encoder_kernel", "encoder_bias", "decoder_kernel", "decoder_bias"):
        assert sum(p.endswith(f"pals_shared/{name}") for p in paths) == 1
    # ...while Q/K/V are each layer's own.
    assert sum(p.endswith("query_kernel") for p in paths) == cfg.num_vanilla_layers
    assert pals[0].query_kernel is not pals[1].query_kernel


def tiny_pal(num_tasks=2, d_model=8, hidden_size=6, num_heads=2, seed=0, **options):
    keras.utils.set_random_seed(seed)
    shared = PALProjections(num_tasks, hidden_size=hidden_size, **options)
    shared.build((None, None, d_model))
    pal = ProjectedAttentionAdapter(num_tasks, hidden_size=hidden_size, num_heads=num_heads,
                                    shared=shared)
    pal.build((None, None, d_model))
    # Large weights, so that a wrong mask or a wrong task row shows.
    rng = np.random.default_rng(seed)
    for w in pal.weights + shared.weights:
        if options.get("decoder_init") == "zeros" and "decoder" in w.path:
            continue
        w.assign(rng.normal(0, 0.5, w.shape).astype("float32"))
    return pal


def reference(pal, h, mask, task, keep=None, scale=1.0):
    """TS_t(h) written out in numpy for one example of task ``task``; ``keep`` [heads, L,
    L]: the dropout mask of the attention probabilities (kept ones scaled by ``scale``)."""
    s, proj = pal.shared, lambda w: np.asarray(w)[task]
    z = h @ proj(s.encoder_kernel) + proj(s.encoder_bias)
    heads, dim = pal.num_heads, pal.hidden_size // pal.num_heads
    q, k, v = (z @ proj(getattr(pal, f"{n}_kernel")) + proj(getattr(pal, f"{n}_bias"))
               for n in ("query", "key", "value"))
    out = np.zeros_like(z)
    for i in range(heads):
        cols = slice(i * dim, (i + 1) * dim)
        scores = q[:, cols] @ k[:, cols].T / np.sqrt(dim)
        scores = np.where(mask, scores, -1e9)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs = probs / probs.sum(-1, keepdims=True)
        if keep is not None:
            probs = np.where(keep[i], probs * scale, 0.0)
        out[:, cols] = probs @ v[:, cols]
    y = out @ proj(s.decoder_kernel) + proj(s.decoder_bias)
    return np.asarray(keras.activations.gelu(y, approximate=False))


def test_each_example_gets_its_own_tasks_projected_attention():
    pal = tiny_pal()
    rng = np.random.default_rng(1)
    h = rng.normal(size=(3, 5, 8)).astype("float32")
    mask = np.ones((3, 5, 5), bool)
    mask[1, :, 3:] = False  # example 1 has two padded positions
    tasks = np.array([1, 0, 1], "int32")
    got = np.asarray(pal(h, conditioning={"task_index": tasks}, attention_mask=mask))
    for b, t in enumerate(tasks):
        np.testing.assert_allclose(got[b], reference(pal, h[b], mask[b], t), atol=1e-5)


def test_dropout_falls_on_the_attention_probabilities_in_training_only():
    # The official PAL attention is BERTSelfAttention: dropout 0.1 on its probabilities.
    pal = tiny_pal()
    assert pal.attention_dropout == 0.1 and pal.draws_dropout
    rng = np.random.default_rng(5)
    h = rng.normal(size=(2, 6, 8)).astype("float32")
    mask = np.ones((2, 6, 6), bool)
    mask[1, :, 4:] = False
    tasks = np.array([1, 0], "int32")
    call = functools.partial(pal, h, conditioning={"task_index": tasks}, attention_mask=mask)
    seed = ops.convert_to_tensor([3, 4], "uint32")
    got = np.asarray(call(training=True, dropout_seed=seed))
    # The mask the seed draws, over [batch, heads, queries, keys].
    keep = np.asarray(drop.dropout_mask((2, pal.num_heads, 6, 6), 0.1, seed))
    scale = drop.DRAW_RANGE / drop.keep_threshold(0.1)
    assert 0.8 < keep.mean() < 0.97
    for b, t in enumerate(tasks):
        np.testing.assert_allclose(got[b], reference(pal, h[b], mask[b], t, keep[b], scale),
                                   atol=1e-5)
        assert np.abs(got[b] - reference(pal, h[b], mask[b], t)).max() > 1e-3
    other = np.asarray(call(training=True, dropout_seed=ops.convert_to_tensor([5, 6], "uint32")))
    assert np.abs(other - got).max() > 1e-3
    # Inference ignores any seed and drops nothing.
    inference = np.asarray(call(training=False, dropout_seed=seed))
    np.testing.assert_array_equal(inference, np.asarray(call()))
    for b, t in enumerate(tasks):
        np.testing.assert_allclose(inference[b], reference(pal, h[b], mask[b], t), atol=1e-5)
    with pytest.raises(ValueError, match="needs dropout_seed= from the host"):
        call(training=True)


@pytest.mark.parametrize("rate", [0.1, 0.0])
def test_a_hosting_layer_seeds_the_pal_dropout_and_zero_switches_it_off(rate):
    # A host without dropout of its own: the PAL's is the only randomness in training.
    keras.utils.set_random_seed(0)
    spec = ModulationSpec("pals", sets=("bert",), options=dict(
        hidden_size=6, num_heads=2, attention_dropout=rate))
    per_layer, _ = stack_modulations([spec], "bert", 1, 2, 8)
    layer = TransformerLayer(2, 16, dropout=0.0, normalize_first=False,
                             modulations=per_layer[0][0])
    layer.build((None, None, 8))
    for w in layer.parallel[0].weights:
        w.assign(np.random.default_rng(1).normal(0, 0.5, w.shape).astype("float32"))
    x = np.random.default_rng(2).normal(size=(2, 5, 8)).astype("float32")
    call = functools.partial(layer, x, np.ones((2, 5, 5), bool),
                             conditioning={"task_index": np.array([0, 1])})
    first, second = (np.asarray(call(training=True)[0]) for _ in range(2))
    inference = np.asarray(call(training=False)[0])
    np.testing.assert_array_equal(inference, np.asarray(call(training=False)[0]))
    if rate:
        assert np.abs(first - second).max() > 1e-3
    else:
        np.testing.assert_allclose(first, second, atol=1e-6)
        np.testing.assert_allclose(first, inference, atol=1e-6)


def test_pals_in_the_output_set_take_their_seed_from_it_outside_the_routing_branch():
    # Every NeMoT dropout off: the PALs' attention dropout still needs a seed, drawn by
    # the output set before ops.cond (JAX refuses a generator advanced inside a branch).
    cfg = TINY.replace(dropout=0.0, vanilla_attention_dropout=0.0, attention_dropout=0.0,
                       modulation=[{"kind": "pals", "sets": ["output"], "hidden_size": 8,
                                    "num_heads": 2}])
    keras.utils.set_random_seed(0)
    model = nemot.build_model(cfg)
    for w in model.backbone.output_set.weights:  # a PAL term large enough to show
        if "pals" in w.path:
            w.assign(np.random.default_rng(0).normal(0, 0.5, w.shape).astype("float32"))
    layers = [layer for block in model.backbone.output_set.blocks.values()
              for layer in block.transformer_layers]
    owners = [model.backbone.output_set] + layers

    def states():
        return [np.asarray(o.seed_generator.state.numpy()) for o in owners]

    before = states()
    x = {"token_ids": nemot_ids(["gqa", "mqa"])}
    first, second = (np.asarray(model(x, training=True)["logits"]) for _ in range(2))
    after = states()
    assert after[0][1] == before[0][1] + 2  # one draw per call, by the set
    for old, new in zip(before[1:], after[1:]):
        np.testing.assert_array_equal(new, old)  # none inside the branches
    assert np.abs(first - second).max() > 1e-4


def test_a_zero_decoder_adds_exactly_nothing():
    pal = tiny_pal(decoder_init="zeros")
    h = np.random.default_rng(2).normal(size=(2, 4, 8)).astype("float32")
    term = pal(h, conditioning={"task_index": np.array([0, 1])},
               attention_mask=np.ones((2, 4, 4), bool))
    assert np.array_equal(np.asarray(term), np.zeros((2, 4, 8), "float32"))


def test_a_batch_of_one_task_gives_zero_gradient_to_the_others():
    pal = tiny_pal(num_tasks=3)
    h = tf.constant(np.random.default_rng(3).normal(size=(2, 4, 8)), "float32")
    weights = pal.trainable_weights  # its own Q, K, V and the shared V^E, V^D it tracks
    assert len(weights) == 10
    assert {id(w) for w in pal.shared.trainable_weights} <= {id(w) for w in weights}
    with tf.GradientTape() as tape:
        term = pal(h, conditioning={"task_index": tf.constant([1, 1])},
                   attention_mask=tf.ones((2, 4, 4), "bool"))
        loss = tf.reduce_sum(term ** 2)
    for w, g in zip(weights, tape.gradient(loss, weights)):
        g = ops.convert_to_numpy(g)
        assert np.abs(g[1]).max() > 0, w.path
        assert not g[[0, 2]].any(), w.path


def test_padding_does_not_change_the_real_positions():
    pal = tiny_pal()
    rng = np.random.default_rng(4)
    h = rng.normal(size=(1, 4, 8)).astype("float32")
    short = pal(h, conditioning={"task_index": np.array([1])},
                attention_mask=np.ones((1, 4, 4), bool))
    padded_h = np.concatenate([h, rng.normal(size=(1, 3, 8)).astype("float32")], axis=1)
    mask = np.zeros((1, 7, 7), bool)
    mask[:, :, :4] = True
    padded = pal(padded_h, conditioning={"task_index": np.array([1])}, attention_mask=mask)
    np.testing.assert_allclose(np.asarray(padded)[:, :4], np.asarray(short), atol=1e-6)


def nemot_ids(tasks, texts=((5, 6, 7, 8), (9, 10, vocab.PAD_ID, vocab.PAD_ID))):
    return np.array([[vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id(t), *text]
                     for t, text in zip(tasks, texts)], "int32")


def test_nemot_with_pals_in_its_vanilla_set_starts_as_plain_nemot_and_trains():
    keras.utils.set_random_seed(0)
    plain = nemot.build_model(TINY)
    spec = {"kind": "pals", "sets": ["vanilla"], "hidden_size": 8, "num_heads": 2,
            "decoder_init": "zeros"}
    model = nemot.build_model(TINY.replace(modulation=[spec]))
    _, fresh, unplaced = nemot.models.weights.transfer_weights(plain, model)
    assert not unplaced and any("pals" in path for path in fresh)
    x = nemot_ids(["gqa", "mqa"])
    same = np.asarray(model({"token_ids": x}, training=False)["logits"])
    np.testing.assert_array_equal(same, np.asarray(plain({"token_ids": x}, training=False)["logits"]))

    targets = np.where(x[:, 4:] == vocab.PAD_ID, -1, x[:, 4:])
    targets = np.pad(targets, ((0, 0), (0, 1)), constant_values=-1).astype("int32")
    # Eager: tracing NeMoT's training step costs far more than running one.
    model.compile(keras.optimizers.Adam(1e-2), loss=NeMoTLoss(), run_eagerly=True)
    decoder = model.backbone.vanilla_set.shared_modulations[0].decoder_kernel
    model.train_on_batch({"token_ids": x}, {"task_targets": targets, "lm_targets": targets})
    moved = np.abs(np.asarray(decoder)).max(axis=(1, 2))
    rows = [TINY.output_blocks.index(b) for b in ("gqa", "mqa")]
    assert (moved[rows] > 0).all() and not moved[TINY.output_blocks.index("lm")]
    after = np.asarray(model({"token_ids": x}, training=False)["logits"])
    assert np.abs(after - same).max() > 1e-4


def test_cached_decoding_of_a_pal_model_is_refused_clearly():
    spec = {"kind": "pals", "sets": ["vanilla"], "hidden_size": 8, "num_heads": 2}
    model = nemot.build_model(TINY.replace(modulation=[spec]))
    prompt = nemot_ids(["gqa"])[:, :6]
    with pytest.raises(ValueError, match="keeps no key/value cache: it decodes by "
                                         "recomputation"):
        model._build_cache(prompt, np.ones(prompt.shape, bool))


def test_bad_options_are_named():
    with pytest.raises(ValueError, match="hidden_size=10 is not divisible by num_heads=6"):
        nemot.build_model(TINY.replace(modulation=[{"kind": "pals", "hidden_size": 10}]))
    with pytest.raises(ValueError, match="decoder_init='ones'"):
        nemot.build_model(TINY.replace(modulation=[{"kind": "pals", "hidden_size": 12,
                                                    "decoder_init": "ones"}]))
    with pytest.raises(ValueError, match="needs the stack's PALProjections"):
        ProjectedAttentionAdapter(2, hidden_size=6, num_heads=2)


def test_pals_in_the_vanilla_set_keep_dec_mode_causal():
    keras.utils.set_random_seed(1)
    spec = {"kind": "pals", "sets": ["vanilla"], "hidden_size": 8, "num_heads": 2}
    model = nemot.build_model(TINY.replace(modulation=[spec]))
    for w in model.backbone.vanilla_set.shared_modulations[0].weights:  # a PAL term that matters
        w.assign(np.random.default_rng(0).normal(0, 0.5, w.shape).astype("float32"))
    x = nemot_ids(["gqa", "gqa"])
    changed = x.copy()
    changed[:, -1] = 11  # a later token
    before, after = (np.asarray(model({"token_ids": ids}, training=False)["logits"])
                     for ids in (x, changed))
    np.testing.assert_allclose(after[0, :-1], before[0, :-1], atol=1e-5)
    assert np.abs(after[0, -1] - before[0, -1]).max() > 1e-4


def test_the_nemot_general_experiment_with_pals_builds(monkeypatch):
    from pathlib import Path

    from nemot.experiments import nemot_runs as experiment

    root = Path(__file__).parents[2]
    monkeypatch.chdir(root)  # run_config paths are relative to the repository
    loaded = experiment.load(root / "configs" / "pals" / "nemot_general.toml")
    assert experiment.variants(loaded) == ["thesis", "pals", "pals_annealed"]
    thesis, pals, annealed = (experiment.run_config(loaded, v, 0) for v in
                              ("thesis", "pals", "pals_annealed"))
    assert thesis.model == pals.model.replace(modulation=())  # all else equal
    assert (thesis.data.sampling, annealed.data.sampling) == ("uniform", "annealed")
    (spec,) = pals.model.modulation
    assert (spec.kind, spec.sets, spec.layers, spec.kwargs) == (
        "pals", ("vanilla",), "all", {"hidden_size": 204, "num_heads": 6})
    config = TINY.replace(modulation=pals.model.modulation)
    model, plain = nemot.build_model(config), nemot.build_model(TINY)
    assert model.count_params() - plain.count_params() == len(config.output_blocks) * \
        pal_parameters(config.d_model, 204, config.num_vanilla_layers)


def test_a_pal_model_generates_by_recomputation():
    from nemot.models import generation as decoding

    keras.utils.set_random_seed(2)
    spec = {"kind": "pals", "sets": ["vanilla"], "hidden_size": 8, "num_heads": 2}
    model = nemot.build_model(TINY.replace(modulation=[spec]))
    assert not model.supports_cache and nemot.build_model(TINY).supports_cache
    assert not decoding.has_cache(model)
    prompts = [list(nemot_ids(["gqa"])[0, :6])]
    assert decoding.generate(model, prompts, max_new_tokens=3) == \
        decoding.generate_by_recomputation(model, prompts, 3)
