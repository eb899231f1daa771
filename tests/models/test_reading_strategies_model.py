"""NeMoT with reading strategies: placement, checkpoints, saving, XLA, cached decoding."""

import dataclasses
from pathlib import Path

import keras
import numpy as np
import pytest

import nemot
from nemot import vocab
from nemot.models.nemot_causal_lm import load_weights_partial
from nemot.training import NeMoTLoss
from nemot.training.run_config import load_run_config

CLS, DEC, LM, PAD = vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id("lm"), vocab.PAD_ID
Q, SEP, END = vocab.Q_ID, vocab.SEP_ID, vocab.END_ID
OPT1, OPT2 = vocab.OPTION_IDS[:2]
# Small enough for XLA on a CPU: one layer per set, the one block the inputs select (each
# further block adds its layers to every trace).
CFG = nemot.NeMoTConfig.preset("tiny").replace(
    max_text_length=12, max_position_embeddings=16, num_vanilla_layers=1, num_nm_layers=1,
    output_blocks=("lm",))
BOTH = ("aoi", "highlighting")

# Example 0 has options (span = positions 2..5), example 1 has none.
TEXTS = [[Q, 464, OPT1, 3290, OPT2, 318, SEP, OPT2, PAD, PAD, PAD, PAD],
         [Q, 464, 3290, 318, SEP, 3797, END, PAD, PAD, PAD, PAD, PAD]]
TAGS = [[7, 6, 7, 0, 7, 1, 7, 7, -1, -1, -1, -1],
        [7, 6, 0, 1, 7, 2, 7, -1, -1, -1, -1, -1]]


def inputs(tags=TAGS):
    ids = np.array([[CLS, DEC, LM] + t for t in TEXTS], "int32")
    return {"token_ids": ids, "pos_tags": np.array(tags, "int32")}


def run(model, x=None):
    out = model(x or inputs(), training=False)
    return np.asarray(out["logits"]), np.asarray(out["vanilla_logits"])


def strategy_paths(model):
    return sorted(v.path for v in model.backbone.reading_strategies.weights)


@pytest.fixture(scope="module")
def base():
    keras.utils.set_random_seed(0)
    return nemot.build_model(CFG)


@pytest.fixture(scope="module")
def with_both():
    """``with_both(position)``: the model with both strategies at ``position``, built once
    (seed 4) for the tests that only call, save or count it."""
    models = {}

    def get(position="vanilla_output"):
        if position not in models:
            keras.utils.set_random_seed(4)
            models[position] = nemot.build_model(CFG.replace(
                reading_strategies=BOTH, reading_strategy_position=position))
        return models[position]

    return get


@pytest.fixture(scope="module")
def highlighting():
    """The model with highlighting at the vanilla output (seed 2), only called."""
    keras.utils.set_random_seed(2)
    return nemot.build_model(CFG.replace(reading_strategies=("highlighting",)))


@pytest.fixture(scope="module")
def checkpoints(base, tmp_path_factory):
    folder = tmp_path_factory.mktemp("ckpt")
    base.save(folder / "general.keras")
    base.save_weights(folder / "general.weights.h5")
    return folder


@pytest.mark.parametrize("name", ["general.keras", "general.weights.h5"])
def test_a_checkpoint_without_strategies_starts_a_model_with_them(base, checkpoints, name):
    keras.utils.set_random_seed(1)
    model = nemot.build_model(CFG.replace(reading_strategies=BOTH))
    fresh = load_weights_partial(model, checkpoints / name)
    assert sorted(fresh) == strategy_paths(model)
    assert len(fresh) == 5  # W1..W4 (no biases) and the eight highlighting vectors
    restored = {v.path: np.asarray(v) for v in base.weights}
    for variable in model.weights:
        key = variable.path
        if variable.path in fresh:
            assert key not in restored and np.abs(np.asarray(variable)).max() > 0
        else:
            np.testing.assert_array_equal(np.asarray(variable), restored[key])


def test_aoi_leaves_examples_without_options_as_the_checkpoint_computed_them(base, checkpoints):
    model = nemot.build_model(CFG.replace(reading_strategies=("aoi",)))
    load_weights_partial(model, checkpoints / "general.keras")
    x = {"token_ids": inputs()["token_ids"]}  # AOI alone needs no tags
    logits, vanilla_logits = run(model, x)
    base_logits, base_vanilla = run(base, x)
    np.testing.assert_allclose(logits[1], base_logits[1], atol=1e-5)
    assert np.abs(logits[0] - base_logits[0]).max() > 1e-3
    # At the vanilla output the vanilla head reads the vanilla set itself.
    np.testing.assert_allclose(vanilla_logits, base_vanilla, atol=1e-5)


def test_a_checkpoint_of_another_architecture_is_refused(checkpoints):
    other = nemot.build_model(CFG.replace(d_model=16, reading_strategies=("aoi",)))
    with pytest.raises(ValueError, match="general.weights.h5"):
        load_weights_partial(other, checkpoints / "general.weights.h5")
    with pytest.raises(ValueError, match=r"\.keras or \.weights\.h5"):
        load_weights_partial(other, checkpoints / "general.h5")


def changed_tags():
    tags = np.array(TAGS)
    tags[1, 2] = 3  # "noun" -> "adverb" at text position 2 of example 1
    return tags


def test_highlighting_at_the_vanilla_output_leaves_the_vanilla_set_alone(highlighting):
    logits, vanilla_logits = run(highlighting)
    logits2, vanilla_logits2 = run(highlighting, inputs(changed_tags()))
    np.testing.assert_array_equal(vanilla_logits, vanilla_logits2)
    np.testing.assert_array_equal(logits[0], logits2[0])
    np.testing.assert_allclose(logits[1, :2], logits2[1, :2], atol=1e-6)  # causal: earlier ones
    assert np.abs(logits[1, 2:] - logits2[1, 2:]).max() > 1e-4


def test_highlighting_after_the_embeddings_reaches_the_vanilla_set():
    keras.utils.set_random_seed(2)
    model = nemot.build_model(CFG.replace(reading_strategies=("highlighting",),
                                          reading_strategy_position="embeddings"))
    _, vanilla_logits = run(model)
    _, vanilla_logits2 = run(model, inputs(changed_tags()))
    np.testing.assert_allclose(vanilla_logits[1, :2], vanilla_logits2[1, :2], atol=1e-6)
    assert np.abs(vanilla_logits[1, 2:] - vanilla_logits2[1, 2:]).max() > 1e-4


def test_highlighting_without_pos_tags_is_a_clear_error(highlighting):
    with pytest.raises(ValueError, match="pos_tags"):
        highlighting({"token_ids": inputs()["token_ids"]})


def test_a_model_with_both_strategies_saves_and_loads(with_both, tmp_path):
    """At the vanilla output. After the embeddings, the strategies are the same layers,
    built in the same order (``NeMoTBackbone._build_sets``) under the same paths, and the
    position is one more string of the config (saved as the others): the save and the
    load are the same; what the position changes, the forward pass, is
    test_highlighting_after_the_embeddings_reaches_the_vanilla_set's and
    test_cached_prefill_matches_the_full_forward_pass[embeddings]'s."""
    model = with_both("vanilla_output")
    path = tmp_path / "rs.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert loaded.config == model.config and loaded.config.reading_strategies == BOTH
    for a, b in zip(run(loaded), run(model)):
        np.testing.assert_array_equal(a, b)


def test_parameter_breakdown_counts_the_strategies(base, with_both):
    d = CFG.d_model
    counts = nemot.parameter_breakdown(with_both())
    assert counts["reading_strategies"] == 5 * d * d + 8 * d
    biased = nemot.build_model(CFG.replace(reading_strategies=("aoi",), compat_aoi_bias=True))
    assert nemot.parameter_breakdown(biased)["reading_strategies"] == 5 * d * d + 4 * d
    plain = nemot.parameter_breakdown(base)
    assert counts["total"] - plain["total"] == counts["reading_strategies"]


def test_training_step_with_both_strategies_under_jit_compile():
    """NeMoT's training step under XLA (tests/models/test_nemot.py's other behaviour is
    outside it): a batch of two tasks, so each example's output block runs under the
    routing's branches (tests/models/test_nemot.py compares the branches with the
    partition, forward and backward), the thesis loss (L1 + 0.2 L2 + 0.5 L3: the vanilla
    head too), Adam, and both reading strategies: every strategy weight and both blocks
    are trained. One XLA program for all of it: it was two tests, each its
    program's compile (12.9 and 20.1 CPU s on the 2-core machine)."""
    keras.utils.set_random_seed(5)
    # Without dropout: its random bits were half of this step's XLA compile (12 -> 7 CPU s
    # on the 2-core machine). Dropout under XLA is tests/training/test_runs.py's bf16 + XLA
    # run (dropout 0.1 in every set).
    model = nemot.build_model(CFG.replace(reading_strategies=BOTH, output_blocks=("lm", "gqa"),
                                          dropout=0.0, vanilla_attention_dropout=0.0))
    model.compile(nemot.optimizers.Adam(1e-3), loss=NeMoTLoss(), jit_compile=True)
    x = inputs()
    x["token_ids"][1, vocab.TASK_POSITION] = vocab.task_token_id("gqa")  # one example each
    text = x["token_ids"][:, 3:]
    targets = np.concatenate([text[:, 1:], np.full((2, 1), PAD)], axis=1)
    targets = np.where(targets == PAD, -1, targets).astype("int32")
    strategies = model.backbone.reading_strategies.weights
    blocks = model.backbone.output_set.blocks
    before = {v.path: np.array(v) for v in model.weights}

    def moved(variable):
        return np.abs(np.array(variable) - before[variable.path]).max() > 0

    history = model.fit(x, {"task_targets": targets, "lm_targets": targets}, epochs=2,
                        batch_size=2, verbose=0)
    assert model.jit_compile and np.isfinite(history.history["loss"]).all()
    assert history.history["loss"][1] < history.history["loss"][0]
    for variable in strategies:  # every strategy weight is trained
        assert moved(variable), variable.path
    for name in ("lm", "gqa"):  # and each block, by its own example
        assert any(moved(v) for v in blocks[name].trainable_weights), name


@pytest.mark.parametrize("position", ["vanilla_output", "embeddings"])
def test_cached_prefill_matches_the_full_forward_pass(with_both, position):
    model = with_both(position)
    x = inputs()
    full, _ = run(model)
    ids = x["token_ids"]
    valid = ids[:, 3:] != PAD
    prompt_mask = np.concatenate([np.zeros((2, 3), bool), valid], axis=1)
    hidden, _ = model._build_cache(ids, prompt_mask, pos_tags=x["pos_tags"])
    logits = np.asarray(model.head(hidden))
    for row in range(2):
        n = valid[row].sum()
        np.testing.assert_allclose(logits[row, :n], full[row, :n], atol=1e-4)


@pytest.mark.parametrize("dataset", ["commonsenseqa", "piqa", "mctest", "winogrande"])
def test_thesis_configs_are_the_table_3_3_runs_with_a_strategy_from_general(dataset):
    configs = Path(__file__).resolve().parents[2] / "configs"
    plain = load_run_config(configs / f"{dataset}.toml")
    for short, strategy in (("aoi", "aoi"), ("high", "highlighting")):
        cfg = load_run_config(configs / "reading_strategies" / f"{dataset}_{short}.toml")
        assert cfg.name == f"{dataset}_{short}"
        assert cfg.model == plain.model.replace(reading_strategies=(strategy,))
        assert cfg.model.reading_strategy_position == "vanilla_output"
        assert (cfg.train.batch_size, cfg.train.epochs, cfg.schedule) == \
            (16, 20, {"type": "constant", "rate": 1e-5})
        assert cfg.train == dataclasses.replace(
            plain.train, init_from="checkpoints/general/model_last.keras")
        assert (cfg.data, cfg.loss, cfg.kind) == (plain.data, plain.loss, plain.kind)
