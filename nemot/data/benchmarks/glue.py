"""GLUE readers (SST-2 included): the official tsv files, as the GLUE download distributes
them, and the same data from TensorFlow Datasets (``glue/<config>``) or the Hugging Face hub
(``nyu-mll/glue``).

One declarative spec per task: the file's header columns (CoLA's train and dev files
have none: ``source, label, original label, sentence``), the text fields under the
names T5's text-to-text format uses, and the label column with its values in class
order (TFDS's order, so class k is T5's k-th label word). Files are read with tabs
and no quoting (sentences contain stray quote marks). MNLI's dev split is two files,
``dev_matched.tsv`` and ``dev_mismatched.tsv`` (tasks ``MNLI`` and ``MNLI-mm`` here);
WNLI is readable but not in :data:`TASKS` (T5 and HyperGrid leave it out).

TFDS and the hub hold the same rows under T5's field names (the two were built from
the same files by the same recipe): one row per data line with its ``idx`` (its row
number in the file), the label as a class index over named classes (CoLA
``unacceptable, acceptable`` for the file's 0/1 ...; checked against the spec) or STS-B's
float32 score, and -1 in the unlabelled test rows. ``read_task(..., source=...)`` turns
them into exactly the examples of the files: rows in ``idx`` order, the class index of
the file's value, the score as the file's decimal (float32's shortest repr).

Every malformed row is a :class:`nemot.data.DataError` naming the file (or the TFDS /
hub dataset and split), the line (or ``idx``), the field and what was expected.

Example:
    >>> examples = read_task("RTE", "glue_data", "dev")                        # doctest: +SKIP
    >>> examples[0].fields["sentence1"], examples[0].label                     # doctest: +SKIP
    ('Dana Reeve, the widow of ...', 1)
    >>> read_task("RTE", "~/tensorflow_datasets", "dev", source="tfds")        # doctest: +SKIP
    >>> read_task("RTE", None, "dev", source="hub")                            # doctest: +SKIP
"""

import dataclasses
import math
from pathlib import Path

import numpy as np

from nemot.data.benchmarks.tfds_rows import tfds_rows
from nemot.data.raw import DataError, hub_rows, iter_tsv

SOURCES = ("files", "tfds", "hub")
HUB_NAME = "nyu-mll/glue"
TFDS_VERSION = "2.0.0"  # glue/<config> of tensorflow-datasets 4.x


@dataclasses.dataclass(frozen=True)
class GlueTask:
    """How one task's files are laid out.

    Attributes:
        fields: ``{T5 field name: file column}`` of the texts, in T5's order.
        label: the label column.
        classes: the label values in class order; empty for STS-B's float score.
        columns: the columns of a headerless file (CoLA), else None (read the header).
        splits: ``{split: file name}``.
        config: the TFDS and hub config (``glue/<config>``, ``nyu-mll/glue`` ``<config>``).
        names: the TFDS and hub label's class names, in class order; empty for STS-B.
        validation: the TFDS and hub split of ``dev``.
    """

    fields: dict
    label: str
    classes: tuple = ()
    columns: tuple = None
    splits: dict = dataclasses.field(default_factory=lambda: {"train": "train.tsv",
                                                              "dev": "dev.tsv"})
    config: str = ""
    names: tuple = ()
    validation: str = "validation"


BINARY = ("0", "1")
NLI2 = ("entailment", "not_entailment")
NLI3 = ("entailment", "neutral", "contradiction")
MNLI_FIELDS = {"hypothesis": "sentence2", "premise": "sentence1"}
SPECS = {
    "CoLA": GlueTask({"sentence": "sentence"}, "label", BINARY,
                     columns=("source", "label", "original_label", "sentence"),
                     config="cola", names=("unacceptable", "acceptable")),
    "SST-2": GlueTask({"sentence": "sentence"}, "label", BINARY, config="sst2",
                      names=("negative", "positive")),
    "MRPC": GlueTask({"sentence1": "#1 String", "sentence2": "#2 String"}, "Quality", BINARY,
                     config="mrpc", names=("not_equivalent", "equivalent")),
    "STS-B": GlueTask({"sentence1": "sentence1", "sentence2": "sentence2"}, "score",
                      config="stsb"),
    "QQP": GlueTask({"question1": "question1", "question2": "question2"}, "is_duplicate", BINARY,
                    config="qqp", names=("not_duplicate", "duplicate")),
    "MNLI": GlueTask(MNLI_FIELDS, "gold_label", NLI3,
                     splits={"train": "train.tsv", "dev": "dev_matched.tsv"},
                     config="mnli", names=NLI3, validation="validation_matched"),
    "MNLI-mm": GlueTask(MNLI_FIELDS, "gold_label", NLI3, splits={"dev": "dev_mismatched.tsv"},
                        config="mnli", names=NLI3, validation="validation_mismatched"),
    "QNLI": GlueTask({"question": "question", "sentence": "sentence"}, "label", NLI2,
                     config="qnli", names=NLI2),
    "RTE": GlueTask({"sentence1": "sentence1", "sentence2": "sentence2"}, "label", NLI2,
                    config="rte", names=NLI2),
    "WNLI": GlueTask({"sentence1": "sentence1", "sentence2": "sentence2"}, "label", BINARY,
                     config="wnli", names=("not_entailment", "entailment")),
}
# The tasks T5 (and HyperGrid after it) trains and averages: WNLI is left out; MNLI-mm is
# MNLI's second dev file.
TASKS = ("CoLA", "SST-2", "MRPC", "STS-B", "QQP", "MNLI", "QNLI", "RTE")
STS_RANGE = (0.0, 5.0)


@dataclasses.dataclass(frozen=True)
class GlueExample:
    """One labelled row: ``fields`` under T5's names, ``label`` a class index (a float
    in [0, 5] for STS-B), ``line`` its line in the ``source`` file (from TFDS or the
    hub: its ``idx``, the row's number in the file it was built from)."""

    task: str
    fields: dict
    label: object
    source: str
    line: int


def task_dir(data_dir, task):
    """``<data_dir>/<Task>``, the folder of the official zip (MNLI-mm reads MNLI's)."""
    return Path(data_dir) / ("MNLI" if task == "MNLI-mm" else task)


def _spec(task):
    if task not in SPECS:
        raise ValueError(f"GLUE task {task!r}: expected one of {sorted(SPECS)}")
    return SPECS[task]


def _label(spec, value, source, where, field):
    if not spec.classes:
        try:
            score = float(value)
        except ValueError:
            score = math.nan
        if not STS_RANGE[0] <= score <= STS_RANGE[1]:
            raise DataError(source, where, field, f"a similarity score in {list(STS_RANGE)}",
                            got=value)
        return score
    if value not in spec.classes:
        raise DataError(source, where, field, f"one of {list(spec.classes)}", got=value)
    return spec.classes.index(value)


def _example(task, texts, value, source, where, line, columns):
    """The example of ``texts`` (by T5 name) labelled ``value`` as the files write it;
    ``columns`` names each field and ``"label"`` in the errors."""
    empty = [name for name, text in texts.items() if not text.strip()]
    if empty:
        raise DataError(source, where, columns[empty[0]], "a non-empty text", got=texts[empty[0]])
    return GlueExample(task, texts, _label(SPECS[task], value, source, where, columns["label"]),
                       str(source), line)


def read_file(task, path):
    """The examples of one official GLUE tsv file of ``task`` (train or dev: labelled)."""
    spec, path = _spec(task), Path(path)
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
            # A GLUE test.tsv has every column but the label: there are no public test labels.
            hint = " (GLUE's test files have no labels: use the dev file as the test set)" \
                if missing == [spec.label] else ""
            raise DataError(path, 1, missing[0], f"a header with columns {needed}{hint}",
                            got=header)
    columns = {**spec.fields, "label": spec.label}
    examples = []
    for line, row in rows:
        if header is not None:
            if len(row) != len(header):
                raise DataError(path, line, "(row)",
                                f"{len(header)} tab-separated columns as in the header",
                                got=len(row))
            row = dict(zip(header, row))
        texts = {name: row[column] for name, column in spec.fields.items()}
        examples.append(_example(task, texts, row[spec.label], path, line, line, columns))
    if not examples:
        raise DataError(path, None, "(file)", "at least one example", got="none")
    return examples


def read_rows(task, features, rows, source):
    """The examples of TFDS or hub ``rows`` of ``task`` (dicts of ``features``: T5's field
    names, ``label``, ``idx``), as :func:`read_file` gives them from the files.

    ``source`` names the dataset and split in errors. A missing feature, label classes
    other than the spec's names and an unlabelled row (-1) are :class:`DataError` s.
    """
    spec = _spec(task)
    needed = [*spec.fields, "label", "idx"]
    missing = [name for name in needed if name not in features]
    if missing:
        raise DataError(source, None, missing[0], f"the features {needed} of GLUE {task}",
                        got=sorted(features))
    names = getattr(features["label"], "names", None)
    if (list(names) if names is not None else []) != list(spec.names):
        expected = f"the class names {list(spec.names)}" if spec.names else \
            "a float32 similarity score, not classes"
        raise DataError(source, None, "label", expected, got=names)
    columns = {name: name for name in needed}
    examples = []
    for row in sorted(rows, key=lambda r: r["idx"]):
        where, label = f"idx {row['idx']}", row["label"]
        if label == -1:
            raise DataError(source, where, "label", "a labelled row (TFDS and the hub mark the "
                            "unlabelled test rows -1)", got=label)
        # The file's value: the class's own value; the score as float32's shortest decimal.
        value = spec.classes[label] if spec.names else str(np.float32(label))
        texts = {name: row[name] for name in spec.fields}
        examples.append(_example(task, texts, value, source, where, row["idx"], columns))
    if not examples:
        raise DataError(source, None, "(split)", "at least one example", got="none")
    return examples


def read_task(task, data_dir, split, source="files"):
    """The labelled examples of ``split`` (``train`` or ``dev``) of ``task`` from ``source``.

    - ``"files"``: :func:`read_file` on the split's file under ``<data_dir>/<Task>/``;
    - ``"tfds"``: TFDS ``glue/<config>:2.0.0`` prepared in the TFDS directory ``data_dir``;
    - ``"hub"``: ``nyu-mll/glue`` ``<config>`` through ``datasets`` (``data_dir`` None).

    ``dev`` is TFDS's and the hub's ``validation`` (MNLI: ``validation_matched``,
    MNLI-mm: ``validation_mismatched``). Every source gives the same examples.
    """
    spec = _spec(task)
    if split not in spec.splits:
        raise ValueError(f"GLUE task {task!r}: split {split!r}: expected one of "
                         f"{sorted(spec.splits)}")
    if source == "files":
        return read_file(task, task_dir(data_dir, task) / spec.splits[split])
    source_split = spec.validation if split == "dev" else split
    if source == "tfds":
        name = f"glue/{spec.config}:{TFDS_VERSION}"
        features, rows = tfds_rows(name, data_dir, source_split)
        return read_rows(task, features, rows, f"TFDS {name} [{source_split}] in {data_dir}")
    if source == "hub":
        if data_dir is not None:
            raise ValueError(f"GLUE {task} from the hub ({HUB_NAME}): data_dir must be None "
                             f"(got {str(data_dir)!r}); source='files' reads a directory")
        dataset = hub_rows(HUB_NAME, spec.config, source_split)
        return read_rows(task, dataset.features, dataset,
                         f"hub {HUB_NAME} {spec.config} [{source_split}]")
    raise ValueError(f"GLUE source {source!r}: expected one of {list(SOURCES)}")
