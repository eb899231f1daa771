"""Runs killed inside their writes, writes that fail, two runs in one directory.

A few kill points here (tests/faults.py says how they are made); ``python -m bench faults``
tries every write event of the run at every stage and counts.
"""

import dataclasses
import errno
import json
import os
import subprocess
import sys

import pytest

from nemot import console, files
from tests import faults
from tests.data import fixtures


def test_a_training_run_killed_inside_its_writes_resumes_identically(tmp_path):
    # Write event 7 of the tiny run (tests/faults.py --trace) is the checkpoint at its step
    # 4, killed half written. Writes cut half way (the .keras models, results.csv) are
    # tests/test_files.py's; `python -m bench faults` kills the run at every write. The
    # killed run is a process of its own; the uninterrupted run and the next command run in this one, which the
    # file's other tests load TensorFlow into anyway.
    counts, details = faults.training_sweep(tmp_path, [(7, "partial")], jobs=1,
                                            resume_here=True)
    assert [d["write"] for d in details] == ["write ckpt-4.npz"], details
    assert counts == {"kill_points": 1, "killed": 1, "corrupt_files": 0, "resumed": 1,
                      "resumed_identically": 1, "named_errors": 0, "crashes": 0}, details


def test_a_data_prep_run_killed_inside_a_shard_write_finishes_identically(tmp_path):
    fixtures.write_c4(tmp_path / "raw", n_train=3)
    # Events: 0 shard 0, 1 the index, 2 shard 1, 3 the index, ...
    counts = faults.data_prep_sweep(tmp_path / "runs", tmp_path / "raw",
                                    [(2, "partial"), (3, "before_rename")], jobs=2)
    assert counts == {"kill_points": 2, "killed": 2, "finished": 2, "finished_identically": 2,
                      "crashes": 0}


@pytest.fixture
def tiny():
    import tensorflow as tf

    from tests.training.worker import tiny_run_config, tiny_source

    tf.config.run_functions_eagerly(True)
    try:
        yield tiny_run_config, tiny_source
    finally:
        tf.config.run_functions_eagerly(False)


def test_a_write_that_fails_keeps_the_previous_files_and_ends_in_one_line(tmp_path, tiny,
                                                                         monkeypatch, capsys):
    from nemot.training import trainer

    tiny_run_config, tiny_source = tiny
    out = tmp_path / "run"
    cfg = tiny_run_config("w", steps=2, checkpoint_every=0)  # two epochs of one step
    trainer.train(cfg, out_dir=out, source=tiny_source())
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert {"model_last.keras", "results.csv", "run_config.toml"} <= set(before)
    replace = os.replace

    def disk_full_for_models(source, target):
        if str(target).endswith(".keras"):
            raise OSError(errno.ENOSPC, "No space left on device")
        replace(source, target)

    monkeypatch.setattr(files.os, "replace", disk_full_for_models)
    more = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, epochs=3))
    status = console.run(lambda _: trainer.train(more, out_dir=out, source=tiny_source()), None)
    assert status == 1
    err = capsys.readouterr().err.strip()
    assert err == (f"error: could not write {out / 'model_last.keras'}: No space left on "
                   "device; any previous model_last.keras there is left as it was")
    after = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    for name in ("model_last.keras", "results.csv", "best.json"):
        assert after[name] == before[name], name
    assert not [p for p in out.iterdir() if files.is_temporary(p)]


def test_a_second_run_into_a_directory_in_use_is_refused(tmp_path, tiny):
    from nemot.training import trainer

    tiny_run_config, tiny_source = tiny
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    out = tmp_path / "run"
    out.mkdir()
    (out / files.LOCK_FILE).write_text(f"{other.pid} {os.uname().nodename}\n")
    try:
        with pytest.raises(files.DirectoryInUse, match=rf"{out} is in use by another training "
                                                       rf"run: process {other.pid} holds"):
            trainer.train(tiny_run_config("l", steps=2, checkpoint_every=0), out_dir=out,
                          source=tiny_source())
        assert [p.name for p in out.iterdir()] == [files.LOCK_FILE]  # nothing written
    finally:
        other.kill()
        other.wait()
    # Its process gone, the lock is taken over and the run goes ahead.
    trainer.train(tiny_run_config("l", steps=2, checkpoint_every=0), out_dir=out,
                  source=tiny_source())
    assert json.loads((out / "best.json").read_text())["loss_epoch"] is None
    assert not (out / files.LOCK_FILE).exists()


def _cut(path):
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)


def test_a_cut_newest_checkpoint_is_skipped_for_the_one_before_it(tmp_path, caplog):
    # A disk that lost the end of a written checkpoint: the run resumes from the previous
    # one (it holds the whole state) and says which it skipped; none readable is an error.
    import keras
    import numpy as np

    from nemot.training.checkpoints import CheckpointError, TrainingCheckpoint

    def model():
        net = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        net.compile(keras.optimizers.Adam())
        return net

    saved = model()
    checkpoint = TrainingCheckpoint(saved, tmp_path, keep=3)
    kernels = {}
    for step in (2, 4):
        saved.optimizer.iterations.assign(step)
        saved.layers[0].kernel.assign(np.full((3, 2), step, "float32"))
        kernels[step] = saved.layers[0].kernel.numpy()
        checkpoint.save()
    _cut(tmp_path / "ckpt-4.npz")

    restored = model()
    with caplog.at_level("WARNING", logger="nemot.training.checkpoints"):
        assert TrainingCheckpoint(restored, tmp_path).restore() == 2
    np.testing.assert_array_equal(restored.layers[0].kernel.numpy(), kernels[2])
    assert "skipped the unreadable checkpoint(s) ckpt-4" in caplog.text
    assert "resumed from ckpt-2" in caplog.text

    _cut(tmp_path / "ckpt-2.npz")
    with pytest.raises(CheckpointError, match="no checkpoint can be read .*ckpt-4.*ckpt-2"):
        TrainingCheckpoint(model(), tmp_path).restore()


def test_an_earlier_versions_tensorflow_checkpoint_still_resumes(tmp_path, caplog):
    # A run directory of an earlier version: tf.train checkpoints of the model, the
    # optimizer and the seed generators' states, as that version wrote them.
    import keras
    import numpy as np
    import tensorflow as tf

    from nemot.training.checkpoints import TrainingCheckpoint, seed_states

    class Noisy(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.seeds = keras.random.SeedGenerator(1)

    def model():
        net = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2), Noisy()])
        net.compile(keras.optimizers.Adam())
        net.optimizer.build(net.trainable_variables)
        return net

    old = model()
    old.optimizer.iterations.assign(4)
    old.layers[0].kernel.assign(np.full((3, 2), 4, "float32"))
    seed_states(old)[0].assign(np.array([7, 9], seed_states(old)[0].dtype))
    legacy = tf.train.Checkpoint(model=old, optimizer=old.optimizer,
                                 rng=[v.value for v in seed_states(old)])
    tf.train.CheckpointManager(legacy, tmp_path, max_to_keep=2, checkpoint_name="ckpt").save(
        checkpoint_number=4)

    new = model()
    checkpoint = TrainingCheckpoint(new, tmp_path)
    with caplog.at_level("INFO", logger="nemot.training.checkpoints"):
        assert checkpoint.restore() == 4
    assert "resumed from the TensorFlow checkpoint ckpt-4 of an earlier nemot" in caplog.text
    np.testing.assert_array_equal(new.layers[0].kernel.numpy(), np.full((3, 2), 4))
    np.testing.assert_array_equal(seed_states(new)[0].numpy(), [7, 9])
    # Its next checkpoint is the new form, which the next resume reads first.
    new.optimizer.iterations.assign(6)
    assert checkpoint.save() == str(tmp_path / "ckpt-6.npz")
    assert TrainingCheckpoint(model(), tmp_path).restore() == 6
