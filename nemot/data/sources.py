"""The data of a training run, built from its :class:`nemot.data.config.DataConfig`:
the training stream, the validation loss set and the sets the validation metric scores,
and the check that the model has an output block for each dataset's task token.

Each validation split is read and tokenised once: the same examples (one per question)
give the validation loss and the decoded metric.

Example:
    >>> data = finetune_data(DataConfig(dir="data/RACE", dataset="race"),
    ...                      max_text_length=768, seed=0)          # doctest: +SKIP
    >>> ds = data.train(start_batch=0, batch_size=32, input_context=None)
"""

import dataclasses
import functools
from pathlib import Path

from nemot import vocab
from nemot.data.c4 import stream as c4
from nemot.data.c4.pipeline import c4_dataset
from nemot.data.qa import registry
from nemot.data.qa.pipelines import epoch_length, examples_dataset, load_formatted
from nemot.data.qa.pool import dataset_task_tokens, pool_dataset
from nemot.data.tokenizer import Tokenizer


@dataclasses.dataclass
class EvalSet:
    """Examples a validation metric decodes and scores (one per question)."""

    name: str
    examples: list
    metric: str
    label_mode: bool = False
    extra_metrics: tuple = ()


@dataclasses.dataclass
class RunData:
    """What a run trains and validates on, as functions of the distribution arguments.

    Args:
        train: ``train(start_batch, batch_size, input_context)`` -> infinite tf.data.
        epoch_examples: training examples per epoch of a finite training set (0 for a
            stream, whose epochs are ``train.steps_per_epoch`` steps).
        validation: ``validation(batch_size, input_context)`` -> one pass, or None.
        eval_sets: the :class:`EvalSet` s the validation metric scores (their mean).
        task_tokens: ``{dataset: task token}``, checked against the model's blocks.
        validation_batches: how many validation batches the loss reads (0 = all).
    """

    train: object
    epoch_examples: int = 0
    validation: object = None
    eval_sets: list = dataclasses.field(default_factory=list)
    task_tokens: dict = dataclasses.field(default_factory=dict)
    validation_batches: int = 0


def check_task_tokens(task_tokens, config):
    """Raise before training when a dataset's task token has no output block in ``config``.

    Args:
        task_tokens: ``{dataset name: task token}`` (``"mqa"`` or ``"<mqa>"``), e.g.
            :func:`~nemot.data.qa.pool.dataset_task_tokens` of the seed datasets or
            ``{"c4": "lm"}``.
        config: a ``NeMoTConfig``.

    Example:
        >>> check_task_tokens({"race": "lm"}, NeMoTConfig.preset("tiny"))   # doctest: +SKIP
    """
    for name, token in dict(task_tokens).items():
        vocab.check_aux_tokens([vocab.aux_ids("dec", token)], config.output_blocks,
                               where=f"dataset {name}")


def examples_data(train_examples, *, max_text_length, seed=0, validation_examples=None,
                  eval_sets=(), pos_tagger=None, task_tokens=None, validation_batches=0):
    """:class:`RunData` of lists of ``FormattedExample`` (fine-tuning, synthetic tasks)."""
    n = max_text_length

    def train(start_batch, batch_size, input_context):
        return examples_dataset(train_examples, batch_size=batch_size,
                                          max_text_length=n, seed=seed, start_batch=start_batch,
                                          input_context=input_context, pos_tagger=pos_tagger)

    def validation(batch_size, input_context):
        return examples_dataset(validation_examples, batch_size=batch_size,
                                          max_text_length=n, shuffle=False, repeat=False,
                                          input_context=input_context, pos_tagger=pos_tagger)

    return RunData(train=train, epoch_examples=epoch_length(train_examples),
                   validation=validation if validation_examples else None,
                   eval_sets=list(eval_sets), task_tokens=dict(task_tokens or {}),
                   validation_batches=validation_batches)


def c4_data(data, max_text_length, seed):
    """Pre-training: the C4 stream and, with ``data.validation_split``, its validation files
    (``data.source = "tfds"``: the splits of ``data.tfds_name`` in the TFDS directory
    ``data.dir``)."""
    if data.dir is None:
        raise ValueError("data.dir: pre-training needs a C4 directory (raw files or data_prep "
                         "shards; with data.source = 'tfds', a TFDS data directory)")
    stream = functools.partial(c4_dataset, data.dir, max_text_length=max_text_length,
                               pack=data.pack, source=data.source, tfds_name=data.tfds_name,
                               max_bad_lines=data.max_bad_lines)
    validation = None
    if data.validation_split:
        split = "validation" if data.validation_split in registry.VALIDATION_ALIASES \
            else data.validation_split
        # a clear error now, not at the first epoch's end
        c4.list_files(data.dir, split, data.source, data.tfds_name)
        validation = lambda batch_size, input_context: stream(  # noqa: E731
            batch_size=batch_size, input_context=input_context, split=split)
    return RunData(
        train=lambda start_batch, batch_size, input_context: stream(
            seed=seed, file_order=data.file_order, start_batch=start_batch,
            batch_size=batch_size, input_context=input_context),
        validation=validation, validation_batches=data.validation_batches,
        task_tokens={"c4": "lm"})


def _qa_source(data, kind):
    """QA runs read files or the hub; ``data.source`` picks C4's source only."""
    if data.source != "files":
        raise ValueError(f"data.source = {data.source!r}: only pre-training reads C4 from TFDS; "
                         f"a {kind} run reads raw files or QA shards (data.dir) or the hub "
                         "(no data.dir), with data.source = 'files'")


def _validation_examples(name, data, directory, common):
    """One dataset's validation split, read once: ``(loss examples, EvalSet)``."""
    split = registry.resolve_split(name, "dev" if data.validation_split == "auto"
                                   else data.validation_split)
    info = registry.get(name)
    examples = load_formatted(name, split, data_dir=directory, expand=False,
                                        decode=True, **common)
    label_mode = info.task == "mqa" and data.mqa_mode == "label"
    return examples, EvalSet(name, examples[:data.validation_examples or None], info.metric,
                             label_mode, info.extra_metrics)


def _common(data, max_text_length, tokenizer):
    return dict(max_text_length=max_text_length, mode=data.mode, mqa_mode=data.mqa_mode,
                tokenizer=tokenizer)


def finetune_data(data, max_text_length, seed, tokenizer=None, pos_tagger=None):
    """One dataset: its training split, and its validation split for loss and metric."""
    _qa_source(data, "finetune")
    tokenizer = tokenizer or Tokenizer()
    info = registry.get(data.dataset)
    common = dict(_common(data, max_text_length, tokenizer), task_token=data.task_token)
    validation, eval_sets = None, []
    if data.validation_split:
        validation, eval_set = _validation_examples(data.dataset, data, data.dir, common)
        eval_sets = [eval_set]
    train = load_formatted(data.dataset, data.train_split, data_dir=data.dir, **common)
    return examples_data(train, max_text_length=max_text_length, seed=seed,
                         validation_examples=validation, eval_sets=eval_sets,
                         pos_tagger=pos_tagger,
                         task_tokens={data.dataset: data.task_token or info.task},
                         validation_batches=data.validation_batches)


def general_data(data, max_text_length, seed, tokenizer=None, pos_tagger=None,
                 make_sampler=None):
    """The multi-format pool of general training (``data.datasets``, default the seven
    seed datasets) and, with ``data.validation_split``, every dataset's validation split
    (``"auto"``: each its own) for the loss and the metric (the mean over datasets).

    ``make_sampler``: see :func:`nemot.data.qa.pool.pool_dataset` (``data.sampling``).
    """
    _qa_source(data, "general")
    if data.dir is None:
        raise ValueError("data.dir: general training needs a directory with one "
                         "sub-directory per dataset")
    tokenizer = tokenizer or Tokenizer()
    names = tuple(data.datasets or registry.SEED_DATASETS)
    tokens = dataset_task_tokens(
        names, {name: data.task_token for name in names} if data.task_token else None)
    common = _common(data, max_text_length, tokenizer)
    pool = functools.partial(pool_dataset, names, data_dir=data.dir, seed=seed,
                             task_tokens=tokens, split=data.train_split, pos_tagger=pos_tagger,
                             make_sampler=make_sampler, **common)
    validation, eval_sets = [], []
    if data.validation_split:
        for name in names:
            examples, eval_set = _validation_examples(
                name, data, Path(data.dir) / name, dict(common, task_token=tokens[name]))
            validation += examples
            eval_sets.append(eval_set)
    return RunData(
        train=lambda start_batch, batch_size, input_context: pool(
            start_batch=start_batch, batch_size=batch_size, input_context=input_context),
        validation=(lambda batch_size, input_context: examples_dataset(
            validation, batch_size=batch_size, max_text_length=max_text_length, shuffle=False,
            repeat=False, input_context=input_context, pos_tagger=pos_tagger)) if validation
        else None,
        eval_sets=eval_sets, task_tokens=tokens, validation_batches=data.validation_batches)
