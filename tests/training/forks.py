"""Worker processes forked from one that has imported TensorFlow, Keras and nemot already.

    python -m tests.training.forks      (reads requests on stdin; :class:`Forks` drives it)

Each process of tests/training/worker.py spends ~7 of its ~13 CPU seconds importing
TensorFlow, Keras, KerasHub and nemot. This server imports them once (without starting
the backend's runtime: TensorFlow's devices, ops and thread pools, or JAX's backends) and
forks a child per worker: each child sets its own environment (``TF_CONFIG``,
``WORKER_TAG``, the ``KERAS_DISTRIBUTION_*`` of a JAX host, ``XLA_FLAGS``) and logical
devices as a fresh process would, runs ``main(argv)`` of its module
(tests/training/worker.py unless the request names another, e.g. tests/faults.py or
tests/training/jax_runs.py) and ends as a fresh process ends (its exit status, or the
signal that killed it). The children are separate processes, so a signal or a kill
reaches one worker as it would on a machine of its own. The server's Keras backend is that
of its environment (``KERAS_BACKEND``); its children's is the same.

Requests are JSON lines ``{"argv": [...], "env": {...}, "stdout": PATH, "stderr": PATH}``,
optionally ``"module"``; the server answers ``START pid`` for each and ``EXIT pid status``
(a signal: its negative number) as it reaps them, and ends once its input is closed and
its children have ended. The caller then waits for the server, so the CPU time of the
children counts for it (the suite's CPU seconds per test, tests/conftest.py) as that of its
own subprocesses does.
"""

import gc
import importlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ---------------------------------------------------------------- the server

def _preload():
    from tests.training import worker

    worker.lean_imports()
    import keras
    import tensorboard  # noqa: F401  (tf.summary's writer imports it on first use)
    import tensorflow as tf  # noqa: F401
    import tiktoken  # noqa: F401
    from tensorflow.python.eager import context

    import nemot.data.synthetic.qa  # noqa: F401
    import nemot.models.baseline  # noqa: F401
    from nemot import console  # noqa: F401
    from nemot.training import distributed, trainer  # noqa: F401
    from tests import faults  # noqa: F401

    # Forking is safe only before the backend starts its runtime (its threads), and the
    # children set logical devices and their XLA flags, which must come before it.
    assert not context.context()._initialized, "TensorFlow's runtime started in the server"
    if keras.backend.backend() == "jax":
        from jax._src import xla_bridge

        from tests.training import jax_runs  # noqa: F401

        assert not xla_bridge.backends_are_initialized(), "JAX's backend started in the server"


def _child(request, reply):
    """In the forked child: become the worker process and end as one (never returns)."""
    os.close(reply)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    os.environ.clear()
    os.environ.update(request["env"])
    from nemot import console

    console.end_without_collecting()
    module = request.get("module", "tests.training.worker")
    sys.argv = [f"-m {module}", *request["argv"]]
    for number in (signal.SIGTERM, signal.SIGCHLD):
        signal.signal(number, signal.SIG_DFL)

    # SystemExit, through the server's frames (none catches it): the interpreter ends as
    # the worker's own would, its exit handlers run.
    sys.exit(importlib.import_module(module).main(request["argv"]))


def serve():
    _preload()
    # What every child shares, out of the garbage collector's sight: no child's collection
    # touches (and so copies) those pages, and a child ends without walking them
    # (nemot.console.end_without_collecting, which each child also calls).
    gc.freeze()
    reply = os.dup(1)
    children, pending, closing = set(), b"", False
    while not (closing and not children):
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if not pid:
                break
            children.discard(pid)
            os.write(reply, f"EXIT {pid} {os.waitstatus_to_exitcode(status)}\n".encode())
        if closing or not select.select([0], [], [], 0.05)[0]:
            if closing:
                time.sleep(0.05)
            continue
        data = os.read(0, 65536)
        closing = not data
        pending += data
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            pid = os.fork()
            if pid == 0:
                _child(json.loads(line), reply)
            children.add(pid)
            os.write(reply, f"START {pid}\n".encode())
    return 0


# ---------------------------------------------------------------- the caller's side

class Forks:
    """The server as a context manager; :meth:`start` gives a :class:`Child`, which
    answers as much of ``subprocess.Popen`` as the tests use. Leaving the context kills
    the children still running and waits for the server."""

    def __init__(self, directory):
        self.directory = directory
        self.server = subprocess.Popen(
            [sys.executable, "-m", "tests.training.forks"], cwd=ROOT, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
        self.exits, self.started = {}, []
        self.changed = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.count = 0

    def _read(self):
        for line in self.server.stdout:
            kind, pid, *rest = line.decode().split()
            with self.changed:
                if kind == "START":
                    self.started.append(int(pid))
                else:
                    self.exits[int(pid)] = int(rest[0])
                self.changed.notify_all()
        with self.changed:
            self.ended = True
            self.changed.notify_all()

    ended = False

    def start(self, argv, env, module="tests.training.worker"):
        self.count += 1
        out = os.path.join(self.directory, f"fork-{self.count}")
        request = {"argv": [str(arg) for arg in argv], "env": env, "stdout": out + ".out",
                   "stderr": out + ".err", "module": module}
        open(request["stdout"], "w").close()
        with self.changed:
            self.server.stdin.write(json.dumps(request).encode() + b"\n")
            self.server.stdin.flush()
            if not self.changed.wait_for(lambda: len(self.started) >= self.count or self.ended,
                                         timeout=120):
                raise RuntimeError("the fork server did not start a worker")
            if self.ended:
                raise RuntimeError(f"the fork server ended (status {self.server.wait()})")
            return Child(self, self.started[self.count - 1], request)

    def _wait(self, pid, timeout):
        with self.changed:
            self.changed.wait_for(lambda: pid in self.exits or self.ended, timeout=timeout)
            if pid not in self.exits and self.ended:
                raise RuntimeError(f"the fork server ended (status {self.server.wait()}) "
                                   f"before worker {pid}")
            return self.exits.get(pid)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        with self.changed:
            running = [pid for pid in self.started if pid not in self.exits]
        for pid in running:
            os.kill(pid, signal.SIGKILL)
        self.server.stdin.close()
        try:
            self.server.wait(timeout=60)
        finally:
            if self.server.poll() is None:
                self.server.kill()
                self.server.wait()
        self.reader.join(timeout=10)


class _Lines:
    """A child's standard output, line by line as it writes it, to its end."""

    def __init__(self, child):
        self.child = child
        self.file = open(child.request["stdout"], encoding="utf-8")

    def __iter__(self):
        return self

    def __next__(self):
        while True:
            where = self.file.tell()
            line = self.file.readline()
            if line.endswith("\n"):
                return line
            ended = self.child.poll() is not None
            if ended and not line:
                raise StopIteration
            if ended:
                return line
            self.file.seek(where)
            time.sleep(0.05)


class Child:
    """A forked worker: ``pid``, ``returncode``, ``stdout`` (its lines as they come),
    ``send_signal``, ``kill``, ``poll``, ``wait`` and ``communicate`` (``(the rest of its
    standard output, its standard error)``), as ``subprocess.Popen``'s."""

    def __init__(self, forks, pid, request):
        self.forks, self.pid, self.request = forks, pid, request
        self.args = request["argv"]
        self.returncode = None
        self.stdout = _Lines(self)

    def poll(self):
        if self.returncode is None:
            self.returncode = self.forks._wait(self.pid, timeout=0)
        return self.returncode

    def wait(self, timeout=None):
        if self.returncode is None:
            self.returncode = self.forks._wait(self.pid, timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode

    def communicate(self, timeout=None):
        self.wait(timeout)
        with open(self.request["stderr"], encoding="utf-8", errors="replace") as handle:
            return self.stdout.file.read(), handle.read()

    def send_signal(self, number):
        if self.poll() is None:
            os.kill(self.pid, number)

    def kill(self):
        self.send_signal(signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(serve())
