"""What a reader meets speaks of NeMoT and its papers only: no tracker numbers, no labels of
the project's own for the papers, no files outside the repository, no log of how or when
the project was built. Papers are cited by authors and title (docs/references.md)."""

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SUFFIXES = {".py", ".md", ".toml", ".ipynb", ".cfg", ".txt", ".json", ".csv", ".ini", ""}
PATTERNS = {
    "a label of ours for a paper (cite it by authors and title)":
        r"\bseeds? 00\d\b|\bseed s\.\d",
    "a tracker number": r"\bissues? #?\d+\b",
    "a folder outside the repository (name where the public files are published)":
        r"\.\./shared\b",
    "a developers' file outside the repository": r"(?-i:\b(?:API|STYLE|SPEC)\.md\b)|\bnotes section\b",
    "a note on how the project was built": r"\b(?:this|earlier|previous|last) session\b",
}
FOUND = re.compile("|".join(f"(?P<p{i}>{p})" for i, p in enumerate(PATTERNS.values())), re.I)


def tracked_text_files():
    names = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    return [REPO / name for name in names
            if Path(name).suffix in SUFFIXES and (REPO / name).is_file()
            and name != "tests/test_product_text.py"]


def offending_lines(path):
    """``(line number, reason, text)`` of every match in ``path``."""
    reasons = list(PATTERNS)
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        for match in FOUND.finditer(line):
            yield number, reasons[int(match.lastgroup[1:])], match.group(0)


def test_the_product_speaks_of_nemot_and_its_papers_only():
    found = [f"{path.relative_to(REPO)}:{number}: {reason}: {text!r}"
             for path in tracked_text_files() for number, reason, text in offending_lines(path)]
    assert not found, "\n".join(found)


def test_the_patterns_catch_what_they_name(tmp_path):
    lines = ["PALs (seed 002) in all layers", "as issue 26 asks", "data.dir=../shared/data",
             "see API.md", "docs/spec.md section 3", "measured in this session", "Rotzal, *Choose Your PALs Wisely*",
             "seed 2 of 30", "issues are welcome", "the shared embedding"]
    path = tmp_path / "sample.md"
    path.write_text("\n".join(lines))
    assert {number for number, _, _ in offending_lines(path)} == {1, 2, 3, 4, 6}
