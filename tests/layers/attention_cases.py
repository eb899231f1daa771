"""Fused against unfused attention on every mask NeMoT builds, outputs and gradients, on
the current Keras backend: tests/layers/test_attention.py runs it on TensorFlow, the JAX
worker (tests/jax_worker.py) on JAX.

The masks come from :func:`nemot.layers.masks.attention_mask`, the function the model
calls: the vanilla and output sets' text-only masks (``num_aux=0``: causal in ``<dec>``,
bidirectional in ``<enc>``, with or without padding) and the neuromodulatory set's
layout with the three auxiliary tokens first (both modes, padding, and a batch mixing
the modes, as ``mode="auto"`` reads them).
"""

import numpy as np
from keras import ops

from nemot import vocab
from nemot.layers import MultiHeadAttention
from nemot.layers.masks import attention_mask

LENGTH = 13
BATCH = 3
# name: (mode, num_aux, padded text lengths per example or None)
MASKS = {
    "causal": ("dec", 0, None),
    "bidirectional": ("enc", 0, None),
    "causal_padding": ("dec", 0, (13, 7, 2)),
    "bidirectional_padding": ("enc", 0, (13, 7, 2)),
    "aux_dec_padding": ("dec", 3, (10, 4, 1)),
    "aux_enc_padding": ("enc", 3, (10, 4, 1)),
    "aux_mixed_modes": ("auto", 3, (10, 6, 3)),
}


def token_ids(mode, num_aux, lengths):
    """[BATCH, LENGTH] ids: ``num_aux`` auxiliary tokens, then text padded to ``lengths``."""
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 1000, (BATCH, LENGTH)).astype("int32")
    if num_aux:
        modes = [vocab.DEC_ID, vocab.ENC_ID, vocab.DEC_ID] if mode == "auto" else \
            [vocab.ENC_ID if mode == "enc" else vocab.DEC_ID] * BATCH
        ids[:, :num_aux] = [[vocab.CLS_ID, m, vocab.task_token_id("lm")] for m in modes]
    for row, length in enumerate(lengths or ()):
        ids[row, num_aux + length:] = vocab.PAD_ID
    return ids


def mask(name):
    mode, num_aux, lengths = MASKS[name]
    return attention_mask(token_ids(mode, num_aux, lengths), mode=mode, num_aux=num_aux)


def layers(length_multiple):
    """A fused and an unfused layer with the same weights; ``length_multiple`` 64 pads
    the fused path's lengths as on a GPU (13 -> 64)."""
    fused = MultiHeadAttention(num_heads=2, key_dim=8, fused=True)
    unfused = MultiHeadAttention(num_heads=2, key_dim=8, fused=False)
    for layer in (fused, unfused):
        layer.build((None, None, 16))
    unfused.set_weights(fused.get_weights())
    fused.length_multiple = length_multiple
    return fused, unfused


def gradient_function(layer):
    """``(x, mask, cotangent) ->`` ``layer``'s output and the gradients of
    ``sum(output * cotangent)`` with respect to the input and each weight, as numpy (on
    JAX one compiled program for every mask of a shape)."""
    import keras

    if keras.backend.backend() == "jax":
        import jax

        def loss(weights, x, attention_mask, cotangent):
            (out, _), _ = layer.stateless_call(weights, [], x, attention_mask)
            return ops.sum(out * cotangent), out

        grad = jax.jit(jax.grad(loss, argnums=(0, 1), has_aux=True))

        def run(x, attention_mask, cotangent):
            weights = [v.value for v in layer.trainable_variables]
            (weight_grads, x_grad), out = grad(weights, x, attention_mask, cotangent)
            return [np.asarray(t) for t in (out, x_grad, *weight_grads)]

        return run
    import tensorflow as tf

    def run(x, attention_mask, cotangent):
        x = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(x)
            out, _ = layer(x, attention_mask)
            value = tf.reduce_sum(out * cotangent)
        x_grad, *weight_grads = tape.gradient(value, [x, *layer.trainable_variables])
        return [t.numpy() for t in (out, x_grad, *weight_grads)]

    return run


def differences(length_multiple=None):
    """``{mask: (largest output difference, largest gradient difference, largest
    gradient)}`` between the fused and the unfused path."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(BATCH, LENGTH, 16)).astype("float32")
    cotangent = rng.normal(size=(BATCH, LENGTH, 16)).astype("float32")
    fused, unfused = (gradient_function(layer) for layer in layers(length_multiple))
    out = {}
    for name in MASKS:
        m = mask(name)
        a, b = fused(x, m, cotangent), unfused(x, m, cotangent)
        out[name] = (float(np.abs(a[0] - b[0]).max()),
                     max(float(np.abs(p - q).max()) for p, q in zip(a[1:], b[1:])),
                     max(float(np.abs(q).max()) for q in b[1:]))
    return out
