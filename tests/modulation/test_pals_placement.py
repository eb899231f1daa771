"""Where a parallel term (PALs' TS_t) enters a transformer layer, against a NumPy forward
(the PALs report, s.4.3; the official BERTOutput adds it inside the second LayerNorm):

- post-LN (BERT): ``a = LN1(x + MHA(x))``, ``LN2(a + Drop(FFN(a)) + TS(x))``;
- pre-LN (GPT-2, NeMoT's vanilla set): ``a = x + MHA(LN1(x))``,
  ``a + Drop(FFN(LN2(a))) + TS(LN1(x))``;

``x`` the layer input. Reading ``a`` instead of ``x``, or adding the term after LN2,
fails these tests: for :class:`nemot.layers.TransformerLayer` in both forms and for
PALBert's BERT stack (KerasHub's layers hosting PALs, :mod:`nemot.modulation.host`),
read through each backbone's description.
"""

import keras
import numpy as np
import pytest
from scipy.special import erf

from nemot.layers.transformer import TransformerLayer
from nemot.modulation.host import NEMOT
from nemot.modulation.spec import ModulationSpec
from nemot.modulation.stack import stack_modulations
from nemot.pals.model import PALBert
from tests.modulation.test_pals import reference as pal_reference

D, HEADS, D_FF = 8, 2, 16


def randomize(layer, seed):
    """Every weight of ``layer`` N(0, 0.5) (LayerNorm gains around 1), so that a term in
    the wrong place shows."""
    rng = np.random.default_rng(seed)
    for w in layer.trainable_weights:
        value = rng.normal(0, 0.5, w.shape)
        w.assign((value + 1 if w.path.endswith("gamma") else value).astype("float32"))


def np_layer_norm(x, layer):
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    gamma, beta = np.asarray(layer.gamma), np.asarray(layer.beta)
    return (x - mean) / np.sqrt(var + layer.epsilon) * gamma + beta


def np_gelu(x, approximate):
    if approximate:
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + erf(x / np.sqrt(2)))


def np_attention(x, part, mask):
    """Multi-head self-attention of one example: x [L, d], mask bool [L, L]; ``part(role)``
    gives the layer's sub-layers (:class:`nemot.modulation.host.BackboneHost`)."""
    def project(dense):
        return np.einsum("ld,dhk->lhk", x, np.asarray(dense.kernel)) + np.asarray(dense.bias)

    q, k, v = (project(part(role)) for role in ("query", "key", "value"))
    scores = np.einsum("qhk,phk->hqp", q, k) / np.sqrt(q.shape[-1])
    scores = np.where(mask[None], scores, -1e9)
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    context = np.einsum("hqp,phk->qhk", probs, v)
    out = part("attention_output")
    return np.einsum("qhk,hkd->qd", context, np.asarray(out.kernel)) + np.asarray(out.bias)


def np_layer(host, layer, x, mask, task, parallel, approximate):
    """One example through ``layer`` as ``host`` describes it, with the ``parallel`` terms
    (inference: dropout is the identity)."""
    def part(role):
        return host.part(layer, role)

    def ffn(h):
        inner, outer = part("feedforward_intermediate_dense"), part("feedforward_output_dense")
        h = np_gelu(h @ np.asarray(inner.kernel) + np.asarray(inner.bias), approximate)
        return h @ np.asarray(outer.kernel) + np.asarray(outer.bias)

    def term(h):
        return sum(pal_reference(pal, h, mask, task) for pal in parallel)

    ln1, ln2 = part("attention_norm"), part("feedforward_norm")
    if host.pre_ln(layer):
        normed = np_layer_norm(x, ln1)
        a = x + np_attention(normed, part, mask)
        return a + ffn(np_layer_norm(a, ln2)) + term(normed)
    a = np_layer_norm(x + np_attention(x, part, mask), ln1)
    return np_layer_norm(a + ffn(a) + term(x), ln2)


def inputs(seed, batch=3, length=6):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, length, D)).astype("float32")
    mask = np.ones((batch, length, length), bool)
    mask[1, :, length - 2:] = False  # example 1 has two padded positions
    return x, mask, np.array([1, 0, 1], "int32")


@pytest.mark.parametrize("normalize_first", [False, True], ids=["post_ln", "pre_ln"])
def test_the_host_layer_adds_the_term_of_its_input_in_the_residual_sum(normalize_first):
    spec = ModulationSpec("pals", sets=("s",), options=dict(hidden_size=6, num_heads=2))
    per_layer, _ = stack_modulations([spec], "s", 1, 2, D)
    layer = TransformerLayer(HEADS, D_FF, normalize_first=normalize_first,
                             activation="gelu_tanh" if normalize_first else "gelu",
                             modulations=per_layer[0][0])
    layer.build((None, None, D))
    randomize(layer, 0)
    x, mask, tasks = inputs(1)
    got = np.asarray(layer(x, mask, training=False, conditioning={"task_index": tasks})[0])
    for b, t in enumerate(tasks):
        np.testing.assert_allclose(got[b], np_layer(NEMOT, layer, x[b], mask[b], t,
                                                    layer.parallel, normalize_first),
                                   atol=1e-4)


def test_palbert_adds_each_layers_term_of_that_layers_input_inside_the_second_layernorm():
    model = PALBert(vocabulary_size=30, num_layers=2, num_heads=HEADS, hidden_dim=D,
                    intermediate_dim=D_FF, max_sequence_length=16, tasks=("sst", "quora"),
                    pals={"hidden_size": 6, "num_heads": 2})
    model.build()
    randomize(model, 2)
    rng = np.random.default_rng(3)
    padding = np.ones((3, 6), "int32")
    padding[1, 4:] = 0
    x = {"token_ids": rng.integers(1, 30, (3, 6)).astype("int32"),
         "segment_ids": np.array([[0, 0, 0, 1, 1, 1]] * 3, "int32"), "padding_mask": padding,
         "task_index": np.array([1, 0, 1], "int32")}
    got = np.asarray(model.encode(x, training=False))
    hosted, bert = model.bert.transformer_layers, model.backbone
    assert all(layer.parallel for layer in hosted)
    for b, t in enumerate(x["task_index"]):
        h = (np.asarray(bert.token_embedding.embeddings)[x["token_ids"][b]]
             + np.asarray(bert.position_embedding.position_embeddings)[:6]
             + np.asarray(bert.segment_embedding.embeddings)[x["segment_ids"][b]])
        h = np_layer_norm(h, bert.embeddings_layer_norm)
        mask = np.broadcast_to(padding[b].astype(bool)[None, :], (6, 6))
        for layer in hosted:  # KerasHub's layers, read through the BERT description
            h = np_layer(layer.host, layer.layer, h, mask, t, layer.parallel, False)
        np.testing.assert_allclose(got[b], h, atol=1e-4)
