"""NeMoT's runs: one :class:`RunConfig` in, a trained model and its files out.

``train(run_config)`` is what ``nemot pretrain|finetune|train-general`` run. This
module holds what is NeMoT's own; the loop (strategy, checkpoints and resume,
epochs, validation, the ♣ / ♠ / last models) is :func:`nemot.training.loop.run`:

1. the data of ``cfg.data`` (:mod:`nemot.data.sources`): C4, one dataset or
   the multi-format pool, with its validation sets;
2. the model (``nemot.models.build``: NeMoT or the GPT-2 baseline), optionally started
   from a saved model (``train.init_from``) and, for general training, with the ``lm``
   output block copied into ``mqa``/``gqa`` (thesis §3.5.3);
3. Adam (Keras defaults) on the configured schedule and the ``NeMoTLoss`` weights;
4. the validation metric: the mean over the run's evaluation sets of each one's own
   metric (accuracy, F1, ROUGE-L are all fractions), decoded as in evaluation.

Output directory (default ``checkpoints/<run name>``): ``run_config.toml`` plus the
files of :mod:`nemot.training.loop`.

Example:
    >>> cfg = load_run_config("configs/race.toml", ["train.epochs=1"])
    >>> result = train(cfg, out_dir="checkpoints/race-try")
    >>> result.best["metric_epoch"]
"""

import logging
import math
import os

import keras
import numpy as np

from nemot import files, optimizers
from nemot.data import sources
from nemot.data.pos_tags import pos_tagger_for
from nemot.data.sampling import TaskSampler
from nemot.data.tokenizer import Tokenizer
from nemot.evaluation.scoring import score_examples  # noqa: F401  (re-exported)
from nemot.models.registry import build
from nemot.models.weights import IncompatibleWeights, load_pretrained
from nemot.training import accumulation, checkpoints, distributed, loop
from nemot.training.loop import DataSource, TrainResult  # noqa: F401  (re-exported)
from nemot.training.run_config import (RESUMABLE, ResumeConflict, RunConfigError, changed_keys,
                                       dump_toml, load_run_config, toml_value)
from nemot.training.schedules import build_schedule

logger = logging.getLogger(__name__)
# nemot.optimizers.Adam: Keras 3's Adam as one fused TensorFlow kernel per variable, on
# the whole gradient (as tf.keras' Adam before TensorFlow 2.11 did; see that module)
OPTIMIZERS = {"adam": optimizers.Adam, "sgd": keras.optimizers.SGD}
RUN_CONFIG = "run_config.toml"


# ---------------------------------------------------------------- validation metric

def eval_sets_metric(eval_sets, tokenizer, max_new_tokens, jit_compile, batch_size=8):
    """``metric(model)``: the mean of the sets' own metrics, each set's value beside it
    (``batch_size``: prompts per forward pass or decoding loop)."""
    if not eval_sets:
        return None

    def metric(model):
        scores = {s.name: score_examples(model, s.examples, s.metric, label_mode=s.label_mode,
                                         tokenizer=tokenizer, max_new_tokens=max_new_tokens,
                                         jit_compile=jit_compile, batch_size=batch_size)
                  for s in eval_sets}
        mean = float(np.mean(list(scores.values())))
        return mean if len(scores) == 1 else {"metric": mean, **scores}

    return metric


# ---------------------------------------------------------------- data

def data_source(cfg, tokenizer=None):
    """The :class:`DataSource` of a run config (``kind`` picks C4, one dataset or the pool)
    and its ``{dataset: task token}``."""
    tokenizer = tokenizer or Tokenizer()
    data, n = cfg.data, cfg.model.max_text_length
    tagger = pos_tagger_for(cfg.model, tokenizer=tokenizer)
    if cfg.kind == "pretrain":
        run_data = sources.c4_data(data, n, cfg.seed)
    elif cfg.kind == "finetune":
        run_data = sources.finetune_data(data, n, cfg.seed, tokenizer, tagger)
    else:
        make_sampler = None
        if data.sampling != "uniform":
            def make_sampler(sizes):
                return TaskSampler(sizes, mode=data.sampling, epochs=cfg.train.epochs,
                                   steps_per_epoch=cfg.train.steps_per_epoch, seed=cfg.seed)
        run_data = sources.general_data(data, n, cfg.seed, tokenizer, tagger, make_sampler)
    return to_data_source(run_data, cfg, tokenizer), run_data.task_tokens


def to_data_source(run_data, cfg, tokenizer=None):
    """A :class:`DataSource` of :class:`nemot.data.sources.RunData` for run config ``cfg``."""
    steps = cfg.train.steps_per_epoch or math.ceil(run_data.epoch_examples
                                                   / cfg.train.batch_size)
    return DataSource(
        train=run_data.train, steps_per_epoch=steps, validation=run_data.validation,
        metric=eval_sets_metric(run_data.eval_sets, tokenizer or Tokenizer(),
                                cfg.data.max_new_tokens, cfg.train.decode_jit_compile),
        validation_batches=run_data.validation_batches)


def examples_source(train_examples, *, batch_size, max_text_length, seed=0, steps_per_epoch=0,
                    validation_examples=None, eval_set=None, metric=None, label_mode=False,
                    tokenizer=None, max_new_tokens=32, jit_compile=True, validation_batches=0,
                    pos_tagger=None, decode_batch_size=8):
    """A :class:`DataSource` from lists of ``FormattedExample`` (synthetic tasks, the demo);
    ``decode_batch_size``: prompts per forward pass when ``eval_set`` is scored."""
    run_data = sources.examples_data(
        train_examples, max_text_length=max_text_length, seed=seed,
        validation_examples=validation_examples, pos_tagger=pos_tagger,
        eval_sets=[sources.EvalSet("examples", eval_set, metric, label_mode)] if eval_set else (),
        validation_batches=validation_batches)
    return DataSource(
        train=run_data.train,
        steps_per_epoch=steps_per_epoch or math.ceil(run_data.epoch_examples / batch_size),
        validation=run_data.validation,
        metric=eval_sets_metric(run_data.eval_sets, tokenizer or Tokenizer(), max_new_tokens,
                                jit_compile, decode_batch_size),
        validation_batches=validation_batches)


# ---------------------------------------------------------------- the model

def copy_output_block(model, source="lm", targets=("mqa", "gqa")):
    """Initialise output blocks ``targets`` with block ``source``'s weights (thesis §3.5.3)."""
    blocks = model.backbone.output_set.blocks
    for name in targets:
        if name not in blocks:
            raise ValueError(f"output block {name!r} is not in the model's "
                             f"output_blocks {list(blocks)}")
        for src, dst in zip(blocks[source].weights, blocks[name].weights, strict=True):
            # A copy: on JAX an assigned array is shared, and a training step that donates
            # every variable's buffer cannot take one buffer twice.
            dst.assign(keras.ops.copy(src))


def start_from(model, cfg):
    """Copy the weights of the saved model ``cfg.train.init_from`` into ``model``, except
    the components in ``train.init_skip``, and log what was copied, by component."""
    path, skip = cfg.train.init_from, cfg.train.init_skip
    key = f"{cfg.source}: train.init_from = {path!r}"
    try:
        start = load_pretrained(model, path, skip=skip)
    except IncompatibleWeights as error:
        raise RunConfigError(
            f"{key}: the saved weights do not fit this run's model in {error.details}; start "
            "from a model of the same architecture, or keep those components at their "
            f"initial values: train.init_skip = {toml_value(sorted(error.mismatches))}"
        ) from None
    except ValueError as error:
        raise RunConfigError(f"{key}, train.init_skip = {toml_value(list(skip))}: "
                             f"{error}") from None
    logger.info("train.init_from = %s", start.summary())


def build_model(cfg):
    """The model of ``cfg`` with its starting weights (call in the strategy's scope)."""
    if cfg.train.init_from and not os.path.isfile(cfg.train.init_from):
        raise RunConfigError(f"{cfg.source}: train.init_from = {cfg.train.init_from!r}: no such "
                             "file; expected a saved model (e.g. a pre-training run's "
                             "model_last.keras), or train.init_from = \"\" to start from the "
                             "model's initial weights")
    model = build(cfg.model_name, cfg.model, gpt2=cfg.gpt2)
    if cfg.train.init_from:
        start_from(model, cfg)
    if cfg.kind == "general" and cfg.model_name == "nemot" and cfg.train.init_blocks_from_lm:
        copy_output_block(model, "lm", [b for b in ("mqa", "gqa")
                                        if b in cfg.model.output_blocks])
    return model


def compile_model(model, cfg):
    """Adam (or SGD) on the run's schedule, the run's loss weights. On JAX the step is
    always compiled (``train.jit_compile`` is TensorFlow's choice): uncompiled, JAX runs
    it one operation at a time."""
    schedule, micro = build_schedule(cfg.schedule), cfg.train.gradient_accumulation_steps
    if micro > 1 and callable(schedule):
        schedule = accumulation.PerUpdate(schedule, micro)
    optimizer = OPTIMIZERS[cfg.train.optimizer](
        learning_rate=schedule, gradient_accumulation_steps=micro if micro > 1 else None)
    model.compile(optimizer=optimizer, loss=cfg.loss,
                  jit_compile=cfg.train.jit_compile or keras.backend.backend() == "jax")


def build_and_compile(cfg, strategy):
    """The model of ``cfg`` built and compiled in ``strategy.scope()``."""
    with strategy.scope():
        model = build_model(cfg)
        loop.freeze(model, cfg.train.freeze)
        compile_model(model, cfg)
    return model


# ---------------------------------------------------------------- the run

def default_out_dir(cfg):
    return os.path.join("checkpoints", cfg.name)


def check_resume(cfg, out_dir):
    """Refuse to resume the run in ``out_dir`` with a config that changes more than
    :data:`~nemot.training.run_config.RESUMABLE` and ``train.resume_allow`` from its
    ``run_config.toml``; log the changes allowed. Reads only: nothing in ``out_dir``
    changes before this check.

    A changed ``train.batch_size`` (when allowed) moves the data: the run continues at
    global batch ``step`` of the new size, so at example ``step * new`` of the stream
    instead of ``step * old``.
    """
    saved_path = os.path.join(out_dir, RUN_CONFIG)
    latest = checkpoints.latest_checkpoint(os.path.join(out_dir, loop.TRAIN_STATE))
    if latest is None or not os.path.isfile(saved_path):
        return  # nothing to resume: a new run (or one stopped before its first checkpoint)
    step = checkpoints.checkpoint_step(latest)
    changes = changed_keys(load_run_config(saved_path).to_dict(), cfg.to_dict())
    allowed = RESUMABLE | set(cfg.train.resume_allow)

    def describe(key, old, new):
        text = f"{key} {toml_value(old)} -> {toml_value(new)}"
        if key == "train.batch_size":
            text += (f" (the data would continue at global batch {step} of the new size: "
                     f"example {step * new} of the stream, where this run has read {step * old})")
        return text

    refused = [describe(*change) for change in changes if change[0] not in allowed]
    if refused:
        model_keys = [k for k, _, _ in changes if k not in allowed
                      and (k == "model_name" or k.startswith("model."))]
        allow = [k for k, _, _ in changes if k not in allowed and k not in model_keys]
        ways = [f"start a new run in another directory (--out; train.init_from = "
                f"{toml_value(os.path.join(out_dir, 'model_last.keras'))} starts it from this "
                "run's weights)"]
        if allow:
            ways.append(f"keep these changes in this run: train.resume_allow = "
                        f"{toml_value(allow)}")
        raise ResumeConflict(
            f"{out_dir} holds a run (checkpoint at step {step}) whose {RUN_CONFIG} differs from "
            f"this config ({cfg.source}) in: {'; '.join(refused)}. Resume it with its own "
            f"config, or {', or '.join(ways)}"
            + (f"; the model's keys ({', '.join(model_keys)}) cannot change in a resumed run: "
               "its checkpoint holds the weights of that model" if model_keys else ""))
    for change in changes:
        logger.info("resuming %s with a changed config: %s", out_dir, describe(*change))


def train(cfg, out_dir=None, strategy=None, tokenizer=None, source=None, callbacks=(),
          task_tokens=None):
    """Train (or resume) the run ``cfg``; see the module docstring.

    Args:
        cfg: a :class:`nemot.training.run_config.RunConfig`.
        out_dir: output directory (default ``checkpoints/<name>``).
        strategy: a strategy of :func:`nemot.training.distributed.make_strategy` (default
            from ``cfg.train.strategy``).
        tokenizer: for the data (default the offline GPT-2 tokenizer).
        source: a :class:`DataSource` replacing the one ``cfg.data`` describes (e.g.
            :func:`examples_source` of synthetic examples), with ``task_tokens``
            ``{dataset: task token}`` to check against the model's blocks.
        callbacks: more Keras callbacks, run after the trainer's own.

    Raises:
        nemot.training.run_config.ResumeConflict: ``out_dir`` holds a run of another
            config (:func:`check_resume`).
        nemot.training.callbacks.TrainingDiverged: the loss became NaN or infinite; the
            newest checkpoint in ``train_state/`` is the last good one.
    """
    out_dir = str(out_dir or default_out_dir(cfg))
    loop.show_run_messages()
    strategy = strategy or distributed.make_strategy(cfg.train.strategy)
    is_chief, _ = distributed.worker_info(strategy)
    with loop.directory_lock(out_dir, is_chief):
        check_resume(cfg, out_dir)
        if source is None:
            source, task_tokens = data_source(cfg, tokenizer)
        sources.check_task_tokens(task_tokens or {}, cfg.model)
        if is_chief:
            files.write_text(os.path.join(out_dir, RUN_CONFIG), dump_toml(cfg.to_dict()))
        return loop.run(lambda: build_model(cfg), source, cfg.train, out_dir,
                        compile_model=lambda model: compile_model(model, cfg), seed=cfg.seed,
                        strategy=strategy, callbacks=callbacks,
                        perplexity=cfg.kind == "pretrain")
