"""Kill a training process with SIGKILL, start it again, get the uninterrupted weights and
results rows.

Dropout stays ON (rate 0.1): the checkpoint holds the dropout RNG state
(``keras.random.SeedGenerator`` states), the optimizer (step included) and the
data position, so the resumed run draws the same masks and batches.
"""

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _victim(out):
    """The run to kill, in its own process: it prints HANGING after step 3 and sleeps.
    Eager (tests/conftest.py's ``eager`` fixture says why): what is tested is the
    checkpoint's content, the same in a graph."""
    cmd = [sys.executable, "-m", "tests.training.worker", str(out), "--eager", "--hang-at", "3"]
    return subprocess.Popen(cmd, cwd=ROOT, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


@pytest.mark.usefixtures("eager")
def test_sigkill_then_resume_gives_the_uninterrupted_weights(tmp_path, caplog):
    from tests.training import worker

    reference, interrupted = tmp_path / "reference", tmp_path / "interrupted"
    # The uninterrupted run and the resumed one run here (the next command in another
    # process than the killed one); the reference while the victim trains up to its kill
    # point.
    victim = _victim(interrupted)
    try:
        worker.run(reference)
        for line in victim.stdout:
            if line.startswith("HANGING"):
                break
        else:
            raise AssertionError("the worker ended before reaching step 3")
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
    final = np.load(interrupted / "weights.npz")
    expected = np.load(reference / "weights.npz")
    assert sorted(final.files) == sorted(expected.files)
    for name in expected.files:
        np.testing.assert_array_equal(final[name], expected[name], err_msg=name)
    assert json.loads((interrupted / "history.json").read_text())["step"] == 8
    rows = (interrupted / "results.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in rows] == ["epoch", "1", "2"]
    # The resumed epoch's training loss covers its four steps, the two before the kill
    # included (the checkpoint holds the running sums), as the uninterrupted run's.
    assert rows == (reference / "results.csv").read_text().splitlines()
