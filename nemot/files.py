"""Writing files that a kill cannot leave half written, and one run per directory.

**Atomic writes.** Every file a run or ``data_prep`` writes goes to a temporary name in
the same directory (``.<name>.<pid>.tmp<suffix>``, hidden, the suffix kept for writers
that check it, such as ``model.save``), is flushed to disk and renamed into place: a
process killed at any moment leaves the old file or the new one, never a part. A write
that fails (a full disk, a read-only directory) removes its temporary file, leaves the
previous file as it was and raises :class:`WriteError`, one line naming the path.

**Locks.** :func:`run_lock` holds ``<directory>/.lock`` (the process id and host) while a
run writes into ``directory``: a second run into it refuses, naming the directory and
the other process; a lock left by a process that no longer runs is taken over, and a
warning says so. Taking the lock removes the temporary files that killed writers left.

Example:
    >>> with atomic_open("results.csv", "w", newline="") as handle:   # doctest: +SKIP
    ...     handle.write("epoch,loss\\n1,0.5\\n")
    >>> with atomic_path("model_last.keras") as tmp:                  # doctest: +SKIP
    ...     model.save(tmp)
    >>> with run_lock("checkpoints/race"):                            # doctest: +SKIP
    ...     train(...)
"""

import contextlib
import errno
import json
import logging
import os
import shutil
import socket
from pathlib import Path

from nemot.errors import UserError

logger = logging.getLogger(__name__)
LOCK_FILE = ".lock"
TMP_MARK = ".tmp"


class WriteError(UserError):
    """A file could not be written; the previous file at that path is left as it was."""

    def __init__(self, path, error):
        self.path = str(path)
        reason = error.strerror or str(error) if isinstance(error, OSError) else str(error)
        super().__init__(f"could not write {path}: {reason}; any previous {Path(path).name} "
                         "there is left as it was")


class DirectoryInUse(UserError):
    """Another process that still runs holds the lock of an output directory."""


def temporary_path(path):
    """The temporary name ``path`` is written under: hidden, in the same directory, with
    the process id and ``path``'s suffix (``.keras``, ``.npz``) at its end."""
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}{TMP_MARK}{path.suffix}")


def is_temporary(path):
    """Whether ``path`` is the temporary file of an unfinished (or killed) write."""
    name = Path(path).name
    return name.startswith(".") and f"{TMP_MARK}" in name


def _writer_pid(path):
    """The process id in a temporary file's name (None when it has none)."""
    stem = Path(path).name.rpartition(TMP_MARK)[0]
    pid = stem.rpartition(".")[2]
    return int(pid) if pid.isdigit() else None


def remove_stale_temporaries(directory):
    """Remove the temporary files in ``directory`` left by killed writers (their process no
    longer runs); returns their names."""
    removed = []
    for path in Path(directory).iterdir():
        pid = _writer_pid(path) if is_temporary(path) else None
        if pid is not None and pid != os.getpid() and not _alive(pid):
            _remove(path)
            removed.append(path.name)
    return removed


def _fsync_directory(directory):
    """Make a rename in ``directory`` durable (POSIX; nothing to do where a directory
    cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove(path):
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path in ``path``'s directory for a writer to fill; on leaving
    the block it is synced and renamed to ``path``. An exception removes it and leaves
    ``path`` as it was; an ``OSError`` becomes a :class:`WriteError` naming ``path``."""
    path = Path(path)
    tmp = temporary_path(path)
    try:
        yield tmp
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as error:
        _remove(tmp)
        if isinstance(error, (FileNotFoundError, NotADirectoryError)) and not path.parent.is_dir():
            raise WriteError(path, OSError(errno.ENOENT, "no such directory")) from error
        raise WriteError(path, error) from error
    except BaseException:
        _remove(tmp)
        raise
    _fsync_directory(path.parent)


@contextlib.contextmanager
def atomic_open(path, mode="w", encoding=None, newline=None):
    """``open(path, mode)`` for writing, atomically (see :func:`atomic_path`); text modes
    default to UTF-8."""
    if "b" not in mode and encoding is None:
        encoding = "utf-8"
    with atomic_path(path) as tmp:
        with open(tmp, mode, encoding=encoding, newline=newline) as handle:
            yield handle


def write_text(path, text, encoding="utf-8"):
    """Write ``text`` to ``path`` atomically."""
    with atomic_open(path, "w", encoding=encoding, newline="") as handle:
        handle.write(text)


def write_bytes(path, data):
    """Write ``data`` to ``path`` atomically."""
    with atomic_open(path, "wb") as handle:
        handle.write(data)


def write_json(path, value, **dump):
    """Write ``value`` as JSON (UTF-8, a final newline) to ``path`` atomically."""
    write_text(path, json.dumps(value, **dump) + "\n")


def copy(source, path):
    """Copy the file ``source`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        shutil.copyfile(source, tmp)


def read_text(path, error=UserError):
    """The UTF-8 text of ``path``, without the byte-order mark some editors write first; a
    byte that is not UTF-8 raises ``error`` (a :class:`~nemot.errors.UserError` class)
    naming the file, the line and the byte offset."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        line = data[:err.start].count(b"\n") + 1
        raise error(f"{path}: line {line}: expected UTF-8 text; byte 0x{data[err.start]:02x} at "
                    f"byte offset {err.start} is not ({err.reason})") from None


# ---------------------------------------------------------------- locks

def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _read_lock(path):
    """``(pid, host)`` of a lock file; ``(None, None)`` when it is unreadable or half
    written (its writer died before finishing it)."""
    try:
        fields = path.read_text(encoding="utf-8").split()
        return int(fields[0]), fields[1] if len(fields) > 1 else ""
    except (OSError, ValueError, IndexError):
        return None, None


def _create_lock(path):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(f"{os.getpid()} {socket.gethostname()}\n")


@contextlib.contextmanager
def run_lock(directory, what="run"):
    """Hold ``directory``'s lock file for the block (see the module docstring).

    Re-entrant within one process: a block inside another of the same process and
    directory holds nothing more. Raises :class:`DirectoryInUse` when a process that
    still runs (on this host) holds it.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / LOCK_FILE
    host = socket.gethostname()
    for _ in range(3):
        try:
            _create_lock(path)
            break
        except FileExistsError:
            pid, lock_host = _read_lock(path)
            if pid == os.getpid() and lock_host == host:
                yield  # this process holds it already
                return
            if pid is not None and (lock_host != host or _alive(pid)):
                where = "" if lock_host == host else f" on host {lock_host}"
                raise DirectoryInUse(
                    f"{directory} is in use by another {what}: process {pid}{where} holds "
                    f"its lock ({path}); wait for it to finish, or write to another directory "
                    "(--out)") from None
            logger.warning("%s: taking over the lock (%s) of process %s, which no longer runs",
                           directory, path, "unknown" if pid is None else pid)
            _remove(path)
        except OSError as error:
            raise WriteError(path, error) from error
    else:
        raise DirectoryInUse(f"{directory}: could not take its lock ({path}): other processes "
                             "keep taking it")
    removed = remove_stale_temporaries(directory)
    if removed:
        logger.info("%s: removed %d temporary file(s) of writes that were cut short: %s",
                    directory, len(removed), ", ".join(sorted(removed)))
    try:
        yield
    finally:
        if _read_lock(path)[0] == os.getpid():
            _remove(path)
