"""Notebook kernels forked from one process that has imported nemot, TensorFlow, Keras,
KerasHub and ipykernel already (tests/test_notebooks.py).

    python -m tests.kernels serve SOCKET     the server (ends when its standard input closes)
    python tests/kernels.py -f CONNECTION    a kernel: the kernel spec's command

A walkthrough's kernel spends ~9 of its CPU seconds importing what every notebook's first
cell imports; the server imports it once, as that cell does (nemot first, so TensorFlow
loads quietly), without starting TensorFlow's runtime (no device, op or thread pool yet),
and forks one kernel per notebook. The kernel spec's command is a launcher with only the
standard library: it sends the server its arguments, environment, working directory and
standard streams over a Unix socket, and the forked child becomes ``ipykernel`` in that
directory with that environment, its working directory first on ``sys.path``, as
``python -m ipykernel_launcher`` would be. The launcher stays as the kernel's process for
Jupyter: a signal to it is passed on to the kernel, its exit status is the kernel's, and
when it is killed (Jupyter's shutdown) the server kills the kernel. What the imports print
goes to the server's standard error, where the test reads it.
"""

import gc
import json
import os
import selectors
import signal
import socket
import sys
import time

ADDRESS = "NEMOT_TEST_KERNELS"


# ---------------------------------------------------------------- the server

def _preload():
    import nemot  # noqa: F401  (first, as the notebooks' first cell: TensorFlow loads quietly)
    import IPython.display  # noqa: F401
    import ipykernel.kernelapp  # noqa: F401
    import keras  # noqa: F401
    import keras_hub  # noqa: F401
    import matplotlib.pyplot  # noqa: F401  (its backend: the server's MPLBACKEND, the kernels')
    import matplotlib_inline.backend_inline  # noqa: F401
    import tensorflow as tf  # noqa: F401
    from tensorflow.python.eager import context

    import nemot.compare.model  # noqa: F401
    import nemot.data.c4.pipeline  # noqa: F401
    import nemot.data.qa.pipelines  # noqa: F401
    import nemot.data.qa.pool  # noqa: F401
    import nemot.data.synthetic.minbert  # noqa: F401
    import nemot.evaluation.evaluate  # noqa: F401
    import nemot.evaluation.perplexity  # noqa: F401
    import nemot.models.baseline  # noqa: F401
    from nemot.training import distributed, run_config, trainer  # noqa: F401

    # Forking is safe only before TensorFlow starts its runtime (its threads).
    assert not context.context()._initialized, "TensorFlow's runtime started in the server"


def _receive(connection):
    """A launcher's request and its three standard streams."""
    data, fds = b"", []
    while not data.endswith(b"\n"):
        chunk, more, _, _ = socket.recv_fds(connection, 1 << 20, 3)
        if not chunk:
            raise EOFError("the launcher closed its connection before its request")
        data, fds = data + chunk, fds + list(more)
    return json.loads(data), fds


def _kernel(request, fds):
    """In the forked child: become the kernel (never returns)."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[0] = request["cwd"]
    sys.argv = ["ipykernel_launcher", *request["argv"]]
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
        signal.signal(number, signal.SIG_DFL)
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()
    sys.exit(0)


def serve(path):
    _preload()
    gc.freeze()  # what every kernel shares, out of the garbage collector's sight (no copies)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen()
    print("READY", flush=True)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "listener")
    selector.register(sys.stdin, selectors.EVENT_READ, "stdin")
    kernels = {}  # pid -> the launcher's connection
    closing = False
    while not (closing and not kernels):
        for key, _ in selector.select(timeout=0.05):
            if key.data == "listener":
                connection, _ = listener.accept()
                request, fds = _receive(connection)
                pid = os.fork()
                if pid == 0:  # the kernel keeps no copy of the server's sockets
                    for held in (listener, connection, *kernels.values()):
                        held.close()
                    _kernel(request, fds)
                for fd in fds:
                    os.close(fd)
                kernels[pid] = connection
                connection.sendall(f"PID {pid}\n".encode())
                selector.register(connection, selectors.EVENT_READ, pid)
            elif key.data == "stdin":
                if not os.read(0, 4096):
                    closing = True
                    selector.unregister(sys.stdin)
                    for pid in kernels:
                        os.kill(pid, signal.SIGKILL)
            elif not key.fileobj.recv(1):  # the launcher is gone (killed): so is its kernel
                selector.unregister(key.fileobj)
                os.kill(key.data, signal.SIGKILL)
        while kernels:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if not pid:
                break
            connection = kernels.pop(pid)
            try:
                connection.sendall(f"EXIT {os.waitstatus_to_exitcode(status)}\n".encode())
            except OSError:  # the launcher went first
                pass
            if connection.fileno() >= 0:
                try:
                    selector.unregister(connection)
                except KeyError:  # unregistered at the launcher's end
                    pass
            connection.close()
    return 0


# ---------------------------------------------------------------- the launcher

def launch(argv):
    """The kernel spec's command: ask the server for a kernel, wait for its end."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.connect(os.environ[ADDRESS])
    request = json.dumps({"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()})
    socket.send_fds(server, [request.encode() + b"\n"], [0, 1, 2])
    replies = server.makefile("r")
    pid = int(replies.readline().split()[1])
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, lambda received, _: os.kill(pid, received))
    line = replies.readline()
    status = int(line.split()[1]) if line else 1
    if status < 0:  # killed by a signal: end as it did
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
        time.sleep(1)
    return status


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        sys.exit(serve(sys.argv[2]))
    sys.exit(launch(sys.argv[1:]))
