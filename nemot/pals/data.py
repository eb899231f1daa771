"""Readers for the PALs reproduction's data, and its encoding into BERT inputs.

Two distributions, read as published (one declarative :class:`Layout` per task):

- **CS224N minBERT default project** (``data/`` of the project; Rotzal s.5.1): read by
  the shared reader :mod:`nemot.data.benchmarks.minbert` (its layouts and :func:`read_file`
  live there).
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

import numpy as np

from nemot.data.benchmarks import glue, minbert
from nemot.data.benchmarks.minbert import Layout, Rows
from nemot.data.benchmarks.wordpiece import InputPacker
from nemot.data.sampling import sampled_batches, shuffled_batches
from nemot.pals.tasks import get_task

# The minBERT layouts (nemot.data.benchmarks.minbert) and GLUE's files (unquoted).
LAYOUTS = {
    **minbert.LAYOUTS,
    "sst2": Layout(("SST-2/{split}.tsv",), ("sentence",), "label", False, labels=(0, 1)),
    "qqp": Layout(("QQP/{split}.tsv",), ("question1", "question2"), "is_duplicate", False,
                  labels=(0, 1)),
    "stsb": Layout(("STS-B/{split}.tsv",), ("sentence1", "sentence2"), "score", False,
                   label_range=(0.0, 5.0)),
}


def read_file(task, path):
    """The :class:`Rows` of one file of ``task``'s layout (labels None without a label
    column)."""
    return minbert.read_file(LAYOUTS[get_task(task).name], path, task)


# The GLUE tasks also come from TFDS or the hub, through the project's GLUE reader.
GLUE_NAMES = {"sst2": "SST-2", "qqp": "QQP", "stsb": "STS-B"}
SOURCES = ("files", "tfds", "hub")


def read_rows(task, data_dir, split, source="files", labelled=False):
    """The :class:`Rows` of ``task``'s ``split``: from the files under ``data_dir``, or
    (GLUE tasks) a TFDS directory or the hub (:func:`nemot.data.benchmarks.glue.read_task`).
    ``labelled``: a file without its label column is an error (:func:`minbert.read`)."""
    if source == "files":
        return minbert.read(get_task(task).name, data_dir, split, labelled, LAYOUTS)
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


def batch(arrays, index, task_index):
    """``(inputs, targets)`` of the examples ``index`` of one task."""
    inputs = {k: arrays[k][index] for k in ("token_ids", "segment_ids", "padding_mask")}
    inputs["task_index"] = np.full((len(index),), task_index, "int32")
    targets = np.stack([inputs["task_index"].astype("float32"), arrays["labels"][index]], 1)
    return inputs, targets


def multitask_batches(arrays, sampler, batch_size, seed, start_step=0):
    """The training stream: step ``s``'s batch is from the task ``sampler`` draws for ``s``
    (annealed sampling, Rotzal s.4.4), at that task's own position in its stream.

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

    def make_iterator(task, start_batch):  # each task's own seeded passes (resumable)
        index = order.index(task)
        return (batch(arrays[task], rows, index) for rows in shuffled_batches(
            len(arrays[task]["labels"]), batch_size, [seed, index], start_batch))

    for _, item in sampled_batches(make_iterator, sampler, start_step):
        yield item
