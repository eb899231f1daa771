"""Helpers every reader shares: file discovery, JSON/JSONL/TSV parsing, field checks,
label decoding, SQuAD-style parsing and the lazy hub loaders.

Every error is a :class:`nemot.data.DataError` naming the file, the line (or key),
the field and what was expected.
"""

import csv
import json
from pathlib import Path

from nemot.data.format import DataError, QAExample

_MISSING = object()


def search_dirs(data_dir, tops=()):
    """``data_dir`` and, where they exist, ``data_dir/top`` for each archive top folder.

    A dataset archive unpacks to a top folder (``RACE/``, ``wikitext-2/``, ...);
    ``data_dir`` may point at that folder or at the one holding it.
    """
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise DataError(data_dir, None, "data_dir", "an existing directory")
    return [data_dir] + [data_dir / top for top in tops if (data_dir / top).is_dir()]


def find_files(data_dir, patterns, split, tops=()):
    """Files of ``split``: the first glob pattern that matches anything, under ``data_dir``
    or inside one of the archive top folders ``tops`` below it (see :func:`search_dirs`).

    Raises :class:`DataError` when no pattern matches (a split with no files).
    """
    for directory in search_dirs(data_dir, tops):
        for pattern in patterns:
            files = sorted(p for p in directory.glob(pattern) if p.is_file())
            if files:
                return files
    inside = f" (in it or in {', '.join(t + '/' for t in tops)})" if tops else ""
    raise DataError(data_dir, f"split {split!r}", "files",
                    f"at least one file matching {' or '.join(patterns)}{inside}", got="none")


def decode(path, data, offset=0, line=None):
    """``data`` (bytes of ``path`` from byte ``offset`` on, starting line ``line``) as UTF-8
    text; a :class:`DataError` names the line and the byte offset of a byte that is not."""
    try:
        return data.decode("utf-8")
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
    :func:`decode`); lines end at ``\\n`` only."""
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


def letter_label(value, labels, path, where, key):
    """0-based index of ``value`` in ``labels`` (e.g. ``"C"`` in ``["A", "B", "C", "D"]``)."""
    if value not in labels:
        raise DataError(path, where, key, f"one of the option labels {list(labels)}", got=value)
    return labels.index(value)


def read_label_file(path, count, base, n_options, examples="the examples"):
    """0-based labels from a ``.lst`` file with one label per line, numbered from ``base``;
    ``examples`` names the file of the ``count`` examples they label."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, None, "labels", f"a labels file with {count} lines", got="missing file")
    labels = []
    for line_no, line in lines(path):
        if not line.strip():
            continue
        try:
            label = int(line) - base
        except ValueError:
            label = -1
        if not 0 <= label < n_options:
            raise DataError(path, line_no, "label",
                            f"an integer in {base}..{base + n_options - 1}", got=line.strip())
        labels.append(label)
    if len(labels) != count:
        raise DataError(path, None, "labels", f"{count} labels, one per example of {examples}",
                        got=len(labels))
    return labels


def multiple_choice(dataset, id, question, options, label, passage=None, subset=None):
    """A multiple-choice :class:`QAExample` (``answers`` = the correct option's text)."""
    answers = (options[label],) if label is not None else ()
    return QAExample(id=str(id), question=question, passage=passage, options=tuple(options),
                     answers=answers, label=label, task="mqa", dataset=dataset, subset=subset)


def parts_answer(parts):
    """One gold answer from its parts: the string itself for one part, else a tuple."""
    parts = tuple(parts)
    return parts[0] if len(parts) == 1 else parts


def generative(dataset, id, question, answers, passage=None, subset=None):
    """A generative :class:`QAExample`; ``answers`` are alternatives, each a string or a
    tuple of parts (:func:`parts_answer`); duplicates are dropped, order kept."""
    return QAExample(id=str(id), question=question, passage=passage,
                     answers=tuple(dict.fromkeys(answers)), task="gqa", dataset=dataset,
                     subset=subset)


def squad_context(paragraph, where, path):
    """The passage of a SQuAD paragraph: its ``context`` field."""
    return get(paragraph, "context", path, where)


def squad_style(path, dataset, context=squad_context, parts=False):
    """Examples of a SQuAD-format file: ``data[].paragraphs[].{context, qas[]}``.

    ``context`` builds the passage from a paragraph (ROPES joins background and
    situation). Unanswerable questions (``is_impossible``) get no golds. With
    ``parts`` the ``answers`` list is one answer made of all its entries (Quoref);
    otherwise each entry is an alternative answer (SQuAD's several annotators).
    """
    document = read_json(path)
    articles = get(document, "data", path, "top level", list, "a list of articles")
    for i, article in enumerate(articles):
        paragraphs = get(article, "paragraphs", path, f"data[{i}]", list, "a list of paragraphs")
        for j, paragraph in enumerate(paragraphs):
            where = f"data[{i}].paragraphs[{j}]"
            passage = context(paragraph, where, path)
            for k, qa in enumerate(get(paragraph, "qas", path, where, list, "a list of questions")):
                qwhere = f"{where}.qas[{k}]"
                answers = get(qa, "answers", path, qwhere, list, "a list of answers")
                if not answers and not qa.get("is_impossible", False):
                    raise DataError(path, qwhere, "answers",
                                    "at least one answer unless is_impossible is true", got=[])
                texts = [get(a, "text", path, f"{qwhere}.answers[{m}]")
                         for m, a in enumerate(answers)]
                if parts and texts:
                    texts = [parts_answer(texts)]
                yield generative(dataset, get(qa, "id", path, qwhere),
                                 get(qa, "question", path, qwhere), texts, passage=passage)


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
