"""Errors the user can fix, and how to tell them from bugs.

A :class:`UserError` means something the user gave is wrong (a file, a flag, a config
key, a line of data) and says which, and what was expected; the command line prints
it as one line, ``error: ...``, without a traceback. Every other exception is a bug
(or an unexpected failure) and keeps its traceback. :func:`user_message` is that
rule: user errors are

- :class:`UserError` and its subclasses (``nemot.data.DataError``,
  ``RunConfigError``, ...; new checks raise one of them, a ``ValueError`` subclass
  where callers catch ``ValueError``);
- ``FileNotFoundError``, ``NotADirectoryError``, ``IsADirectoryError`` and
  ``PermissionError``: the operating system refused a path the user named;
- a download that failed for want of a network (:func:`network_failure`), which
  :func:`downloads` turns into a message naming where a local copy can be given.
"""

import contextlib
import re
import socket
import sys

PATH_ERRORS = (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError)

# Exception types of the HTTP stacks that downloads use (KerasHub via kagglehub or
# huggingface_hub, Hugging Face datasets), looked up only in modules already imported.
_NETWORK_TYPES = {
    "requests.exceptions": ("ConnectionError", "Timeout"),
    "urllib3.exceptions": ("NewConnectionError", "NameResolutionError", "MaxRetryError"),
    "httpx": ("ConnectError", "ConnectTimeout"),
    "huggingface_hub.errors": ("LocalEntryNotFoundError", "OfflineModeIsEnabled"),
}


class UserError(Exception):
    """Something the user gave is wrong; the message names it and what was expected.

    ``status`` is the exit status of the command line (1; 2 for usage and config
    errors, as ``argparse`` uses).
    """

    status = 1


class ConfigError(UserError, ValueError):
    """A config key or a command-line flag has a wrong value."""

    status = 2


class Preempted(UserError):
    """A training process was asked to stop (SIGTERM, or Ctrl-C): it wrote a checkpoint at
    the end of the step under way and stopped; the same command resumes from it.

    Not a mistake of the user's, but told as one (one line, no traceback), with the exit
    status ``os.EX_TEMPFAIL`` (75): "try again", which a launcher's restart loop reads as
    "run the same command".
    """

    status = 75


class WorkerLost(UserError):
    """Another worker of a multi-worker run stopped answering (killed, or its machine
    lost): this one stops too, naming it; every worker started again resumes from the
    newest checkpoint. Exit status 75, as :class:`Preempted`: run the same commands again.
    """

    status = 75


class NoNetworkError(UserError):
    """A download failed because there is no network; the message names the key that
    takes a local directory instead."""


def network_failure(error):
    """The exception in ``error``'s chain (``__cause__`` / ``__context__``) that says the
    network could not be reached, or None."""
    # The builtin ConnectionError itself (Hugging Face datasets raises it), not its
    # subclasses such as BrokenPipeError, which a dying worker process causes too.
    types = [ConnectionRefusedError]
    for module_name, names in _NETWORK_TYPES.items():
        module = sys.modules.get(module_name)
        types += [getattr(module, name) for name in names if hasattr(module, name)]
    types = tuple(types)
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, types) or type(error) in (ConnectionError, socket.gaierror):
            return error
        error = error.__cause__ or error.__context__
    return None


def _unreachable(error):
    """The host (or the resource) a network error names, for a short message."""
    text = str(error)
    for pattern in (r"host='([^']+)'", r"https?://([^/\s'\"]+)", r"reach '([^']+)'"):
        match = re.search(pattern, text)
        if match:
            return match.group(1)
    return text[:100]


@contextlib.contextmanager
def downloads(*keys):
    """Within the block, a download that fails for want of a network raises
    :class:`NoNetworkError` naming ``keys``, where a local path can be given instead.

    Example:
        >>> with downloads("gpt2 (--gpt2 DIR, or --gpt2 none)"):
        ...     model = build_model(config, gpt2="gpt2_base_en")  # doctest: +SKIP
    """
    try:
        yield
    except Exception as error:
        failure = network_failure(error)
        if failure is None or not keys:
            raise
        raise NoNetworkError(
            f"no network: could not reach {_unreachable(failure)}; this machine is offline "
            f"or the host is down. Pass local files instead via {' or '.join(keys)}"
        ) from error


# Keras re-raises an error from inside a layer's call with the layer's arguments around
# the message, which it sets in bold with terminal codes.
_KERAS_CALL = re.compile(r"Exception encountered when calling .*?\n\n\x1b\[1m(.*?)\x1b\[0m",
                         re.DOTALL)
_TERMINAL_CODES = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def plain(text):
    """``text`` as a line for a user: the message alone where Keras wrapped it in the call's
    context, without terminal codes (bold, colours)."""
    match = _KERAS_CALL.search(text)
    return _TERMINAL_CODES.sub("", match.group(1) if match else text)


def user_message(error):
    """The one-line message of a user error, or None for an error that is a bug."""
    if isinstance(error, UserError):
        return plain(str(error))
    # Before path errors: a cache miss (FileNotFoundError) may follow the failed download.
    failure = network_failure(error)
    if failure is not None:
        return (f"no network: could not reach {_unreachable(failure)}; pass local paths "
                "instead of names to download (see the command's --help)")
    if isinstance(error, PATH_ERRORS):
        return plain(str(error))
    return None
