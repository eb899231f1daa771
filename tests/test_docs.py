"""Every fenced block of README.md, docs/*.md and notebooks/README.md runs or is checked, so
the documentation cannot drift from the code.

A block's language tag says what it is, and decides how it is checked:

- ``python``: executed as written, in a scratch working directory where this test first
  writes small generated files at the paths the docs name (``data/boolq``, ``data/piqa``,
  a tiny random GPT-2 in ``gpt2-local``, ``checkpoints/general/model_last.keras``, an NLTK
  tagger trained here). The blocks of one document share one namespace, in order, like a
  notebook. The docs write them at tiny sizes and offline, with the real sizes and the
  online names in comments. TensorFlow functions run eagerly here (tests/conftest.py's
  ``eager`` fixture): tracing a training graph or a decoding loop costs more than the few
  steps a block runs, and graph execution is what the rest of the suite tests. A block
  identical to one already run (the README repeats docs/training.md's recipe) runs once. A
  block that branches on the backend runs its TensorFlow branch here; the JAX one is what
  tests/test_jax_backend.py checks.
- ``bash`` / ``sh``: the block must parse (``bash -n``); then each command is checked by
  the program it runs:

  - ``nemot …``: parsed by nemot's own argument parser (``nemot.cli.main`` stopped once
    its arguments are parsed: every flag, type and choice checked); a ``--config`` file is
    then loaded with its ``--set`` overrides, by the run-config loader or, for a paper
    reproduction, by ``nemot.experiments.protocol.load`` (``--variants`` checked against its variants).
    Commands that need data or checkpoints a fresh clone lacks, or hours (pre-training on
    C4, the thesis' fine-tuning runs, ``runs report`` of runs not made), are checked this
    way and not run; those in :data:`RUN_FOR_REAL` are quick and self-contained and run.
  - ``python -m data_prep|bench|nemot.demo …``: parsed by that module's parser (stopped
    there too), plus what the parser leaves to the module (a dataset name, a benchmark
    name and its options).
  - ``make T``: ``make -n T`` (the target exists and expands).
  - ``pip install`` of ``nemot[X]`` / ``.[X]``: X is an extra of setup.cfg; other
    packages are other projects' (syntax only).
  - ``python -m pytest PATHS``: the test files exist.
  - other projects' programs (:data:`EXTERNAL`: git, tfds, jupyter, ...): syntax only.
  Any other program fails the test: give it a check here, or do not document it.
- ``toml``: parsed; a complete run config (``kind``) is validated by the run-config
  loader, an experiment (``reproduction``) by ``nemot.experiments.protocol.load``, and a fragment
  (``[[model.modulation]]``, ``[data]``, ...) merged into ``configs/pretrain.toml`` and
  validated as a run config.
- ``text``: not code (diagrams, formulas, directory layouts, output samples): not run.

Any other tag, or none, fails. The test also checks that no file cites the project's
working notes outside the repository (the specification is docs/spec.md) and that every
``docs/spec.md §N`` citation names a section that exists.
"""

import argparse
import configparser
import contextlib
import re
import shlex
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import keras
import nltk
import numpy as np
import pytest

from tests.data import fixtures
from tests.data.tagger_helper import install_perceptron, train_perceptron
from tests.models.gpt2_checkpoint import write_tiny_gpt2

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")),
             REPO / "notebooks" / "README.md"]
LANGUAGES = {"python", "bash", "sh", "toml", "text"}
# Programs of other projects: their commands are checked for shell syntax only.
EXTERNAL = {"git", "tfds", "gsutil", "jupyter", ".venv/bin/jupyter", "huggingface-cli",
            "echo", "export", "cp", ".", "source", "cd", "exit"}
# nemot commands that are quick and need nothing a fresh clone lacks: run for real.
RUN_FOR_REAL = {("pals", "synthetic")}
EMPTY = "__empty_word__"
FENCE = re.compile(r"^( *)```(\S*)[^\n]*\n(.*?)^\1```[ \t]*$", re.M | re.S)


def fenced_blocks(path):
    """``(language, code, line)`` of every fenced block of a markdown file."""
    text = path.read_text(encoding="utf-8")
    blocks = []
    for match in FENCE.finditer(text):
        indent = len(match.group(1))
        code = "".join(line[indent:] if line[:indent].strip() == "" else line
                       for line in match.group(3).splitlines(keepends=True))
        blocks.append((match.group(2), code, text.count("\n", 0, match.start()) + 1))
    return blocks


def where(path, line):
    return f"{path.relative_to(REPO)}:{line}"


ALL_BLOCKS = [(path, *block) for path in DOCUMENTS for block in fenced_blocks(path)]


def test_every_fenced_block_says_what_it_is():
    assert len(ALL_BLOCKS) > 30
    untagged = [f"{where(path, line)}: ```{language}" for path, language, _, line in ALL_BLOCKS
                if language not in LANGUAGES]
    assert not untagged, f"tag these blocks with one of {sorted(LANGUAGES)}: {untagged}"


# ------------------------------------------------------------------ python blocks

@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A working directory holding every file the python blocks name, made up here."""
    import nemot

    root = tmp_path_factory.mktemp("docs")
    fixtures.boolq(root / "data" / "boolq")
    fixtures.piqa(root / "data" / "piqa")
    write_tiny_gpt2(root / "gpt2-local")
    keras.utils.set_random_seed(0)
    general = root / "checkpoints" / "general"
    general.mkdir(parents=True)
    nemot.build_model(nemot.NeMoTConfig.preset("tiny")).save(general / "model_last.keras")
    install_perceptron(train_perceptron(tmp_path_factory.mktemp("corpus")), root / "nltk_data")
    return root


def check_training_recipe(namespace):
    """The ``fit`` recipe (README, docs/training.md) trained: 2 epochs x 3 steps, every
    loss term logged and finite."""
    model = namespace["model"]
    assert int(model.optimizer.iterations.numpy()) == 6
    history = model.history.history
    assert set(history) >= {"loss", "task_loss", "lm_loss", "vanilla_loss"}
    assert all(value == value and abs(value) < 1e6 for value in history["loss"])


def check_library_tour(namespace):
    """README "Using the library": the outputs' shapes, and the preset that was reloaded."""
    out, x, model = namespace["out"], namespace["x"], namespace["lm"]
    n = np.shape(x["token_ids"])[1] - 3
    assert tuple(out["logits"].shape) == (1, n, 50313)
    assert tuple(out["vanilla_logits"].shape) == (1, n, 50313)
    assert tuple(out["gates"].shape) == (1, 3 + n, model.config.d_model)
    assert (Path("my_nemot") / "model.weights.h5").is_file()


def check_gpt2(namespace):
    assert namespace["cfg"].d_model == 32 and namespace["baseline"].config.d_model == 32
    assert (Path("exported_gpt2") / "model.safetensors").is_file()


# Checks run after the named document's python blocks, beyond "it ran".
CHECKS = {"README.md": [check_library_tour, check_training_recipe],
          "docs/training.md": [check_training_recipe], "docs/gpt2.md": [check_gpt2]}
PYTHON_DOCUMENTS = sorted({str(path.relative_to(REPO)) for path, language, _, _ in ALL_BLOCKS
                           if language == "python"})


@pytest.fixture(scope="module")
def executed():
    """Code already run -> the namespace it left (a repeated block runs once)."""
    return {}


@pytest.mark.usefixtures("eager")
@pytest.mark.parametrize("document", PYTHON_DOCUMENTS)
def test_python_blocks_run_as_written(document, scratch, executed, monkeypatch):
    monkeypatch.chdir(scratch)
    monkeypatch.setattr(nltk.data, "path", [str(scratch / "nltk_data")])
    namespace = {"__name__": "__docs__"}
    blocks = [(code, line) for path, language, code, line in ALL_BLOCKS
              if language == "python" and str(path.relative_to(REPO)) == document]
    for code, line in blocks:
        if code in executed:
            namespace.update(executed[code])
            continue
        keras.utils.set_random_seed(0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                exec(compile(code, f"{document}:{line}", "exec"), namespace)
            except Exception as error:
                raise AssertionError(f"{document}:{line}: the block fails: "
                                     f"{type(error).__name__}: {error}") from error
        # The documented recipes warn about nothing the reader did not do.
        spurious = [str(w.message) for w in caught if "shuffle" in str(w.message)]
        assert not spurious, f"{document}:{line}: {spurious}"
        executed[code] = dict(namespace)
    for check in CHECKS.get(document, []):
        check(namespace)


# ------------------------------------------------------------------ shell blocks

class Parsed(Exception):
    """Raised in place of running a command, once its arguments are parsed."""

    def __init__(self, namespace, extras):
        super().__init__("parsed")
        self.namespace, self.extras = namespace, extras


@contextlib.contextmanager
def parse_only():
    """Any ``argparse`` entry point stops with :class:`Parsed` right after parsing its
    command line (sub-parsers, which argparse calls inside, are let through)."""
    depth = [0]
    parse_args, parse_known_args = (argparse.ArgumentParser.parse_args,
                                    argparse.ArgumentParser.parse_known_args)

    def outer(method, known):
        def wrapped(self, args=None, namespace=None):
            depth[0] += 1
            try:
                result = method(self, args, namespace)
            finally:
                depth[0] -= 1
            if depth[0] == 0:
                raise Parsed(*(result if known else (result, [])))
            return result
        return wrapped

    argparse.ArgumentParser.parse_args = outer(parse_args, False)
    argparse.ArgumentParser.parse_known_args = outer(parse_known_args, True)
    try:
        yield
    finally:
        argparse.ArgumentParser.parse_args = parse_args
        argparse.ArgumentParser.parse_known_args = parse_known_args


def parsed(main, argv, what):
    """The parsed arguments of ``main(argv)``, which does not run; a parse error fails."""
    with parse_only():
        try:
            main(argv)
        except Parsed as stop:
            return stop.namespace, stop.extras
        except SystemExit as error:
            raise AssertionError(f"{what}: the command line is refused (exit {error.code})")
    raise AssertionError(f"{what}: no argument parser ran")


def check_config(args, what):
    """Load the ``--config`` file of a parsed nemot command with its ``--set`` overrides."""
    from nemot.experiments import protocol
    from nemot.training.run_config import load_run_config

    path = getattr(args, "config", None) or getattr(args, "one_config", None)
    if path is None:
        return
    overrides = list(getattr(args, "overrides", None) or getattr(args, "set", None) or [])
    if "reproduction" in tomllib.loads((REPO / path).read_text()):
        module, experiment = protocol.load(REPO / path, overrides)
        unknown = set(getattr(args, "variants", None) or ()) - set(module.variants(experiment))
        assert not unknown, f"{what}: variants {sorted(unknown)} are not in {path}"
        return
    config = load_run_config(REPO / path, overrides)
    kinds = {"pretrain": "pretrain", "finetune": "finetune", "train-general": "general"}
    assert kinds.get(args.command, config.kind) == config.kind, \
        f"{what}: {path} is a {config.kind!r} run, not one for `nemot {args.command}`"


def check_nemot(argv, what, scratch):
    from nemot import cli

    args, _ = parsed(cli.main, argv, what)
    check_config(args, what)
    if tuple(argv[:2]) in RUN_FOR_REAL:
        with contextlib.chdir(scratch):  # what it writes stays there
            assert cli.main(argv) == 0, what


def check_python_module(argv, what):
    module = argv[0]
    if module == "data_prep":
        from data_prep.__main__ import main
        from nemot.data.qa import registry

        args, _ = parsed(main, argv[1:], what)
        if args.data_command == "qa":
            assert args.dataset in registry.names(), f"{what}: unknown dataset {args.dataset}"
    elif module == "bench":
        import bench.__main__

        args, options = parsed(bench.__main__.main, argv[1:], what)
        assert set(args.names) <= set(bench.__main__.available()), what
        if options:
            (name,) = args.names
            benchmark = __import__(f"bench.bench_{name}", fromlist=["run"])
            options, _ = parsed(benchmark.run, options, what)
            if name == "gpu":
                assert set(filter(None, options.models.split(","))) <= set(
                    benchmark.TRAIN_MODELS), what
                assert set(filter(None, options.decode.split(","))) <= set(
                    benchmark.DECODE_MODELS), what
    elif module == "nemot.demo":
        from nemot import demo

        parsed(demo.main, argv[1:], what)
    elif module == "pytest":
        missing = [a for a in argv[1:] if not a.startswith("-") and not (REPO / a).exists()]
        assert not missing, f"{what}: no such test files {missing}"
    elif module in ("venv", "pip", "nltk.downloader"):
        pass  # other projects' tools
    else:
        raise AssertionError(f"{what}: `python -m {module}` has no check in tests/test_docs.py")


def extras():
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    return set(config["options.extras_require"])


def check_pip(argv, what):
    if not argv or argv[0] not in ("install", "download"):
        return
    for spec in argv[1:]:
        match = re.fullmatch(r"(?:nemot|\.)\[([\w,-]+)\]", spec)
        if match:
            unknown = set(match.group(1).split(",")) - extras()
            assert not unknown, f"{what}: setup.cfg has no extra(s) {sorted(unknown)}"


def commands(code):
    """Each simple command of a shell block, as a list of words (comments dropped)."""
    out = []
    for line in code.replace("\\\n", " ").splitlines():
        # shlex drops an empty quoted word ('') that bash passes on: keep it.
        line = re.sub(r"(?<=\s)(''|\"\")(?=\s|$)", EMPTY, line)
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|<>")
        lexer.wordchars += "~-./*?=,:@+%[]{}$"
        current, redirect = [], False
        for token in lexer:
            if token in (";", "&&", "||", "|", "&"):
                out.append(current)
                current = []
            elif set(token) <= set("<>&"):
                redirect = True
            elif redirect:
                redirect = False
            else:
                current.append("" if token == EMPTY else token)
        out.append(current)
    return [c for c in out if c]


def check_command(words, what, scratch):
    while words and (re.fullmatch(r"\w+=.*", words[0]) or words[0] in ("do", "then")):
        words = words[1:]  # environment assignments, loop bodies
    if not words or words[0] in ("done", "fi", "for"):
        return
    program, argv = words[0], words[1:]
    if program == "nemot":
        check_nemot(argv, what, scratch)
    elif re.fullmatch(r"(\.venv/bin/)?python3?", program) and argv[:1] == ["-m"]:
        if argv[1] == "pip":
            check_pip(argv[2:], what)
        else:
            check_python_module(argv[1:], what)
    elif re.fullmatch(r"(\.venv/bin/)?pip3?", program):
        check_pip(argv, what)
    elif program == "make":
        result = subprocess.run(["make", "-n", *argv], cwd=REPO, capture_output=True, text=True)
        assert result.returncode == 0, f"{what}: make -n {argv}: {result.stderr}"
    elif program not in EXTERNAL:
        raise AssertionError(f"{what}: program {program!r} has no check in tests/test_docs.py")


SHELL_BLOCKS = [(path, code, line) for path, language, code, line in ALL_BLOCKS
                if language in ("bash", "sh")]


@pytest.mark.parametrize("path, code, line", SHELL_BLOCKS,
                         ids=[where(path, line) for path, _, line in SHELL_BLOCKS])
def test_shell_commands_are_valid(path, code, line, tmp_path, monkeypatch):
    syntax = subprocess.run(["bash", "-n"], input=code, capture_output=True, text=True)
    assert syntax.returncode == 0, f"{where(path, line)}: {syntax.stderr}"
    monkeypatch.chdir(REPO)  # the docs' commands run from the repository's root
    for words in commands(code):
        check_command(words, f"{where(path, line)}: {' '.join(words)}", tmp_path)


# ------------------------------------------------------------------ toml blocks

def merged(base, fragment):
    """``base`` with the tables of ``fragment`` merged in (arrays of tables replace)."""
    out = dict(base)
    for key, value in fragment.items():
        out[key] = merged(out.get(key, {}), value) if isinstance(value, dict) else value
    return out


TOML_BLOCKS = [(path, code, line) for path, language, code, line in ALL_BLOCKS
               if language == "toml"]


@pytest.mark.parametrize("path, code, line", TOML_BLOCKS,
                         ids=[where(path, line) for path, _, line in TOML_BLOCKS])
def test_toml_blocks_are_valid_configs(path, code, line, tmp_path):
    from nemot.config import NeMoTConfig
    from nemot.experiments import protocol
    from nemot.training.run_config import run_config_from_dict

    data = tomllib.loads(code)
    source = where(path, line)
    if "reproduction" in data:
        (tmp_path / "config.toml").write_text(code)
        protocol.load(tmp_path / "config.toml")
        return
    if "kind" not in data:
        data = merged(tomllib.loads((REPO / "configs" / "pretrain.toml").read_text()), data)
    config = run_config_from_dict(data, source=source)
    for spec in data.get("model", {}).get("modulation", []):
        assert NeMoTConfig(modulation=[spec]).modulation, source


# ------------------------------------------------------------------ citations and figures

def tracked_text_files():
    names = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    return [REPO / name for name in names
            if Path(name).suffix in (".py", ".md", ".toml", ".ipynb", ".cfg", ".txt", "")
            and (REPO / name).is_file() and name != "tests/test_docs.py"]


def test_nothing_cites_files_outside_the_repository():
    outside = re.compile(r"(\.\./)?shared/(SPEC|API|STYLE)\.md|shared/(reference|seeds|tools)/"
                         r"|\bSPEC\.md")
    found = [f"{path.relative_to(REPO)}:{number}: {line.strip()}"
             for path in tracked_text_files()
             for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
             if outside.search(line)]
    assert not found, "cite docs/spec.md (the repository's own specification) instead:\n" + \
        "\n".join(found)


def test_spec_citations_name_sections_that_exist():
    spec = (REPO / "docs" / "spec.md").read_text()
    sections = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", spec, re.M))
    assert {"1", "2", "2.9", "3", "4.2", "9", "10"} <= sections
    cited = re.compile(r"docs/spec\.md[`)]? (?:§|sections? )"
                       r"((?:\d+(?:\.\d+)?(?:, | and |-|–)?)+)")
    bad = []
    for path in tracked_text_files():
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for match in cited.finditer(line):
                for section in re.findall(r"\d+(?:\.\d+)?", match.group(1)):
                    if section not in sections:
                        bad.append(f"{path.relative_to(REPO)}:{number}: §{section}")
    assert not bad, bad

