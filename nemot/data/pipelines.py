"""tf.data pipelines: the C4 pre-training stream and QA training (docs/spec.md §4-5).

Every training dataset yields batches ``(x, y)`` with static shapes (XLA)::

    x = {"token_ids": int32 [B, 3 + n],          # [<cls>, <mode>, <task>] + text, <pad>-padded
         "pos_tags": int32 [B, n]}               # QA datasets given a pos_tagger only
    y = {"task_targets": int32 [B, n],           # L1 and L3; IGNORE_ID (-1) where ignored
         "lm_targets": int32 [B, n]}             # L2; all ignored for C4 (pre-training is L1)

``pos_tags`` (the highlighting reading strategy, :mod:`nemot.data.pos_tags`): the
QA datasets take ``pos_tagger=`` (a ``PosTagger``, e.g. ``pos_tagger_for(model_config)``,
None for models without highlighting). Every example is tagged once, when the
dataset is made, and its tags (``POS_PAD_ID`` = -1 at padding) travel with its row,
so shuffling, resuming and distribution keep them aligned with the token ids.

The order of examples is computed in numpy and is a pure function of
``(seed, position)``, so ``start_batch=k`` resumes exactly at global batch ``k``
(C4: see :mod:`nemot.data.c4`; QA: epoch ``e`` is ``default_rng([seed, e]).permutation``).
``tf.data`` adds static shapes and prefetching.

Distribution: ``batch_size`` is always the **global** batch size. With an
``input_context`` (from :func:`nemot.training.distributed.distribute`) each input
pipeline reads the same global stream and keeps its own contiguous slice of every
global batch, cut into per-replica batches; replica ``r`` of step ``s`` therefore sees
rows ``[r*b, (r+1)*b)`` of global batch ``s``: no example is duplicated or dropped, and
the union over replicas is the single-device batch. (Every worker reads the whole
stream: cheap from pre-tokenised shards, which is what multi-worker runs should use.)

Finite datasets (``repeat=False``, validation) pad the last global batch with rows of
``<pad>`` whose targets are all ignored, so no example is dropped and shapes stay static.

Example:
    >>> ds = qa_dataset("race", "train", data_dir="RACE", batch_size=32)   # doctest: +SKIP
    >>> x, y = next(iter(ds))
    >>> x["token_ids"].shape, y["task_targets"].shape
    (TensorShape([32, 771]), TensorShape([32, 768]))
"""

import collections
import contextlib
import ctypes
import functools
import itertools
import logging
import os
from pathlib import Path

import numpy as np
import tensorflow as tf

from nemot import vocab
from nemot.vocab import NUM_AUX
from nemot.data import c4, registry, shards
from nemot.data.format import MAX_TEXT_LENGTH, DataError, FormattedExample, Formatter
# pos_tagger_for is re-exported: the trainer picks a model's tagger with it.
from nemot.data.pos_tags import POS_PAD_ID, pad_pos_tags, pos_tagger_for  # noqa: F401
from nemot.data.registry import SEED_DATASETS
from nemot.data.tokenizer import Tokenizer

logger = logging.getLogger(__name__)

# Pool draws are made in blocks of this many positions, so resuming recounts cheaply.
POOL_BLOCK = 65536
_POOL_TAG = 7919  # keeps the pool's dataset draws apart from the per-dataset permutations
_ANSWER_TAG = 104729  # keeps the per-epoch answer choice apart from the permutations


# ---------------------------------------------------------------- errors raised inside tf.data

# Python exceptions raised by the Python code of our datasets (generators, checks), newest
# last: tf.data hands them on as a tf.errors.OpError carrying their message only.
_RAISED = collections.deque(maxlen=8)


def _remembered(fn):
    """``fn`` remembering the exception it raises, for :func:`python_errors`."""
    @functools.wraps(fn)
    def remembering(*args):
        try:
            return fn(*args)
        except Exception as error:
            _RAISED.append(error)
            raise

    return remembering


# glibc's mallopt parameters (malloc.h) and the values keep_freed_memory sets: heap chunks
# up to 32 MiB (glibc's largest mmap threshold) and up to 256 MiB of freed heap kept.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD, _TRIM_THRESHOLD = 32 << 20, 256 << 20


def keep_freed_memory():
    """Let the process reuse the memory it frees, undoing TensorFlow's allocator patch.

    A TensorFlow generator dataset, when its iterator starts, sets glibc's
    ``M_TRIM_THRESHOLD`` to 128 KiB ("Memory patch applied" in its log), which also fixes
    the mmap threshold at 128 KiB: every buffer of 128 KiB or more is then a fresh ``mmap``
    whose pages fault in when first written and go back to the system when freed, and a
    training step allocates the same buffers again at every step. On the 2-core machine
    the comparison's training process spent ~45% of its CPU time in the kernel that way
    (83 million page faults in 20 minutes); with this setting, a short run of it took
    5.0 s of system time instead of 27.8 s (0.88 million page faults instead of 7.6;
    docs/performance.md). Where TensorFlow's oneDNN operations are on (its default on
    CPUs with AVX512_VNNI, AVX512_BF16, AMX and the like), its tensors come from oneDNN's
    pooling allocator instead, and the patch costs little.
    Freed heap memory up to 256 MiB is kept for reuse, and chunks up to 32 MiB come from
    the heap. Called by every generator of :func:`generator_dataset` as it starts (after
    TensorFlow's patch). ``NEMOT_TF_MEMORY_PATCH=keep`` keeps TensorFlow's setting.

    Returns:
        whether the setting was made (False: the C library is not glibc, or the
        environment variable asks to keep TensorFlow's).
    """
    if os.environ.get("NEMOT_TF_MEMORY_PATCH") == "keep":
        return False
    libc = ctypes.CDLL(None)
    if not (hasattr(libc, "gnu_get_libc_version") and hasattr(libc, "mallopt")):
        return False
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
                and libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))


def _remembered_generator(make_generator):
    """``make_generator`` whose generators remember the exception they raise (and keep the
    memory the process frees, :func:`keep_freed_memory`)."""
    @functools.wraps(make_generator)
    def remembering(*args):
        keep_freed_memory()
        try:
            yield from make_generator(*args)
        except Exception as error:
            _RAISED.append(error)
            raise

    return remembering


@contextlib.contextmanager
def python_errors():
    """Raise again, as itself, a Python exception of our data code that reached the caller
    through tf.data as a ``tf.errors.OpError``: e.g. the :class:`DataError` naming a file
    and line, or the ``ValueError`` of a task token the model has no block for.

    Example:
        >>> with python_errors():                            # doctest: +SKIP
        ...     model.fit(c4_dataset("c4/en", batch_size=8), steps_per_epoch=10)
    """
    try:
        yield
    except tf.errors.OpError as error:
        original = next((e for e in reversed(_RAISED) if str(e) and str(e) in error.message),
                        None)
        if original is None:
            raise
        raise original from None


def checked_token_ids(x, check_batch):
    """``x`` (a batch of a ``tf.data`` pipeline, ``{"token_ids": ...}``) with its token ids
    checked on the host as they are read: a compiled train step cannot raise on values.
    ``check_batch(token_ids)`` raises for numpy token ids [batch, 3 + n] the model cannot
    take (the error calling the model gives); it reaches the caller through
    :func:`python_errors`."""

    @_remembered
    def checked_ids(token_ids):
        check_batch(token_ids)
        return token_ids

    ids = tf.numpy_function(checked_ids, [x["token_ids"]], x["token_ids"].dtype)
    return {**x, "token_ids": tf.ensure_shape(ids, x["token_ids"].shape)}


# ---------------------------------------------------------------- batching and distribution

def replica_share(batch_size, input_context):
    """``(per_replica_batch, first_row, rows)``: this input pipeline's slice of a global batch
    (all of it without an ``input_context``)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if input_context is None:
        return batch_size, 0, batch_size
    replicas, pipelines = input_context.num_replicas_in_sync, input_context.num_input_pipelines
    if batch_size % replicas or replicas % pipelines:
        raise ValueError(f"global batch size {batch_size} must divide evenly over "
                         f"{replicas} replicas in {pipelines} input pipelines")
    rows = batch_size // pipelines
    return batch_size // replicas, input_context.input_pipeline_id * rows, rows


def _pad_row(like):
    token_ids = like[0]
    pad = np.full_like(token_ids, vocab.PAD_ID)
    pad[:NUM_AUX] = token_ids[:NUM_AUX]  # a valid mode and task token for the model
    ignored = np.full(len(token_ids) - NUM_AUX, vocab.IGNORE_ID, np.int32)
    untagged = (np.full(len(ignored), POS_PAD_ID, np.int32),) if len(like) == 4 else ()
    return (pad, ignored, ignored) + untagged


def batches(rows, batch_size, input_context=None):
    """Per-replica batches ``(x, y)`` of numpy arrays from rows ``(token_ids, task, lm)``
    or ``(token_ids, task, lm, pos_tags)``.

    Takes ``batch_size`` (global) rows at a time, keeps this pipeline's slice and
    splits it into per-replica batches. A short last global batch is padded with
    ignored rows.
    """
    per_replica, first, share = replica_share(batch_size, input_context)
    rows = iter(rows)
    while block := list(itertools.islice(rows, batch_size)):
        block += [_pad_row(block[-1])] * (batch_size - len(block))
        mine = block[first:first + share]
        for r in range(0, share, per_replica):
            token_ids, task, lm, *tags = (np.stack(column)
                                          for column in zip(*mine[r:r + per_replica]))
            x = {"token_ids": token_ids}
            if tags:
                x["pos_tags"] = tags[0]
            yield x, {"task_targets": task, "lm_targets": lm}


def generator_dataset(make_batches, signature, input_context=None, batches=None):
    """A ``tf.data`` view of the Python batches of ``make_batches()``, with static shapes
    from ``signature`` (their ``tf.TensorSpec`` structure); a Python exception raised in
    them reaches the trainer as itself (:func:`python_errors`).

    Args:
        input_context: given when the batches already are this input pipeline's share of
            every global batch (:func:`batches`): tf.data's auto-sharding is then off.
        batches: how many a finite stream yields. Keras' ``evaluate`` on a dataset of
            unknown length averages in one empty step (the loss comes out N/(N+1) of the
            true value; seen with Keras 3.15), so validation losses would be low.
    """
    ds = tf.data.Dataset.from_generator(_remembered_generator(make_batches),
                                        output_signature=signature)
    if input_context is not None:
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
        ds = ds.with_options(options)
    if batches is not None:
        ds = ds.apply(tf.data.experimental.assert_cardinality(batches))
    return ds.prefetch(tf.data.AUTOTUNE)


def _to_dataset(make_batches, batch_size, max_text_length, input_context, pos_tags=False,
                rows=None):
    """A tf.data view of the rows' batches of ``make_batches``; ``rows`` = examples of a
    finite stream (its last global batch padded, :func:`batches`)."""
    per_replica, _, share = replica_share(batch_size, input_context)
    spec = lambda width: tf.TensorSpec([per_replica, width], tf.int32)  # noqa: E731
    x_spec = {"token_ids": spec(NUM_AUX + max_text_length)}
    if pos_tags:
        x_spec["pos_tags"] = spec(max_text_length)
    signature = (x_spec, {"task_targets": spec(max_text_length),
                          "lm_targets": spec(max_text_length)})
    count = None if rows is None else -(-rows // batch_size) * (share // per_replica)
    return generator_dataset(make_batches, signature, input_context, count)


# ---------------------------------------------------------------- C4

def c4_dataset(data_dir, *, batch_size, max_text_length=MAX_TEXT_LENGTH, seed=0, start_batch=0,
               pack=False, max_bad_lines=c4.MAX_BAD_LINES, file_order="random",
               shuffle_buffer=8192, tokenizer=None, split="train", input_context=None,
               cycle_length=4, window_index="default", source="files", tfds_name=c4.TFDS_NAME):
    """The C4 pre-training stream (docs/spec.md §4): every row ``[<cls>, <dec>, <lm>]`` + a window.

    Args:
        data_dir: raw HF ``c4/en`` files (``*.json.gz``) or ``python -m data_prep c4`` shards;
            with ``source="tfds"`` a TFDS data directory (local or ``gs://``).
        batch_size: global batch size.
        max_text_length: window length n.
        seed: file order and shuffle seed.
        start_batch: resume at this global batch (exactly the uninterrupted stream's batches).
        pack: concatenate documents (within chunks of :data:`nemot.data.c4.CHUNK_DOCS`)
            before cutting, to save padding.
        max_bad_lines: malformed lines (bad JSON, no string ``text``) are skipped and
            logged as they come (:class:`nemot.data.c4.Problems`); one more than this in
            an epoch stops the stream with a :class:`DataError` naming its file and line
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
            is :func:`nemot.data.c4.default_index_path`, None keeps them in memory.
        source: ``"files"`` (raw or shards, told apart by their names) or ``"tfds"``: the
            prepared TFDS dataset ``tfds_name`` in ``data_dir`` (:mod:`nemot.data.c4_tfds`;
            each shard file is read as a raw file would be).
        tfds_name: ``"c4/en:3.1.0"`` (default), ``"c4/en:3.0.1"``, ...; ``"c4/en"`` reads
            the version tensorflow-datasets picks.

    ``task_targets`` are next-token targets; ``lm_targets`` are all ignored.
    """
    kind, files = c4.list_files(data_dir, split, source, tfds_name)
    tokenized = kind == c4.SHARDS
    if not tokenized and tokenizer is None:
        tokenizer = Tokenizer()
    if window_index == "default":
        window_index = c4.default_index_path(data_dir)
    index = c4.WindowIndex(window_index, max_text_length, pack,
                           None if tokenized else tokenizer)
    training = split == "train"
    ignored = np.full(max_text_length, vocab.IGNORE_ID, np.int32)

    def make_batches():
        rows = c4.window_stream(
            kind, files, n=max_text_length, seed=seed, start=start_batch * batch_size,
            pack=pack, max_bad_lines=max_bad_lines,
            order=file_order if training else "directory",
            cycle_length=cycle_length if training else 1,
            shuffle_buffer=shuffle_buffer if training else 0, tokenizer=tokenizer,
            index=index, repeat=training)
        return batches(((x, t, ignored) for x, t in rows), batch_size, input_context)

    rows = None
    if not training:
        problems = c4.Problems(max_bad_lines, quiet=True)
        rows = max(sum(index.count(f, kind, problems) for f in files) - start_batch * batch_size, 0)
    return _to_dataset(make_batches, batch_size, max_text_length, input_context, rows=rows)


# ---------------------------------------------------------------- QA sources

def _from_shards(paths, name, mode, task_token, max_text_length, tokenizer):
    """FormattedExamples of QA shards; ``mode``/``task_token`` replace the stored aux tokens."""
    aux = {vocab.MODE_POSITION: vocab.mode_id(mode)}
    if task_token is not None:
        aux[vocab.TASK_POSITION] = vocab.task_token_id(task_token)
    one_answer = registry.get(name).train_answers == "one"
    examples = []
    for path in paths:
        for i, ex in enumerate(shards.read_qa_shard(path)):
            token_ids = ex["token_ids"].tolist()
            if len(token_ids) - NUM_AUX > max_text_length:
                raise DataError(path, f"example {i} ({ex['id']})", "token_ids",
                                f"at most {max_text_length} text tokens (re-run data_prep with "
                                f"--max-text-length {max_text_length})",
                                got=f"{len(token_ids) - NUM_AUX} tokens")
            for position, token in aux.items():
                token_ids[position] = token
            examples.append(FormattedExample(
                id=ex["id"], dataset=name, subset=ex["subset"],
                task=vocab.block_name(vocab.token_name(token_ids[vocab.TASK_POSITION])),
                text=tokenizer.decode(token_ids[NUM_AUX:]) if tokenizer else "",
                token_ids=token_ids, task_targets=ex["task_targets"].tolist(),
                lm_targets=ex["lm_targets"].tolist(), prompt_ids=ex["prompt_ids"].tolist(),
                golds=ex["golds"], label=ex["label"],
                # expand_answers' "{question}#{k}" ids: the question's alternative answers
                group=ex["id"].rpartition("#")[0] if one_answer and "#" in ex["id"] else None))
    return examples


def load_formatted(name, split, *, data_dir, max_text_length=MAX_TEXT_LENGTH, task_token=None,
                   mode="dec", mqa_mode="label", tokenizer=None, expand=None, decode=False):
    """FormattedExamples of one dataset split from QA shards, raw files or the hub.

    ``data_dir`` holding ``data_prep`` QA shards for ``name``/``split`` reads them (their
    ``mqa_mode`` and length were fixed when prepared); otherwise the raw files are read
    through the registry; ``data_dir=None`` loads from the hub (needs the network).
    ``decode`` fills ``text`` of shard examples (for evaluation reports).
    """
    split = registry.resolve_split(name, split)
    if data_dir is not None:
        if not Path(data_dir).is_dir():
            raise FileNotFoundError(f"{name}: data directory {data_dir} does not exist")
        paths = shards.qa_shard_paths(data_dir, name, split)
        if paths:
            return _from_shards(paths, name, mode, task_token, max_text_length,
                                (tokenizer or Tokenizer()) if decode else None)
    formatter = Formatter(tokenizer or Tokenizer(), max_text_length=max_text_length, mode=mode,
                          task_token=task_token, mqa_mode=mqa_mode)
    examples = registry.load_examples(name, split, data_dir, expand=expand)
    if not examples:
        raise DataError(data_dir, f"split {split!r}", name, "at least one example", got="none")
    return formatter.format_batch(examples)


def pad_examples(examples, max_text_length):
    """``(token_ids [N, 3 + n], task_targets [N, n], lm_targets [N, n])`` padded arrays."""
    if not examples:
        raise ValueError("no examples to batch")
    n = max_text_length
    token_ids = np.full((len(examples), NUM_AUX + n), vocab.PAD_ID, np.int32)
    task = np.full((len(examples), n), vocab.IGNORE_ID, np.int32)
    lm = np.full((len(examples), n), vocab.IGNORE_ID, np.int32)
    for i, ex in enumerate(examples):
        length = len(ex.token_ids) - NUM_AUX
        if length > n or len(ex.task_targets) != length or len(ex.lm_targets) != length:
            raise DataError(ex.dataset or "examples", f"example {ex.id}", "token_ids",
                            f"at most {n} text tokens and targets of the text length",
                            got=f"{length} tokens, {len(ex.task_targets)}/{len(ex.lm_targets)} "
                                "targets")
        token_ids[i, :NUM_AUX + length] = ex.token_ids
        task[i, :length] = ex.task_targets
        lm[i, :length] = ex.lm_targets
    return token_ids, task, lm


def example_arrays(examples, max_text_length, pos_tagger=None):
    """:func:`pad_examples`' arrays, plus ``pos_tags`` int32 [N, n] (-1 at padding) when a
    ``pos_tagger`` is given: every example tagged once, from its (truncated) token ids."""
    arrays = pad_examples(examples, max_text_length)
    if pos_tagger is None:
        return arrays
    return arrays + (pad_pos_tags(pos_tagger.tag_examples(examples, NUM_AUX), max_text_length),)


def epoch_indices(size, seed_key, start=0, shuffle=True, repeat=True):
    """Example indices from position ``start``: epoch ``e`` is
    ``default_rng([*seed_key, e]).permutation(size)`` (or ``range(size)``)."""
    epoch, i = divmod(int(start), size)
    while repeat or epoch == 0:
        order = (np.random.default_rng([*seed_key, epoch]).permutation(size) if shuffle
                 else np.arange(size))
        yield from order[i:].tolist()
        i, epoch = 0, epoch + 1


def example_units(examples):
    """Row indices of each training unit: one per example, except that the examples of
    one ``group`` (alternative answers of one question, NarrativeQA) form one unit."""
    units, where = [], {}
    for i, ex in enumerate(examples):
        if ex.group is None:
            units.append([i])
        elif ex.group in where:
            units[where[ex.group]].append(i)
        else:
            where[ex.group] = len(units)
            units.append([i])
    return units


def epoch_length(formatted_examples):
    """Examples in one training epoch: one per unit (:func:`example_units`)."""
    return len(example_units(formatted_examples))


def training_rows(units, seed_key, start=0, shuffle=True, repeat=True):
    """Row indices from position ``start``: epoch ``e`` visits the units in
    :func:`epoch_indices` order; a unit of several rows gives one of them, drawn with
    ``default_rng([*seed_key, _ANSWER_TAG, e, unit])`` (seed, epoch and question)."""
    for position, u in enumerate(epoch_indices(len(units), seed_key, start, shuffle, repeat),
                                 int(start)):
        rows = units[u]
        if len(rows) > 1:
            epoch = position // len(units)
            rng = np.random.default_rng([*seed_key, _ANSWER_TAG, epoch, u])
            yield rows[int(rng.integers(len(rows)))]
        else:
            yield rows[0]


# ---------------------------------------------------------------- QA datasets

def examples_dataset(formatted_examples, *, batch_size, max_text_length=MAX_TEXT_LENGTH, seed=0,
                     start_batch=0, shuffle=True, repeat=True, input_context=None,
                     pos_tagger=None):
    """Batches of a list of :class:`FormattedExample` (see the module docstring).

    ``pos_tagger``: a :class:`nemot.data.pos_tags.PosTagger` adds ``x["pos_tags"]``
    (highlighting models; see :func:`pos_tagger_for`).

    Example:
        >>> fmt = Formatter(Tokenizer(), max_text_length=32)
        >>> ds = examples_dataset(fmt.format_batch(examples), batch_size=4, max_text_length=32)  # doctest: +SKIP
    """
    arrays = example_arrays(formatted_examples, max_text_length, pos_tagger)
    units = example_units(formatted_examples)

    def make_batches():
        order = training_rows(units, (seed,), start_batch * batch_size, shuffle, repeat)
        return batches((tuple(a[k] for a in arrays) for k in order), batch_size, input_context)

    rows = None if repeat else max(len(units) - start_batch * batch_size, 0)
    return _to_dataset(make_batches, batch_size, max_text_length, input_context,
                       pos_tags=pos_tagger is not None, rows=rows)


def qa_dataset(name, split, *, data_dir, batch_size, max_text_length=MAX_TEXT_LENGTH, seed=0,
               start_batch=0, shuffle=True, repeat=True, task_token=None, mode="dec",
               mqa_mode="label", tokenizer=None, input_context=None, pos_tagger=None):
    """One dataset split by registry name (single-dataset fine-tuning).

    Args:
        name, split: registry name and split (``registry.get(name).splits``).
        data_dir: raw files or ``data_prep`` QA shards; None: the hub (needs the network).
        batch_size: global batch size.
        max_text_length: text positions n.
        seed, start_batch: order and resume point (global batches).
        shuffle, repeat: per-epoch seeded permutation; infinite stream.
        task_token: e.g. ``"lm"`` (the thesis' single-dataset runs); default: the
            dataset's registry task (``mqa``/``gqa``).
        mode: ``"dec"`` or ``"enc"``.
        mqa_mode: ``"label"`` or ``"generate"`` (raw files only; shards keep theirs).
        tokenizer: default the offline GPT-2 :class:`Tokenizer`.
        input_context: see :func:`nemot.training.distributed.distribute`.
        pos_tagger: adds ``x["pos_tags"]`` (highlighting); see :func:`pos_tagger_for`.
    """
    examples = load_formatted(name, split, data_dir=data_dir, max_text_length=max_text_length,
                              task_token=task_token, mode=mode, mqa_mode=mqa_mode,
                              tokenizer=tokenizer)
    return examples_dataset(examples, batch_size=batch_size, max_text_length=max_text_length,
                            seed=seed, start_batch=start_batch, shuffle=shuffle, repeat=repeat,
                            input_context=input_context, pos_tagger=pos_tagger)


def validation_dataset(name, split, *, data_dir, batch_size, max_text_length=MAX_TEXT_LENGTH,
                       task_token=None, mode="dec", mqa_mode="label", tokenizer=None,
                       input_context=None, pos_tagger=None):
    """One pass over a split in file order for validation loss; the last batch is padded
    with ignored rows. (C4 validation: ``c4_dataset(..., split="validation")``.)"""
    return qa_dataset(name, split, data_dir=data_dir, batch_size=batch_size,
                      max_text_length=max_text_length, shuffle=False, repeat=False,
                      task_token=task_token, mode=mode, mqa_mode=mqa_mode, tokenizer=tokenizer,
                      input_context=input_context, pos_tagger=pos_tagger)


def eval_examples(name, split, *, data_dir, max_text_length=MAX_TEXT_LENGTH, task_token=None,
                  limit=None, mode="dec", mqa_mode="label", tokenizer=None):
    """FormattedExamples for metrics: one per question (answers not expanded), with
    ``prompt_ids`` and ``golds``; the first ``limit`` when given."""
    examples = load_formatted(name, split, data_dir=data_dir, max_text_length=max_text_length,
                              task_token=task_token, mode=mode, mqa_mode=mqa_mode,
                              tokenizer=tokenizer, expand=False, decode=True)
    return examples[:limit] if limit is not None else examples


# ---------------------------------------------------------------- the multi-format pool

def dataset_task_tokens(names, task_tokens=None):
    """``{name: task token}``: ``task_tokens`` where given, else the registry task."""
    task_tokens = dict(task_tokens or {})
    unknown = sorted(set(task_tokens) - set(names))
    if unknown:
        raise ValueError(f"task_tokens names datasets {unknown} that are not in {list(names)}")
    return {name: task_tokens.get(name, registry.get(name).task) for name in names}


def check_task_tokens(dataset_task_tokens, config):
    """Raise before training when a dataset's task token has no output block in ``config``.

    Args:
        dataset_task_tokens: ``{dataset name: task token}`` (``"mqa"`` or ``"<mqa>"``),
            e.g. ``dataset_task_tokens(SEED_DATASETS)`` or ``{"c4": "lm"}``.
        config: a ``NeMoTConfig``.

    Example:
        >>> check_task_tokens({"race": "lm"}, NeMoTConfig.preset("tiny"))   # doctest: +SKIP
    """
    for name, token in dict(dataset_task_tokens).items():
        vocab.check_aux_tokens([vocab.aux_ids("dec", token)], config.output_blocks,
                               where=f"dataset {name}")


def pool_members(names, formatted):
    """The sources of the pool: ``[(member, example indices)]`` and each source's share.

    Every member (dataset) has the same share; a member with ``pool_parts`` (RACE,
    ARC) splits its share equally between its parts, whatever their sizes.
    """
    sources, shares = [], []
    for d, (name, examples) in enumerate(zip(names, formatted)):
        parts = registry.get(name).pool_parts
        if not parts:
            sources.append((d, list(range(len(examples)))))
            shares.append(1.0 / len(names))
            continue
        for part in parts:
            rows = [i for i, ex in enumerate(examples) if ex.subset == part]
            if not rows:
                raise DataError(name, "pool", "subset", f"examples of each of its parts {parts} "
                                "(the pool draws them equally)", got=f"none of {part!r}")
            sources.append((d, rows))
            shares.append(1.0 / (len(names) * len(parts)))
    return sources, np.array(shares)


def pool_uniforms(seed, start=0):
    """The pool's seeded uniforms from position ``start`` on, drawn in blocks of
    :data:`POOL_BLOCK` positions (a pure function of the position)."""
    block, i = divmod(int(start), POOL_BLOCK)
    for b in itertools.count(block):
        yield from np.random.default_rng([seed, _POOL_TAG, b]).random(POOL_BLOCK)[i:].tolist()
        i = 0


def _cdf(weights):
    cdf = np.cumsum(weights) / np.sum(weights)
    cdf[-1] = 1.0
    return cdf


def pool_choices(shares, seed, start=0, sampler=None, members=None, batch_size=1):
    """Source index of every pool position from ``start`` on.

    Without a ``sampler`` each position draws a source with probabilities ``shares``
    (the thesis). With one, global batch ``b`` (positions ``b * batch_size ...``) takes
    the member ``sampler`` draws for step ``b`` and each position one of that member's
    sources (``members[source]`` is its member), with their shares.
    """
    uniforms = pool_uniforms(seed, start)
    if sampler is None:
        cdf = _cdf(shares)
        yield from (int(np.searchsorted(cdf, u, "right")) for u in uniforms)
        return
    members = np.asarray(members)
    cdfs = [_cdf(np.where(members == d, shares, 0.0)) for d in range(len(sampler.tasks))]
    step, j = divmod(int(start), batch_size)
    while True:
        for task in sampler.schedule(step, step + POOL_BLOCK):
            cdf = cdfs[sampler.tasks.index(task)]
            for _ in range(batch_size - j):
                yield int(np.searchsorted(cdf, next(uniforms), "right"))
            j = 0
        step += POOL_BLOCK


def pool_dataset(names=SEED_DATASETS, *, data_dir, batch_size, max_text_length=MAX_TEXT_LENGTH,
                 seed=0, start_batch=0, task_tokens=None, tokenizer=None, input_context=None,
                 split="train", mode="dec", mqa_mode="label", pos_tagger=None, make_sampler=None):
    """The multi-format pool of general training (thesis §3.3.1): infinite, mixed batches.

    Each example's dataset is drawn uniformly at random (seeded) from ``names``, and a
    dataset with parts (RACE middle/high, ARC Easy/Challenge) draws one of them with
    equal chance (:func:`pool_members`); each source walks through its own seeded
    per-epoch permutations and restarts when exhausted.

    Args:
        names: registry names (default the seven seed datasets).
        data_dir: one directory with a subdirectory per name, or ``{name: directory}``
            (raw files or QA shards, as :func:`qa_dataset`).
        batch_size: global batch size.
        task_tokens: ``{name: task token}`` overrides (default: the registry's
            ``mqa``/``gqa``); check them with :func:`check_task_tokens`.
        pos_tagger: adds ``x["pos_tags"]`` (highlighting); every dataset is tagged once.
        make_sampler: ``make_sampler({name: training examples per epoch})`` -> a
            :class:`nemot.data.sampling.TaskSampler` over ``names`` (e.g. annealed
            sampling, PALs): each global batch then comes from the one dataset it draws,
            instead of a dataset per example (the thesis).
        Other arguments as :func:`qa_dataset`.
    """
    names = tuple(names)
    if not names:
        raise ValueError("pool_dataset needs at least one dataset name")
    tokens = dataset_task_tokens(names, task_tokens)
    tokenizer = tokenizer or Tokenizer()
    dirs = dict(data_dir) if isinstance(data_dir, dict) else {
        name: Path(data_dir) / name for name in names}
    missing = [name for name in names if name not in dirs]
    if missing:
        raise ValueError(f"data_dir has no directory for {missing}")
    formatted = [load_formatted(name, split, data_dir=dirs[name], max_text_length=max_text_length,
                                task_token=tokens[name], mode=mode, mqa_mode=mqa_mode,
                                tokenizer=tokenizer)
                 for name in names]
    arrays = [example_arrays(f, max_text_length, pos_tagger) for f in formatted]
    sources, shares = pool_members(names, formatted)
    sampler = None
    if make_sampler is not None:
        sampler = make_sampler({name: epoch_length(f) for name, f in zip(names, formatted)})
        if tuple(sampler.tasks) != names:
            raise ValueError(f"sampler tasks {list(sampler.tasks)}: expected the pool's "
                             f"{list(names)}")
    units = [[[rows[i] for i in unit] for unit in example_units([formatted[d][r] for r in rows])]
             for d, rows in sources]

    def make_batches():
        start = start_batch * batch_size
        draws = functools.partial(pool_choices, shares, seed, sampler=sampler,
                                  members=[d for d, _ in sources], batch_size=batch_size)
        # Where each source's stream resumes: how often it was drawn before ``start``.
        counts = np.bincount(np.fromiter(itertools.islice(draws(0), start), np.int64,
                                         count=start), minlength=len(sources))
        choices = draws(start)
        orders = [training_rows(units[s], (seed, s), counts[s]) for s in range(len(sources))]

        def rows():
            for s in choices:
                k = next(orders[s])
                yield tuple(a[k] for a in arrays[sources[s][0]])

        return batches(rows(), batch_size, input_context)

    return _to_dataset(make_batches, batch_size, max_text_length, input_context,
                       pos_tags=pos_tagger is not None)
