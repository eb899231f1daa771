"""One ``[[model.modulation]]`` spec list on every backbone (:mod:`nemot.modulation.host`):
NeMoT's ``TransformerLayer`` (the vanilla set), KerasHub's BERT and KerasHub's T5, at tiny
sizes, give the same kind of change: modulations at their identity leave each output
unchanged; zero-initialised HyperGrids turn each W_o into 1.5 W_o; a PAL term of T5's
normed layer input joins the layer's residual sum (BERT's and NeMoT's placement:
``test_pals_placement.py``)."""

import keras
import keras_hub
import numpy as np
import pytest

import nemot
from nemot import vocab
from nemot.hosts.bert import ModulatedBert
from nemot.hosts.t5 import ModulatedT5
from nemot.models.weights import transfer_weights
from nemot.modulation.gating_block import GatingBlock
from nemot.modulation.host import BERT, NEMOT, T5, mask_bias
from tests.hypergrid.helpers import t5_inputs, tiny_backbone

TINY = nemot.NeMoTConfig.preset("tiny")
STACKS = {"nemot": ["vanilla"], "bert": ["bert"], "t5": ["encoder", "decoder"]}


def identity_specs(sets):
    """Each site at its identity: a PAL with a zero decoder (parallel), a modulated FFN at
    its initial gain 2 sigmoid(0) = 1 (activation), a gating block whose gate is forced to
    sigmoid(60) = 1 below (output)."""
    return [{"kind": "pals", "sets": sets, "hidden_size": 4, "num_heads": 2,
             "decoder_init": "zeros"},
            {"kind": "modulated_ffn", "sets": sets, "layers": [0]},
            {"kind": "gating_block", "sets": sets, "layers": [1], "num_layers": 1,
             "num_heads": 2, "intermediate_dim": 16}]


def zero_hypergrid(sets):
    return [{"kind": "hypergrid", "sets": sets, "mode": "L2", "grid": [4, 4],
             "initializer": "zeros", "conditioning": "task"}]


def force_gates_open(model):
    blocks = [m for m in model._flatten_layers() if isinstance(m, GatingBlock)]
    assert blocks
    for block in blocks:
        norm = block.gating_layers[-1]._feedforward_layer_norm
        norm.gamma.assign(np.zeros(norm.gamma.shape, "float32"))
        norm.beta.assign(np.full(norm.beta.shape, 60.0, "float32"))


def scale_w_o(host, layers):
    for layer in layers:
        kernel = host.part(layer, "feedforward_output_dense").kernel
        kernel.assign(1.5 * np.asarray(kernel))


# ----------------------------------------------------------------------- NeMoT


def nemot_logits(model):
    ids = np.array([[vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id(t), 5, 6, 7, 8]
                    for t in ("gqa", "mqa")], "int32")
    return np.asarray(model({"token_ids": ids}, training=False)["logits"])


def nemot_hosting(plain, specs):
    """NeMoT hosting ``specs`` with the weights of ``plain``."""
    modulated = nemot.build_model(TINY.replace(modulation=specs))
    _, fresh, unplaced = transfer_weights(plain, modulated)
    assert fresh and not unplaced
    return modulated


@pytest.fixture
def plain_nemot():
    keras.utils.set_random_seed(0)
    return nemot.build_model(TINY)


# ----------------------------------------------------------------------- BERT


def bert_backbone():
    keras.utils.set_random_seed(0)
    return keras_hub.models.BertBackbone(vocabulary_size=40, num_layers=2, num_heads=2,
                                         hidden_dim=8, intermediate_dim=16,
                                         max_sequence_length=16)


def bert_inputs():
    mask = np.ones((2, 7), "int32")
    mask[1, 5:] = 0
    return {"token_ids": np.arange(14).reshape(2, 7).astype("int32") % 40 * mask,
            "segment_ids": np.zeros((2, 7), "int32"), "padding_mask": mask}


def bert_outputs(backbone, specs=None):
    x = bert_inputs()
    if specs is None:
        return np.asarray(backbone(x)["sequence_output"])
    bert = ModulatedBert(backbone, specs, num_tasks=2)
    if any(s["kind"] == "gating_block" for s in specs):
        force_gates_open(bert)
    return np.asarray(bert.encode(x, {"task_index": np.array([1, 0], "int32")}))


# ----------------------------------------------------------------------- T5


def t5_outputs(backbone, specs=None):
    x = t5_inputs()
    if specs is None:
        out = backbone({k: v for k, v in x.items() if k != "task_index"})
        return np.asarray(out["encoder_sequence_output"]), np.asarray(out["decoder_sequence_output"])
    model = ModulatedT5(backbone, 2, specs)
    if any(s["kind"] == "gating_block" for s in specs):
        force_gates_open(model)
    task = x["task_index"]
    enc = model.encode(x["encoder_token_ids"], x["encoder_padding_mask"], task)
    dec = model.decode(enc, x["encoder_padding_mask"], x["decoder_token_ids"],
                       x["decoder_padding_mask"], task)
    return np.asarray(enc), np.asarray(dec)


def test_modulations_at_their_identity_leave_every_backbone_unchanged(plain_nemot):
    modulated = nemot_hosting(plain_nemot, identity_specs(STACKS["nemot"]))
    force_gates_open(modulated)
    np.testing.assert_allclose(nemot_logits(modulated), nemot_logits(plain_nemot), atol=1e-5)

    backbone = bert_backbone()
    np.testing.assert_allclose(bert_outputs(backbone, identity_specs(STACKS["bert"])),
                               bert_outputs(backbone), atol=1e-6)

    backbone = tiny_backbone()
    for got, expected in zip(t5_outputs(backbone, identity_specs(STACKS["t5"])),
                             t5_outputs(backbone)):
        np.testing.assert_allclose(got, expected, atol=1e-6)


def test_zero_initialised_hypergrids_make_every_backbones_w_o_one_and_a_half_w_o(plain_nemot):
    """σ(0) = ½ plus the residual, in every layer of every hosting stack."""
    modulated = nemot_hosting(plain_nemot, zero_hypergrid(STACKS["nemot"]))
    before = nemot_logits(plain_nemot)
    scale_w_o(NEMOT, plain_nemot.backbone.vanilla_set.transformer_layers)
    assert np.abs(nemot_logits(plain_nemot) - before).max() > 1e-3  # the scaling shows
    np.testing.assert_allclose(nemot_logits(modulated), nemot_logits(plain_nemot), atol=1e-5)

    backbone = bert_backbone()
    got = bert_outputs(backbone, zero_hypergrid(STACKS["bert"]))
    scale_w_o(BERT, backbone.transformer_layers)
    np.testing.assert_allclose(got, bert_outputs(backbone), atol=1e-5)

    backbone = tiny_backbone()
    got = t5_outputs(backbone, zero_hypergrid(STACKS["t5"]))
    scale_w_o(T5, backbone.encoder_transformer_layers + backbone.decoder_transformer_layers)
    for got_part, expected in zip(got, t5_outputs(backbone)):
        np.testing.assert_allclose(got_part, expected, atol=1e-5)


def test_a_pal_term_of_t5s_normed_input_joins_the_residual_sum():
    """Pre-LN: a hosted decoder layer is T5's own layer (self-attention, cross-attention,
    feed-forward) plus TS(RMSNorm1(x)), outside any norm."""
    keras.utils.set_random_seed(0)
    model = ModulatedT5(tiny_backbone(), 2, [{"kind": "pals", "sets": ["decoder"],
                                              "hidden_size": 4, "num_heads": 2}])
    hosted = model.decoder_layers[1]
    rng = np.random.default_rng(0)
    for w in hosted.weights + model.decoder_shared[0].weights:  # a term that shows
        w.assign(rng.normal(0, 0.5, w.shape).astype("float32"))
    x = rng.normal(size=(2, 5, 16)).astype("float32")
    mask = np.tril(np.ones((2, 5, 5), bool))
    mask[1, :, 3:] = False
    state = model.stack_state(model.decoder_layers, 5)
    state.update(encoder_output=rng.normal(size=(2, 6, 16)).astype("float32"),
                 encoder_mask=np.ones((2, 1, 6), bool))
    task = np.array([1, 0], "int32")
    got = hosted(x, mask, conditioning={"task_index": task}, stack=state)
    own = hosted.layer(x, position_bias=state["position_bias"] + mask_bias(mask),
                       encoder_hidden_states=state.get("encoder_output"),
                       encoder_attention_mask=state.get("encoder_mask"))[0]
    term = hosted.parallel[0](T5.part(hosted.layer, "attention_norm")(x),
                              conditioning={"task_index": task}, attention_mask=mask)
    assert np.abs(np.asarray(term)).max() > 1e-3
    np.testing.assert_allclose(np.asarray(got), np.asarray(own + term), atol=1e-5)
