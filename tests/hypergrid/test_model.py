"""HyperGridT5: the thin forward pass against KerasHub's T5Backbone, HyperGrid inside it,
parameter counts, checkpoints (Hugging Face layout, .keras round trip)."""

import keras
import numpy as np
import pytest

from nemot.hypergrid.model import HyperGridT5
from nemot.hypergrid.t5 import load_backbone
from tests.hypergrid.helpers import randomise, t5_inputs, tiny_backbone, write_hf_t5


@pytest.fixture(scope="module")
def backbone():
    keras.utils.set_random_seed(0)
    return tiny_backbone()


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


@pytest.mark.parametrize("conditioning", ["mhsa", "task"])
def test_zero_initialised_grids_are_t5_with_one_and_a_half_ffn2(backbone, scaled, conditioning):
    """σ(0) = ½ plus the residual: every layer's W_o acts as 1.5 W_o (encoder and decoder,
    per-example and per-position grids alike)."""
    inputs = t5_inputs()
    model = HyperGridT5(backbone, 2, {"mode": "L2", "grid": [4, 4], "heads": 2,
                                      "conditioning": conditioning, "initializer": "zeros"})
    reference = scaled({k: v for k, v in inputs.items() if k != "task_index"})
    enc, dec = outputs(model, inputs)
    np.testing.assert_allclose(enc, np.asarray(reference["encoder_sequence_output"]), atol=1e-5)
    np.testing.assert_allclose(dec, np.asarray(reference["decoder_sequence_output"]), atol=1e-5)


@pytest.mark.parametrize("options", [
    {"mode": "LG", "grid": [4, 8], "heads": 2},
    {"mode": "L2", "grid": [4, 4], "placement": "all", "heads": 2},
    {"mode": "OG", "gates": 8, "heads": 2},
])
def test_decoder_is_causal_and_examples_independent(backbone, options):
    keras.utils.set_random_seed(1)
    model = HyperGridT5(backbone, 2, options)
    for grids in model.encoder_modulations + model.decoder_modulations:
        for layer in grids.values():
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


def test_added_parameters_are_the_formula(backbone):
    """LG per projection: d·d_r + d_c, the task embeddings tasks·d, the conditioning MHSA
    4d² + 4d; FFN2 of every encoder and decoder layer."""
    d, d_r, d_c, tasks = 16, 4, 8, 3
    model = HyperGridT5(backbone, tasks, {"mode": "LG", "grid": [d_r, d_c], "heads": 2})
    per_layer = d * d_r + d_c + tasks * d + 4 * d * d + 4 * d
    assert model.count_params() - backbone.count_params() == 2 * backbone.num_layers * per_layer
    og = HyperGridT5(backbone, tasks, {"mode": "OG", "gates": 8, "conditioning": "task"})
    assert og.count_params() - backbone.count_params() == 2 * 2 * (d * 8 + tasks * d)


def test_bad_options_are_clear_errors(backbone):
    with pytest.raises(ValueError, match=r"grid \(d_r, d_c\) = \(3, 4\) does not divide the "
                                         r"projection \[n_in, n_out\] = \[32, 16\]"):
        HyperGridT5(backbone, 2, {"mode": "LG", "grid": [3, 4]})
    with pytest.raises(ValueError, match=r"hypergrid options \['gates'\]"):
        HyperGridT5(backbone, 2, {"mode": "LG", "gates": 4})
    with pytest.raises(ValueError, match=r"conditioning='context' needs NeMoT"):
        HyperGridT5(backbone, 2, {"mode": "LG", "grid": [4, 4], "conditioning": "context"})
    with pytest.raises(ValueError, match=r"'ffn1' on a gated T5"):
        HyperGridT5(tiny_backbone(use_gated_activation=True), 2,
                    {"mode": "LG", "grid": [4, 4], "placement": "ffn1"})


def test_hugging_face_t5_directory_loads_into_t5_backbone(backbone, tmp_path):
    directory = write_hf_t5(tmp_path / "t5", backbone)
    loaded = load_backbone(str(directory))
    inputs = {k: v for k, v in t5_inputs().items() if k != "task_index"}
    for key in ("encoder_sequence_output", "decoder_sequence_output"):
        np.testing.assert_allclose(np.asarray(loaded(inputs)[key]),
                                   np.asarray(backbone(inputs)[key]), atol=1e-5)
    (directory / "config.json").write_text('{"model_type": "t5", "vocab_size": 64, '
                                           '"feed_forward_proj": "gated-silu"}')
    with pytest.raises(ValueError, match=r"config.json: field 'feed_forward_proj': expected one "
                                         r"of \['gated-gelu', 'relu'\], got 'gated-silu'"):
        load_backbone(str(directory))


def test_saved_model_round_trip(backbone, tmp_path):
    model = HyperGridT5(backbone, 2, {"mode": "GL", "grid": [4, 8], "heads": 2})
    for grids in model.encoder_modulations:
        randomise(grids["feedforward_output_dense"])
    inputs = t5_inputs()
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    np.testing.assert_allclose(np.asarray(loaded(inputs)), np.asarray(model(inputs)), atol=1e-6)
