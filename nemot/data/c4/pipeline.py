"""The C4 pre-training stream as a ``tf.data`` dataset (docs/spec.md §4): the numpy stream
of :mod:`nemot.data.c4.stream` in the batches of :mod:`nemot.data.batching`.

Example:
    >>> ds = c4_dataset("c4/en", batch_size=8, max_text_length=768)     # doctest: +SKIP
    >>> x, y = next(iter(ds))
    >>> x["token_ids"].shape, y["task_targets"].shape
    (TensorShape([8, 771]), TensorShape([8, 768]))
"""

import numpy as np

from nemot import vocab
from nemot.data.batching import batches, rows_dataset
from nemot.data.c4 import stream
from nemot.data.tokenizer import Tokenizer
from nemot.vocab import MAX_TEXT_LENGTH


def c4_dataset(data_dir, *, batch_size, max_text_length=MAX_TEXT_LENGTH, seed=0, start_batch=0,
               pack=False, max_bad_lines=stream.MAX_BAD_LINES, file_order="random",
               shuffle_buffer=8192, tokenizer=None, split="train", input_context=None,
               cycle_length=4, window_index="default", source="files",
               tfds_name=stream.TFDS_NAME):
    """The C4 pre-training stream (docs/spec.md §4): every row ``[<cls>, <dec>, <lm>]`` + a window.

    Args:
        data_dir: raw HF ``c4/en`` files (``*.json.gz``) or ``python -m data_prep c4`` shards;
            with ``source="tfds"`` a TFDS data directory (local or ``gs://``).
        batch_size: global batch size.
        max_text_length: window length n.
        seed: file order and shuffle seed.
        start_batch: resume at this global batch (exactly the uninterrupted stream's batches).
        pack: concatenate documents (within chunks of
            :data:`nemot.data.c4.stream.CHUNK_DOCS`) before cutting, to save padding.
        max_bad_lines: malformed lines (bad JSON, no string ``text``) are skipped and
            logged as they come (:class:`nemot.data.c4.stream.Problems`); one more than this
            in an epoch stops the stream with a :class:`DataError` naming its file and line
            (0: the first one).
        file_order: ``"random"`` (seeded, without replacement; thesis) or ``"directory"``
            (original code).
        shuffle_buffer: windows in the shuffle buffer.
        tokenizer: for raw files and TFDS (default: the offline GPT-2 :class:`Tokenizer`).
        split: ``"train"`` (infinite) or ``"validation"`` (one pass, in directory order,
            not shuffled, last batch padded).
        input_context: a ``tf.distribute.InputContext`` (see
            :func:`nemot.training.distributed.distribute`).
        cycle_length: files interleaved at a time.
        window_index: JSON file of recorded window counts for resuming; ``"default"``
            is :func:`nemot.data.c4.stream.default_index_path`, None keeps them in memory.
        source: ``"files"`` (raw or shards, told apart by their names) or ``"tfds"``: the
            prepared TFDS dataset ``tfds_name`` in ``data_dir`` (:mod:`nemot.data.c4.tfds`;
            each shard file is read as a raw file would be).
        tfds_name: ``"c4/en:3.1.0"`` (default), ``"c4/en:3.0.1"``, ...; ``"c4/en"`` reads
            the version tensorflow-datasets picks.

    ``task_targets`` are next-token targets; ``lm_targets`` are all ignored.
    """
    kind, files = stream.list_files(data_dir, split, source, tfds_name)
    tokenized = kind == stream.SHARDS
    if not tokenized and tokenizer is None:
        tokenizer = Tokenizer()
    if window_index == "default":
        window_index = stream.default_index_path(data_dir)
    index = stream.WindowIndex(window_index, max_text_length, pack,
                               None if tokenized else tokenizer)
    training = split == "train"
    ignored = np.full(max_text_length, vocab.IGNORE_ID, np.int32)

    def make_batches():
        rows = stream.window_stream(
            kind, files, n=max_text_length, seed=seed, start=start_batch * batch_size,
            pack=pack, max_bad_lines=max_bad_lines,
            order=file_order if training else "directory",
            cycle_length=cycle_length if training else 1,
            shuffle_buffer=shuffle_buffer if training else 0, tokenizer=tokenizer,
            index=index, repeat=training)
        return batches(((x, t, ignored) for x, t in rows), batch_size, input_context)

    rows = None
    if not training:
        problems = stream.Problems(max_bad_lines, quiet=True)
        rows = max(sum(index.count(f, kind, problems) for f in files) - start_batch * batch_size, 0)
    return rows_dataset(make_batches, batch_size, max_text_length, input_context, rows=rows)
