"""The routing rule: an output block that no example of the batch selects keeps its weights
and its Adam slots, on one device and on two MirroredStrategy replicas (a subprocess:
logical devices must exist before TensorFlow starts); JAX: tests/test_jax_backend.py.
Also: each replica draws its rows of the dropout masks one device draws for the global
batch."""

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from tests.models import routing_worker
from tests.once import once

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def check_block_updates(report):
    # The first step selects lm and mqa (with two replicas: one each): both move.
    assert report["step1"]["lm"] > 1e-4 and report["step1"]["mqa"] > 1e-4
    # The second selects lm only: mqa has momentum from step 1 but must not move.
    assert report["step2"]["lm"] > 1e-4
    assert report["step2"]["mqa"] == 0.0
    assert report["step1"]["gqa"] == report["step2"]["gqa"] == 0.0


def check_replica_masks(report):
    """Each replica's mask is its rows of the mask one device draws for the global batch
    (replicas change nothing, dropout on): independent halves at the keep rate."""
    first, second = (np.array(m, dtype=float) for m in report["replica_masks"])
    np.testing.assert_array_equal(np.concatenate([first, second]),
                                  np.array(report["whole_mask"], dtype=float))
    n = first.size
    for mask in (first, second):
        assert abs(mask.mean() - 0.5) < 5 * np.sqrt(0.25 / n)
    assert abs(np.corrcoef(first.ravel(), second.ravel())[0, 1]) < 5 / np.sqrt(n)


def run_worker(tmp_path, env=None, devices=2):
    out = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "tests.models.routing_worker", str(out),
                           "--devices", str(devices)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, env=dict(os.environ, **(env or {})))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text())


def test_unselected_block_keeps_weights_and_slots_on_one_device():
    check_block_updates(routing_worker.block_update_report())


@pytest.mark.usefixtures("eager")
def test_an_eager_step_moves_only_the_selected_blocks_without_a_warning():
    # Eagerly, an unselected block runs on no example (TensorFlow partitions the batch; on
    # JAX ``ops.cond`` is Python's ``if`` and the block gets no gradient at all): the same
    # updates as a traced step, and no Keras "Gradients do not exist" warning at every step.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = routing_worker.block_update_report()
    check_block_updates(report)
    assert not [w for w in caught if "Gradients do not exist" in str(w.message)]


def test_the_optimizer_is_left_as_keras_made_it():
    # The rule lives in the task's train step: the optimizer's own update (and its filter
    # of missing gradients, which warns for any variable without one) are the class's.
    model = routing_worker.tiny_model()
    optimizer = model.optimizer
    assert "update_step" not in vars(optimizer)
    assert "_filter_empty_gradients" not in vars(optimizer)
    lm, mqa = (model.backbone.output_set.blocks[b].trainable_variables[0]
               for b in ("lm", "mqa"))
    with pytest.warns(UserWarning, match="Gradients do not exist"):
        optimizer._filter_empty_gradients([None, np.ones(mqa.shape)], [lm, mqa])


@pytest.mark.usefixtures("eager")  # the traced rule: the test on one device above
def test_recompiling_keeps_the_rule():
    model = routing_worker.tiny_model()
    model.compile(model.optimizer)
    check_block_updates(routing_worker.block_update_report(model=model))


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory):
    return json.loads((once(tmp_path_factory, "routing_mirrored", run_worker)
                       / "report.json").read_text())


def test_unselected_block_keeps_weights_and_slots_on_two_replicas(mirrored):
    check_block_updates(mirrored)
    # A block selected on one replica only is updated alike on both.
    assert mirrored["replica_difference"] == 0.0


def test_replicas_draw_their_rows_of_the_global_batchs_dropout_masks(mirrored):
    check_replica_masks(mirrored)
