"""The loss's cross-entropy (the lean formula on JAX, TensorFlow's kernel here) and the
lean formula itself equal Keras's float32 softmax cross-entropy (the earlier formula) to
1e-5: values and gradients, float32 and bfloat16 logits, ignored targets. The JAX
backend runs the loss's check in tests/test_jax_backend.py."""

import keras
import numpy as np
import pytest
from keras import ops

from nemot import vocab
from nemot.models.losses import lean_cross_entropy, masked_cross_entropy


def lean_masked(targets, logits):
    """The lean formula under the loss's masking, as JAX runs it."""
    valid = targets != vocab.IGNORE_ID
    ce = lean_cross_entropy(ops.convert_to_tensor(np.where(valid, targets, 0)), logits)
    return ops.sum(ce * valid), float(valid.sum())


def reference(targets, logits):
    """The earlier formula: Keras's sparse cross-entropy of the float32 logits."""
    valid = targets != vocab.IGNORE_ID
    ce = keras.losses.sparse_categorical_crossentropy(
        ops.convert_to_tensor(np.where(valid, targets, 0)), ops.cast(logits, "float32"), from_logits=True)
    return ops.sum(ce * valid), float(valid.sum())


def batch(dtype, seed=0):
    rng = np.random.default_rng(seed)
    logits = (rng.normal(size=(3, 7, vocab.VOCAB_SIZE)) * 4).astype("float32")
    targets = rng.integers(0, vocab.VOCAB_SIZE, (3, 7)).astype("int32")
    targets[0, :3] = vocab.IGNORE_ID
    targets[2, 5:] = vocab.IGNORE_ID
    return targets, ops.cast(logits, dtype)


@pytest.mark.parametrize("loss", [masked_cross_entropy, lean_masked])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_values_equal_the_float32_softmax_cross_entropy(dtype, loss):
    targets, logits = batch(dtype)
    total, count = loss(targets, logits)
    expected_total, expected_count = reference(targets, logits)
    assert float(count) == expected_count == 16
    np.testing.assert_allclose(float(total) / 16, float(expected_total) / 16, rtol=1e-5)


def test_gradients_equal():
    import tensorflow as tf

    targets, logits = batch("float32", seed=1)
    logits = tf.constant(ops.convert_to_numpy(logits))
    grads = []
    for loss in (lean_masked, reference):
        with tf.GradientTape() as tape:
            tape.watch(logits)
            total, count = loss(targets, logits)
            mean = total / count
        grads.append(tape.gradient(mean, logits).numpy())
    np.testing.assert_allclose(grads[0], grads[1], atol=1e-7)
    assert np.abs(grads[0]).max() > 1e-3
