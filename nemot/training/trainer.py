"""Run orchestration: one :class:`RunConfig` in, a trained model and its files out.

``train(run_config)`` is what ``nemot pretrain|finetune|train-general`` run:

1. seed everything (``keras.utils.set_random_seed``), set the precision policy,
   make the strategy (:mod:`nemot.training.distributed`);
2. build the model in the strategy's scope (``nemot.models.build``: NeMoT
   or the GPT-2 baseline), optionally load pre-trained weights
   (``train.init_from``) and, for general training, copy the ``lm`` output
   block into ``mqa``/``gqa`` (thesis §3.5.3);
3. compile with Adam (Keras defaults) on the configured schedule and
   ``NeMoTLoss`` weights;
4. restore the newest training checkpoint: the optimizer step gives the epoch
   and the data position, and the pipelines resume at ``start_batch=step``;
5. ``model.fit`` (or the multi-worker loop) with the callbacks of
   :mod:`nemot.training.callbacks`.

Epoch ``e`` is the global steps ``[e * S, (e + 1) * S)`` with ``S`` steps per
epoch. A run resumed in the middle of an epoch first finishes that epoch
(one short ``fit`` call), then runs the remaining whole epochs.

Output directory (default ``checkpoints/<run name>``)::

    run_config.toml            the resolved config
    train_state/ckpt-<step>*   training checkpoints (tf.train.CheckpointManager, keep K)
    logs/                      TensorBoard scalars
    results.csv                epoch, loss, val_loss, val_metric (+ per-term losses)
    best.json                  the ♣ / ♠ epochs and values
    model_last.keras, model_best_loss.keras (♣), model_best_metric.keras (♠)

Example:
    >>> cfg = load_run_config("configs/race.toml", ["train.epochs=1"])
    >>> result = train(cfg, out_dir="checkpoints/race-try")
    >>> result.best["metric_epoch"]
"""

import dataclasses
import functools
import math
import os
from pathlib import Path

import keras
import numpy as np

from nemot.data import pipelines, registry
from nemot.data.tokenizer import Tokenizer
from nemot.models.registry import build
from nemot.models.weights import load_pretrained
from nemot.training import callbacks as cb
from nemot.training import distributed
from nemot.training.checkpoints import TrainingCheckpoint
from nemot.training.run_config import dump_toml
from nemot.training.schedules import build_schedule


@dataclasses.dataclass
class TrainResult:
    """What a finished run reports."""

    out_dir: str
    step: int
    epochs_done: int
    best: dict
    history: dict
    model: object = None


@dataclasses.dataclass
class DataSource:
    """The datasets of a run, as functions of the distribution arguments.

    ``train(start_batch, batch_size, input_context)`` is infinite;
    ``validation(batch_size, input_context)`` is finite (or None);
    ``metric(model)`` scores decoded validation examples (or None).
    """

    train: object
    steps_per_epoch: int
    validation: object = None
    metric: object = None
    validation_batches: int = 0
    task_tokens: dict = dataclasses.field(default_factory=dict)


# ---------------------------------------------------------------- validation metric

def _decode_predictions(model, examples, label_mode, max_new_tokens, tokenizer, jit_compile,
                        batch_size=8):
    from nemot.evaluation import decoding

    prompts = [ex.prompt_ids for ex in examples]
    if label_mode:
        ids = decoding.predict_labels(model, prompts, batch_size=batch_size)
        return [tokenizer.decode([i]) for i in ids]
    outputs = decoding.generate(model, prompts, max_new_tokens=max_new_tokens,
                                batch_size=batch_size, jit_compile=jit_compile)
    return [tokenizer.decode(ids).strip() for ids in outputs]


def score_examples(model, examples, metric, *, label_mode, tokenizer=None, max_new_tokens=32,
                   jit_compile=True):
    """Mean ``metric`` over decoded ``FormattedExample``s (their ``prompt_ids`` and ``golds``).

    Args:
        model: a NeMoT (or the GPT-2 baseline).
        examples: ``FormattedExample`` list, e.g. ``pipelines.eval_examples(...)``.
        metric: a ``nemot.evaluation.metrics`` name (``accuracy``, ``f1``, ``rouge_l``).
        label_mode: multiple choice in label mode: one argmax token at ``<sep>``
            (compared with the gold ``(k)``); otherwise greedy generation to ``</s>``.
        tokenizer: decodes predictions (default the offline GPT-2 tokenizer).
        max_new_tokens: generation length limit.
        jit_compile: XLA-compile the decoding loop.
    """
    from nemot.evaluation import metrics

    tokenizer = tokenizer or Tokenizer()
    predictions = _decode_predictions(model, examples, label_mode, max_new_tokens, tokenizer,
                                      jit_compile)
    golds = [list(ex.golds) for ex in examples]
    return float(metrics.score(metric, predictions, golds))


# ---------------------------------------------------------------- data sources

def _c4_source(cfg):
    data, n = cfg.data, cfg.model.max_text_length
    if data.dir is None:
        raise ValueError(f"{cfg.source}: data.dir: pre-training needs a local C4 directory")
    train = functools.partial(pipelines.c4_dataset, data.dir, max_text_length=n, seed=cfg.seed,
                              pack=data.pack, file_order=data.file_order)
    validation = None
    if data.validation_split:
        validation = functools.partial(pipelines.c4_dataset, data.dir, max_text_length=n,
                                       split=data.validation_split, pack=data.pack)
    return DataSource(
        train=lambda start_batch, batch_size, input_context: train(
            start_batch=start_batch, batch_size=batch_size, input_context=input_context),
        steps_per_epoch=cfg.train.steps_per_epoch,
        validation=validation and (lambda batch_size, input_context: validation(
            batch_size=batch_size, input_context=input_context)),
        validation_batches=data.validation_batches, task_tokens={"c4": "lm"})


def examples_source(train_examples, *, batch_size, max_text_length, seed=0, steps_per_epoch=0,
                    validation_examples=None, eval_set=None, metric=None, label_mode=False,
                    tokenizer=None, max_new_tokens=32, jit_compile=True, validation_batches=0,
                    pos_tagger=None):
    """A :class:`DataSource` from lists of ``FormattedExample`` (fine-tuning, synthetic tasks).

    Args:
        train_examples: training examples (shuffled per epoch, seeded).
        batch_size: global batch size, for the default ``steps_per_epoch`` (one pass).
        max_text_length: text positions n.
        validation_examples: examples for the validation loss (one pass), or None.
        eval_set: examples the metric decodes (one per question), or None.
        metric: metric name for ``eval_set``; ``label_mode`` etc. as :func:`score_examples`.
        pos_tagger: adds ``pos_tags`` for a highlighting model (see
            :func:`nemot.data.pipelines.pos_tagger_for`).
    """
    n = max_text_length

    def train(start_batch, batch_size, input_context):
        return pipelines.examples_dataset(train_examples, batch_size=batch_size,
                                          max_text_length=n, seed=seed, start_batch=start_batch,
                                          input_context=input_context, pos_tagger=pos_tagger)

    def validation(batch_size, input_context):
        return pipelines.examples_dataset(validation_examples, batch_size=batch_size,
                                          max_text_length=n, shuffle=False, repeat=False,
                                          input_context=input_context, pos_tagger=pos_tagger)

    scorer = None
    if eval_set:
        scorer = functools.partial(score_examples, examples=eval_set, metric=metric,
                                   label_mode=label_mode, tokenizer=tokenizer,
                                   max_new_tokens=max_new_tokens, jit_compile=jit_compile)
    return DataSource(
        train=train,
        steps_per_epoch=steps_per_epoch or math.ceil(len(train_examples) / batch_size),
        validation=validation if validation_examples else None,
        metric=scorer and (lambda model: scorer(model)), validation_batches=validation_batches)


def _finetune_source(cfg, tokenizer):
    data = cfg.data
    info = registry.get(data.dataset)
    common = dict(data_dir=data.dir, max_text_length=cfg.model.max_text_length,
                  task_token=data.task_token, mode=data.mode, mqa_mode=data.mqa_mode,
                  tokenizer=tokenizer)
    validation = eval_set = None
    if data.validation_split:
        validation = pipelines.load_formatted(data.dataset, data.validation_split, **common)
        eval_set = pipelines.eval_examples(data.dataset, data.validation_split,
                                           limit=data.validation_examples or None, **common)
    source = examples_source(
        pipelines.load_formatted(data.dataset, data.train_split, **common),
        batch_size=cfg.train.batch_size, max_text_length=cfg.model.max_text_length,
        seed=cfg.seed, steps_per_epoch=cfg.train.steps_per_epoch,
        validation_examples=validation, eval_set=eval_set, metric=info.metric,
        label_mode=info.task == "mqa" and data.mqa_mode == "label", tokenizer=tokenizer,
        max_new_tokens=data.max_new_tokens, jit_compile=cfg.train.decode_jit_compile,
        validation_batches=data.validation_batches,
        pos_tagger=pipelines.pos_tagger_for(cfg.model, tokenizer=tokenizer))
    source.task_tokens = {data.dataset: data.task_token or info.task}
    return source


VALIDATION_SPLITS = ("dev", "valid", "validation")


def validation_split_of(name):
    """A dataset's validation split as its files name it (``dev``, ``valid`` ...)."""
    info = registry.get(name)
    for split in VALIDATION_SPLITS:
        if split in info.splits:
            return split
    raise ValueError(f"dataset {name}: no validation split among {info.splits}; "
                     f"expected one of {VALIDATION_SPLITS}")


def _general_source(cfg, tokenizer):
    data, n = cfg.data, cfg.model.max_text_length
    names = data.datasets or registry.SEED_DATASETS
    tokens = {name: data.task_token for name in names} if data.task_token else None
    if data.dir is None:
        raise ValueError(f"{cfg.source}: data.dir: general training needs a directory with "
                         "one sub-directory per dataset")
    tagger = pipelines.pos_tagger_for(cfg.model, tokenizer=tokenizer)
    pool = functools.partial(pipelines.pool_dataset, names, data_dir=data.dir,
                             max_text_length=n, seed=cfg.seed, task_tokens=tokens,
                             tokenizer=tokenizer, split=data.train_split, mode=data.mode,
                             mqa_mode=data.mqa_mode, pos_tagger=tagger)
    source = DataSource(
        train=lambda start_batch, batch_size, input_context: pool(
            start_batch=start_batch, batch_size=batch_size, input_context=input_context),
        steps_per_epoch=cfg.train.steps_per_epoch,
        task_tokens=pipelines.dataset_task_tokens(names, tokens))
    if data.validation_split:
        _add_pool_validation(source, cfg, names, tokenizer, tagger)
    return source


def _add_pool_validation(source, cfg, names, tokenizer, tagger):
    """Validation of general training: the loss over every dataset's validation split,
    and as metric the mean of each dataset's own metric (accuracy, F1, ROUGE-L are all
    fractions), so the ♣ and ♠ models are kept as in fine-tuning.

    ``data.validation_split = "auto"`` takes each dataset's own split name
    (:func:`validation_split_of`); another value is used for every dataset.
    """
    data, n = cfg.data, cfg.model.max_text_length
    common = dict(max_text_length=n, mode=data.mode, mqa_mode=data.mqa_mode, tokenizer=tokenizer)
    validation, eval_sets = [], {}
    for name in names:
        split = validation_split_of(name) if data.validation_split == "auto" else \
            data.validation_split
        directory = Path(data.dir) / name
        token = source.task_tokens[name]
        validation += pipelines.load_formatted(name, split, data_dir=directory,
                                               task_token=token, **common)
        eval_sets[name] = pipelines.eval_examples(
            name, split, data_dir=directory, task_token=token,
            limit=data.validation_examples or None, **common)

    def metric(model):
        scores = [score_examples(model, eval_sets[name], registry.get(name).metric,
                                 label_mode=registry.get(name).task == "mqa"
                                 and data.mqa_mode == "label",
                                 tokenizer=tokenizer, max_new_tokens=data.max_new_tokens,
                                 jit_compile=cfg.train.decode_jit_compile)
                  for name in names]
        return float(np.mean(scores))

    source.validation = lambda batch_size, input_context: pipelines.examples_dataset(
        validation, batch_size=batch_size, max_text_length=n, shuffle=False, repeat=False,
        input_context=input_context, pos_tagger=tagger)
    source.metric = metric
    source.validation_batches = data.validation_batches


def data_source(cfg, tokenizer=None):
    """The :class:`DataSource` of a run config (``kind`` picks C4, one dataset or the pool)."""
    tokenizer = tokenizer or Tokenizer()
    if cfg.kind == "pretrain":
        return _c4_source(cfg)
    if cfg.kind == "finetune":
        return _finetune_source(cfg, tokenizer)
    return _general_source(cfg, tokenizer)


# ---------------------------------------------------------------- the model

def copy_output_block(model, source="lm", targets=("mqa", "gqa")):
    """Initialise output blocks ``targets`` with block ``source``'s weights (thesis §3.5.3)."""
    blocks = model.output_set.blocks
    for name in targets:
        if name not in blocks:
            raise ValueError(f"output block {name!r} is not in the model's "
                             f"output_blocks {list(blocks)}")
        for src, dst in zip(blocks[source].weights, blocks[name].weights, strict=True):
            dst.assign(src)


def build_and_compile(cfg, strategy):
    """The model of ``cfg`` built and compiled in ``strategy.scope()``."""
    with strategy.scope():
        model = build(cfg.model_name, cfg.model, gpt2=cfg.gpt2)
        if cfg.train.init_from:
            load_pretrained(model, cfg.train.init_from)
        if cfg.kind == "general" and cfg.model_name == "nemot" and cfg.train.init_blocks_from_lm:
            copy_output_block(model, "lm", [b for b in ("mqa", "gqa")
                                            if b in cfg.model.output_blocks])
        optimizer_class = {"adam": keras.optimizers.Adam, "sgd": keras.optimizers.SGD}
        optimizer = optimizer_class[cfg.train.optimizer](learning_rate=build_schedule(cfg.schedule))
        model.compile(optimizer=optimizer, loss=cfg.loss, jit_compile=cfg.train.jit_compile)
    return model


# ---------------------------------------------------------------- the run

def default_out_dir(cfg):
    return os.path.join("checkpoints", cfg.name)


def _datasets(source, strategy, batch_size, start_batch):
    """Train (from ``start_batch``) and validation datasets, distributed when needed."""
    def distributed_or_plain(fn):
        if strategy.num_replicas_in_sync == 1 and not distributed.is_multi_worker(strategy):
            return fn(batch_size=batch_size, input_context=None)
        return pipelines.distribute(strategy, fn, batch_size)

    train = distributed_or_plain(functools.partial(source.train, start_batch))
    validation = source.validation and distributed_or_plain(
        functools.partial(_limited, source.validation, source.validation_batches))
    return train, validation


def _limited(validation, batches, batch_size, input_context):
    """The first ``batches`` global batches of a validation dataset (all when 0)."""
    dataset = validation(batch_size, input_context)
    if not batches:
        return dataset
    per_pipeline = 1 if input_context is None else (
        input_context.num_replicas_in_sync // input_context.num_input_pipelines)
    return dataset.take(batches * per_pipeline)


def train(cfg, out_dir=None, strategy=None, tokenizer=None, source=None, callbacks=()):
    """Train (or resume) the run ``cfg``; see the module docstring.

    Args:
        cfg: a :class:`nemot.training.run_config.RunConfig`.
        out_dir: output directory (default ``checkpoints/<name>``).
        strategy: a ``tf.distribute`` strategy (default from ``cfg.train.strategy``).
        tokenizer: for the data (default the offline GPT-2 tokenizer).
        source: a :class:`DataSource` replacing the one ``cfg.data`` describes
            (e.g. :func:`examples_source` of synthetic examples).
        callbacks: more Keras callbacks, run after the trainer's own.

    Raises:
        cb.TrainingDiverged: the loss became NaN or infinite; the newest
            checkpoint in ``train_state/`` is the last good one.
    """
    out_dir = str(out_dir or default_out_dir(cfg))
    keras.utils.set_random_seed(cfg.seed)
    previous_policy = keras.config.dtype_policy()
    if cfg.train.mixed_precision:
        keras.config.set_dtype_policy(cfg.train.mixed_precision)
    try:
        return _train(cfg, out_dir, strategy or distributed.make_strategy(cfg.train.strategy),
                      source or data_source(cfg, tokenizer), list(callbacks))
    finally:
        keras.config.set_dtype_policy(previous_policy)


def _train(cfg, out_dir, strategy, source, extra_callbacks):
    is_chief, worker = distributed.worker_info(strategy)
    os.makedirs(out_dir, exist_ok=True)
    if is_chief:
        Path(out_dir, "run_config.toml").write_text(dump_toml(cfg.to_dict()), encoding="utf-8")
    pipelines.check_task_tokens(source.task_tokens, cfg.model)
    model = build_and_compile(cfg, strategy)
    with strategy.scope():
        checkpoint = TrainingCheckpoint(model, os.path.join(out_dir, "train_state"),
                                        keep=cfg.train.keep_checkpoints, is_chief=is_chief,
                                        worker_id=worker)
        step = checkpoint.restore()
    spe, epochs = cfg.train.steps_per_epoch or source.steps_per_epoch, cfg.train.epochs
    guard = cb.NonFiniteGuard()
    validation = cb.EpochValidation(out_dir, source.metric, guard, enabled=is_chief,
                                    perplexity=cfg.kind == "pretrain")
    validation.forget_after(step // spe)
    callbacks = [guard, validation, cb.StepCheckpoint(checkpoint, cfg.train.checkpoint_every, guard),
                 cb.ScalarLogger(os.path.join(out_dir, "logs"), cfg.train.log_every,
                                 enabled=is_chief)] + extra_callbacks
    history = {}
    # At most two segments: the rest of an interrupted epoch, then whole epochs.
    while step < spe * epochs and guard.failure is None:
        epoch = step // spe
        segment_end = epoch + 1 if step % spe else epochs
        train_ds, val_ds = _datasets(source, strategy, cfg.train.batch_size, step)
        kwargs = dict(epochs=segment_end, initial_epoch=epoch,
                      steps_per_epoch=spe - step % spe if step % spe else spe,
                      validation_data=val_ds, callbacks=callbacks, verbose=cfg.train.verbose)
        if distributed.is_multi_worker(strategy):
            h = distributed.multi_worker_fit(model, strategy, train_ds,
                                             jit_compile=cfg.train.jit_compile, **kwargs)
        else:
            h = model.fit(train_ds, **kwargs)
        for key, values in h.history.items():
            history.setdefault(key, []).extend(values)
        new_step = checkpoint.step
        if new_step == step:
            break
        step = new_step
    if guard.failure is not None:
        raise cb.TrainingDiverged(
            f"run {cfg.name!r} stopped: {guard.failure}. Nothing was saved after it; the last "
            f"good checkpoint is {checkpoint.latest or '(none yet)'} (resume from it with a "
            "lower learning rate, or check the data)")
    return TrainResult(out_dir=out_dir, step=step, epochs_done=step // spe,
                       best=dict(validation.best), history=history, model=model)
