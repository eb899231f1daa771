"""GPT-2 in NeMoT: loading the vanilla set and exporting it.

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
from nemot.models import gpt2, registry
from tests.models.gpt2_checkpoint import TINY_GPT2, padded_text_ids, write_tiny_gpt2

TINY = nemot.NeMoTConfig.preset("tiny")
D = TINY_GPT2["n_embd"]
LAYERS = TINY_GPT2["n_layer"]
AUX = [vocab.CLS_ID, vocab.DEC_ID, vocab.ADDED_TOKEN_IDS["<gqa>"]]
REPO = Path(__file__).resolve().parents[2]


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
    model = registry.build(model_name, gpt2.config_from_gpt2(path, TINY), gpt2=path)
    ids = padded_text_ids()
    expected, valid = keras_hub_output(path, ids)
    ours = keras.ops.convert_to_numpy(model.backbone.vanilla_set(ids))
    assert ours.shape == expected.shape
    np.testing.assert_allclose(ours[valid], expected[valid], atol=1e-5)
    assert np.abs(expected[valid]).std() > 0.1  # the comparison is not between near-zeros


def test_weights_follow_the_hugging_face_layout(loaded_nemot, hf_dir):
    hf = load_file(str(hf_dir / "model.safetensors"))
    vanilla = loaded_nemot.backbone.vanilla_set
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
    table = loaded_nemot.backbone.vanilla_set.token_embedding.embeddings.numpy()
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
    assert model.backbone.vanilla_set.transformer_layers[0].self_attention.value_dense.kernel.shape[0] == D


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
    for field, value, message in [("n_inner", "wide", "field n_inner='wide'"),
                                  ("activation_function", "relu", "activation_function='relu'"),
                                  ("model_type", "bert", "model is 'bert'")]:
        path = write_tiny_gpt2(tmp_path / field, n_layer=1, **{field: value})
        with pytest.raises(ValueError, match=message):
            gpt2.gpt2_sizes(path)


# ------------------------------------------------------------------ export


def test_export_round_trip(loaded_nemot, tiny_config, hf_dir, tmp_path):
    out = gpt2.export_vanilla_set(loaded_nemot, tmp_path / "exported")
    assert sorted(p.name for p in out.iterdir()) == [
        "config.json", "merges.txt", "model.safetensors", "special_tokens_map.json",
        "tokenizer_config.json", "vocab.json"]
    config = json.loads((out / "config.json").read_text())
    assert (config["model_type"], config["vocab_size"], config["n_embd"], config["n_layer"]) == (
        "gpt2", vocab.GPT2_VOCAB_SIZE, D, LAYERS)
    exported = load_file(str(out / "model.safetensors"))
    # The keys of a Hugging Face GPT2LMHeadModel: GPT2Model's under "transformer.".
    original = load_file(str(hf_dir / "model.safetensors"))
    assert sorted(exported) == sorted("transformer." + key for key in original)
    np.testing.assert_array_equal(
        exported["transformer.wte.weight"],
        loaded_nemot.backbone.vanilla_set.token_embedding.embeddings.numpy()[:vocab.GPT2_VOCAB_SIZE])

    reloaded = gpt2.load_vanilla_set(nemot.build_model(tiny_config), out, seed=3)
    before, after = loaded_nemot.backbone.vanilla_set.weights, reloaded.backbone.vanilla_set.weights
    assert [w.path for w in before] == [w.path for w in after]
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)

    ids = padded_text_ids(seed=1)
    expected, valid = keras_hub_output(out, ids)
    ours = keras.ops.convert_to_numpy(loaded_nemot.backbone.vanilla_set(ids))
    np.testing.assert_allclose(ours[valid], expected[valid], atol=1e-5)


def test_kerashubs_gpt2_causal_lm_loads_the_export_with_its_tokenizer(loaded_nemot, tmp_path):
    out = gpt2.export_vanilla_set(loaded_nemot, tmp_path / "exported")
    lm = keras_hub.models.GPT2CausalLM.from_preset(str(out))
    text = "The cat sat on the mat. Where did it sit?"
    ids = np.asarray(lm.preprocessor.tokenizer(text))
    assert ids.tolist() == nemot.Tokenizer().encode(text)
    assert lm.preprocessor.tokenizer.detokenize(ids) == text
    hidden = lm.backbone({"token_ids": ids[None], "padding_mask": np.ones((1, len(ids)), "int32")})
    ours = loaded_nemot.backbone.vanilla_set(ids[None].astype("int32"))
    np.testing.assert_allclose(keras.ops.convert_to_numpy(hidden),
                               keras.ops.convert_to_numpy(ours), atol=1e-5)
    assert isinstance(lm.generate("The cat", max_length=8), str)


def test_export_carries_a_feed_forward_width_other_than_gpt2s(tmp_path):
    """The tiny preset's d_ff is 2 * d_model, not GPT-2's 4 * d_model: the exported
    config's n_inner carries it, and the directory builds a model again; the export says
    that KerasHub needs the width given."""
    assert TINY.d_ff != 4 * TINY.d_model
    keras.utils.set_random_seed(4)
    model = nemot.build_model(TINY)
    with pytest.warns(UserWarning, match=r"d_ff=64 is not 4 \* d_model=128.*intermediate_dim=64"):
        out = gpt2.export_vanilla_set(model, tmp_path / "tiny_gpt2")
    backbone = keras_hub.models.GPT2Backbone.from_preset(str(out), intermediate_dim=TINY.d_ff)
    assert backbone.intermediate_dim == TINY.d_ff
    assert json.loads((out / "config.json").read_text())["n_inner"] == TINY.d_ff
    assert gpt2.gpt2_sizes(out)["d_ff"] == TINY.d_ff
    again = nemot.build_model(gpt2.config_from_gpt2(out, TINY), gpt2=out)
    ids = padded_text_ids(seed=2)  # the added rows (<pad>'s) are drawn anew on loading
    valid = ids != vocab.PAD_ID
    np.testing.assert_allclose(keras.ops.convert_to_numpy(again.backbone.vanilla_set(ids))[valid],
                               keras.ops.convert_to_numpy(model.backbone.vanilla_set(ids))[valid],
                               atol=1e-5)


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
