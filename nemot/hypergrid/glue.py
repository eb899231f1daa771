"""GLUE readers: the official tsv files, as the GLUE download distributes them.

One declarative spec per task: the file's header columns (CoLA's train and dev files
have none: ``source, label, original label, sentence``), the text fields under the
names T5's text-to-text format uses, and the label column with its values in class
order (TFDS's order, so class k is T5's k-th label word). Files are read with tabs
and no quoting (sentences contain stray quote marks). MNLI's dev split is two files,
``dev_matched.tsv`` and ``dev_mismatched.tsv`` (tasks ``MNLI`` and ``MNLI-mm`` here);
WNLI is readable but not co-trained (the paper, after T5).

Every malformed row is a :class:`nemot.data.DataError` naming the file, the line,
the field and what was expected.

Example:
    >>> examples = read_task("RTE", "glue_data/RTE", "dev")          # doctest: +SKIP
    >>> examples[0].fields["sentence1"], examples[0].label           # doctest: +SKIP
    ('Dana Reeve, the widow of ...', 1)
"""

import dataclasses
import math
from pathlib import Path

from nemot.data.format import DataError
from nemot.data.readers.common import iter_tsv


@dataclasses.dataclass(frozen=True)
class GlueTask:
    """How one task's files are laid out.

    Attributes:
        fields: ``{T5 field name: file column}`` of the texts, in T5's order.
        label: the label column.
        classes: the label values in class order; empty for STS-B's float score.
        columns: the columns of a headerless file (CoLA), else None (read the header).
        splits: ``{split: file name}``.
    """

    fields: dict
    label: str
    classes: tuple = ()
    columns: tuple = None
    splits: dict = dataclasses.field(default_factory=lambda: {"train": "train.tsv",
                                                              "dev": "dev.tsv"})


BINARY = ("0", "1")
NLI2 = ("entailment", "not_entailment")
SPECS = {
    "CoLA": GlueTask({"sentence": "sentence"}, "label", BINARY,
                     columns=("source", "label", "original_label", "sentence")),
    "SST-2": GlueTask({"sentence": "sentence"}, "label", BINARY),
    "MRPC": GlueTask({"sentence1": "#1 String", "sentence2": "#2 String"}, "Quality", BINARY),
    "STS-B": GlueTask({"sentence1": "sentence1", "sentence2": "sentence2"}, "score"),
    "QQP": GlueTask({"question1": "question1", "question2": "question2"}, "is_duplicate", BINARY),
    "MNLI": GlueTask({"hypothesis": "sentence2", "premise": "sentence1"}, "gold_label",
                     ("entailment", "neutral", "contradiction"),
                     splits={"train": "train.tsv", "dev": "dev_matched.tsv"}),
    "MNLI-mm": GlueTask({"hypothesis": "sentence2", "premise": "sentence1"}, "gold_label",
                        ("entailment", "neutral", "contradiction"),
                        splits={"dev": "dev_mismatched.tsv"}),
    "QNLI": GlueTask({"question": "question", "sentence": "sentence"}, "label", NLI2),
    "RTE": GlueTask({"sentence1": "sentence1", "sentence2": "sentence2"}, "label", NLI2),
    "WNLI": GlueTask({"sentence1": "sentence1", "sentence2": "sentence2"}, "label", BINARY),
}
# The tasks the paper co-trains (WNLI left out, as T5 did); MNLI-mm is MNLI's second dev file.
TASKS = ("CoLA", "SST-2", "MRPC", "STS-B", "QQP", "MNLI", "QNLI", "RTE")
STS_RANGE = (0.0, 5.0)


@dataclasses.dataclass(frozen=True)
class GlueExample:
    """One labelled row: ``fields`` under T5's names, ``label`` a class index (a float
    in [0, 5] for STS-B), ``line`` its line in ``source``."""

    task: str
    fields: dict
    label: object
    source: str
    line: int


def task_dir(data_dir, task):
    """``<data_dir>/<Task>``, the folder of the official zip (MNLI-mm reads MNLI's)."""
    return Path(data_dir) / ("MNLI" if task == "MNLI-mm" else task)


def _label(spec, value, path, line):
    if not spec.classes:
        try:
            score = float(value)
        except ValueError:
            score = math.nan
        if not STS_RANGE[0] <= score <= STS_RANGE[1]:
            raise DataError(path, line, spec.label, f"a similarity score in {list(STS_RANGE)}",
                            got=value)
        return score
    if value not in spec.classes:
        raise DataError(path, line, spec.label, f"one of {list(spec.classes)}", got=value)
    return spec.classes.index(value)


def read_file(task, path):
    """The examples of one official GLUE tsv file of ``task`` (train or dev: labelled)."""
    if task not in SPECS:
        raise ValueError(f"GLUE task {task!r}: expected one of {sorted(SPECS)}")
    spec, path = SPECS[task], Path(path)
    if not path.is_file():
        raise DataError(path, None, "(file)", f"the {task} file of the official GLUE data",
                        got="missing file")
    rows = iter_tsv(path, spec.columns)
    header = None
    if spec.columns is None:
        _, header = next(rows, (1, None))
        needed = [*spec.fields.values(), spec.label]
        missing = [c for c in needed if header is None or c not in header]
        if missing:
            raise DataError(path, 1, missing[0], f"a header with columns {needed}", got=header)
    examples = []
    for line, row in rows:
        if header is not None:
            if len(row) != len(header):
                raise DataError(path, line, "(row)",
                                f"{len(header)} tab-separated columns as in the header",
                                got=len(row))
            row = dict(zip(header, row))
        texts = {name: row[column] for name, column in spec.fields.items()}
        empty = [column for name, column in spec.fields.items() if not texts[name].strip()]
        if empty:
            raise DataError(path, line, empty[0], "a non-empty text", got=row[empty[0]])
        examples.append(GlueExample(task, texts, _label(spec, row[spec.label], path, line),
                                    str(path), line))
    if not examples:
        raise DataError(path, None, "(file)", "at least one example", got="none")
    return examples


def read_task(task, data_dir, split):
    """``read_file`` on the split's file under ``<data_dir>/<Task>/``."""
    spec = SPECS.get(task)
    if spec is None:
        raise ValueError(f"GLUE task {task!r}: expected one of {sorted(SPECS)}")
    if split not in spec.splits:
        raise ValueError(f"GLUE task {task!r}: split {split!r}: expected one of "
                         f"{sorted(spec.splits)}")
    return read_file(task, task_dir(data_dir, task) / spec.splits[split])
