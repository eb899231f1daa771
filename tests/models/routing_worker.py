"""Block updates and dropout masks on several replicas, in a process of their own.

    python -m tests.models.routing_worker OUT.json [--devices K]

On TensorFlow, ``--devices K`` splits the CPU into K logical devices (before
TensorFlow starts) and trains under ``MirroredStrategy``; on JAX (``KERAS_BACKEND=jax``
and ``XLA_FLAGS=--xla_force_host_platform_device_count=K`` set by the caller) under
``keras.distribution.DataParallel``. Writes what :func:`block_update_report` measured,
the dropout masks of two replicas and of one device for their global batch, and
(TensorFlow) NeMoT's loss on each replica (:func:`replica_losses`). The process leaves out
the optional modules it never uses (:func:`tests.training.worker.lean_imports`).
"""

import argparse
import contextlib
import json
import os
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

BLOCKS = ("lm", "mqa", "gqa")


def tiny_model(fused=False):
    """``fused``: nemot's Adam (TensorFlow's fused kernel) instead of Keras'."""
    import keras

    import nemot
    from nemot.models.losses import NeMoTLoss
    from nemot import optimizers

    keras.utils.set_random_seed(0)
    cfg = nemot.NeMoTConfig.preset("tiny").replace(
        num_vanilla_layers=1, num_nm_layers=1, output_blocks=BLOCKS, max_text_length=8)
    model = nemot.build_model(cfg)
    model.compile((optimizers.Adam if fused else keras.optimizers.Adam)(1e-2), loss=NeMoTLoss())
    return model


def _state(model, block):
    """Weights and Adam slots of one block, by name."""
    optimizer = model.optimizer
    out = {}
    for v in model.backbone.output_set.blocks[block].trainable_variables:
        index = optimizer._get_variable_index(v)
        out[v.path] = np.array(v.numpy())
        out[v.path + "/m"] = np.array(optimizer._momentums[index].numpy())
        out[v.path + "/v"] = np.array(optimizer._velocities[index].numpy())
    return out


def _change(a, b):
    return float(max(np.abs(a[k] - b[k]).max() for k in a))


def block_update_report(scope=contextlib.nullcontext(), replica_copies=None, fused=False,
                        model=None):
    """Two steps: ``[lm, lm, mqa, mqa]`` (with two replicas, each sees one task), then
    ``[lm] * 4``. Returns each block's largest change of weights or slots per step, and
    (``replica_copies(variable)`` -> arrays) the largest difference between replicas."""
    from nemot import vocab

    if model is None:
        with scope:
            model = tiny_model(fused)
    rng = np.random.default_rng(0)
    text = rng.integers(0, 1000, (4, 8)).astype("int32")
    y = {"task_targets": np.roll(text, -1, 1), "lm_targets": np.roll(text, -1, 1)}

    def step(tasks):
        aux = np.array([[vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id(t)] for t in tasks],
                       "int32")
        model.fit({"token_ids": np.concatenate([aux, text], 1)}, y, batch_size=4,
                  shuffle=False, verbose=0)

    step(["lm"] * 4)  # builds the optimizer; only lm moves
    states = [{b: _state(model, b) for b in BLOCKS}]
    for tasks in (["lm", "lm", "mqa", "mqa"], ["lm"] * 4):
        step(tasks)
        states.append({b: _state(model, b) for b in BLOCKS})
    report = {f"step{i}": {b: _change(states[i - 1][b], states[i][b]) for b in BLOCKS}
              for i in (1, 2)}
    if replica_copies is not None:
        report["replica_difference"] = max(
            float(np.abs(c - copies[0]).max())
            for v in model.variables for copies in [replica_copies(v)] for c in copies)
    return report


def _tf_main(devices):
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * devices)
    import keras

    from nemot import dropout as drop

    strategy = tf.distribute.MirroredStrategy([f"CPU:{i}" for i in range(devices)])

    def copies(variable):
        return [np.array(c.numpy()) for c in getattr(variable.value, "values", [variable.value])]

    # nemot's fused Adam here (each replica updates its own copies), Keras' on one device
    report = block_update_report(strategy.scope(), copies, fused=True)
    with strategy.scope():
        generator = keras.random.SeedGenerator(5)

    def replica():
        seed = drop.draw_seed(generator, True)
        return drop.dropout(tf.ones((64, 512)), 0.5, seed), seed

    masks, seeds = tf.function(lambda: strategy.run(replica))()
    seeds = [s.numpy().tolist() for s in strategy.experimental_local_results(seeds)]
    assert seeds[0] == seeds[1], seeds  # one mirrored generator
    report["replica_masks"] = [np.asarray(m.numpy() > 0).tolist()
                               for m in strategy.experimental_local_results(masks)]
    # One device drawing for the global batch, from the same seed.
    report["whole_mask"] = np.asarray(drop.dropout(tf.ones((2 * 64, 512)), 0.5,
                                                   seeds[0]).numpy() > 0).tolist()
    report["replica_losses"] = replica_losses(strategy)
    return report


def replica_losses(strategy):
    """NeMoT's loss and its terms on each replica, each holding its slice of
    tests/models/hand_loss.py's batch (tests/models/test_losses.py)."""
    import tensorflow as tf

    from nemot.models.losses import NeMoTLoss
    from tests.models import hand_loss

    y, y_pred = hand_loss.batch()
    size = hand_loss.BATCH // strategy.num_replicas_in_sync

    def local(context):
        rows = slice(context.replica_id_in_sync_group * size,
                     (context.replica_id_in_sync_group + 1) * size)
        return ({k: tf.constant(v[rows]) for k, v in y.items()},
                {k: tf.constant(v[rows]) for k, v in y_pred.items()})

    inputs = strategy.experimental_distribute_values_from_function(local)

    def loss(data):
        terms = NeMoTLoss().terms(*data)
        return NeMoTLoss()(*data), {name: value for name, (_, value) in terms.items()}

    losses, terms = tf.function(lambda: strategy.run(loss, args=(inputs,)))()
    values = strategy.experimental_local_results(losses)
    per_term = {k: strategy.experimental_local_results(t) for k, t in terms.items()}
    return [{"loss": float(value), "terms": {k: float(v[i]) for k, v in per_term.items()}}
            for i, value in enumerate(values)]


def _jax_main(devices):
    import jax
    import keras

    from nemot import dropout as drop

    assert len(jax.devices()) == devices, jax.devices()
    keras.distribution.set_distribution(keras.distribution.DataParallel(devices=jax.devices()))
    report = block_update_report()
    layout = keras.distribution.distribution().get_data_layout((2 * 64, 512))
    x = jax.device_put(np.ones((2 * 64, 512), "float32"), layout.backend_layout)
    seed = drop.draw_seed(keras.random.SeedGenerator(5), True)
    m = np.asarray(jax.jit(lambda x, s: drop.dropout(x, 0.5, s))(x, seed)) > 0
    report["replica_masks"] = [m[:64].tolist(), m[64:].tolist()]
    keras.distribution.set_distribution(None)
    report["whole_mask"] = (np.asarray(drop.dropout(np.ones((2 * 64, 512), "float32"), 0.5,
                                                    seed)) > 0).tolist()
    return report


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--devices", type=int, default=2)
    args = parser.parse_args(argv)
    from tests.training.worker import lean_imports

    lean_imports()
    if os.environ.get("KERAS_BACKEND") == "jax":
        report = _jax_main(args.devices)
    else:
        report = _tf_main(args.devices)
    with open(args.out, "w") as handle:
        json.dump(report, handle)
    return 0


if __name__ == "__main__":
    from nemot import console

    console.end_without_collecting()  # the process ends with it
    sys.exit(main())
