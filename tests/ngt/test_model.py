"""NGT model: variants, gate placement, auxiliary tokens, serialisation, checkpoints, parameter counts."""

import json
import warnings

import keras
import numpy as np
import pytest
from keras import ops
from safetensors.numpy import save_file

from nemot.hosts.bert import BERT_LARGE_CASED, load_backbone
from nemot.ngt.model import VARIANTS, NGTModel, build_ngt
from tests.ngt.helpers import TINY_BERT, random_inputs, tiny_backbone


def _set_gate(model, gamma, beta):
    """Fix the last gating LayerNorm so g = beta at every position (gamma 0): the gate no longer depends on h."""
    norm = model.gate.gating_layers[-1]._feedforward_layer_norm
    norm.gamma.assign(np.broadcast_to(np.float32(gamma), norm.gamma.shape))
    norm.beta.assign(np.broadcast_to(np.asarray(beta, "float32"), norm.beta.shape))


def _manual(backbone, inputs, after_layer, insert):
    """BERT run layer by layer with ``insert(h)`` applied to the output of layer ``after_layer`` (from 1)."""
    b = backbone
    tokens = b.token_embedding(inputs["token_ids"])
    x = b.embeddings_add((tokens, b.position_embedding(tokens), b.segment_embedding(inputs["segment_ids"])))
    x = b.embeddings_layer_norm(x)
    for k, layer in enumerate(b.transformer_layers, start=1):
        x = layer(x, padding_mask=inputs["padding_mask"])
        if k == after_layer:
            x = insert(x)
    return ops.convert_to_numpy(x)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("num_classes", [1, 3])
def test_output_shapes_and_probabilities(variant, num_classes):
    model = NGTModel(tiny_backbone(), variant=variant, gate_position=2, num_gating_layers=2, num_classes=num_classes)
    inputs = random_inputs(batch=3, length=9)
    probs = ops.convert_to_numpy(model(inputs))
    assert probs.shape == (3, num_classes)
    assert np.all((probs > 0) & (probs < 1))
    if num_classes > 1:
        np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-5)
    assert model.sequence_model()(inputs).shape == (3, 9, TINY_BERT["hidden_dim"])
    assert (model.gate is None) == (variant == "no-gating-block")


def test_gate_forced_to_one_gives_plain_bert():
    backbone = tiny_backbone()
    model = NGTModel(backbone, gate_position=2, num_gating_layers=3)
    inputs = random_inputs()
    plain = ops.convert_to_numpy(backbone(inputs)["sequence_output"])
    assert not np.allclose(ops.convert_to_numpy(model.sequence_model()(inputs)), plain, atol=1e-3)
    _set_gate(model, gamma=0.0, beta=60.0)  # sigmoid(60) == 1.0 in float32
    np.testing.assert_allclose(ops.convert_to_numpy(model.sequence_model()(inputs)), plain, atol=1e-6)


def _scramble(backbone, seed=0):
    """Large random kernels: at BERT's init (std 0.02) a layer is close to the identity, which would
    make "after layer k" and "after layer k +- 1" hard to tell apart."""
    rng = np.random.default_rng(seed)
    for w in backbone.weights:
        if w.path.endswith("kernel"):
            w.assign(rng.normal(0, 0.5, w.shape).astype("float32"))


@pytest.mark.parametrize("k", [1, 2, 3])
def test_gate_sits_exactly_after_layer_k(k):
    backbone = tiny_backbone()
    _scramble(backbone)
    model = NGTModel(backbone, gate_position=k, num_gating_layers=1)
    # A per-feature gate (LayerNorm would undo a uniform one): sigmoid(beta) for beta in [-3, 3].
    beta = np.linspace(-3, 3, TINY_BERT["hidden_dim"]).astype("float32")
    _set_gate(model, gamma=0.0, beta=beta)
    gate = 1 / (1 + np.exp(-beta))
    inputs = random_inputs()
    got = ops.convert_to_numpy(model.sequence_model()(inputs))
    np.testing.assert_allclose(got, _manual(backbone, inputs, k, lambda h: gate * h), atol=1e-5)
    for wrong in (k - 1, k + 1):
        assert np.abs(got - _manual(backbone, inputs, wrong, lambda h: gate * h)).max() > 0.1


def test_neuromodulated_gate_multiplies_by_sigmoid_of_block_output():
    backbone = tiny_backbone()
    model = NGTModel(backbone, gate_position=2, num_gating_layers=2)
    inputs = random_inputs()

    def gate(h):
        g = h
        for layer in model.gate.gating_layers:
            g = layer(g, padding_mask=inputs["padding_mask"])
        return ops.sigmoid(g) * h

    got = ops.convert_to_numpy(model.sequence_model()(inputs))
    np.testing.assert_allclose(got, _manual(backbone, inputs, 2, gate), atol=1e-5)


def test_non_neuromodulated_gating_is_extra_layers_in_series():
    backbone = tiny_backbone()
    model = NGTModel(backbone, variant="non-neuromodulated-gating", gate_position=3, num_gating_layers=3)
    inputs = random_inputs()

    def in_series(h):
        for layer in model.gate.gating_layers:
            h = layer(h, padding_mask=inputs["padding_mask"])
        return h

    got = ops.convert_to_numpy(model.sequence_model()(inputs))
    np.testing.assert_allclose(got, _manual(backbone, inputs, 3, in_series), atol=1e-5)


def test_no_gating_block_is_bert_plus_head():
    backbone = tiny_backbone()
    model = NGTModel(backbone, variant="no-gating-block")
    inputs = random_inputs()
    np.testing.assert_allclose(
        ops.convert_to_numpy(model.sequence_model()(inputs)),
        ops.convert_to_numpy(backbone(inputs)["sequence_output"]),
        atol=1e-6,
    )
    assert model.count_params() == backbone.count_params() + TINY_BERT["hidden_dim"] + 1


@pytest.mark.usefixtures("eager")
def test_the_unused_pooler_is_frozen_and_fit_does_not_warn_of_it():
    """The head reads the raw [CLS] state: the pooler stays in the model (Table 2 counts it:
    test_parameter_counts_of_bert_large_cased), and a training step neither moves it nor
    warns that it got no gradient (Keras's "Gradients do not exist for variables
    ['pooled_dense/kernel', ...]", which its optimizer gives traced or not). Eager: tracing
    the step cost more than the step (43.8 -> 19.3 CPU s, the test alone)."""
    model = NGTModel(tiny_backbone(), gate_position=1, num_gating_layers=1)
    pooler = model.backbone.get_layer("pooled_dense")
    before = [ops.convert_to_numpy(w) for w in pooler.weights]
    assert not any(w is v for w in pooler.weights for v in model.trainable_weights)
    model.compile(optimizer=keras.optimizers.AdamW(1e-2), loss="binary_crossentropy")
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "Gradients do not exist")
        model.fit(random_inputs(), np.ones((2, 1), "float32"), epochs=1, verbose=0)
    for old, new in zip(before, pooler.weights):
        np.testing.assert_array_equal(old, ops.convert_to_numpy(new))


def test_gating_layers_are_bert_shaped_and_initialised():
    model = NGTModel(tiny_backbone(), gate_position=1, num_gating_layers=2)
    for layer in model.gate.gating_layers:
        assert layer.layer_norm_epsilon == 1e-12
        assert layer.dropout == 0.1
        assert layer.normalize_first is False  # post-LN, as BERT
        assert isinstance(layer.kernel_initializer, keras.initializers.TruncatedNormal)
        assert layer.kernel_initializer.stddev == 0.02
    # Same weight shapes as a backbone layer.
    backbone_layer = model.backbone.transformer_layers[0]
    assert [w.shape for w in model.gate.gating_layers[0].weights] == [w.shape for w in backbone_layer.weights]


def test_padding_is_masked_in_the_gating_block():
    model = NGTModel(tiny_backbone(), gate_position=2, num_gating_layers=2)
    inputs = random_inputs(pad=3)
    changed = {k: v.copy() for k, v in inputs.items()}
    changed["token_ids"][1, -3:] = 7  # different ids under the padding mask
    a = ops.convert_to_numpy(model.sequence_model()(inputs))[1, :-3]
    b = ops.convert_to_numpy(model.sequence_model()(changed))[1, :-3]
    np.testing.assert_allclose(a, b, atol=1e-5)


def test_aux_tokens_are_seen_only_by_the_gating_block():
    backbone = tiny_backbone()
    model = NGTModel(backbone, gate_position=2, num_gating_layers=1, num_aux_tokens=2)
    inputs = random_inputs(length=10)
    other = {k: v.copy() for k, v in inputs.items()}
    other["token_ids"][:, :2] = [[5, 6], [7, 8]]
    seq = model.sequence_model()
    assert seq(inputs).shape == (2, 8, TINY_BERT["hidden_dim"])  # aux positions dropped
    assert not np.allclose(ops.convert_to_numpy(seq(inputs)), ops.convert_to_numpy(seq(other)), atol=1e-4)
    _set_gate(model, gamma=0.0, beta=60.0)
    # With the gate at 1 the aux tokens have no path to the output: the main layers never see them.
    np.testing.assert_allclose(ops.convert_to_numpy(seq(inputs)), ops.convert_to_numpy(seq(other)), atol=1e-6)
    with pytest.raises(ValueError, match="needs a gating block"):
        NGTModel(tiny_backbone(), variant="no-gating-block", num_aux_tokens=2)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="variant='gated'"):
        NGTModel(tiny_backbone(), variant="gated")
    with pytest.raises(ValueError, match=r"gate_position=4: expected 1 <= k < 4"):
        NGTModel(tiny_backbone(), gate_position=4)


def test_serialises_and_runs_under_jit(tmp_path):
    model = NGTModel(tiny_backbone(), gate_position=2, num_gating_layers=2, num_classes=3)
    inputs = random_inputs()
    expected = ops.convert_to_numpy(model(inputs))
    restored = NGTModel.from_config(model.get_config())
    restored.set_weights(model.get_weights())
    np.testing.assert_allclose(ops.convert_to_numpy(restored(inputs)), expected, atol=1e-6)
    model.save(tmp_path / "ngt.keras")
    loaded = keras.saving.load_model(tmp_path / "ngt.keras")
    assert loaded.variant == "neuromodulated-gating" and loaded.gate_position == 2
    np.testing.assert_allclose(ops.convert_to_numpy(loaded(inputs)), expected, atol=1e-6)
    model.compile(jit_compile=True)
    np.testing.assert_allclose(model.predict(inputs, verbose=0), expected, atol=1e-5)


def test_parameter_counts_of_bert_large_cased(undrawn_weights):
    # Paper Table 2, built from the sizes alone (no weights drawn, no download).
    gated = build_ngt(BERT_LARGE_CASED, gate_position=21, num_gating_layers=3)
    assert undrawn_weights  # the weights were not drawn
    assert gated.count_params() == 371_368_961
    plain = NGTModel(gated.backbone, variant="no-gating-block")  # same backbone layers, new head
    assert plain.count_params() == 333_580_289


def test_loads_a_hugging_face_bert_checkpoint_directory(tmp_path):
    d, heads, ff, vocab, positions, layers = 8, 2, 16, 30, 12, 2
    rng = np.random.default_rng(0)
    tensors = {}

    def put(name, *shape):
        tensors[name] = rng.normal(size=shape).astype("float32")

    # Key names as Hugging Face `BertModel.save_pretrained` writes them.
    put("embeddings.word_embeddings.weight", vocab, d)
    put("embeddings.position_embeddings.weight", positions, d)
    put("embeddings.token_type_embeddings.weight", 2, d)
    put("embeddings.LayerNorm.weight", d)
    put("embeddings.LayerNorm.bias", d)
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for part in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            put(p + part + ".weight", d, d)
            put(p + part + ".bias", d)
        put(p + "attention.output.LayerNorm.weight", d)
        put(p + "attention.output.LayerNorm.bias", d)
        put(p + "intermediate.dense.weight", ff, d)
        put(p + "intermediate.dense.bias", ff)
        put(p + "output.dense.weight", d, ff)
        put(p + "output.dense.bias", d)
        put(p + "output.LayerNorm.weight", d)
        put(p + "output.LayerNorm.bias", d)
    put("pooler.dense.weight", d, d)
    put("pooler.dense.bias", d)
    save_file(tensors, str(tmp_path / "model.safetensors"))
    config = {
        "model_type": "bert", "architectures": ["BertModel"], "vocab_size": vocab, "hidden_size": d,
        "num_hidden_layers": layers, "num_attention_heads": heads, "intermediate_size": ff,
        "max_position_embeddings": positions, "type_vocab_size": 2, "hidden_act": "gelu",
        "layer_norm_eps": 1e-12,
    }
    (tmp_path / "config.json").write_text(json.dumps(config))

    backbone = load_backbone(str(tmp_path))
    assert backbone.num_layers == layers and backbone.hidden_dim == d
    np.testing.assert_array_equal(
        ops.convert_to_numpy(backbone.token_embedding.embeddings), tensors["embeddings.word_embeddings.weight"]
    )
    ffn = backbone.transformer_layers[1]._feedforward_output_dense.kernel
    np.testing.assert_array_equal(ops.convert_to_numpy(ffn), tensors["encoder.layer.1.output.dense.weight"].T)
    model = NGTModel(backbone, gate_position=1, num_gating_layers=1)
    assert model(random_inputs(length=6, vocabulary_size=vocab)).shape == (2, 1)
