"""Every reader, fed mutations of its own valid file, reads them or raises its one-line
error naming the file: never another exception, never a hang (tests/data/fuzz.py).

A few examples per reader here (hypothesis generates them and shrinks a failure);
``python -m bench fuzz --examples N`` reads many more and counts the outcomes. And each
text file saved as an editor on Windows saves it (a byte-order mark, CRLF line ends) reads
as the same data.
"""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from tests.data import fuzz

EXAMPLES = 15


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


@pytest.mark.parametrize("name", sorted(fuzz.TARGETS))
def test_reader_reads_or_names_the_file(name, root):
    target = fuzz.TARGETS[name]
    with target.prepared(root) as case:
        assert case.run(case.original) == ("read", None)  # the valid file reads

        @settings(max_examples=EXAMPLES, database=None, deadline=None,
                  suppress_health_check=list(HealthCheck))
        @given(data=fuzz.mutated(target.kind, case.original))
        def reads_or_names_the_file(data):
            outcome, detail = case.run(data)
            assert outcome in ("read", "named_error"), f"{name}: {outcome}: {detail}"

        reads_or_names_the_file()


def test_the_outcomes_are_told_apart(tmp_path):
    """The harness itself: an error without the file's name, another exception and an
    invalid result are each counted as what they are."""
    from nemot.data import DataError

    path = tmp_path / "f.txt"
    path.write_text("valid")

    def reader(behaviour):
        def read():
            if behaviour == "unnamed":
                raise DataError("elsewhere.txt", 1, "x", "y")
            if behaviour == "named":
                raise DataError(path, 1, "x", "y")
            if behaviour == "other":
                raise KeyError("x")
            return [42]  # not an example
        return read

    target = fuzz.Target("t", "text", None, check=lambda result: fuzz._check_examples(result))
    outcomes = {behaviour: fuzz.Case(target, path, reader(behaviour)).run(b"valid")[0]
                for behaviour in ("unnamed", "named", "other", "invalid")}
    assert outcomes == {"unnamed": "unnamed_error", "named": "named_error",
                        "other": "unexpected", "invalid": "unexpected"}


# What an editor on Windows writes: a byte-order mark first, CRLF line ends.
TEXT_KINDS = ("text", "json", "jsonl", "tsv", "csv", "csv-tab", "toml")


def _same(a, b):
    if dataclasses.is_dataclass(a):
        return type(a) is type(b) and _same(dataclasses.asdict(a), dataclasses.asdict(b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


@pytest.mark.parametrize("name", sorted(name for name, target in fuzz.TARGETS.items()
                                        if target.kind in TEXT_KINDS))
def test_a_byte_order_mark_and_windows_line_ends_read_as_the_same_data(name, root):
    target = fuzz.TARGETS[name]
    with target.prepared(root) as case:
        expected = case.read()
        lf = case.original.replace(b"\r\n", b"\n")  # a one-line JSON file gets the mark only
        case.path.write_bytes(b"\xef\xbb\xbf" + lf.replace(b"\n", b"\r\n"))
        try:
            got = case.read()
        finally:
            case.path.write_bytes(case.original)
    assert _same(got, expected), name
