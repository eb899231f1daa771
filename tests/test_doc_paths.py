"""What the docs name exists and what they state twice agrees: every module, object and
file path README.md and docs/*.md name is in the code; the README's Layout section names
folders and files that exist; docs/spec.md's task-token table says what the configs set."""

import importlib
import importlib.util
import re
import tomllib
from pathlib import Path

import pytest

from nemot.data.qa import registry

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# `nemot.data.qa.registry.names`, `nemot.decoding` (not inside another path or a file name).
DOTTED = re.compile(r"(?<![\w./-])nemot(?:\.[A-Za-z_]\w*)+")
# `nemot/models/losses.py`, `tests/test_demo.py`, `bench/results/` (not configs/nemot/...).
SLASHED = re.compile(r"(?<![\w./-])(?:nemot|data_prep|bench|tests|configs|notebooks)/[\w/.-]*")
# Paths the docs give as examples of a message, not as files of the repository.
EXAMPLE_PATHS = {"configs/x.toml"}


def _named(pattern):
    return sorted({(path.name, match.group(0).rstrip("."))
                   for path in DOCUMENTS for match in pattern.finditer(path.read_text())
                   # a pattern (`bench/results/gpu_*.json`, `configs/{a,b}.toml`) is no path
                   if match.string[match.end():match.end() + 1] not in ("*", "{", "<")})


def _resolve(dotted):
    """The object ``dotted`` names: its longest importable module, then attributes."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        try:
            spec = importlib.util.find_spec(".".join(parts[:end]))
        except ModuleNotFoundError:  # its parent is no package: a class, a function
            spec = None
        if spec is not None:
            target = importlib.import_module(".".join(parts[:end]))
            for name in parts[end:]:
                target = getattr(target, name)
            return target
    raise ModuleNotFoundError(dotted)


@pytest.mark.parametrize("document, dotted", _named(DOTTED))
def test_every_dotted_name_the_docs_give_exists(document, dotted):
    try:
        _resolve(dotted)
    except (ImportError, AttributeError) as error:
        pytest.fail(f"{document} names {dotted}, which is not in the code: {error}")


def test_every_path_the_docs_give_exists():
    missing = [(document, path) for document, path in _named(SLASHED)
               if not (REPO / path).exists() and path not in EXAMPLE_PATHS]
    assert not missing


def _layout_paths():
    """The paths the README's Layout block names: per line, the first column's names, each
    after the first relative to the first's folder; an indented line is in the folder of
    the last unindented one."""
    text = (REPO / "README.md").read_text()
    block = text.split("## Layout", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    paths, folder = [], REPO
    for line in block.splitlines():
        if line.startswith(" " * 8):  # a description's second line
            continue
        names = re.split(r",? +", re.split(r"\s{2,}", line.strip())[0])
        first = (folder / names[0]) if line.startswith(" ") else REPO / names[0]
        if not line.startswith(" "):
            folder = first
        paths += [first] + [first.parent / name for name in names[1:]]
    return paths


def test_the_layout_names_what_exists():
    paths = _layout_paths()
    assert len(paths) > 20
    assert [str(p.relative_to(REPO)) for p in paths if not p.exists()] == []


def _task_token_rows():
    """``{registry name: (format token, fine-tuning token)}`` of docs/spec.md's table."""
    rows = {}
    for line in (REPO / "docs" / "spec.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == 6 and cells[3].startswith("`<"):
            for name in re.findall(r"`(\w+)`", cells[0]):
                rows[name] = (cells[3], cells[4])
    return rows


def test_the_task_token_table_says_what_the_registry_and_configs_do():
    rows = _task_token_rows()
    assert len(rows) >= 12
    for name, (format_token, _) in rows.items():
        assert format_token == f"`<{registry.get(name).task}>`", name
    configs = [tomllib.loads(path.read_text()) for path in sorted((REPO / "configs").glob("*.toml"))]
    fine_tuned = {c["data"]["dataset"]: c["data"]["task_token"] for c in configs
                  if c.get("kind") == "finetune" and c["data"]["dataset"] in rows}
    assert len(fine_tuned) >= 8
    for name, token in fine_tuned.items():
        assert rows[name][1] == f"`<{token}>`", (name, rows[name], token)
    for name, (_, tuning) in rows.items():
        assert (tuning == "none (zero-shot)") == (tuning != "`<lm>`"), name
