"""NeMoT's loss against a NumPy hand computation (tests/models/hand_loss.py):

- ``NeMoTLoss`` is ``L1 + 0.2 L2 + 0.5 L3`` on a padded batch, each term with its own
  targets and mask (L1: ``logits`` on ``task_targets``; L2: ``logits`` on
  ``lm_targets``; L3: ``vanilla_logits`` on ``task_targets``), each weight changed on
  its own, values and gradients; on two ``MirroredStrategy`` replicas each term divides
  by its count over the global batch;
- the cross-entropy under it (TensorFlow's kernel here, the lean formula JAX runs) equals
  ``-log softmax`` at the target over 50,313-wide logits, float32 and bfloat16, ignored
  targets left out. The JAX backend checks the lean loss in tests/test_jax_backend.py.
"""

import json

import numpy as np
import pytest
from keras import ops

from nemot import vocab
from nemot.models.losses import NeMoTLoss, lean_cross_entropy, masked_cross_entropy
from tests.models import hand_loss
from tests.models.test_routing import run_worker
from tests.once import once


def as_float(value):
    return float(ops.convert_to_numpy(value))


def test_the_loss_is_the_weighted_sum_of_the_three_hand_computed_terms():
    y, y_pred = hand_loss.batch()
    expected = hand_loss.terms(y, y_pred)
    terms = NeMoTLoss().terms(y, y_pred)
    assert {name: weight for name, (weight, _) in terms.items()} == \
        {"task": 1.0, "lm": 0.2, "vanilla": 0.5}
    for name, (_, value) in terms.items():
        np.testing.assert_allclose(as_float(value), expected[name], rtol=1e-6, err_msg=name)
    np.testing.assert_allclose(as_float(NeMoTLoss()(y, y_pred)), hand_loss.loss(y, y_pred),
                               rtol=1e-6)
    # The terms differ, so a swapped target, logit or mask would show.
    assert len({round(v, 3) for v in expected.values()}) == 3


@pytest.mark.parametrize("weights", [dict(task_weight=2.5), dict(lm_weight=0.0),
                                     dict(lm_weight=0.7), dict(vanilla_weight=0.0),
                                     dict(vanilla_weight=1.5), dict(task_weight=0.0)])
def test_each_weight_on_its_own(weights):
    y, y_pred = hand_loss.batch(seed=1)
    loss = NeMoTLoss(**weights)
    np.testing.assert_allclose(as_float(loss(y, y_pred)), hand_loss.loss(y, y_pred, **weights),
                               rtol=1e-6)
    switched_off = {name[:-len("_weight")] for name, w in weights.items() if not w}
    assert switched_off.isdisjoint(loss.terms(y, y_pred))


def test_a_term_off_needs_neither_its_targets_nor_its_logits():
    y, y_pred = hand_loss.batch()
    expected = hand_loss.terms(y, y_pred)["task"]
    del y_pred["vanilla_logits"], y["lm_targets"]
    np.testing.assert_allclose(as_float(NeMoTLoss(lm_weight=0, vanilla_weight=0)(y, y_pred)),
                               expected, rtol=1e-6)
    with pytest.raises(ValueError, match="lm_targets"):
        NeMoTLoss(vanilla_weight=0)(y, y_pred)
    with pytest.raises(ValueError, match="vanilla_logits"):
        NeMoTLoss(lm_weight=0)(y, y_pred)


def test_gradients_are_the_hand_computed_ones():
    import tensorflow as tf

    y, y_pred = hand_loss.batch(seed=2)
    weights = dict(task_weight=1.0, lm_weight=0.3, vanilla_weight=0.7)
    logits = {k: tf.constant(v) for k, v in y_pred.items()}
    with tf.GradientTape() as tape:
        tape.watch(list(logits.values()))
        value = NeMoTLoss(**weights)(y, logits)
    grads = tape.gradient(value, [logits["logits"], logits["vanilla_logits"]])
    expected = hand_loss.logits_gradients(y, y_pred, **weights)
    for got, want in zip(grads, expected):
        np.testing.assert_allclose(got.numpy(), want, atol=1e-7)
    # Positions without a target (padding, non-answers for L1 and L3) get no gradient.
    no_target = (y["task_targets"] == vocab.IGNORE_ID) & (y["lm_targets"] == vocab.IGNORE_ID)
    assert no_target.any() and not np.abs(grads[0].numpy()[no_target]).any()


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory):
    return json.loads((once(tmp_path_factory, "routing_mirrored", run_worker)
                       / "report.json").read_text())


def test_two_replicas_divide_by_the_global_counts(mirrored):
    """Each replica holds half the batch (unequal target counts: 5 + 1 task targets) and
    its terms divide by the global counts, so the replicas' losses add up to the loss of
    the whole batch on one device (a mean of the replicas' own means would not)."""
    y, y_pred = hand_loss.batch()
    halves = (slice(0, 2), slice(2, 4))
    replicas = mirrored["replica_losses"]
    assert len(replicas) == 2
    for replica, rows in zip(replicas, halves):
        expected = hand_loss.terms(y, y_pred, rows=rows)
        for name, value in replica["terms"].items():
            np.testing.assert_allclose(value, expected[name], rtol=1e-6, err_msg=name)
        np.testing.assert_allclose(replica["loss"], hand_loss.loss(y, y_pred, rows=rows),
                                   rtol=1e-6)
    whole = hand_loss.loss(y, y_pred)
    np.testing.assert_allclose(sum(r["loss"] for r in replicas), whole, rtol=1e-6)
    local_means = [hand_loss.loss(y, y_pred, rows=rows, counts_from=rows) for rows in halves]
    assert abs(np.mean(local_means) - whole) > 0.1


def lean_masked(targets, logits):
    """The lean formula under the loss's masking, as JAX runs it."""
    valid = targets != vocab.IGNORE_ID
    ce = lean_cross_entropy(ops.convert_to_tensor(np.where(valid, targets, 0)), logits)
    return ops.sum(ce * valid), float(valid.sum())


def wide_batch(dtype, seed=0):
    rng = np.random.default_rng(seed)
    logits = (rng.normal(size=(3, 7, vocab.VOCAB_SIZE)) * 4).astype("float32")
    targets = rng.integers(0, vocab.VOCAB_SIZE, (3, 7)).astype("int32")
    targets[0, :3] = vocab.IGNORE_ID
    targets[2, 5:] = vocab.IGNORE_ID
    return targets, ops.cast(logits, dtype)


@pytest.mark.parametrize("loss", [masked_cross_entropy, lean_masked])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_cross_entropy_is_minus_log_softmax_at_the_target(dtype, loss):
    targets, logits = wide_batch(dtype)
    total, count = loss(targets, logits)
    # The reference reads the logits the loss was given (bfloat16 rounded), in float64.
    expected, expected_count = hand_loss.cross_entropy_sum(
        targets, ops.convert_to_numpy(ops.cast(logits, "float32")))
    assert float(count) == expected_count == 16
    np.testing.assert_allclose(as_float(total) / 16, expected / 16, rtol=1e-5)


def test_lean_gradients_are_softmax_minus_onehot():
    import tensorflow as tf

    targets, logits = wide_batch("float32", seed=1)
    logits = tf.constant(ops.convert_to_numpy(logits))
    with tf.GradientTape() as tape:
        tape.watch(logits)
        total, count = lean_masked(targets, logits)
        mean = total / count
    expected, _ = hand_loss.logits_gradients(
        {"task_targets": targets, "lm_targets": np.full_like(targets, vocab.IGNORE_ID)},
        {"logits": logits.numpy(), "vanilla_logits": logits.numpy()}, lm_weight=0)
    grad = tape.gradient(mean, logits).numpy()
    np.testing.assert_allclose(grad, expected, atol=1e-7)
    assert np.abs(grad).max() > 1e-3


@pytest.mark.parametrize("jit_compile", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_terms_sharing_logits_share_one_softmax_and_its_gradient(dtype, jit_compile):
    """On TensorFlow the task and lm terms read the main head's logits through one
    softmax with a custom gradient: its values and gradients are the hand-computed ones,
    where both terms target the same token at the same position too (their one-hots add
    up), in graph mode and under XLA, from float32 and bfloat16 logits."""
    import tensorflow as tf

    targets, logits = wide_batch(dtype, seed=3)
    lm_targets = np.where(np.arange(7) % 2 == 0, targets, (targets + 1) % vocab.VOCAB_SIZE)
    lm_targets[0, :3] = np.array([5, 6, 7])  # where the task has no target
    assert ((lm_targets == targets) & (targets != vocab.IGNORE_ID)).any()
    y = {"task_targets": targets, "lm_targets": lm_targets.astype("int32")}
    loss = NeMoTLoss(lm_weight=0.3, vanilla_weight=0)

    @tf.function(jit_compile=jit_compile)
    def value_and_gradient(logits):
        with tf.GradientTape() as tape:
            tape.watch(logits)
            value = loss(y, {"logits": logits})
        return value, tape.gradient(value, logits)

    value, grad = value_and_gradient(tf.constant(logits))
    assert grad.dtype == logits.dtype
    read = ops.convert_to_numpy(ops.cast(logits, "float32"))
    y_pred = {"logits": read, "vanilla_logits": read}
    np.testing.assert_allclose(as_float(value), hand_loss.loss(y, y_pred, lm_weight=0.3,
                                                               vanilla_weight=0), rtol=1e-5)
    expected, _ = hand_loss.logits_gradients(y, y_pred, lm_weight=0.3, vanilla_weight=0)
    if dtype == "float32":  # XLA's exp rounds otherwise: a few parts in a million
        np.testing.assert_allclose(grad.numpy(), expected, rtol=1e-5, atol=1e-7)
    else:  # the float32 gradient rounded to bfloat16 on its way back through the cast
        np.testing.assert_allclose(ops.convert_to_numpy(ops.cast(grad, "float32")), expected,
                                   atol=2e-4, rtol=1e-2)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_the_vanilla_head_at_the_task_targets_only_gives_the_loss_and_gradients_of_every_position(
        jit_compile):
    """In the train step the vanilla head (L3) is applied in the loss, at the task targets'
    positions only where shapes may follow the data (TensorFlow outside XLA), at every
    position under XLA: the loss and every weight's gradient equal the vanilla head's at
    every position, also for a batch with no task target (a zero L3)."""
    import keras
    import tensorflow as tf

    import nemot
    from nemot.models.losses import VANILLA_TARGETS

    keras.utils.set_random_seed(0)
    model = nemot.build_model(nemot.NeMoTConfig.preset("tiny").replace(max_text_length=12),
                              preprocessor=None)
    model.compile(keras.optimizers.SGD(0.1))
    rng = np.random.default_rng(1)
    ids = rng.integers(100, 5000, size=(3, 15)).astype("int32")
    ids[:, :3] = [vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id("gqa")]
    lm_targets = np.concatenate([ids[:, 4:], np.full((3, 1), vocab.IGNORE_ID)], 1)
    answered = np.full((3, 12), vocab.IGNORE_ID, "int32")
    answered[0, 5:8], answered[2, 9:11] = lm_targets[0, 5:8], lm_targets[2, 9:11]
    variables = model.trainable_variables

    @tf.function(jit_compile=jit_compile)
    def both(y):
        with tf.GradientTape(persistent=True) as tape, model.vanilla_head_in_loss():
            y_pred = model({"token_ids": ids}, training=True)
            targets, read = model.loss_inputs(y, y_pred)
            by_step = model.nemot_loss(targets, read)
            hidden = y_pred.pop("vanilla_hidden_states")
            every = model.nemot_loss(y, {**y_pred, "vanilla_logits": model.vanilla_head(hidden)})
        return (by_step, every, tf.shape(read["vanilla_logits"]), VANILLA_TARGETS in targets,
                tape.gradient(by_step, variables), tape.gradient(every, variables))

    for task_targets, rows in ((answered, 5), (np.full_like(answered, vocab.IGNORE_ID), 0)):
        y = {"task_targets": tf.constant(task_targets), "lm_targets": tf.constant(lm_targets)}
        by_step, every, shape, compacted, grads, expected = both(y)
        assert compacted != jit_compile
        assert list(shape) == ([3, 12, vocab.VOCAB_SIZE] if jit_compile
                               else [1, rows, vocab.VOCAB_SIZE])
        np.testing.assert_allclose(float(by_step), float(every), rtol=1e-6)
        vanilla_head = {id(v) for v in model.vanilla_head.trainable_variables}
        for variable, grad, want in zip(variables, grads, expected):
            if grad is None or want is None:  # an output block this batch does not select
                assert grad is want is None, variable.path
                continue
            np.testing.assert_allclose(ops.convert_to_numpy(grad), ops.convert_to_numpy(want),
                                       rtol=1e-5, atol=1e-7, err_msg=variable.path)
            if not rows and id(variable) in vanilla_head:
                assert not np.any(ops.convert_to_numpy(grad)), variable.path


@pytest.mark.usefixtures("eager")
def test_only_fits_train_step_leaves_the_vanilla_head_to_the_loss():
    """``fit``'s train step hands the loss the vanilla set's output (the head applied in
    :meth:`loss_inputs`); a training call of the user's own, after ``compile``, still
    returns the vanilla head's logits. Eager: the step's Python is the same traced or
    not, and tracing it cost more than the step (29.8 -> 21.0 CPU s, the test alone)."""
    import keras

    import nemot

    model = nemot.build_model(nemot.NeMoTConfig.preset("tiny").replace(max_text_length=6),
                              preprocessor=None)
    model.compile(keras.optimizers.SGD(0.1))
    ids = np.array([[vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id("gqa"),
                     101, 102, 103, 104, 105, 106]] * 2, "int32")
    targets = np.full((2, 6), vocab.IGNORE_ID, "int32")
    targets[:, 3] = 7
    seen = []
    loss_inputs = model.loss_inputs
    model.loss_inputs = lambda y, y_pred: (seen.append(sorted(y_pred)),
                                           loss_inputs(y, y_pred))[1]
    model.fit({"token_ids": ids}, {"task_targets": targets, "lm_targets": ids[:, 3:]},
              batch_size=2, epochs=1, verbose=0)
    assert seen and all(keys == ["logits", "vanilla_hidden_states"] for keys in seen)
    assert sorted(model({"token_ids": ids}, training=True)) == ["logits", "vanilla_logits"]
