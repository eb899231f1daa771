"""Every model on Keras's JAX backend: one subprocess with KERAS_BACKEND=jax
(the backend is fixed at import) runs tests/jax_worker.py at tiny sizes (and, in the same
process, tests/training/jax_runs.py for tests/training/test_jax_runs.py); each test
checks one part of its report. JAX's CPU wheel comes with the ``test`` extra."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import CHEAP_XLA_FLAGS
from tests.layers import attention_cases
from tests.models import test_golden
from tests.models.test_routing import check_block_updates, check_replica_masks
from tests.once import once, session_root

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Two CPU devices for keras.distribution; the suite's cheap XLA compilation (numerics
# unchanged): tiny graphs compile in seconds instead of a minute on two shared cores, and
# without the CPU fusion emitters the worker takes 90 s instead of 133 s alone (the same
# report, 2026-11-27). Each program's machine code in one LLVM module instead of split
# into parts for parallel codegen, which two busy cores cannot use: XLA's compile time
# of the worker's programs 16% less on the 2-core machine. Its programs' kernels on one
# thread (Eigen's pool sized to two cores that three pytest workers share): the
# subprocess alone, side by side, 228 -> 210 CPU seconds (2026-11-29).
XLA_FLAGS = (f"--xla_force_host_platform_device_count=2 {CHEAP_XLA_FLAGS} "
             "--xla_cpu_parallel_codegen_split_count=1 --xla_cpu_multi_thread_eigen=false "
             "intra_op_parallelism_threads=1")


def jax_environment(tmp_path_factory):
    """The environment of a JAX subprocess of the test run: the backend, :data:`XLA_FLAGS`,
    and JAX's persistent compilation cache in a directory the run's JAX processes
    share, every program in it however quickly it compiled. A program compiled once is
    read back where it compiles again, in that process or another: the tiny training step
    of tests/faults.py compiles once for its killed run, its uninterrupted run and the
    resumption (a run's CPU time 28 s the first time, 12 s read back). An entry read while
    another process writes it fails its decompression, and the program compiles."""
    cache = session_root(tmp_path_factory) / "jax-compilation-cache"
    return dict(os.environ, KERAS_BACKEND="jax", XLA_FLAGS=XLA_FLAGS, TF_CPP_MIN_LOG_LEVEL="3",
                JAX_COMPILATION_CACHE_DIR=str(cache),
                JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")


def jax_reports(tmp_path_factory):
    """The directory of the test run's one JAX subprocess, whichever xdist worker asks
    first: tests/jax_worker.py's ``report.json`` and tests/training/jax_runs.py's
    ``runs/report.json``, from one process (an import of JAX, Keras and TensorFlow less
    than a process each). A part that failed left its traceback instead
    (:func:`read_report`); the other part's tests still run."""
    def produce(directory):
        runs = directory / "runs"
        done = subprocess.run([sys.executable, "-m", "tests.jax_worker",
                               str(directory / "report.json"), str(runs)], cwd=ROOT,
                              env=jax_environment(tmp_path_factory),
                              capture_output=True, text=True, timeout=2700)
        (directory / "stderr.txt").write_text(f"exit status {done.returncode}\n"
                                              f"{done.stderr[-3000:]}")
        # The tests read only the reports; the runs' models take about 3 GB.
        for path in runs.iterdir() if runs.is_dir() else ():
            if path.is_dir():
                shutil.rmtree(path)
            elif path.name not in ("report.json", "error.txt"):
                path.unlink()

    return once(tmp_path_factory, "jax", produce)


def read_report(path, error):
    """The JSON report at ``path``; if its part failed, an assertion naming the traceback
    in ``error`` (or the process's stderr)."""
    if not path.is_file():
        stderr = path.parent / "stderr.txt"
        message = (error if error.is_file() else stderr if stderr.is_file() else None)
        raise AssertionError(f"no {path.name}: " + (message.read_text() if message else ""))
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    directory = jax_reports(tmp_path_factory)
    return read_report(directory / "report.json", directory / "report.json.error")


@pytest.mark.parametrize("model", ["nemot", "baseline", "nemot_pals_og",
                                   "nemot_ffn_hypergrid"])
def test_fit_step_and_cached_decoding(report, model):
    assert np.isfinite(report[model]["loss"])
    assert report[model]["cached"] == report[model]["recomputed"]
    assert all(len(ids) == 4 for ids in report[model]["cached"])
    if model == "nemot_pals_og":  # no cache: generate recomputes through a compiled pass
        after = report[model]["after_update"]
        assert after["generated"] == after["recomputed"] != report[model]["cached"]


def test_ngt_pals_hypergrid_and_modulated_activations_train(report):
    assert np.isfinite(report["ngt_loss"])
    assert np.isfinite(report["pals_loss"])
    assert np.isfinite(report["hypergrid_loss"])
    assert set(report["modact_losses"]) == {"cnn", "lstm"}
    assert all(np.isfinite(v) for v in report["modact_losses"].values())


def test_fused_attention_and_lean_loss_match(report):
    assert report["fused_attention_difference"] < 1e-5
    assert report["loss_relative_difference"] < 1e-5


def test_a_padded_vocabulary_scores_and_decodes_as_the_unpadded_model(report):
    padded = report["padded_vocabulary"]
    assert padded["width"] == 50313 and padded["logit_difference"] < 1e-5
    assert set(padded["terms"]["1"]) == {"task", "lm", "vanilla"}
    for term, value in padded["terms"]["1"].items():
        assert padded["terms"]["64"][term] == pytest.approx(value, rel=1e-6), term
    assert padded["cached_padded"] == padded["recomputed"]["64"] == padded["recomputed"]["1"]


def test_tiny_forward_pass_gives_the_stored_logits(report):
    np.testing.assert_allclose(report["golden_logits"], test_golden.GOLDEN, atol=5e-5)


@pytest.mark.parametrize("length_multiple", ["None", "64"])
def test_fused_attention_outputs_and_gradients_on_every_mask(report, length_multiple):
    cases = report["fused_attention_cases"][length_multiple]
    assert set(cases) == set(attention_cases.MASKS)
    for name, (output, gradient, largest) in cases.items():
        assert output < 1e-5 and gradient < 1e-5 and largest > 1e-2, name


def test_dropout_generators(report):
    n = 256 * 1024 * 2
    for impl in ("threefry", "rbg"):
        assert abs(report["dropout"][impl] - 0.9) < 5 * np.sqrt(0.09 / n), impl
    assert abs(report["dropout"]["salt_correlation"]) < 5 / np.sqrt(n / 2)


def test_output_blocks_as_one_loop_give_the_logits_and_gradients_of_a_branch_each(report):
    """The output set's loop over its blocks, and each set's over its layers
    (``scan_layers``: the vanilla and neuromodulatory sets, and each output block's three
    layers), against a branch per block and unrolled layers, dropout on."""
    stacked = report["stacked_output_blocks"]
    assert stacked["stacked_calls"] == 1  # the loop ran (traced once), then the branches
    # The loop over the blocks runs the first block's code: its layers are one loop too.
    assert stacked["scanned"] == ["block_lm", "neuromodulatory_set", "vanilla_set"]
    # Equal to round-off (the loop recomputes the block in the backward pass).
    assert stacked["logits"] <= 1e-5 * stacked["largest_logit"]
    assert stacked["gradient"] <= 1e-5 * stacked["largest_gradient"]
    # The block no example selects: zero gradient on every one of its variables.
    assert stacked["unselected_block_variables"] > 0
    assert stacked["unselected_block_gradient"] == 0


def test_recomputed_layers_give_the_same_logits_and_gradients(report):
    """``remat_layers`` (``jax.checkpoint`` around each transformer layer), dropout on:
    the model's logits and gradients to round-off (TensorFlow refuses the switch,
    tests/models/test_nemot.py)."""
    recomputed = report["recomputed_layers"]
    assert recomputed["logits"] <= 1e-5 * recomputed["largest_logit"]
    assert recomputed["gradient"] <= 1e-5 * recomputed["largest_gradient"]
    assert recomputed["largest_gradient"] > 0


def test_block_updates_and_masks_under_data_parallel(report):
    check_block_updates(report["routing"])
    check_replica_masks(report["routing"])
