"""What every ``nemot`` command line shares: a quiet start, and one line per user error.

- **Errors.** A user error (:func:`nemot.errors.user_message`: a wrong file, flag, config
  key or data line, or no network) ends the command with ``error: <message>`` on
  standard error and a non-zero exit status, without a traceback; any other exception
  is a bug and keeps its traceback. ``--debug`` anywhere on the command line, or
  ``NEMOT_DEBUG=1``, shows the traceback of user errors too.
- **A quick end.** A command run as its process's command line (``nemot``, ``python -m
  nemot.demo``, ``argv`` not given) ends without the interpreter's last garbage collection
  (:func:`end_without_collecting`): what TensorFlow, Keras and a run leave behind is
  freed by the operating system at once, not walked object by object first (1.2-1.5 CPU
  seconds of every command's exit on the 2-core machine, TensorFlow and KerasHub
  imported).
- **Quiet start.** TensorFlow prints notices when it loads (CUDA stubs, oneDNN, CPU
  features; before its logging is set up, so ``TF_CPP_MIN_LOG_LEVEL`` cannot stop
  them) and when it looks for GPUs. ``import nemot`` (so every command line, script,
  notebook and ``python -m nemot.demo``) has it load with standard error closed, and
  sets ``TF_CPP_MIN_LOG_LEVEL=2`` (warnings and notices off, errors shown) unless it is
  set; an exception while it loads still raises with its traceback.
  ``NEMOT_BACKEND_LOGS=1`` (or ``--debug`` on a command line) keeps every notice.
"""

import argparse
import atexit
import contextlib
import difflib
import gc
import importlib.abc
import importlib.util
import os
import re
import sys
import textwrap

from nemot import errors

DEBUG_FLAG = "--debug"
ENV_HELP = """\
environment:
  NEMOT_DEBUG=1         show the traceback of every error (as --debug anywhere on the line)
  NEMOT_BACKEND_LOGS=1  show TensorFlow's start-up notices (silenced by default)"""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's help with the descriptions as written; an action with ``one_value = True``
    (one that takes a list only to answer a mistaken one) shows a single metavar."""

    def _format_args(self, action, default_metavar):
        if getattr(action, "one_value", False):
            return self._metavar_formatter(action, default_metavar)(1)[0]
        return super()._format_args(action, default_metavar)


def describe(doc):
    """Keyword arguments ``description``, ``epilog`` and ``formatter_class`` of a command's
    parser from its module docstring, written for users: the text before ``Examples::``
    is the description, the examples the epilog; reST markup is removed."""
    text = re.sub(r":\w+:`([^`]*)`", r"\1", doc)
    text = re.sub(r"``([^`]*)``", r"\1", text)
    match = re.search(r"\bExamples?::", text)
    head, examples = (text[:match.start()], text[match.end():]) if match else (text, "")
    examples = textwrap.indent(textwrap.dedent(examples).strip("\n"), "  ")
    epilog = f"examples:\n{examples}\n\n" if examples else ""
    return {"description": head.strip(), "epilog": epilog + ENV_HELP,
            "formatter_class": HelpFormatter}


def _env_flag(name):
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


def backend_logs_wanted():
    """Whether ``NEMOT_BACKEND_LOGS`` asks for TensorFlow's start-up notices."""
    return _env_flag("NEMOT_BACKEND_LOGS")


@contextlib.contextmanager
def stderr_closed():
    """Send what the process writes to file descriptor 2 (C++ code included) to
    ``os.devnull`` within the block."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


class _QuietTensorFlow(importlib.abc.MetaPathFinder):
    """Finds ``tensorflow`` as usual, but loads it (and lists its devices, which is when
    CUDA reports a missing driver) with standard error closed. Removes itself once used."""

    set_log_level = False  # whether quiet_backend set TF_CPP_MIN_LOG_LEVEL

    @classmethod
    def remove(cls):
        """Take every such finder off ``sys.meta_path`` and unset the log level
        :func:`quiet_backend` set: TensorFlow then loads as usual."""
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, cls)]
        if cls.set_log_level and "tensorflow" not in sys.modules:
            os.environ.pop("TF_CPP_MIN_LOG_LEVEL", None)
            cls.set_log_level = False

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def quiet_exec_module(module):
            with stderr_closed():
                exec_module(module)
                module.config.list_physical_devices()

        spec.loader.exec_module = quiet_exec_module
        return spec


def quiet_backend():
    """Silence TensorFlow's start-up notices for the rest of the process (see the module
    docstring); nothing is imported now. Once TensorFlow is loaded, only its device
    listing is left to silence: it lists them now with standard error closed."""
    if "TF_CPP_MIN_LOG_LEVEL" not in os.environ:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
        _QuietTensorFlow.set_log_level = True
    if "tensorflow" in sys.modules:
        # Loaded before nemot (`import keras` first): its import notices are out, but CUDA
        # complains when the devices are first listed; list them now, quietly.
        with stderr_closed():
            sys.modules["tensorflow"].config.list_physical_devices()
    elif not any(isinstance(finder, _QuietTensorFlow) for finder in sys.meta_path):
        sys.meta_path.insert(0, _QuietTensorFlow())


def run(func, args, debug=False):
    """``func(args)``, a command's handler; returns the exit status: its result when an
    int, else 0; for a user error (or Ctrl-C) the message goes to standard error."""
    try:
        result = func(args)
    except KeyboardInterrupt:
        if debug:
            raise
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        message = None if debug else errors.user_message(error)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return getattr(error, "status", 1)
    return result if isinstance(result, int) else 0


def _command_parser(parser, argv):
    """The parser of the (sub)command that ``argv`` names."""
    while True:
        subparsers = [action for action in parser._actions
                      if isinstance(action, argparse._SubParsersAction)]
        words = [word for word in argv if subparsers and word in subparsers[0].choices]
        if not words:
            return parser
        parser = subparsers[0].choices[words[0]]
        argv = argv[argv.index(words[0]) + 1:]


def unrecognized(parser, argv, unknown):
    """argparse's error for ``unknown`` arguments, from the command's own parser (its
    usage), naming the option each unknown one is closest to."""
    command = _command_parser(parser, argv)
    options = [option for action in command._actions for option in action.option_strings]
    flags = [word.split("=", 1)[0] for word in unknown if word.startswith("-")]
    hints = []
    for flag in flags:
        near = difflib.get_close_matches(flag, options, n=1, cutoff=0.7)
        if near:
            hints.append(f"did you mean {near[0]}?" if len(flags) == 1 else
                         f"{flag}: did you mean {near[0]}?")
    command.error("; ".join([f"unrecognized arguments: {' '.join(unknown)}", *hints]))


def end_without_collecting():
    """Have this process end without the interpreter's last garbage collection.

    Interpreter shutdown collects every object in a reference cycle before the process
    exits; with TensorFlow and KerasHub imported that is over a million objects (1.2-1.5
    CPU seconds on the 2-core machine, as much as ``os._exit``-ing saves). Frozen
    (:func:`gc.freeze`) by an exit handler, they are left to the operating system; exit
    handlers registered before this one still run after it, and files are still closed.
    For a process that ends with its command: a Python caller of a command keeps
    collecting."""
    atexit.register(gc.freeze)


def main(parser, argv=None):
    """Parse ``argv`` (default ``sys.argv[1:]``, this process's command line, which then
    ends without a last garbage collection: :func:`end_without_collecting`) with
    ``parser``, whose commands set ``func``, and run the command quietly (see the module
    docstring); returns the exit status."""
    if argv is None:
        end_without_collecting()
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = DEBUG_FLAG in argv or _env_flag("NEMOT_DEBUG")
    argv = [arg for arg in argv if arg != DEBUG_FLAG]
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        unrecognized(parser, argv, unknown)
    if debug or backend_logs_wanted():
        _QuietTensorFlow.remove()
    else:
        quiet_backend()
    return run(args.func, args, debug)


def standalone(add_parser, argv=None, command=None):
    """Run a command module on its own (``python -m nemot.pals.cli run ...``) as
    ``nemot`` runs it: ``add_parser`` adds its command(s); ``command``, when given, is
    put before ``argv`` (default ``sys.argv[1:]``)."""
    parser = argparse.ArgumentParser(prog="nemot", epilog=ENV_HELP,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_parser(parser.add_subparsers(dest="command", required=True))
    if argv is None:
        end_without_collecting()
    argv = list(sys.argv[1:] if argv is None else argv)
    return main(parser, argv if command is None else [command, *argv])
