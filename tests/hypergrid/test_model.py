"""HyperGridT5: the hosted T5 against KerasHub's T5Backbone, HyperGrid inside it,
its conditioning by the layers' own self-attention, parameter counts (the paper's
formula; T5 sizes offline), checkpoints (Hugging Face layout, .keras round trip)."""

import keras
import numpy as np
import pytest

from nemot.hosts.t5 import PRESET_SIZES, backbone_sizes, load_backbone, t5_parameters
from nemot.hypergrid.model import HyperGridT5, added_parameters
from tests.hypergrid.helpers import TINY_T5, randomise, t5_inputs, tiny_backbone, write_hf_t5


@pytest.fixture(scope="module")
def backbone():
    keras.utils.set_random_seed(0)
    return tiny_backbone()


@pytest.fixture(scope="module")
def gated():
    """T5 v1.1's layout: gated FFN, untied head (and a head size other than d / heads)."""
    return tiny_backbone(use_gated_activation=True, tie_embedding_weights=False, key_value_dim=4)


@pytest.fixture(scope="module")
def scaled(backbone):
    """``backbone`` with every W_o multiplied by 1.5."""
    scaled = tiny_backbone()
    scaled.set_weights(backbone.get_weights())
    for layer in scaled.encoder_transformer_layers + scaled.decoder_transformer_layers:
        layer.output_projector.kernel.assign(1.5 * np.asarray(layer.output_projector.kernel))
    return scaled


def outputs(model, inputs):
    task = inputs["task_index"]
    enc = model.encode(inputs["encoder_token_ids"], inputs["encoder_padding_mask"], task)
    dec = model.decode(enc, inputs["encoder_padding_mask"], inputs["decoder_token_ids"],
                       inputs["decoder_padding_mask"], task)
    return np.asarray(enc), np.asarray(dec)


def test_forward_without_hypergrid_is_t5_backbone(backbone):
    inputs = t5_inputs()
    reference = backbone({k: v for k, v in inputs.items() if k != "task_index"})
    enc, dec = outputs(HyperGridT5(backbone, num_tasks=2), inputs)
    np.testing.assert_allclose(enc, np.asarray(reference["encoder_sequence_output"]), atol=1e-6)
    np.testing.assert_allclose(dec, np.asarray(reference["decoder_sequence_output"]), atol=1e-6)


@pytest.mark.parametrize("conditioning", [{}, {"conditioning": "mhsa", "heads": 2},
                                          {"conditioning": "task"}])
def test_zero_initialised_grids_are_t5_with_one_and_a_half_ffn2(backbone, scaled, conditioning):
    """σ(0) = ½ plus the residual: every layer's W_o acts as 1.5 W_o (encoder and decoder,
    per-example and per-position grids alike); the task token added to the layers' own
    self-attention (the default) leaves the tokens' outputs unchanged."""
    inputs = t5_inputs()
    model = HyperGridT5(backbone, 2, {"mode": "L2", "grid": [4, 4], "initializer": "zeros",
                                      **conditioning})
    reference = scaled({k: v for k, v in inputs.items() if k != "task_index"})
    enc, dec = outputs(model, inputs)
    np.testing.assert_allclose(enc, np.asarray(reference["encoder_sequence_output"]), atol=1e-5)
    np.testing.assert_allclose(dec, np.asarray(reference["decoder_sequence_output"]), atol=1e-5)


@pytest.mark.parametrize("options", [
    {"mode": "LG", "grid": [4, 8]},
    {"mode": "L2", "grid": [4, 4], "placement": "all"},
    {"mode": "OG", "gates": 8},
])
def test_decoder_is_causal_and_examples_independent(backbone, options):
    keras.utils.set_random_seed(1)
    model = HyperGridT5(backbone, 2, options)
    for layer in model.encoder_layers + model.decoder_layers:  # grids, gates, task tokens
        randomise(layer, 0.5)
    inputs = t5_inputs()
    logits = np.asarray(model(inputs))
    later = {k: v.copy() for k, v in inputs.items()}
    later["decoder_token_ids"][:, 2:] = 7  # change later target tokens of both examples
    changed = np.asarray(model(later))
    np.testing.assert_allclose(changed[:, :2], logits[:, :2], atol=1e-5)
    other = {k: v.copy() for k, v in inputs.items()}
    other["encoder_token_ids"][1] = (other["encoder_token_ids"][1] + 5) % 64
    other["task_index"][1] = 0
    moved = np.asarray(model(other))
    np.testing.assert_allclose(moved[0], logits[0], atol=1e-5)
    assert np.abs(moved[1] - logits[1]).max() > 1e-4
    same_input = {k: v.copy() for k, v in inputs.items()}
    same_input["task_index"][:] = [1, 1]
    assert np.abs(np.asarray(model(same_input))[0] - logits[0]).max() > 1e-4  # the task matters


@pytest.mark.parametrize("mode", ["LG", "GL", "L2"])
def test_added_parameters_are_the_papers_formula(backbone, mode):
    """The paper's added cost per layer (s.2.2): LG d_m·d_r + d_c, GL d_r + d_f·d_c, L²
    d_m·d_r + d_f·d_c, with d_f·d_c read as d_m·d_c (L_c reads T′ ∈ R^{d_m}), plus only a
    task embedding per layer (tasks·d_m): T′ comes from the layer's own self-attention.
    FFN2 of every encoder and decoder layer; ``params`` counts the same without a T5."""
    d, d_r, d_c, tasks = 16, 4, 8, 3
    model = HyperGridT5(backbone, tasks, {"mode": mode, "grid": [d_r, d_c]})
    paper = {"LG": d * d_r + d_c, "GL": d_r + d * d_c, "L2": d * d_r + d * d_c}[mode]
    added = model.count_params() - backbone.count_params()
    assert added == 2 * backbone.num_layers * (paper + tasks * d)
    counted = added_parameters(TINY_T5, tasks, {"mode": mode, "grid": [d_r, d_c]})
    assert counted == {"total": added, "grids": 2 * 2 * paper, "task_embeddings": 2 * 2 * tasks * d,
                       "attention": 0, "hypergrids": 4}


def test_separate_and_light_conditioning_attentions_are_counted(backbone):
    """``conditioning = "mhsa"``: a task embedding and an MHSA per HyperGrid (4d² + 4d;
    with heads·key_dim = 2·3: 3·(6d + 6) + 6d + d)."""
    d, d_r, d_c, tasks = 16, 4, 8, 3
    for sizes, attention in (({"heads": 2}, 4 * d * d + 4 * d),
                             ({"heads": 2, "key_dim": 3}, 3 * (6 * d + 6) + 6 * d + d)):
        options = {"mode": "LG", "grid": [d_r, d_c], "conditioning": "mhsa", **sizes}
        model = HyperGridT5(backbone, tasks, options)
        per_layer = d * d_r + d_c + tasks * d + attention
        assert model.count_params() - backbone.count_params() == 2 * 2 * per_layer
        assert added_parameters(TINY_T5, tasks, options)["attention"] == 2 * 2 * attention
    og = HyperGridT5(backbone, tasks, {"mode": "OG", "gates": 8, "conditioning": "task"})
    assert og.count_params() - backbone.count_params() == 2 * 2 * (d * 8 + tasks * d)


def test_self_attention_conditioning_is_the_layers_attention_at_a_prepended_task_token(backbone):
    """T′ = MHSA([T; X])[0] with the layer's own T5 attention (weights, relative position
    bias of a sequence one longer, padding mask), computed here by KerasHub's layer on the
    concatenated sequence; T is normalised by the layer's first norm like every token."""
    model = HyperGridT5(backbone, 2, {"mode": "LG", "grid": [4, 8]})
    rng = np.random.default_rng(0)
    h = rng.normal(size=(2, 5, 16)).astype("float32")
    task = rng.normal(size=(2, 16)).astype("float32")
    mask = np.ones((2, 1, 5), bool)
    mask[1, 0, 3:] = False
    layers = backbone.encoder_transformer_layers
    stack = model.stack_state(model.encoder_layers, 5)
    joined_mask = np.concatenate([np.ones((2, 1, 1), bool), mask], axis=-1)
    for i, (layer, hosted) in enumerate(zip(layers, model.encoder_layers)):
        t_prime = np.asarray(hosted.task_attention(task, h, mask, False, stack))
        joined = np.concatenate([np.asarray(layer.self_attention_layer_norm(task[:, None])), h],
                                axis=1)
        bias = None if i == 0 else (  # only the first layer computes the bias itself
            np.asarray(layers[0].self_attention.compute_bias(6, 6))
            + (1.0 - joined_mask[:, None]) * -1e9)
        expected = layer.self_attention(joined, mask=joined_mask, position_bias=bias)[0]
        np.testing.assert_allclose(t_prime, np.asarray(expected)[:, 0], atol=1e-5)
    changed = h.copy()
    changed[1, 3:] += 5.0  # padded positions of example 2
    first = model.encoder_layers[0]
    np.testing.assert_allclose(
        np.asarray(first.task_attention(task, changed, mask, False, stack)),
        np.asarray(first.task_attention(task, h, mask, False, stack)), atol=1e-6)


def test_grid_orientation_reaches_every_hypergrid(backbone):
    """FFN2 is [d_ff = 32, d = 16]: a (4, 32) grid splits it only with d_r on the outputs
    (eq. 3's reading); laid over the kernel it is Ĝᵀ, [B, 32, 4]."""
    model = HyperGridT5(backbone, 2, {"mode": "LG", "grid": [4, 32], "orientation": "eq3",
                                      "conditioning": "task"})
    grid = model.decoder_layers[1].dense["feedforward_output_dense"].hypergrid
    assert grid.orientation == "eq3"
    cond = {"task_index": np.array([0, 1], "int32")}
    np.testing.assert_allclose(np.asarray(grid.over_kernel(cond)),
                               np.swapaxes(np.asarray(grid.grid(cond)), 1, 2))
    assert grid.over_kernel(cond).shape == (2, 32, 4)
    with pytest.raises(ValueError, match=r"grid \(d_r, d_c\) = \(4, 32\) does not divide the "
                                         r"projection \[n_in, n_out\] = \[32, 16\]: expected "
                                         r"n_in % d_r == 0 and n_out % d_c == 0"):
        HyperGridT5(backbone, 2, {"mode": "LG", "grid": [4, 32], "conditioning": "task"})


def test_t5_sizes_and_parameter_counts_are_known_offline(gated):
    """The presets' sizes give KerasHub's published parameter counts; the count formula
    equals T5Backbone's own, tied and untied, plain and gated."""
    from keras_hub.src.models.t5.t5_presets import backbone_presets

    for preset in PRESET_SIZES:
        assert t5_parameters(backbone_sizes(preset)) == \
            backbone_presets[preset]["metadata"]["params"]
    sizes = {**TINY_T5, "use_gated_activation": True, "tie_embedding_weights": False,
             "key_value_dim": 4}
    assert t5_parameters(sizes) == gated.count_params()
    with pytest.raises(ValueError, match=r"backbone 'flan_small_multi': its sizes are not "
                                         r"known offline"):
        backbone_sizes("flan_small_multi")


def test_bad_options_are_clear_errors(backbone, gated):
    with pytest.raises(ValueError, match=r"grid \(d_r, d_c\) = \(3, 4\) does not divide the "
                                         r"projection \[n_in, n_out\] = \[32, 16\]"):
        HyperGridT5(backbone, 2, {"mode": "LG", "grid": [3, 4]})
    with pytest.raises(ValueError, match=r"hypergrid options \['gates'\]"):
        HyperGridT5(backbone, 2, {"mode": "LG", "gates": 4})
    with pytest.raises(ValueError, match=r"conditioning='context' needs NeMoT"):
        HyperGridT5(backbone, 2, {"mode": "LG", "grid": [4, 4], "conditioning": "context"})
    with pytest.raises(ValueError, match=r"options \['heads'\] size the separate attention of "
                                         r"conditioning='mhsa'; conditioning='self_attention'"):
        HyperGridT5(backbone, 2, {"mode": "LG", "grid": [4, 4], "heads": 2})
    with pytest.raises(ValueError, match=r"'ffn1' on a gated T5"):
        HyperGridT5(gated, 2, {"mode": "LG", "grid": [4, 4], "placement": "ffn1"})


def test_hugging_face_t5_directory_loads_into_t5_backbone(backbone, tmp_path):
    directory = write_hf_t5(tmp_path / "t5", backbone)
    loaded = load_backbone(str(directory))
    inputs = {k: v for k, v in t5_inputs().items() if k != "task_index"}
    for key in ("encoder_sequence_output", "decoder_sequence_output"):
        np.testing.assert_allclose(np.asarray(loaded(inputs)[key]),
                                   np.asarray(backbone(inputs)[key]), atol=1e-5)
    assert t5_parameters(backbone_sizes(str(directory))) == backbone.count_params()  # offline
    (directory / "config.json").write_text('{"model_type": "t5", "vocab_size": 64, '
                                           '"feed_forward_proj": "gated-silu"}')
    with pytest.raises(ValueError, match=r"config.json: field 'feed_forward_proj': expected one "
                                         r"of \['gated-gelu', 'relu'\], got 'gated-silu'"):
        load_backbone(str(directory))


def test_saved_model_round_trip(backbone, tmp_path):
    model = HyperGridT5(backbone, 2, {"mode": "GL", "grid": [4, 8], "orientation": "eq3"})
    for layer in model.encoder_layers:  # its grid and task token
        randomise(layer)
    inputs = t5_inputs()
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    np.testing.assert_allclose(np.asarray(loaded(inputs)), np.asarray(model(inputs)), atol=1e-6)
