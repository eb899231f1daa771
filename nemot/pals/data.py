"""Readers for the PALs reproduction's data, and its encoding into BERT inputs.

Two distributions, read as published (one declarative :class:`Layout` per task):

- **CS224N minBERT default project** (``data/`` of the project; seed s.5.1): read by
  the shared reader :mod:`nemot.data.minbert` (its layouts and :func:`read_file` live there).
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

import itertools

import numpy as np

from nemot.data import glue, minbert
from nemot.data.minbert import Layout, Rows
from nemot.data.sampling import sampled_batches
from nemot.data.wordpiece import InputPacker
from nemot.pals.tasks import get_task

# The minBERT layouts (nemot.data.minbert) and GLUE's files (unquoted).
LAYOUTS = {
    **minbert.LAYOUTS,
    "sst2": Layout(("SST-2/{split}.tsv",), ("sentence",), "label", False, labels=(0, 1)),
    "qqp": Layout(("QQP/{split}.tsv",), ("question1", "question2"), "is_duplicate", False,
                  labels=(0, 1)),
    "stsb": Layout(("STS-B/{split}.tsv",), ("sentence1", "sentence2"), "score", False,
                   label_range=(0.0, 5.0)),
}


def split_file(task, data_dir, split):
    """The file of ``task``'s ``split`` under ``data_dir`` (the first candidate present)."""
    name = get_task(task).name
    return minbert.split_file(LAYOUTS[name], data_dir, split, task)


def read_file(task, path):
    """The :class:`Rows` of one file of ``task``'s layout (labels None without a label
    column)."""
    return minbert.read_file(LAYOUTS[get_task(task).name], path, task)


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
