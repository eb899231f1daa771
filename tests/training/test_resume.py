"""Kill a training process with SIGKILL, start it again, get the uninterrupted weights.

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

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _worker(out, *extra, wait=True):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    # Eager (tests/conftest.py's ``eager`` fixture says why): what is tested is the
    # checkpoint's content, the same in a graph.
    cmd = [sys.executable, "-m", "tests.training.worker", str(out), "--eager", *extra]
    if wait:
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return done
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)


def test_sigkill_then_resume_gives_the_uninterrupted_weights(tmp_path):
    reference, interrupted = tmp_path / "reference", tmp_path / "interrupted"
    # The reference runs while the other process trains up to its kill point.
    victim = _worker(interrupted, "--hang-at", "5", wait=False)
    ref = _worker(reference, "--hang-at", "0", wait=False)
    try:
        for line in victim.stdout:
            if line.startswith("HANGING"):
                break
        else:
            raise AssertionError("the worker ended before reaching step 5")
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=60)
        assert victim.returncode == -signal.SIGKILL
        # Killed after step 5: the newest checkpoint is step 4 (every 2 steps), so
        # steps 5.. are redone, across the epoch boundary at step 4.
        state = interrupted / "train_state"
        assert sorted(p.name for p in state.glob("ckpt-*.index")) == [
            "ckpt-2.index", "ckpt-4.index"]
        assert not (interrupted / "weights.npz").exists()
        _worker(interrupted)
        assert ref.wait(timeout=600) == 0
    finally:
        for process in (victim, ref):
            if process.poll() is None:
                process.kill()
    final = np.load(interrupted / "weights.npz")
    expected = np.load(reference / "weights.npz")
    assert sorted(final.files) == sorted(expected.files)
    for name in expected.files:
        np.testing.assert_array_equal(final[name], expected[name], err_msg=name)
    assert json.loads((interrupted / "history.json").read_text())["step"] == 8
    rows = (interrupted / "results.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in rows] == ["epoch", "1", "2"]
