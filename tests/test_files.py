"""Atomic writes leave the old file or the new one; a failed write names its path; one run
per directory (nemot.files)."""

import errno
import logging
import os
import subprocess
import sys

import pytest

from nemot import console, files


def _raise_on_replace(monkeypatch, error):
    def replace(source, target):
        raise error

    monkeypatch.setattr(files.os, "replace", replace)


@pytest.mark.parametrize("error", [OSError(errno.ENOSPC, "No space left on device"),
                                   PermissionError(errno.EROFS, "Read-only file system")])
def test_a_failed_write_leaves_the_old_file_and_names_the_path(tmp_path, monkeypatch, capsys,
                                                               error):
    path = tmp_path / "results.csv"
    files.write_text(path, "epoch,loss\n1,0.5\n")
    _raise_on_replace(monkeypatch, error)
    assert console.run(lambda _: files.write_text(path, "epoch,loss\n1,0.5\n2,0.4\n"),
                       None) == 1
    err = capsys.readouterr().err.strip()
    assert err == (f"error: could not write {path}: {error.strerror}; any previous "
                   "results.csv there is left as it was")
    assert path.read_text() == "epoch,loss\n1,0.5\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.csv"]  # no temporary left


def test_a_writer_that_fails_midway_leaves_nothing_behind(tmp_path):
    path = tmp_path / "model_last.keras"
    path.write_bytes(b"old model")
    with pytest.raises(RuntimeError, match="serialisation failed"):
        with files.atomic_path(path) as tmp:
            assert tmp.parent == tmp_path and tmp.name.endswith(".tmp.keras")
            assert files.is_temporary(tmp) and not files.is_temporary(path)
            tmp.write_bytes(b"half a mod")
            raise RuntimeError("serialisation failed")
    assert path.read_bytes() == b"old model"
    assert [p.name for p in tmp_path.iterdir()] == ["model_last.keras"]


def test_atomic_writes_replace_the_file_whole(tmp_path):
    path = tmp_path / "best.json"
    files.write_json(path, {"val_loss": 1.5})
    files.write_json(path, {"val_loss": 1.25})
    assert path.read_text() == '{"val_loss": 1.25}\n'
    files.copy(path, tmp_path / "copy.json")
    assert (tmp_path / "copy.json").read_bytes() == path.read_bytes()
    with pytest.raises(files.WriteError, match=r"could not write .*nowhere/x.txt: no such "
                                               "directory"):
        files.write_text(tmp_path / "nowhere" / "x.txt", "x")


def _sleeper():
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def test_a_directory_in_use_is_refused_naming_it_and_the_other_process(tmp_path):
    other = _sleeper()
    try:
        (tmp_path / files.LOCK_FILE).write_text(f"{other.pid} {os.uname().nodename}\n")
        with pytest.raises(files.DirectoryInUse) as caught:
            with files.run_lock(tmp_path, "training run"):
                pass
        message = str(caught.value)
        assert message.startswith(f"{tmp_path} is in use by another training run: process "
                                  f"{other.pid} holds its lock")
        assert (tmp_path / files.LOCK_FILE).read_text().split()[0] == str(other.pid)
    finally:
        other.kill()
        other.wait()


def test_a_lock_left_by_a_dead_process_is_taken_over_and_said(tmp_path, caplog):
    dead = _sleeper()
    dead.kill()
    dead.wait()
    (tmp_path / files.LOCK_FILE).write_text(f"{dead.pid} {os.uname().nodename}\n")
    with caplog.at_level(logging.WARNING, logger="nemot"):
        with files.run_lock(tmp_path):
            assert (tmp_path / files.LOCK_FILE).read_text().split()[0] == str(os.getpid())
            with files.run_lock(tmp_path):  # the same process again: already held
                pass
            assert (tmp_path / files.LOCK_FILE).exists()
    assert f"taking over the lock ({tmp_path / files.LOCK_FILE}) of process {dead.pid}, " \
           "which no longer runs" in caplog.text
    assert not (tmp_path / files.LOCK_FILE).exists()  # released


def test_two_processes_one_directory(tmp_path):
    """A second process asking for the lock of a directory the first holds is refused."""
    code = ("import sys, time; from nemot import files\n"
            "with files.run_lock(sys.argv[1]):\n"
            "    print('HELD', flush=True); time.sleep(60)\n")
    first = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert first.stdout.readline().strip() == "HELD"
        second = subprocess.run([sys.executable, "-c", code, str(tmp_path)],
                                capture_output=True, text=True, timeout=60)
        assert second.returncode == 1
        assert f"is in use by another run: process {first.pid}" in second.stderr
    finally:
        first.kill()
        first.wait()
