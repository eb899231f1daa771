"""Distribution: MirroredStrategy on 2 logical CPUs and two MultiWorkerMirroredStrategy
workers on 127.0.0.1 train like one device on the same global batch.

Each distributed run is a subprocess (logical devices and TF_CONFIG must be set before
TensorFlow initialises); the one-device run runs in the test's process. Dropout is off here: replicas draw different masks
than one device would. The one-device and mirrored runs are eager (tracing per replica
cost the mirrored run 36 s of CPU against 19 s eager; a traced mirrored ``fit`` is
tests/models/test_routing.py's), the two workers traced, as users run them. The first
gradient step was also checked by hand to agree to 1e-6 (loss and every gradient)
between one device and two replicas.
"""

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

from nemot.training import distributed
from tests.once import once

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# SGD: its update is linear in the gradient, so weights agree as closely as the
# gradients do (Adam would amplify rounding noise in near-zero gradients).
RUN = {"steps": 4, "checkpoint_every": 2, "dropout": 0, "optimizer": "sgd", "rate": 0.5}
STEPS = [arg for key, value in RUN.items() for arg in (f"--{key.replace('_', '-')}", str(value))]


def _start(out, *extra, env=None):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", **(env or {}))
    return subprocess.Popen([sys.executable, "-m", "tests.training.worker", str(out), *STEPS,
                             *extra], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def _finish(process):
    try:
        _, err = process.communicate(timeout=600)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err[-3000:]


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _assert_same_weights(a, b, atol):
    assert sorted(a.files) == sorted(b.files)
    for name in a.files:
        np.testing.assert_allclose(a[name], b[name], atol=atol, rtol=0, err_msg=name)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One device, 2 mirrored logical CPUs, two workers: all four steps, same data (run
    once per session, whichever xdist worker asks first). The one-device run runs in this
    process, which has TensorFlow loaded already, while the others run in theirs."""
    def produce(root):
        import tensorflow as tf

        from tests.training import worker

        ports = _free_ports(2)
        cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
        processes = [
            _start(root / "mirrored", "--strategy", "mirrored", "--devices", "2", "--eager"),
        ] + [
            _start(root / "multi", "--strategy", "multi-worker", env={
                "WORKER_TAG": str(i),
                "TF_CONFIG": json.dumps({"cluster": cluster,
                                         "task": {"type": "worker", "index": i}})})
            for i in range(2)
        ]
        tf.config.run_functions_eagerly(True)
        try:
            worker.run(root / "single", **RUN)
        except BaseException:
            for process in processes:
                process.kill()
            raise
        finally:
            tf.config.run_functions_eagerly(False)
        for process in processes:
            _finish(process)

    return once(tmp_path_factory, "distributed", produce)


def _history(path):
    return json.loads(path.read_text())


def test_mirrored_two_devices_equal_one_device(runs):
    single, mirrored = runs / "single", runs / "mirrored"
    _assert_same_weights(np.load(mirrored / "weights.npz"), np.load(single / "weights.npz"),
                         atol=1e-5)
    one, two = _history(single / "history.json"), _history(mirrored / "history.json")
    assert one["step"] == two["step"] == 4
    np.testing.assert_allclose(two["history"]["loss"], one["history"]["loss"], atol=1e-5)
    np.testing.assert_allclose(two["history"]["task_loss"], one["history"]["task_loss"],
                               atol=1e-5)


def test_two_workers_end_with_identical_weights(runs):
    multi = runs / "multi"
    first, second = np.load(multi / "weights0.npz"), np.load(multi / "weights1.npz")
    _assert_same_weights(first, second, atol=0)
    # ... and with the one-device weights: the all-reduced loss is the global one.
    _assert_same_weights(first, np.load(runs / "single" / "weights.npz"), atol=1e-5)
    history = _history(multi / "history0.json")
    assert history["step"] == 4
    # Only the chief (worker 0) wrote checkpoints and results.
    assert sorted(p.name for p in (multi / "train_state").glob("ckpt-*.npz")) == [
        "ckpt-2.npz", "ckpt-4.npz"]
    assert not list((multi / "train_state").glob(".worker_*"))


def test_strategy_names():
    assert distributed.make_strategy("default").num_replicas_in_sync == 1
    with pytest.raises(ValueError, match="expected one of"):
        distributed.make_strategy("tpu")
    with pytest.raises(ValueError, match=r"^strategy 'data-parallel' \(a jax strategy\): on "
                                         r"KERAS_BACKEND=tensorflow expected one of \('default', "
                                         r"'mirrored', 'multi-worker'\)$"):
        distributed.make_strategy("data-parallel")
    env = os.environ.pop("TF_CONFIG", None)
    try:
        with pytest.raises(ValueError, match="TF_CONFIG"):
            distributed.make_strategy("multi-worker")
    finally:
        if env is not None:
            os.environ["TF_CONFIG"] = env
