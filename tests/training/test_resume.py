"""Kill a training process with SIGKILL, or stop it with SIGTERM, start it again, get the
uninterrupted weights and results rows.

Dropout stays ON (rate 0.1): the checkpoint holds the dropout RNG state
(``keras.random.SeedGenerator`` states), the optimizer (step included) and the
data position, so the resumed run draws the same masks and batches.
"""

import json
import os
import re
import signal
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _victim(out, *flags):
    """The run to stop, in its own process (``--hang-at N``: it prints HANGING after step N
    and sleeps; ``--pause-at N``: PAUSED, and a second's wait after each step). Eager
    (tests/conftest.py's ``eager`` fixture says why): what is tested is the checkpoint's
    content, the same in a graph."""
    cmd = [sys.executable, "-m", "tests.training.worker", str(out), "--eager", *flags]
    return subprocess.Popen(cmd, cwd=ROOT, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(victim, word):
    for line in victim.stdout:
        if line.startswith(word):
            return
    raise AssertionError(f"the worker ended before printing {word}")


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


@pytest.mark.usefixtures("eager")
def test_sigkill_then_resume_gives_the_uninterrupted_weights(tmp_path, reference, caplog):
    from tests.training import worker

    interrupted = tmp_path / "interrupted"
    # The resumed run runs here, the next command in another process than the killed one.
    victim = _victim(interrupted, "--hang-at", "3")
    try:
        _wait_for(victim, "HANGING")
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=60)
        assert victim.returncode == -signal.SIGKILL
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait()
    # Killed after step 3: the newest checkpoint is step 2 (every 2 steps), in the middle of
    # the first epoch of 4 steps, so steps 3.. are redone, across the epoch boundary.
    state = interrupted / "train_state"
    assert sorted(p.name for p in state.glob("ckpt-*.npz")) == ["ckpt-2.npz"]
    assert not (interrupted / "weights.npz").exists()
    with caplog.at_level("INFO", logger="nemot.training"):
        worker.run(interrupted)
    # Resumed, not started again (that too would end at the reference's weights).
    assert f"resumed from step 2 (checkpoint {state / 'ckpt-2.npz'})" in caplog.text
    _resumed_as_uninterrupted(interrupted, reference)


@pytest.mark.usefixtures("eager")
def test_sigterm_stops_at_a_step_with_its_checkpoint_and_resumes(tmp_path, reference, caplog):
    """A preempted machine's SIGTERM: the step under way ends, its checkpoint is written,
    the process exits with 75 (try again) and one line saying so; the same run resumes
    from that step to the uninterrupted run's weights and rows."""
    from tests.training import worker

    interrupted = tmp_path / "interrupted"
    victim = _victim(interrupted, "--pause-at", "1")
    try:
        _wait_for(victim, "PAUSED")
        victim.send_signal(signal.SIGTERM)
        _, err = victim.communicate(timeout=120)
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait()
    assert victim.returncode == 75, err
    last = err.strip().splitlines()[-1]
    stopped = re.fullmatch(r"error: SIGTERM received: stopped at step (\d+) after writing "
                           r"(\S+); the same command resumes from it", last)
    assert stopped, err
    step, path = int(stopped[1]), stopped[2]
    # Step 2, in the first epoch's middle, when the signal lands in the wait after step 1;
    # a later one on a slow machine.
    assert 2 <= step <= 8 and path == str(interrupted / "train_state" / f"ckpt-{step}.npz")
    assert os.path.exists(path)
    with caplog.at_level("INFO", logger="nemot.training"):
        worker.run(interrupted)
    assert f"resumed from step {step} (checkpoint {path})" in caplog.text
    _resumed_as_uninterrupted(interrupted, reference)
