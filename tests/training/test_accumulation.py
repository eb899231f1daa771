"""Gradient accumulation (``train.gradient_accumulation_steps``): k micro-batches make the
update of their whole batch. Batches of 8 examples whose answers differ in length (each
loss term divides by its count over the whole batch) and whose tasks differ between
micro-batches (the routing rule must see the whole batch): 4 micro-batches of 2 end with
the weights of batches of 8, after several updates on a warm-up schedule (stepped once per
update), and a run stopped and resumed between them ends there too. SGD: its update is
linear in the gradient, so weights agree as closely as the gradients' sums (as in
tests/training/test_distributed.py). Dropout is off: a micro-batch draws its own dropout
masks, not its rows of the whole batch's (docs/training.md). Under MirroredStrategy:
tests/training/test_distributed.py."""

import numpy as np
import pytest
import tensorflow as tf

from nemot import vocab
from nemot.training import accumulation, checkpoints, trainer
from nemot.training.loop import DataSource
from nemot.training.run_config import run_config_from_dict

N = 8          # text positions
BATCH = 8
# The task of each example of the two batches: the first micro-batches of 2 select mqa or
# gqa, the last of each batch lm only (a rule that read only the micro-batch at hand would
# leave mqa and gqa where they were).
TASKS = [["mqa", "mqa", "gqa", "lm", "mqa", "lm", "lm", "lm"],
         ["gqa", "gqa", "mqa", "lm", "lm", "mqa", "lm", "lm"]]


def batches():
    """The two batches (x, y), answers of 1 to 6 tokens."""
    rng = np.random.default_rng(0)
    out = []
    for tasks in TASKS:
        text = rng.integers(10, 2000, (BATCH, N)).astype("int32")
        aux = np.array([[vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id(t)] for t in tasks],
                       "int32")
        task_targets = np.full((BATCH, N), vocab.IGNORE_ID, "int32")
        for row, length in enumerate(rng.integers(1, 7, BATCH)):
            task_targets[row, N - length:] = text[row, N - length:]
        lm_targets = np.roll(text, -1, 1)
        lm_targets[:, -1] = vocab.IGNORE_ID
        out.append(({"token_ids": np.concatenate([aux, text], 1)},
                    {"task_targets": task_targets, "lm_targets": lm_targets}))
    return out


def source():
    """The two batches in turn from batch ``start_batch`` on; an input pipeline that feeds
    several replicas gives each batch as their consecutive slices, in replica order."""
    data = batches()

    def train(start_batch, batch_size, input_context):
        assert batch_size == BATCH
        pipelines, replicas, pipeline = (1, 1, 0) if input_context is None else (
            input_context.num_input_pipelines, input_context.num_replicas_in_sync,
            input_context.input_pipeline_id)
        rows, parts = BATCH // replicas, replicas // pipelines
        first = pipeline * BATCH // pipelines
        elements = [tf.nest.map_structure(lambda a: a[first + p * rows:first + (p + 1) * rows],
                                          batch) for batch in data for p in range(parts)]
        stacked = tf.nest.map_structure(lambda *a: np.stack(a), *elements)
        return (tf.data.Dataset.from_tensor_slices(stacked).repeat()
                .skip(start_batch % len(data) * parts))

    return DataSource(train=train, steps_per_epoch=2)


def config(steps, epochs=2, checkpoint_every=0):
    return run_config_from_dict({
        "name": "accumulation", "kind": "general", "seed": 1,
        "model": {"preset": "tiny", "max_text_length": N, "num_vanilla_layers": 1,
                  "num_nm_layers": 1, "dropout": 0.0, "vanilla_attention_dropout": 0.0,
                  "output_blocks": ["lm", "mqa", "gqa"]},
        "data": {"validation_split": ""},
        "train": {"batch_size": BATCH, "epochs": epochs, "steps_per_epoch": 2, "verbose": 0,
                  "optimizer": "sgd", "gradient_accumulation_steps": steps,
                  "checkpoint_every": checkpoint_every, "init_blocks_from_lm": False},
        "schedule": {"type": "warmup_cosine", "start": 0.05, "peak": 0.5, "floor": 0.05,
                     "warmup_steps": 3, "decay_steps": 10}})


def weights(result):
    return {v.path: np.asarray(v.numpy()) for v in result.model.weights}


@pytest.mark.usefixtures("eager")
def test_four_micro_batches_end_with_the_weights_of_their_batch_and_resume_there(tmp_path):
    whole = trainer.train(config(1), out_dir=tmp_path / "whole", source=source())
    micro = trainer.train(config(4, checkpoint_every=1), out_dir=tmp_path / "micro",
                          source=source())
    assert whole.step == micro.step == 4
    assert int(micro.model.optimizer.iterations.numpy()) == 4   # updates, not micro-batches
    assert len(micro.history["loss"]) == 2
    np.testing.assert_allclose(micro.history["loss"], whole.history["loss"], rtol=1e-5)
    a, b = weights(whole), weights(micro)
    for name in a:
        np.testing.assert_allclose(b[name], a[name], atol=1e-5, rtol=0, err_msg=name)
    # Checkpoints at update boundaries only: one per update, each with empty accumulators.
    state = tmp_path / "micro" / "train_state"
    names = sorted(p.name for p in state.glob("ckpt-*.npz"))
    assert names == [f"ckpt-{s}.npz" for s in (1, 2, 3, 4)][-len(names):]
    assert names[-1] == "ckpt-4.npz"
    index, arrays = checkpoints.read(state / "ckpt-3.npz")
    sums = [f"optimizer/{i}" for i, (path, _, _) in enumerate(index["variables"]["optimizer"])
            if "gradient_accumulator" in path]
    assert len(sums) == len(micro.model.trainable_variables)
    assert not any(arrays[name].any() for name in sums)

    # Stopped after the first epoch (two updates), resumed for the second.
    trainer.train(config(4, epochs=1), out_dir=tmp_path / "resumed", source=source())
    resumed = trainer.train(config(4), out_dir=tmp_path / "resumed", source=source())
    assert resumed.step == 4
    for name, value in weights(resumed).items():
        np.testing.assert_allclose(value, a[name], atol=1e-5, rtol=0, err_msg=name)


def test_a_batch_that_micro_batches_cannot_share_is_refused_by_its_keys():
    with pytest.raises(ValueError, match=r"train.batch_size = 6 is not divisible into "
                                         r"train.gradient_accumulation_steps = 4 micro-batches"):
        accumulation.check_batch(6, 4, 1)
    with pytest.raises(ValueError, match="and 2 replicas: expected a multiple of 8"):
        accumulation.check_batch(12, 4, 2)


def main(argv):
    """``python -m tests.training.test_accumulation OUT`` (tests/training/test_distributed.py
    forks it): 4 micro-batches on two MirroredStrategy replicas (two logical CPUs) against
    the batches of 8 on one device, eagerly; writes ``OUT/report.json``, the largest
    difference of a weight and the largest weight."""
    import json
    from pathlib import Path

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    tf.config.run_functions_eagerly(True)
    from nemot.training import distributed

    out = Path(argv[0])
    mirrored = trainer.train(config(4), out_dir=out / "mirrored", source=source(),
                             strategy=distributed.make_strategy("mirrored"))
    whole = trainer.train(config(1), out_dir=out / "whole", source=source())
    a, b = weights(whole), weights(mirrored)
    report = {"replicas": mirrored.model.distribute_strategy.num_replicas_in_sync,
              "steps": [whole.step, mirrored.step],
              "difference": max(float(np.abs(a[k] - b[k]).max()) for k in a),
              "largest": max(float(np.abs(a[k]).max()) for k in a)}
    (out / "report.json").write_text(json.dumps(report))
    return 0
