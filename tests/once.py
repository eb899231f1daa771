"""Expensive fixtures computed once per test run, across pytest-xdist workers.

Under pytest-xdist a module-scoped fixture runs once in each worker that gets one of its
tests. ``make test`` keeps a file's tests on one worker (``--dist loadfile``;
``--dist loadgroup`` does not group under pytest 9, whose node ids pytest-xdist 3.8
cannot rename), but ``pytest -n N`` alone spreads them. :func:`once` is xdist's
documented pattern for that: the first worker to ask fills a directory shared by the
run's workers, under a file lock; the others wait and read it.
"""

import fcntl
import os
import shutil


def session_root(tmp_path_factory):
    """The temporary directory of the whole test run, shared by its xdist
    workers."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once(tmp_path_factory, name, produce):
    """The directory ``produce(directory)`` filled, run once per test run; returns it.

    A failed ``produce`` leaves nothing behind, so the next test to ask runs it again
    (and fails with its own message).
    """
    base = session_root(tmp_path_factory)
    directory = base / f"once-{name}"
    with open(base / f"once-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not (directory / ".done").exists():
                shutil.rmtree(directory, ignore_errors=True)
                directory.mkdir()
                produce(directory)
                (directory / ".done").touch()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return directory
