"""Distribution: MirroredStrategy on 2 logical CPUs (with and without gradient
accumulation) and two MultiWorkerMirroredStrategy workers on 127.0.0.1 train like one
device on the same global batch; a signal to one worker stops both at one step, a killed
worker stops the other, and both resume.

Each distributed run is a process of its own (logical devices and TF_CONFIG must be set
before TensorFlow initialises), forked from one that has imported TensorFlow without
starting it (tests/training/forks.py: ~7 CPU seconds of imports once, not once a worker);
the one-device run runs in the test's process. Dropout is on (the tiny run's 0.1): each
replica draws its rows of the masks one device draws for the global batch, so replicas
change nothing (nemot/dropout.py). The one-device and mirrored runs are eager
(tracing per replica cost the mirrored run 36 s of CPU against 19 s eager; a traced
mirrored ``fit`` is tests/models/test_routing.py's). The first gradient step was also
checked by hand to agree to 1e-6 (loss and every gradient) between one device and two
replicas.

The two workers' runs are one chain into one directory, each link a claim of its own
test, so that each pair of processes serves two of them: the chief killed half way
through writing the checkpoint of step 2 (the other stops, naming it); both started again
(from the first step: no checkpoint is whole), SIGTERM to the second worker in its wait
after step 1 (both stop at step 2); both started again, SIGKILL to the second after step 3
(the first stops, naming it); both started again, traced as users run them, to the end,
where they hold the one-device run's weights.
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from nemot.training import distributed
from tests.once import once

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# SGD: its update is linear in the gradient, so weights agree as closely as the
# gradients do (Adam would amplify rounding noise in near-zero gradients).
RUN = {"steps": 4, "checkpoint_every": 2, "dropout": 0.1, "optimizer": "sgd", "rate": 0.5}
STEPS = [arg for key, value in RUN.items() for arg in (f"--{key.replace('_', '-')}", str(value))]


def _start(out, *extra, env=None, stdout=subprocess.DEVNULL, forks=None):
    """A worker process into ``out``: a new Python, or forked by ``forks`` (a
    :class:`tests.training.forks.Forks`; its standard output is always readable)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", **(env or {}))
    if forks is not None:
        return forks.start([out, *STEPS, *extra], env)
    return subprocess.Popen([sys.executable, "-m", "tests.training.worker", str(out), *STEPS,
                             *extra], cwd=ROOT, env=env, stdout=stdout,
                            stderr=subprocess.PIPE, text=True)


def _error_line(err):
    """nemot's one line in a worker's standard error; TensorFlow's runtime may log after it
    as the process ends (a lost connection to a worker that exited first)."""
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, err
    return lines[0]


def _workers(out, *extra, stdout=subprocess.DEVNULL, forks=None, kill_at=None):
    """Two MultiWorkerMirroredStrategy workers on free local ports, into ``out``, each
    with its address as ``address``; ``kill_at``: ``{worker: EVENT:STAGE}``, a kill inside
    one of that worker's writes (tests/faults.py)."""
    cluster = {"worker": [f"127.0.0.1:{p}" for p in _free_ports(2)]}
    workers = []
    for i, address in enumerate(cluster["worker"]):
        kill = ["--kill-at", kill_at[i]] if kill_at and i in kill_at else []
        workers.append(_start(out, "--strategy", "multi-worker", *extra, *kill, stdout=stdout,
                              forks=forks, env={"WORKER_TAG": str(i), "TF_CONFIG": json.dumps(
                                  {"cluster": cluster, "task": {"type": "worker", "index": i}})}))
        workers[-1].address = address
    return workers


def _finish(process):
    """Its standard error, once it ended with 0."""
    try:
        _, err = process.communicate(timeout=600)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err[-3000:]
    return err


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


def _stop_the_second(out, number, pause_at, timeout, forks):
    """Two eager workers into ``out`` that wait a second after each step from ``pause_at``
    on; ``number`` (a signal) goes to the second once it waits. Returns what the tests
    read: both exit statuses (None: still running ``timeout`` seconds after the signal,
    then killed), their standard errors, the seconds from the signal until both ended, and
    the files then in ``out/train_state``."""
    workers = _workers(out, "--eager", "--pause-at", str(pause_at), stdout=subprocess.PIPE,
                       forks=forks)
    try:
        for line in workers[1].stdout:
            if line.startswith("PAUSED"):
                break
        workers[1].send_signal(number)
    except BaseException:
        for process in workers:
            process.kill()
        raise
    return _ended(workers, timeout, out)


def _kill_the_chief_in_its_write(out, point, timeout, forks):
    """Two eager workers into ``out``, the chief killed inside one of its writes (``point``,
    tests/faults.py's ``EVENT:STAGE``). Returns what :func:`_stop_the_second` returns, and
    the chief's address."""
    workers = _workers(out, "--eager", forks=forks, kill_at={0: point})
    workers[0].wait(timeout=300)
    return dict(_ended(workers, timeout, out), chief=workers[0].address)


def _ended(workers, timeout, out):
    """Both workers' exit statuses (None: still running ``timeout`` seconds from now, then
    killed), their standard errors, the seconds until both ended, the files then in
    ``out/train_state``."""
    errors, exits = [], []
    start = time.monotonic()
    try:
        for process in workers:
            try:
                errors.append(process.communicate(
                    timeout=max(1.0, start + timeout - time.monotonic()))[1])
                exits.append(process.returncode)
            except subprocess.TimeoutExpired:
                process.kill()
                errors.append(process.communicate()[1])
                exits.append(None)
        seconds = time.monotonic() - start
    finally:
        for process in workers:
            if process.poll() is None:
                process.kill()
                process.wait()
    state = out / "train_state"
    return {"exits": exits, "errors": errors, "seconds": round(seconds, 1),
            "train_state": sorted(p.name for p in state.iterdir()) if state.is_dir() else []}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One device, 2 mirrored logical CPUs, the two workers' chain (the module's docstring):
    all four steps, same data (run once per session, whichever xdist worker asks first).
    ``multi/chain.json`` holds what each stop left (:func:`_stop_the_second`) and the
    standard errors of the pair that ran to the end. The one-device run runs in this
    process, which has TensorFlow loaded already, while that pair runs in theirs."""
    def produce(root):
        import tensorflow as tf

        from tests.training import worker
        from tests.training.forks import Forks

        out = root / "multi"
        logs = root / "logs"
        logs.mkdir()
        with Forks(logs) as forks:
            mirrored = _start(root / "mirrored", "--strategy", "mirrored", "--devices", "2",
                              "--eager", forks=forks)
            accumulated = forks.start([root / "accumulation"], dict(os.environ),
                                      module="tests.training.test_accumulation")
            chain = {"chief_write": _kill_the_chief_in_its_write(out, "ckpt-2.npz:partial",
                                                                 timeout=60, forks=forks)}
            chain["signal"] = _stop_the_second(out, signal.SIGTERM, pause_at=1, timeout=300,
                                               forks=forks)
            # Within a minute: TensorFlow's coordination service notices the missing
            # heartbeats.
            chain["kill"] = _stop_the_second(out, signal.SIGKILL, pause_at=3, timeout=60,
                                             forks=forks)
            last = _workers(out, forks=forks)
            tf.config.run_functions_eagerly(True)
            try:
                worker.run(root / "single", **RUN)
            finally:
                tf.config.run_functions_eagerly(False)
            _finish(mirrored)
            _finish(accumulated)
            chain["end"] = {"errors": [_finish(process) for process in last]}
        (out / "chain.json").write_text(json.dumps(chain))

    return once(tmp_path_factory, "distributed", produce)


@pytest.fixture(scope="module")
def chain(runs):
    return json.loads((runs / "multi" / "chain.json").read_text())


def _history(path):
    return json.loads(path.read_text())


def _resumed_at_step_2(err, runs):
    checkpoint = runs / "multi" / "train_state" / "ckpt-2.npz"
    return f"resumed from step 2 (checkpoint {checkpoint})" in err


def test_mirrored_two_devices_equal_one_device(runs):
    single, mirrored = runs / "single", runs / "mirrored"
    _assert_same_weights(np.load(mirrored / "weights.npz"), np.load(single / "weights.npz"),
                         atol=1e-5)
    one, two = _history(single / "history.json"), _history(mirrored / "history.json")
    assert one["step"] == two["step"] == 4
    np.testing.assert_allclose(two["history"]["loss"], one["history"]["loss"], atol=1e-5)
    np.testing.assert_allclose(two["history"]["task_loss"], one["history"]["task_loss"],
                               atol=1e-5)


def test_micro_batches_on_two_replicas_end_with_the_weights_of_one_device(runs):
    """Gradient accumulation under MirroredStrategy: 4 micro-batches of 2, each split over
    two replicas, against batches of 8 on one device (tests/training/test_accumulation.py's
    run, in a process of its own with two logical CPUs)."""
    report = json.loads((runs / "accumulation" / "report.json").read_text())
    assert report["replicas"] == 2 and report["steps"] == [4, 4]
    assert report["difference"] <= 1e-5 * max(report["largest"], 1)


def test_a_chief_killed_inside_its_checkpoint_write_stops_the_other_naming_it(runs, chain):
    """The chief (worker 0) killed half way through writing the checkpoint of step 2: the
    other worker does not wait forever in its next all-reduce but stops within a minute
    with one line naming the chief (whose death takes the coordination service with it);
    the half-written file is a temporary one, which no resume reads, and the pair started
    again (the next test's) starts from the first step, the chief having removed it."""
    stop = chain["chief_write"]
    assert stop["exits"] == [-signal.SIGKILL, 75], stop["errors"]
    assert stop["seconds"] < 60
    address = re.escape(stop["chief"])
    assert re.fullmatch(rf"error: worker 0 \({address}\) stopped answering \(killed, or its "
                        r"machine lost\), so this worker stopped too; start every worker again "
                        r"with its same command to resume from the newest checkpoint in .*",
                        _error_line(stop["errors"][1])), stop["errors"][1]
    assert [name for name in stop["train_state"] if not name.startswith(".")] == []
    assert [name.split(".")[1] for name in stop["train_state"]] == ["ckpt-2"]
    assert not any("resumed from" in err for err in chain["signal"]["errors"])


def test_a_signal_to_one_worker_stops_both_at_one_step_and_both_resume(runs, chain):
    """SIGTERM to the second of two workers: after the step under way the workers agree
    (an all-reduce of a flag per step), the chief writes the checkpoint of that step, and
    both exit with 75 naming it; started again, both resume from it. Eager, as the
    mirrored run (the agreement is the same in a graph)."""
    stop = chain["signal"]
    assert stop["exits"] == [75, 75], stop["errors"]
    # Step 2 when the signal lands in the wait after step 1: the first epoch's last step,
    # so both stop after its validation (its results row) and its checkpoint.
    checkpoint = runs / "multi" / "train_state" / "ckpt-2.npz"
    assert [_error_line(err) for err in stop["errors"]] == [
        f"error: a signal to another worker received: stopped at step 2 after writing "
        f"{checkpoint}; the same command resumes from it",
        "error: SIGTERM received: stopped at step 2 after writing no checkpoint (not the "
        "chief); the same command resumes from it"]
    assert stop["train_state"] == ["ckpt-2.npz"]
    # The next pair of the chain (stopped by the next test's SIGKILL) resumed from it.
    for err in chain["kill"]["errors"]:
        assert _resumed_at_step_2(err, runs), err


def test_a_killed_worker_stops_the_other_with_its_name_and_both_resume(runs, chain):
    """SIGKILL to the second of two workers after step 3: the first does not wait forever
    in its next all-reduce but stops within a minute (TensorFlow's coordination service
    notices the missing heartbeats) with one line naming the lost worker and where the
    run resumes; the checkpoint of step 2 is whole, and both started again end at the
    uninterrupted one-device run's weights (the next test)."""
    stop = chain["kill"]
    assert stop["exits"] == [75, -signal.SIGKILL], stop["errors"]
    assert stop["seconds"] < 60
    state = runs / "multi" / "train_state"
    assert re.fullmatch(
        r"error: worker 1 \(127\.0\.0\.1:\d+\) stopped answering \(killed, or its machine "
        r"lost\), so this worker stopped too; start every worker again with its same command "
        rf"to resume from the newest checkpoint in {re.escape(str(state))}",
        _error_line(stop["errors"][0])), stop["errors"][0]
    assert stop["train_state"] == ["ckpt-2.npz"]
    for err in chain["end"]["errors"]:
        assert _resumed_at_step_2(err, runs), err
    _assert_same_weights(np.load(runs / "multi" / "weights0.npz"),
                         np.load(runs / "single" / "weights.npz"), atol=1e-5)


def test_two_workers_end_with_identical_weights(runs, chain):
    """The chain's last pair, traced as users run them, resumed at step 2 (after the
    other tests' stops): both end with the same weights, those of the uninterrupted
    one-device run, which ran eagerly: the graph's fused kernels round otherwise (7.5e-7
    at most here, 3.6e-6 for four traced steps), the tolerance of the mirrored run against
    one device."""
    multi = runs / "multi"
    first, second = np.load(multi / "weights0.npz"), np.load(multi / "weights1.npz")
    _assert_same_weights(first, second, atol=0)
    # ... and with the one-device weights: the all-reduced loss is the global one.
    _assert_same_weights(first, np.load(runs / "single" / "weights.npz"), atol=1e-5)
    history = _history(multi / "history0.json")
    # Step 4, the second epoch the only one this pair ran: resumed, not started again.
    assert history["step"] == 4 and len(history["history"]["loss"]) == 1, history
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
