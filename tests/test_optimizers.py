"""nemot's fused Adam/AdamW make Keras' updates, in fewer graph operations."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from nemot import optimizers


UNIQUE = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9], [10, 11, 0]], "int32")
REPEATED = np.array([[1, 2, 3], [4, 5, 1], [7, 7, 2], [9, 1, 0]], "int32")


def _model():
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((3,), dtype="int32"), keras.layers.Embedding(20, 4),
                             keras.layers.Flatten(), keras.layers.Dense(2)])


def _train(optimizer, steps=3, x=UNIQUE):
    """A few steps of an embedding (sparse gradient rows) and a dense layer."""
    model = _model()
    model.compile(optimizer, "mse")
    y = np.arange(8, dtype="float32").reshape(4, 2)
    model.fit(x, y, batch_size=4, epochs=steps, shuffle=False, verbose=0)
    return [np.asarray(v) for v in model.get_weights()], model.optimizer


@pytest.mark.parametrize("fused, keras_class, kwargs", [
    (optimizers.Adam, keras.optimizers.Adam, dict(learning_rate=0.05, epsilon=1e-6)),
    (optimizers.AdamW, keras.optimizers.AdamW, dict(learning_rate=0.05, weight_decay=0.1)),
])
def test_fused_steps_equal_keras_steps_and_slots(fused, keras_class, kwargs):
    ours, ours_opt = _train(fused(**kwargs))
    theirs, their_opt = _train(keras_class(**kwargs))
    assert not np.allclose(ours[0], _train(fused(**kwargs), steps=1)[0][0])  # it moved on
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for a, b in zip(ours_opt._momentums + ours_opt._velocities,
                    their_opt._momentums + their_opt._velocities):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-7)
    assert int(ours_opt.iterations) == int(their_opt.iterations) == 3


def test_repeated_tokens_get_the_dense_adam_step():
    """An embedding's gradient rows repeat a token; the step is Adam's on their sum (as
    tf.keras 2's deduplicating Adam made it). Keras 3's own Adam squares each row before
    summing (``ops.square`` of IndexedSlices), so its second moment differs there."""
    model = _model()
    x, y = tf.constant(REPEATED), tf.constant(np.arange(8, dtype="float32").reshape(4, 2))
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x) - y) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    assert isinstance(grads[0], tf.IndexedSlices)
    start = [np.asarray(v) for v in model.trainable_variables]

    def step(optimizer, gradients):
        for v, value in zip(model.trainable_variables, start):
            v.assign(value)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return [np.asarray(v) for v in model.trainable_variables]

    ours = step(optimizers.Adam(0.05), grads)
    dense = step(keras.optimizers.Adam(0.05), [tf.convert_to_tensor(g) for g in grads])
    for a, b in zip(ours, dense):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # the difference this test sees: Keras 3's step on the rows as they come
    keras_sparse = step(keras.optimizers.Adam(0.05), grads)
    assert np.abs(keras_sparse[0] - dense[0]).max() > 1e-3


def test_the_step_traces_far_fewer_operations():
    def operations(optimizer_class, count):
        variables = [keras.Variable(np.zeros((4, 4), "float32")) for _ in range(count)]
        optimizer = optimizer_class(1e-3)
        optimizer.build(variables)
        step = tf.function(lambda: optimizer.apply_gradients(
            [(tf.ones((4, 4)), v) for v in variables]))
        return len(step.get_concrete_function().graph.as_graph_def().node)

    def per_variable(optimizer_class):
        return (operations(optimizer_class, 20) - operations(optimizer_class, 10)) / 10

    # the mirrored case: tests/models/routing_worker.py (two replicas, nemot's Adam)
    assert per_variable(optimizers.Adam) * 3 < per_variable(keras.optimizers.Adam)


def test_amsgrad_and_serialization_keep_keras_behaviour():
    ours, _ = _train(optimizers.Adam(0.05, amsgrad=True))
    theirs, _ = _train(keras.optimizers.Adam(0.05, amsgrad=True))
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(optimizers.Adam(0.01)))
    assert type(restored) is optimizers.Adam and np.isclose(restored.get_config()["learning_rate"], 0.01)
