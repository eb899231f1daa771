"""GPT-2 in NeMoT: loading the vanilla set, export, the GPT-2 baseline.

Every checkpoint is a tiny random one the tests write in the real formats
(Hugging Face: config.json + model.safetensors; KerasHub: save_to_preset).
"""

import json
from pathlib import Path

import keras
import keras_hub
import numpy as np
import pytest
from safetensors.numpy import load_file

import nemot
from nemot import vocab
from nemot.models import gpt2
from nemot.models.nemot import NeMoT
from nemot.training.losses import NeMoTLoss
from tests.models.gpt2_checkpoint import TINY_GPT2, write_tiny_gpt2

TINY = nemot.NeMoTConfig.preset("tiny")
D = TINY_GPT2["n_embd"]
LAYERS = TINY_GPT2["n_layer"]
AUX = [vocab.CLS_ID, vocab.DEC_ID, vocab.ADDED_TOKEN_IDS["<gqa>"]]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory):
    return write_tiny_gpt2(tmp_path_factory.mktemp("hf") / "gpt2")


@pytest.fixture(scope="module")
def keras_hub_dir(tmp_path_factory):
    backbone = keras_hub.models.GPT2Backbone(
        vocabulary_size=vocab.GPT2_VOCAB_SIZE, num_layers=LAYERS, num_heads=TINY_GPT2["n_head"],
        hidden_dim=D, intermediate_dim=4 * D, max_sequence_length=TINY_GPT2["n_positions"])
    rng = np.random.default_rng(1)
    for weight in backbone.weights:  # far from the default init, so a wrong map shows
        weight.assign(0.3 * rng.standard_normal(weight.shape).astype("float32"))
    path = tmp_path_factory.mktemp("keras_hub") / "preset"
    backbone.save_to_preset(str(path))
    return path


@pytest.fixture(scope="module")
def tiny_config(hf_dir):
    return gpt2.config_from_gpt2(hf_dir, TINY)


@pytest.fixture(scope="module")
def loaded_nemot(hf_dir, tiny_config):
    model = nemot.build_model(tiny_config)
    return gpt2.load_vanilla_set(model, hf_dir, seed=3)


def padded_text_ids(seed=0):
    """GPT-2 ids (< 50,257), three rows, two of them right-padded with <pad>."""
    ids = np.random.default_rng(seed).integers(0, vocab.GPT2_VOCAB_SIZE, (3, 12)).astype("int32")
    ids[0, 8:] = vocab.PAD_ID
    ids[1, 5:] = vocab.PAD_ID
    return ids


def keras_hub_output(source, text_ids):
    """KerasHub's GPT2Backbone from ``source`` on the same ids, and the non-pad mask."""
    backbone = keras_hub.models.GPT2Backbone.from_preset(str(source))
    valid = text_ids != vocab.PAD_ID
    out = backbone({"token_ids": np.where(valid, text_ids, 0),
                    "padding_mask": valid.astype("int32")})
    return keras.ops.convert_to_numpy(out), valid


# ------------------------------------------------------------------ loading


def test_config_from_gpt2_takes_the_checkpoint_sizes(tiny_config):
    assert (tiny_config.d_model, tiny_config.num_heads, tiny_config.d_ff) == (D, 2, 4 * D)
    assert tiny_config.num_vanilla_layers == LAYERS
    assert tiny_config.max_position_embeddings == TINY_GPT2["n_positions"]
    assert tiny_config.vocab_size == vocab.VOCAB_SIZE
    # Fields GPT-2 does not define stay those of the base config.
    assert tiny_config.num_nm_layers == TINY.num_nm_layers
    assert tiny_config.output_blocks == TINY.output_blocks


@pytest.mark.parametrize("model_name,source", [
    ("nemot", "hf_dir"), ("nemot", "keras_hub_dir"), ("gpt2_baseline", "hf_dir")])
def test_vanilla_set_equals_keras_hub_gpt2(model_name, source, request):
    path = request.getfixturevalue(source)
    model = gpt2.build(model_name, gpt2.config_from_gpt2(path, TINY), gpt2=path)
    ids = padded_text_ids()
    expected, valid = keras_hub_output(path, ids)
    ours = keras.ops.convert_to_numpy(model.vanilla_set(ids))
    assert ours.shape == expected.shape
    np.testing.assert_allclose(ours[valid], expected[valid], atol=1e-5)
    assert np.abs(expected[valid]).std() > 0.1  # the comparison is not between near-zeros


def test_weights_follow_the_hugging_face_layout(loaded_nemot, hf_dir):
    hf = load_file(str(hf_dir / "model.safetensors"))
    vanilla = loaded_nemot.vanilla_set
    layer = vanilla.transformer_layers[1]
    attention = layer.self_attention
    c_attn = hf["h.1.attn.c_attn.weight"]
    for i, dense in enumerate([attention.query_dense, attention.key_dense,
                               attention.value_dense]):
        kernel = keras.ops.convert_to_numpy(dense.kernel).reshape(D, D)
        np.testing.assert_array_equal(kernel, c_attn[:, i * D:(i + 1) * D])
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(dense.bias).reshape(-1),
                                      hf["h.1.attn.c_attn.bias"][i * D:(i + 1) * D])
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(attention.output_dense.kernel).reshape(D, D),
        hf["h.1.attn.c_proj.weight"])
    np.testing.assert_array_equal(layer.feedforward_intermediate_dense.kernel.numpy(),
                                  hf["h.1.mlp.c_fc.weight"])
    np.testing.assert_array_equal(layer.feedforward_layer_norm.gamma.numpy(),
                                  hf["h.1.ln_2.weight"])
    np.testing.assert_array_equal(vanilla.layer_norm.beta.numpy(), hf["ln_f.bias"])
    np.testing.assert_array_equal(vanilla.position_embedding.embeddings.numpy(),
                                  hf["wpe.weight"])


def test_vocabulary_is_resized_with_truncated_normal_rows(loaded_nemot, hf_dir):
    table = loaded_nemot.vanilla_set.token_embedding.embeddings.numpy()
    assert table.shape == (vocab.VOCAB_SIZE, D)
    np.testing.assert_array_equal(table[:vocab.GPT2_VOCAB_SIZE],
                                  load_file(str(hf_dir / "model.safetensors"))["wte.weight"])
    new_rows = table[vocab.GPT2_VOCAB_SIZE:]
    assert np.abs(new_rows).max() <= 2 * gpt2.NEW_ROW_STDDEV + 1e-7  # truncated at 2 sigma
    # A normal truncated at 2 sigma has std 0.88 sigma.
    assert 0.8 * gpt2.NEW_ROW_STDDEV < new_rows.std() < 0.95 * gpt2.NEW_ROW_STDDEV
    assert abs(new_rows.mean()) < 0.002


def test_size_mismatch_names_field_and_both_values(hf_dir):
    with pytest.raises(ValueError, match=r"d_ff is 128 in the checkpoint but 64 in the model"):
        nemot.build_model(TINY, gpt2=hf_dir)
    sizes = gpt2.gpt2_sizes(hf_dir)
    wrong = TINY.replace(d_ff=4 * D, num_vanilla_layers=3)
    with pytest.raises(ValueError, match=r"num_vanilla_layers is 2 in the checkpoint but 3"):
        gpt2.check_sizes(wrong, sizes, hf_dir)


def test_vanilla_set_without_a_gpt2_weight_is_refused(hf_dir, tiny_config):
    with pytest.raises(ValueError, match="position_encoding is 'sinusoidal'"):
        gpt2.check_sizes(tiny_config.replace(position_encoding="sinusoidal"),
                         gpt2.gpt2_sizes(hf_dir), hf_dir)


def test_original_attention_compat_still_starts_from_gpt2(hf_dir, tiny_config):
    """The original code lacked W_V in its own NM/output layers; GPT-2 kept it."""
    compat = tiny_config.replace(compat_values_use_key_weights=True)
    gpt2.check_sizes(compat, gpt2.gpt2_sizes(hf_dir), hf_dir)
    model = nemot.build_model(compat, gpt2=hf_dir)
    assert model.vanilla_set.transformer_layers[0].self_attention.value_dense.kernel.shape[0] == D


def test_bad_sources_give_clear_errors(tmp_path, hf_dir):
    with pytest.raises(ValueError, match="not a directory, not a KerasHub GPT-2 preset name"):
        gpt2.gpt2_sizes(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="no config.json"):
        gpt2.gpt2_sizes(tmp_path)
    no_weights = tmp_path / "no_weights"
    no_weights.mkdir()
    (no_weights / "config.json").write_text((hf_dir / "config.json").read_text())
    with pytest.raises(FileNotFoundError, match="no model.safetensors"):
        gpt2.gpt2_sizes(no_weights)
    for field, value, message in [("n_inner", 100, "field n_inner=100"),
                                  ("activation_function", "relu", "activation_function='relu'"),
                                  ("model_type", "bert", "model is 'bert'")]:
        path = write_tiny_gpt2(tmp_path / field, n_layer=1, **{field: value})
        with pytest.raises(ValueError, match=message):
            gpt2.gpt2_sizes(path)


# ------------------------------------------------------------------ export


def test_export_round_trip(loaded_nemot, tiny_config, hf_dir, tmp_path):
    out = gpt2.export_vanilla_set(loaded_nemot, tmp_path / "exported")
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.safetensors"]
    config = json.loads((out / "config.json").read_text())
    assert (config["model_type"], config["vocab_size"], config["n_embd"], config["n_layer"]) == (
        "gpt2", vocab.GPT2_VOCAB_SIZE, D, LAYERS)
    exported = load_file(str(out / "model.safetensors"))
    # The keys of a Hugging Face GPT2LMHeadModel: GPT2Model's under "transformer.".
    original = load_file(str(hf_dir / "model.safetensors"))
    assert sorted(exported) == sorted("transformer." + key for key in original)
    np.testing.assert_array_equal(
        exported["transformer.wte.weight"],
        loaded_nemot.vanilla_set.token_embedding.embeddings.numpy()[:vocab.GPT2_VOCAB_SIZE])

    reloaded = gpt2.load_vanilla_set(nemot.build_model(tiny_config), out, seed=3)
    before, after = loaded_nemot.vanilla_set.weights, reloaded.vanilla_set.weights
    def names(weights):  # paths below the model's own (auto-numbered) name
        return [w.path.split("/", 1)[1] for w in weights]

    assert names(before) == names(after)
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)

    ids = padded_text_ids(seed=1)
    expected, valid = keras_hub_output(out, ids)
    ours = keras.ops.convert_to_numpy(loaded_nemot.vanilla_set(ids))
    np.testing.assert_allclose(ours[valid], expected[valid], atol=1e-5)


def test_export_from_a_saved_nemot_checkpoint(loaded_nemot, tmp_path):
    checkpoint = tmp_path / "nemot.keras"
    loaded_nemot.save(checkpoint)
    out = gpt2.export_vanilla_set(checkpoint, tmp_path / "from_checkpoint")
    direct = gpt2.export_vanilla_set(loaded_nemot, tmp_path / "from_model")
    from_checkpoint = load_file(str(out / "model.safetensors"))
    from_model = load_file(str(direct / "model.safetensors"))
    assert sorted(from_checkpoint) == sorted(from_model)
    for key, value in from_model.items():
        np.testing.assert_array_equal(from_checkpoint[key], value, err_msg=key)
    with pytest.raises(ValueError, match="expected a model saved as a .keras file"):
        gpt2.export_vanilla_set(tmp_path / "nemot.weights.h5", tmp_path / "never")


# ------------------------------------------------------------------ GPT-2 baseline


@pytest.fixture(scope="module")
def baseline(hf_dir):
    return gpt2.build_baseline(None, gpt2=hf_dir, seed=0)


def with_aux(text_ids, aux=AUX):
    return np.concatenate([np.tile(np.asarray(aux, "int32"), (len(text_ids), 1)), text_ids], 1)


def test_baseline_drops_the_auxiliary_tokens(baseline):
    text = padded_text_ids()
    logits = baseline({"token_ids": with_aux(text)})["logits"].numpy()
    assert logits.shape == (3, 12, vocab.VOCAB_SIZE)
    other_aux = [vocab.CLS_ID, vocab.ENC_ID, vocab.ADDED_TOKEN_IDS["<mqa>"]]
    np.testing.assert_array_equal(logits, baseline({"token_ids": with_aux(text, other_aux)})["logits"])
    direct = baseline.head(baseline.vanilla_set(text)).numpy()
    np.testing.assert_allclose(logits, direct, atol=1e-5)


def test_baseline_default_loss_is_l1_plus_point_two_l2(baseline):
    baseline.compile(keras.optimizers.Adam(1e-3))
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
    model = gpt2.build_baseline("tiny")
    model.compile(keras.optimizers.Adam(1e-2))
    texts, x, y = memorise_examples()
    history = model.fit({"token_ids": x}, y, batch_size=2, epochs=40, verbose=0).history
    assert "vanilla_loss" not in history
    assert history["loss"][-1] < 0.2 * history["loss"][0]
    assert history["task_loss"][-1] < history["task_loss"][0]

    prompts = np.full((2, 3 + 8), vocab.PAD_ID, "int32")
    for row, text in enumerate(texts):
        prompt = text[:text.index(vocab.SEP_ID) + 1]
        prompts[row, :3 + len(prompt)] = AUX + prompt
    generated = gpt2.greedy_decode(model, prompts, max_new_tokens=6)
    assert generated == [[21, 22, vocab.END_ID], [41, vocab.END_ID]]


def test_greedy_decode_rejects_bad_prompts(baseline):
    ids = with_aux(np.array([[vocab.PAD_ID, 464, 3290]], "int32"))
    with pytest.raises(ValueError, match="row 0: <pad> before a non-pad token"):
        gpt2.greedy_decode(baseline, ids, 2)
    limit = 3 + baseline.config.max_text_length
    too_long = with_aux(np.full((1, limit - 2), 464, "int32"))
    with pytest.raises(ValueError, match=f"token_ids has {limit + 1} positions; the model "
                                         f"takes at most {limit}"):
        gpt2.greedy_decode(baseline, too_long, 2)


def test_greedy_decode_stops_at_the_text_length(baseline):
    """A prompt that fills the text positions gets nothing; the other rows go on."""
    n = baseline.config.max_text_length
    ids = np.full((2, n), 464, "int32")
    ids[1, 4:] = vocab.PAD_ID
    generated = gpt2.greedy_decode(baseline, with_aux(ids), max_new_tokens=3)
    assert generated[0] == []
    assert 1 <= len(generated[1]) <= 3
    logits = baseline({"token_ids": with_aux(ids[1:, :4])})["logits"].numpy()
    assert generated[1][0] == int(np.argmax(logits[0, 3]))


def test_baseline_is_serialisable(baseline, tmp_path):
    clone = gpt2.GPT2Baseline.from_config(baseline.get_config())
    assert clone.config == baseline.config
    path = tmp_path / "baseline.keras"
    baseline.save(path)
    loaded = keras.saving.load_model(path, compile=False)
    assert isinstance(loaded, gpt2.GPT2Baseline)
    x = {"token_ids": with_aux(padded_text_ids())}
    np.testing.assert_allclose(loaded(x)["logits"], baseline(x)["logits"], atol=1e-6)


def test_baseline_parameter_counts(baseline):
    d, v, p, ff = D, vocab.VOCAB_SIZE, TINY_GPT2["n_positions"], 4 * D
    layer = 4 * (d * d + d) + (d * ff + ff) + (ff * d + d) + 4 * d
    counts = gpt2.baseline_parameter_breakdown(baseline)
    assert counts["vanilla_set"] == v * d + p * d + LAYERS * layer + 2 * d
    assert counts["head"] == d * v + v
    assert counts["total"] == baseline.count_params()


def test_gpt2_medium_baseline_count():
    """The one thesis-size test: GPT-2 Medium's published 354,823,168 + 56 rows + head."""
    counts = gpt2.baseline_parameter_breakdown(gpt2.build_baseline("gpt2_medium"))
    added_rows = (vocab.VOCAB_SIZE - vocab.GPT2_VOCAB_SIZE) * 1024
    assert counts["vanilla_set"] == 354_823_168 + added_rows
    assert counts["head"] == 1024 * vocab.VOCAB_SIZE + vocab.VOCAB_SIZE


def test_baseline_config_file_matches_the_preset():
    path = REPO / "configs" / "baseline" / "gpt2_medium.toml"
    assert nemot.NeMoTConfig.from_file(path) == gpt2.baseline_config("gpt2_medium")


def test_model_factory():
    assert isinstance(gpt2.build("nemot", TINY), NeMoT)
    assert isinstance(gpt2.build("gpt2_baseline", TINY), gpt2.GPT2Baseline)
    with pytest.raises(ValueError, match="expected one of \\('nemot', 'gpt2_baseline'\\)"):
        gpt2.build("bert", TINY)
    with pytest.raises(ValueError, match="unknown baseline preset 'gpt3'"):
        gpt2.build_baseline("gpt3")
