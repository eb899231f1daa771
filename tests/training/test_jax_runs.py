"""Every training entry point on Keras's JAX backend: the test run's one subprocess with
KERAS_BACKEND=jax and two CPU devices (tests/test_jax_backend.py's, which also runs
tests/jax_worker.py) runs tests/training/jax_runs.py (the commands' tiny forms, one
device against two, two hosts with a signal to one, a run killed inside a checkpoint
write and resumed); each test checks one part of its report."""

import json

import numpy as np
import pytest

from tests.test_jax_backend import jax_reports, read_report


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    runs = jax_reports(tmp_path_factory) / "runs"
    return read_report(runs / "report.json", runs / "error.txt")


@pytest.mark.parametrize("command", ["pretrain", "finetune", "train-general", "evaluate",
                                     "generate", "runs"])
def test_every_command_runs_on_jax(report, command):
    done = report["commands"][command]
    assert done["status"] == 0, done["err"]


def test_the_training_commands_write_their_run_directories(report):
    commands, files = report["commands"], set(report["commands"]["files"])
    for run, steps in (("pretrain", 2), ("boolq", 1), ("general", 2)):
        assert f"{run}/train_state/ckpt-{steps}.npz" in files, run
        assert {f"{run}/results.csv", f"{run}/best.json", f"{run}/model_last.keras",
                f"{run}/model_best_loss.keras"} <= files, run
        assert any(name.startswith(f"{run}/logs/") for name in files), run   # TensorBoard
    assert "done: step 2, epochs 1" in commands["pretrain"]["out"]
    assert "eval/boolq_dev_metrics.json" in files
    generated = json.loads(commands["generate"]["out"].splitlines()[0])
    assert generated["prompt"] == "<q> Is the sky blue? <sep>" and len(generated["ids"]) <= 3
    assert any(name.startswith("names/modulated/seed0/") for name in files)


def test_two_devices_end_with_the_weights_of_one_dropout_on(report):
    parallel = report["data_parallel"]
    assert parallel["devices"] == 2
    assert parallel["default"]["step"] == parallel["data-parallel"]["step"] == 4
    assert parallel["same_names"]
    # SGD (linear in the gradient): the weights agree as closely as the gradients' sums.
    assert parallel["weight_difference"] <= 1e-5 * max(parallel["largest_weight"], 1)
    np.testing.assert_allclose(parallel["data-parallel"]["loss"], parallel["default"]["loss"],
                               atol=1e-5)


def test_micro_batches_on_two_devices_end_with_the_weights_of_their_batches(report):
    """Gradient accumulation on JAX: 4 micro-batches of 2 under ``data-parallel`` (two
    devices) against batches of 8 on one device (tests/training/test_accumulation.py)."""
    accumulated = report["accumulation"]
    assert accumulated["steps"] == [4, 4]
    assert accumulated["difference"] <= 1e-5 * max(accumulated["largest"], 1)


def test_a_run_killed_inside_a_checkpoint_write_resumes_to_the_uninterrupted_weights(report):
    fault = report["fault"]
    assert fault["killed"] and fault["write"] == "write ckpt-4.npz", fault
    # The half-written checkpoint is a temporary file; ckpt-2 is the newest whole one.
    assert [name for name in fault["left"] if not name.startswith(".")] == ["ckpt-2.npz"]
    assert any(name.startswith(".ckpt-4.npz.") for name in fault["left"])
    assert [line.split()[0] for line in fault["resume"]] == ["CORRUPT", "RESUMED",
                                                             "CORRUPT", "RESUMED"]
    assert all(line.endswith(" []") for line in fault["resume"] if line.startswith("CORRUPT"))
    assert fault["identical"]


def test_tensorflow_strategies_and_checkpoints_are_refused_by_name_on_jax(report):
    refusals = report["refusals"]
    assert refusals["strategy"] == ("strategy 'mirrored' (a tensorflow strategy): on "
                                    "KERAS_BACKEND=jax expected one of ('default', "
                                    "'data-parallel', 'multi-host')")
    assert "holds TensorFlow checkpoints of an earlier nemot version (ckpt-4)" in \
        refusals["legacy"]
    assert "resume the run once with KERAS_BACKEND=tensorflow" in refusals["legacy"]


def test_two_hosts_agree_on_a_signal_to_one_and_resume_to_the_weights_of_one_device(report):
    """``--strategy multi-host``: two processes on 127.0.0.1 (``jax.distributed`` from
    Keras's environment). SIGTERM to the second in its wait after step 1: the hosts agree
    after every step (an all-gather of a flag), both stop at step 2 with their one line,
    the chief having written the checkpoint; both started again resume there and end with
    one device's weights, dropout on."""
    hosts = report["multi_host"]
    assert hosts.get("exits") == [75, 75], hosts["stderr"]
    chief, other = hosts["errors"]
    assert len(chief) == len(other) == 1, hosts["errors"]
    assert chief[0].startswith("error: a signal to another worker received: stopped at step 2 "
                               "after writing ") and "ckpt-2.npz" in chief[0], chief
    assert other[0] == ("error: SIGTERM received: stopped at step 2 after writing no "
                        "checkpoint (not the chief); the same command resumes from it")
    assert hosts["resumed_exits"] == [0, 0] and hosts["resumed"] == [True, True], hosts
    assert hosts["checkpoints"] == ["ckpt-2.npz", "ckpt-4.npz"]
    assert hosts["hosts_differ"] == 0
    # SGD: the weights agree as closely as the gradients' sums (data_parallel's bound).
    assert hosts["weight_difference"] <= 1e-5 * max(hosts["largest_weight"], 1)
