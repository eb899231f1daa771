"""Stop a training run with SIGTERM, start it again and kill it with SIGKILL, start it again:
the uninterrupted weights and results rows.

Dropout stays ON (rate 0.1): the checkpoint holds the dropout RNG state
(``keras.random.SeedGenerator`` states), the optimizer (step included) and the
data position, so the resumed run draws the same masks and batches.

One run directory serves both tests (:func:`stopped`): the SIGTERM test reads the first
stop, the SIGKILL test the second and runs the last resume.
"""

import contextlib
import io
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _victim(out, *flags):
    """The run to kill, in its own process (``--hang-at N``: it prints HANGING after step N
    and sleeps). Eager (tests/conftest.py's ``eager`` fixture says why): what is tested is
    the checkpoint's content, the same in a graph."""
    cmd = [sys.executable, "-m", "tests.training.worker", str(out), "--eager", *flags]
    return subprocess.Popen(cmd, cwd=ROOT, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(victim, word):
    for line in victim.stdout:
        if line.startswith(word):
            return
    raise AssertionError(f"the worker ended before printing {word}")


def _left(out):
    """The checkpoints in run directory ``out``, and whether its run ended."""
    return {"checkpoints": sorted(p.name for p in (out / "train_state").glob("ckpt-*.npz")),
            "ended": (out / "weights.npz").exists()}


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    """The tiny run stopped twice in one directory: SIGTERM in the wait after step 1 (this
    process: the signal from its training loop, as if in that wait; what is tested is the
    run's handler and its checkpoint, a worker process's exit status 75 is
    tests/training/test_distributed.py's), then the same command in another process,
    which resumes, killed with SIGKILL after step 3 (the next command runs in another
    process than the killed one). Returns the directory and what each stop left."""
    import tensorflow as tf

    from nemot import console
    from tests.training import worker

    out = tmp_path_factory.mktemp("stopped") / "run"
    err = io.StringIO()
    tf.config.run_functions_eagerly(True)
    try:
        with contextlib.redirect_stderr(err):
            status = console.run(lambda _: worker.run(out, signal_at=1), None)
    finally:
        tf.config.run_functions_eagerly(False)
    sigterm = {"status": status, "err": err.getvalue(), **_left(out)}
    victim = _victim(out, "--hang-at", "3")
    try:
        _wait_for(victim, "HANGING")
        victim.send_signal(signal.SIGKILL)
        _, victim_err = victim.communicate(timeout=60)
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait()
    sigkill = {"exit": victim.returncode, "err": victim_err, **_left(out)}
    return out, sigterm, sigkill


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted run's directory."""
    import tensorflow as tf

    from tests.training import worker

    out = tmp_path_factory.mktemp("reference")
    tf.config.run_functions_eagerly(True)
    try:
        worker.run(out)
    finally:
        tf.config.run_functions_eagerly(False)
    return out


def _resumed_as_uninterrupted(interrupted, reference):
    final = np.load(interrupted / "weights.npz")
    expected = np.load(reference / "weights.npz")
    assert sorted(final.files) == sorted(expected.files)
    for name in expected.files:
        np.testing.assert_array_equal(final[name], expected[name], err_msg=name)
    assert json.loads((interrupted / "history.json").read_text())["step"] == 8
    rows = (interrupted / "results.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in rows] == ["epoch", "1", "2"]
    # The resumed epoch's training loss covers all its steps, those before the stop
    # included (the checkpoint holds the running sums), as the uninterrupted run's.
    assert rows == (reference / "results.csv").read_text().splitlines()


def test_sigterm_stops_at_a_step_with_its_checkpoint_and_resumes(stopped):
    """A preempted machine's SIGTERM: the step under way ends, its checkpoint is written,
    the command exits with 75 (try again) and one line saying so; the same command
    resumes from that step (to the uninterrupted run's weights and rows: the SIGKILL
    test, after the second stop)."""
    out, sigterm, sigkill = stopped
    assert sigterm["status"] == 75, sigterm["err"]
    # Step 2, in the first epoch's middle: the step under way when the signal came.
    path = out / "train_state" / "ckpt-2.npz"
    assert sigterm["err"].strip().splitlines()[-1] == (
        f"error: SIGTERM received: stopped at step 2 after writing {path}; the same command "
        "resumes from it")
    assert sigterm["checkpoints"] == ["ckpt-2.npz"] and not sigterm["ended"]
    assert f"resumed from step 2 (checkpoint {path})" in sigkill["err"], sigkill["err"]


@pytest.mark.usefixtures("eager")
def test_sigkill_then_resume_gives_the_uninterrupted_weights(stopped, reference, caplog):
    from tests.training import worker

    out, _, sigkill = stopped
    assert sigkill["exit"] == -signal.SIGKILL, sigkill["err"]
    # Killed after step 3: the newest checkpoint is step 2 (every 2 steps), in the middle
    # of the first epoch of 4 steps, so steps 3.. are redone, across the epoch boundary.
    assert sigkill["checkpoints"] == ["ckpt-2.npz"] and not sigkill["ended"]
    state = out / "train_state"
    with caplog.at_level("INFO", logger="nemot.training"):
        worker.run(out)
    # Resumed, not started again (that too would end at the reference's weights).
    assert f"resumed from step 2 (checkpoint {state / 'ckpt-2.npz'})" in caplog.text
    _resumed_as_uninterrupted(out, reference)
