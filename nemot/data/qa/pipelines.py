"""QA datasets as training batches: one dataset split, for fine-tuning, validation and
evaluation (docs/spec.md §4-5), from ``data_prep`` QA shards, raw files or the hub. The
batch layout, resuming and distribution are those of :mod:`nemot.data.batching`; the
multi-format pool of general training is :mod:`nemot.data.qa.pool`.

Example:
    >>> ds = qa_dataset("race", "train", data_dir="RACE", batch_size=32)   # doctest: +SKIP
    >>> x, y = next(iter(ds))
    >>> x["token_ids"].shape, y["task_targets"].shape
    (TensorShape([32, 771]), TensorShape([32, 768]))
"""

from pathlib import Path

import numpy as np

from nemot import vocab
from nemot.data import shards
from nemot.data.batching import batches, epoch_indices, rows_dataset
from nemot.data.pos_tags import pad_pos_tags
from nemot.data.qa import registry
from nemot.data.qa.format import FormattedExample, Formatter
from nemot.data.raw import DataError
from nemot.data.tokenizer import Tokenizer
from nemot.vocab import MAX_TEXT_LENGTH, NUM_AUX

_ANSWER_TAG = 104729  # keeps the per-epoch answer choice apart from the permutations


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
    :func:`~nemot.data.batching.epoch_indices` order; a unit of several rows gives one of
    them, drawn with ``default_rng([*seed_key, _ANSWER_TAG, e, unit])`` (seed, epoch and
    question)."""
    for position, u in enumerate(epoch_indices(len(units), seed_key, start, shuffle, repeat),
                                 int(start)):
        rows = units[u]
        if len(rows) > 1:
            epoch = position // len(units)
            rng = np.random.default_rng([*seed_key, _ANSWER_TAG, epoch, u])
            yield rows[int(rng.integers(len(rows)))]
        else:
            yield rows[0]


def examples_dataset(formatted_examples, *, batch_size, max_text_length=MAX_TEXT_LENGTH, seed=0,
                     start_batch=0, shuffle=True, repeat=True, input_context=None,
                     pos_tagger=None):
    """Batches of a list of :class:`FormattedExample` (:mod:`nemot.data.batching`).

    ``pos_tagger``: a :class:`nemot.data.pos_tags.PosTagger` adds ``x["pos_tags"]``
    (highlighting models; see :func:`nemot.data.pos_tags.pos_tagger_for`).

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
    return rows_dataset(make_batches, batch_size, max_text_length, input_context,
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
        pos_tagger: adds ``x["pos_tags"]`` (highlighting); see
            :func:`nemot.data.pos_tags.pos_tagger_for`.
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
