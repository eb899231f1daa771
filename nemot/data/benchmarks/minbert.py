"""Reader of the CS224N minBERT default project's files (the PALs report, s.5.1): SST-5, Quora,
STS-B and CFIMDB, read as published.

Tab-separated with an unnamed index column, quoted as Python's ``csv`` writes (the project
reads them with ``csv.DictReader(delimiter="\\t")``): ``ids-sst-{split}.csv`` and
``ids-cfimdb-{split}.csv`` (``id``, ``sentence``, ``sentiment``), ``quora-{split}.csv``
(``id``, ``sentence1``, ``sentence2``, ``is_duplicate`` as ``0.0``/``1.0``),
``sts-{split}.csv`` (``id``, ``sentence1``, ``sentence2``, ``similarity`` in [0, 5]).
Splits ``train``, ``dev``, ``test-student`` (no label column).

One declarative :class:`Layout` per task; :func:`read_file` reads any layout of
tab-separated columns (the PALs reproduction adds GLUE's SST-2/QQP/STS-B files, which are
unquoted). Every malformed row is a :class:`nemot.data.DataError` naming the file, the
line, the field and what was expected, with one exception, as the project reads its
files: a row whose label field is *empty* is skipped (the project's loader drops a row
whose label does not parse). The published ``quora-dev.csv`` has two such rows (lines
2577 and 14222: a question whose opening quote swallowed the rest of the row), which is
why the project counts 20,212 pairs in its 20,214 rows; :attr:`Rows.skipped` lists them.

Example:
    >>> rows = read("sts", "data/minbert", "dev")           # doctest: +SKIP
    >>> rows.text_a[0], rows.text_b[0], rows.labels[0]                  # doctest: +SKIP
    ('UN chief welcomes ...', 'UN chief condemns ...', 1.0)
    >>> train, test = split_rows(read("quora", "...", "dev"), 0.2, seed=0)  # doctest: +SKIP
"""

import csv
import dataclasses
from pathlib import Path

import numpy as np

from nemot.data.raw import DataError, csv_rows

SPLITS = ("train", "dev", "test")


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where a task's rows are and which columns hold what.

    Attributes:
        files: the file names of a split, ``{split}`` filled in; the first that exists is
            read (minBERT's test split: ``test``, then ``test-student``).
        text: the column(s) of the sentence or sentence pair.
        label: the label column (absent from test files).
        quoted: the file is quoted as Python's ``csv`` writes (minBERT); GLUE is not.
        labels: the allowed label values, or None for a real number.
        label_range: the closed interval of a real-valued label.
        skip_empty_labels: skip a row whose label field is empty (minBERT), instead of
            raising.
    """

    files: tuple
    text: tuple
    label: str
    quoted: bool
    labels: tuple = None
    label_range: tuple = None
    skip_empty_labels: bool = False


LAYOUTS = {
    "sst": Layout(("ids-sst-{split}.csv",), ("sentence",), "sentiment", True,
                  labels=(0, 1, 2, 3, 4), skip_empty_labels=True),
    "cfimdb": Layout(("ids-cfimdb-{split}.csv",), ("sentence",), "sentiment", True,
                     labels=(0, 1), skip_empty_labels=True),
    "quora": Layout(("quora-{split}.csv",), ("sentence1", "sentence2"), "is_duplicate", True,
                    labels=(0, 1), skip_empty_labels=True),
    "sts": Layout(("sts-{split}.csv",), ("sentence1", "sentence2"), "similarity", True,
                  label_range=(0.0, 5.0), skip_empty_labels=True),
}


@dataclasses.dataclass(frozen=True)
class Rows:
    """One split of one task: texts and labels (``labels`` is None for a test file);
    ``skipped``: the lines of rows skipped for an empty label."""

    task: str
    path: str
    text_a: tuple
    text_b: tuple
    labels: np.ndarray
    skipped: tuple = ()

    def __len__(self):
        return len(self.text_a)

    def take(self, index, path=None):
        """The rows at ``index`` (an int array), in that order."""
        pick = [int(i) for i in index]
        return Rows(self.task, path or self.path, tuple(self.text_a[i] for i in pick),
                    None if self.text_b is None else tuple(self.text_b[i] for i in pick),
                    None if self.labels is None else self.labels[pick])


def layout_of(task, layouts=None):
    """The :class:`Layout` of ``task``; an error names the known tasks."""
    layouts = LAYOUTS if layouts is None else layouts
    if task not in layouts:
        raise ValueError(f"task {task!r}: expected one of {sorted(layouts)}")
    return layouts[task]


def split_file(layout, data_dir, split, task="?"):
    """The file of ``split`` under ``data_dir`` (the first candidate of ``layout`` present)."""
    if split not in SPLITS:
        raise ValueError(f"split {split!r}: expected one of {SPLITS}")
    # minBERT ships its test split as *-test-student.csv (no labels).
    splits = (split, "test-student") if layout.quoted and split == "test" else (split,)
    candidates = [Path(data_dir) / name.format(split=s) for s in splits for name in layout.files]
    for path in candidates:
        if path.is_file():
            return path
    raise DataError(data_dir, f"task {task!r}, split {split!r}", "files",
                    f"one of {[c.name for c in candidates]}", got="none")


def _label(layout, path, line, value):
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = None
    if layout.labels is not None:
        if number is None or not number.is_integer() or int(number) not in layout.labels:
            raise DataError(path, line, layout.label, f"one of {list(layout.labels)}", got=value)
        return float(number)
    low, high = layout.label_range
    if number is None or not low <= number <= high:
        raise DataError(path, line, layout.label, f"a number in [{low}, {high}]", got=value)
    return number


def read_file(layout, path, task="?"):
    """The :class:`Rows` of one file in ``layout`` (labels None without a label column)."""
    path = Path(path)
    quoting = csv.QUOTE_MINIMAL if layout.quoted else csv.QUOTE_NONE
    texts, labels, skipped = [], [], []
    rows = csv_rows(path, delimiter="\t", quoting=quoting)
    _, header = next(rows, (1, None))
    if header is None:
        raise DataError(path, 1, "(header)", f"a header with columns {list(layout.text)}",
                        got="an empty file")
    missing = [c for c in layout.text if c not in header]
    if missing:
        raise DataError(path, 1, missing[0], f"a header with columns {list(layout.text)}",
                        got=header)
    has_label = layout.label in header
    columns = [header.index(c) for c in layout.text]
    label_column = header.index(layout.label) if has_label else None
    for line, row in rows:  # line: where the row ends (a quoted field may span lines)
        if not row:
            continue
        if len(row) != len(header):
            raise DataError(path, line, "(row)",
                            f"{len(header)} tab-separated fields as in the header",
                            got=len(row))
        if has_label and layout.skip_empty_labels and not row[label_column].strip():
            skipped.append(line)
            continue
        texts.append(tuple(row[c].strip() for c in columns))
        if has_label:
            labels.append(_label(layout, path, line, row[label_column]))
    text_a = tuple(t[0] for t in texts)
    text_b = tuple(t[1] for t in texts) if len(layout.text) == 2 else None
    return Rows(task, str(path), text_a, text_b,
                np.array(labels, "float32") if has_label else None, tuple(skipped))


def read(task, data_dir, split, labelled=False, layouts=None):
    """The :class:`Rows` of minBERT task ``task``'s ``split`` under ``data_dir``.

    ``labelled``: a file without its label column (a student test file) is an error.
    ``layouts``: the tasks' :class:`Layout` s (default :data:`LAYOUTS`; the PALs
    reproduction adds GLUE's files).
    """
    layout = layout_of(task, layouts)
    rows = read_file(layout, split_file(layout, data_dir, split, task), task)
    if labelled and rows.labels is None:
        raise DataError(rows.path, 1, layout.label, f"a {layout.label!r} column: training and "
                        "scoring need labels (the minBERT *-test-student files have none)",
                        got="no such column")
    return rows


def split_rows(rows, fraction, seed):
    """``(rest, held_out)``: a seeded random ``fraction`` of ``rows`` held out, e.g. Quora's
    only labelled file here (``quora-dev.csv``) into train and test. The same ``seed``
    gives the same split on every machine (NumPy's PCG64)."""
    if not 0 < fraction < 1:
        raise ValueError(f"split fraction {fraction!r}: expected a number in (0, 1)")
    order = np.random.default_rng(seed).permutation(len(rows))
    count = int(round(len(rows) * fraction))
    if not 0 < count < len(rows):
        raise ValueError(f"{rows.path}: {len(rows)} rows cannot be split {fraction} held out")
    held, rest = np.sort(order[:count]), np.sort(order[count:])
    return (rows.take(rest, f"{rows.path} (split seed {seed}, rest)"),
            rows.take(held, f"{rows.path} (split seed {seed}, held out {fraction})"))
