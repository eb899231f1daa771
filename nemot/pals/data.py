"""Readers for the PALs reproduction's data, and its encoding into BERT inputs.

Two distributions, read as published (one declarative :class:`Layout` per task):

- **CS224N minBERT default project** (``data/`` of the project; seed s.5.1): tab-separated
  with an unnamed index column, quoted as Python's ``csv`` writes (the project reads them
  with ``csv.DictReader(delimiter="\\t")``): ``ids-sst-{split}.csv`` and
  ``ids-cfimdb-{split}.csv`` (``id``, ``sentence``, ``sentiment``), ``quora-{split}.csv``
  (``id``, ``sentence1``, ``sentence2``, ``is_duplicate`` as ``0.0``/``1.0``),
  ``sts-{split}.csv`` (``id``, ``sentence1``, ``sentence2``, ``similarity`` in [0, 5]).
  Splits ``train``, ``dev``, ``test-student`` (no label column).
- **GLUE** (``SST-2/``, ``QQP/``, ``STS-B/`` with ``{train,dev,test}.tsv``, unquoted):
  SST-2 ``sentence``, ``label``; QQP ``id``, ``question1``, ``question2``,
  ``is_duplicate``; STS-B ``index``, ``sentence1``, ``sentence2``, ``score``. Test files
  have no label column.

Every malformed row is a :class:`nemot.data.DataError` naming the file, the line, the
field and what was expected; nothing is skipped.

Encoding: a sentence is ``[CLS] s [SEP]``, a pair ``[CLS] a [SEP] b [SEP]`` with segment
ids 0/1 (BERT's pair input, as the official PALs code on GLUE), packed to a fixed
``sequence_length`` by KerasHub's ``MultiSegmentPacker`` (round-robin truncation).

Example:
    >>> rows = read_rows("sts", "data/", "dev")                       # doctest: +SKIP
    >>> rows.text_a[0], rows.text_b[0], rows.labels[0]                 # doctest: +SKIP
    ('UN chief welcomes ...', 'UN chief condemns ...', 1.0)
"""

import csv
import dataclasses
import itertools
from pathlib import Path

import numpy as np

from nemot.data import glue
from nemot.data.format import DataError
from nemot.data.sampling import sampled_batches
from nemot.data.wordpiece import InputPacker
from nemot.pals.tasks import get_task

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
    """

    files: tuple
    text: tuple
    label: str
    quoted: bool
    labels: tuple = None
    label_range: tuple = None


LAYOUTS = {
    "sst": Layout(("ids-sst-{split}.csv",), ("sentence",), "sentiment", True,
                  labels=(0, 1, 2, 3, 4)),
    "cfimdb": Layout(("ids-cfimdb-{split}.csv",), ("sentence",), "sentiment", True,
                     labels=(0, 1)),
    "quora": Layout(("quora-{split}.csv",), ("sentence1", "sentence2"), "is_duplicate", True,
                    labels=(0, 1)),
    "sts": Layout(("sts-{split}.csv",), ("sentence1", "sentence2"), "similarity", True,
                  label_range=(0.0, 5.0)),
    "sst2": Layout(("SST-2/{split}.tsv",), ("sentence",), "label", False, labels=(0, 1)),
    "qqp": Layout(("QQP/{split}.tsv",), ("question1", "question2"), "is_duplicate", False,
                  labels=(0, 1)),
    "stsb": Layout(("STS-B/{split}.tsv",), ("sentence1", "sentence2"), "score", False,
                   label_range=(0.0, 5.0)),
}


@dataclasses.dataclass(frozen=True)
class Rows:
    """One split of one task: texts and labels (``labels`` is None for a test file)."""

    task: str
    path: str
    text_a: tuple
    text_b: tuple
    labels: np.ndarray

    def __len__(self):
        return len(self.text_a)


def split_file(task, data_dir, split):
    """The file of ``task``'s ``split`` under ``data_dir`` (the first candidate present)."""
    if split not in SPLITS:
        raise ValueError(f"split {split!r}: expected one of {SPLITS}")
    layout = LAYOUTS[get_task(task).name]
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


def read_file(task, path):
    """The :class:`Rows` of one file of ``task``'s layout (labels None without a label
    column)."""
    layout, path = LAYOUTS[get_task(task).name], Path(path)
    quoting = csv.QUOTE_MINIMAL if layout.quoted else csv.QUOTE_NONE
    texts, labels = [], []
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t", quoting=quoting)
        header = next(reader, None)
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
        for row in reader:
            line = reader.line_num  # where the row ends (a quoted field may span lines)
            if not row:
                continue
            if len(row) != len(header):
                raise DataError(path, line, "(row)",
                                f"{len(header)} tab-separated fields as in the header",
                                got=len(row))
            texts.append(tuple(row[c].strip() for c in columns))
            if has_label:
                labels.append(_label(layout, path, line, row[label_column]))
    text_a = tuple(t[0] for t in texts)
    text_b = tuple(t[1] for t in texts) if len(layout.text) == 2 else None
    return Rows(task, str(path), text_a, text_b,
                np.array(labels, "float32") if has_label else None)


# The GLUE tasks also come from TFDS or the hub, through the project's GLUE reader.
GLUE_NAMES = {"sst2": "SST-2", "qqp": "QQP", "stsb": "STS-B"}
SOURCES = ("files", "tfds", "hub")


def read_rows(task, data_dir, split, source="files"):
    """The :class:`Rows` of ``task``'s ``split``: from the files under ``data_dir``, or
    (GLUE tasks) a TFDS directory or the hub (:func:`nemot.data.glue.read_task`)."""
    if source == "files":
        return read_file(task, split_file(task, data_dir, split))
    if source not in SOURCES or task not in GLUE_NAMES:
        raise ValueError(f"task {task!r} from source {source!r}: expected 'files', or "
                         f"one of {SOURCES} for the GLUE tasks {sorted(GLUE_NAMES)}")
    examples = glue.read_task(GLUE_NAMES[task], data_dir, split, source=source)
    texts = [tuple(text.strip() for text in e.fields.values()) for e in examples]
    return Rows(task, f"{source}:{GLUE_NAMES[task]}/{split}", tuple(t[0] for t in texts),
                tuple(t[1] for t in texts) if len(texts[0]) == 2 else None,
                np.array([e.label for e in examples], "float32"))


class Encoder:
    """Rows -> numpy BERT inputs of a fixed ``sequence_length``.

    Args:
        tokenizer: a ``keras_hub.models.BertTokenizer``.
        sequence_length: ids per example (default 128, the official PALs code's
            ``max_seq_length``).

    Example:
        >>> arrays = Encoder(tokenizer, 16).encode(rows)      # doctest: +SKIP
        >>> arrays["token_ids"].shape, arrays["labels"].shape  # doctest: +SKIP
        ((N, 16), (N,))
    """

    def __init__(self, tokenizer, sequence_length=128):
        self.tokenizer = tokenizer
        self.sequence_length = int(sequence_length)
        self.packer = InputPacker(tokenizer, self.sequence_length, truncate="round_robin")

    def encode(self, rows, chunk=4096):
        """``token_ids``, ``segment_ids``, ``padding_mask`` int32 [N, L] and ``labels``
        float32 [N] (NaN for a test file)."""
        parts = [self.packer([self.tokenizer(list(texts[start:start + chunk]))
                              for texts in (rows.text_a, rows.text_b) if texts is not None])
                 for start in range(0, len(rows), chunk)] or [self.packer([[]])]
        labels = rows.labels if rows.labels is not None else np.full(len(rows), np.nan)
        return {**{key: np.concatenate([part[key] for part in parts]) for key in parts[0]},
                "labels": np.asarray(labels, "float32")}


def task_batches(arrays, task_index, batch_size, seed, start_batch=0):
    """``task``'s training batches forever from batch ``start_batch``: ``(inputs, targets)``.

    Each pass over the examples is its own seeded permutation; a batch may straddle two
    passes. Batch ``b`` is the same whatever ``start_batch`` the stream starts from, so a
    resumed run continues exactly (with :func:`nemot.data.sampling.sampled_batches`).
    """
    n = len(arrays["labels"])
    if n == 0:
        raise ValueError("task_batches: no training examples")
    if np.isnan(arrays["labels"]).any():
        raise ValueError("task_batches: examples without labels (a test file) cannot train")

    def permutation(epoch):
        return np.random.default_rng([seed, task_index, epoch]).permutation(n)

    for b in itertools.count(start_batch):
        first = b * batch_size
        index = np.concatenate([permutation(epoch)[max(first - epoch * n, 0):
                                                   first + batch_size - epoch * n]
                                for epoch in range(first // n, (first + batch_size - 1) // n + 1)])
        yield batch(arrays, index, task_index)


def batch(arrays, index, task_index):
    """``(inputs, targets)`` of the examples ``index`` of one task."""
    inputs = {k: arrays[k][index] for k in ("token_ids", "segment_ids", "padding_mask")}
    inputs["task_index"] = np.full((len(index),), task_index, "int32")
    targets = np.stack([inputs["task_index"].astype("float32"), arrays["labels"][index]], 1)
    return inputs, targets


def multitask_batches(arrays, sampler, batch_size, seed, start_step=0):
    """The training stream: step ``s``'s batch is from the task ``sampler`` draws for ``s``
    (annealed sampling, seed s.4.4), at that task's own position in its stream.

    Args:
        arrays: ``{task: encoded arrays}`` in the model's task order (the task index is
            the position in this dict).
        sampler: a :class:`nemot.data.sampling.TaskSampler` over the same tasks.
        batch_size: examples per batch.
        seed: the shuffling seed.
        start_step: the global step to start at (a resumed run continues exactly).
    """
    order = list(arrays)
    if set(order) != set(sampler.tasks):
        raise ValueError(f"sampler tasks {list(sampler.tasks)} differ from the data's {order}")

    def make_iterator(task, start_batch):
        return task_batches(arrays[task], order.index(task), batch_size, seed, start_batch)

    for _, item in sampled_batches(make_iterator, sampler, start_step):
        yield item
