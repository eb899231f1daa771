"""Reading a dataset's raw files as published: :class:`DataError`, the one error every
reader raises (naming the file, the line or key, the field and what was expected), the
parsers that raise it (UTF-8 text, JSON, JSON lines, CSV/TSV, field checks) and the lazy
Hugging Face hub loader. Every reader of :mod:`nemot.data` uses them: QA, C4 and the
benchmarks.
"""

import csv
import dataclasses
import json
from pathlib import Path

from nemot.errors import UserError

_MISSING = object()


class DataError(UserError, ValueError):
    """A raw dataset file is not what its reader expects.

    The message names the file, the line (or key), the field and what was expected.

    Example:
        >>> str(DataError("dev.jsonl", 3, "answer", "true or false", got="maybe"))
        "dev.jsonl: line 3: field 'answer': expected true or false, got 'maybe'"
    """

    def __init__(self, path, where, field_name, expected, got=dataclasses.MISSING):
        self.path, self.where, self.field, self.expected = str(path), where, field_name, expected
        location = self.path
        if where is not None:
            location += f": line {where}" if isinstance(where, int) else f": {where}"
        message = f"{location}: field {field_name!r}: expected {expected}"
        if got is not dataclasses.MISSING:
            message += f", got {got!r}" if not isinstance(got, str) or len(got) < 80 else \
                f", got {got[:77]!r}..."
        super().__init__(message)


BOM = b"\xef\xbb\xbf"


def decode(path, data, offset=0, line=None):
    """``data`` (bytes of ``path`` from byte ``offset`` on, starting line ``line``) as UTF-8
    text, without the byte-order mark some editors (Notepad, Excel) write first and with
    Windows' line ends (CRLF) read as ``\\n``; a :class:`DataError` names the line and the
    byte offset of a byte that is not UTF-8."""
    if offset == 0 and data.startswith(BOM):
        data, offset = data[len(BOM):], len(BOM)
    try:
        return data.decode("utf-8").replace("\r\n", "\n")
    except UnicodeDecodeError as err:
        line = (line or 1) + data[:err.start].count(b"\n")
        raise DataError(path, line, "(bytes)",
                        f"UTF-8 text; byte 0x{data[err.start]:02x} at byte offset "
                        f"{offset + err.start} is not ({err.reason})") from None


def read_text(path):
    """The whole file at ``path`` as UTF-8 text (see :func:`decode`)."""
    with open(path, "rb") as f:
        return decode(path, f.read())


def lines(path):
    """``(line_number, line)`` of a UTF-8 text file, each line with its newline (see
    :func:`decode`: a CRLF ends a line as ``\\n``); lines end at ``\\n`` only."""
    offset = 0
    with open(path, "rb") as f:
        for line_no, raw in enumerate(f, 1):
            yield line_no, decode(path, raw, offset, line_no)
            offset += len(raw)


def _json_problem(error):
    """Why ``json.loads`` refused a text: a syntax error, nesting too deep for Python, or a
    number too long to convert."""
    if isinstance(error, json.JSONDecodeError):
        return f"{error.msg} at column {error.colno}"
    if isinstance(error, RecursionError):
        return "nested too deeply to read"
    return str(error).split(";")[0]


def read_json(path):
    """The parsed JSON document at ``path``."""
    try:
        return json.loads(read_text(path))
    except (ValueError, RecursionError) as err:
        raise DataError(path, getattr(err, "lineno", None), "(document)",
                        f"valid JSON ({_json_problem(err)})") from None


def iter_jsonl(path):
    """``(line_number, object)`` for each non-empty line of a JSON-lines file; a file
    without one is a :class:`DataError`."""
    empty = True
    for line_no, line in lines(path):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as err:
            raise DataError(path, line_no, "(line)",
                            f"one JSON object per line ({_json_problem(err)})") from None
        if not isinstance(record, dict):
            raise DataError(path, line_no, "(line)", "a JSON object", got=type(record).__name__)
        empty = False
        yield line_no, record
    if empty:
        raise DataError(path, None, "(file)", "at least one JSON object, one per line",
                        got="an empty file" if not Path(path).stat().st_size else "blank lines")


def csv_rows(path, **options):
    """``(line_number, row)`` of a CSV/TSV file read with ``csv.reader(**options)``; the
    line number is where the row ends (a quoted field may span lines). A row ``csv``
    cannot read (a field over its size limit, a stray quote) is a :class:`DataError`."""
    reader = csv.reader((line for _, line in lines(path)), **options)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            raise DataError(path, reader.line_num, "(row)",
                            f"a row that Python's csv module reads ({err})") from None
        yield reader.line_num, row


def iter_tsv(path, columns=None):
    """``(line_number, row)``; rows are dicts when ``columns`` is given (no header), else lists."""
    for line_no, row in csv_rows(path, delimiter="\t", quoting=csv.QUOTE_NONE):
        if not row:
            continue
        if columns is not None:
            if len(row) != len(columns):
                raise DataError(path, line_no, "(row)", f"{len(columns)} tab-separated columns",
                                got=len(row))
            row = dict(zip(columns, row))
        yield line_no, row


def iter_csv(path, required):
    """``(line_number, row dict)`` of a CSV file with a header containing ``required``
    columns; every row has as many fields as the header."""
    rows = csv_rows(path)
    _, header = next(rows, (1, None))
    missing = [c for c in required if c not in (header or [])]
    if missing:
        raise DataError(path, 1, missing[0], f"a CSV header with columns {list(required)}",
                        got=header)
    for line_no, row in rows:
        if not row:
            continue
        if len(row) != len(header):
            raise DataError(path, line_no, "(row)", f"{len(header)} comma-separated fields as "
                            "in the header", got=len(row))
        yield line_no, dict(zip(header, row))


def get(record, key, path, where, kind=str, expected=None):
    """``record[key]`` checked to be of ``kind``; a :class:`DataError` otherwise."""
    value = record.get(key, _MISSING) if isinstance(record, dict) else _MISSING
    expected = expected or f"a {kind.__name__ if isinstance(kind, type) else kind}"
    if value is _MISSING:
        raise DataError(path, where, key, expected, got="missing")
    if not isinstance(value, kind):
        raise DataError(path, where, key, expected, got=value)
    return value


def hub_rows(name, config=None, split="train"):
    """Rows of a Hugging Face ``datasets`` dataset: the one place a reader touches the network.

    ``datasets`` is the optional extra ``hub`` (``pip install nemot[hub]``), imported
    lazily so that the package works without it. The tests replace
    ``datasets.load_dataset`` with a dataset they build offline with the hub
    dataset's real columns and feature types.
    """
    try:
        import datasets
    except ImportError as err:
        raise ImportError(
            f"loading {name!r} from the Hugging Face hub needs the optional `datasets` package "
            "(pip install 'nemot[hub]') and network access; offline, pass data_dir= with the "
            "raw files instead") from err
    return datasets.load_dataset(name, config, split=split)


def hub_split(split):
    """The hub's name of a split: ``validation`` for ``dev``/``valid``."""
    return {"dev": "validation", "valid": "validation"}.get(split, split)
