"""The trainer every model of the package uses: build in a distribution strategy,
restore, fit epoch by epoch, validate, checkpoint, keep the best models.

``run(build_model, source, train, out_dir, compile_model=...)`` needs only a function
that builds a ``keras.Model``, one that compiles it, and a :class:`DataSource`; NeMoT's runs
(:mod:`nemot.training.trainer`), NGT and the paper reproductions all train through it.

Epoch ``e`` is the global steps ``[e * S, (e + 1) * S)`` with ``S`` steps per epoch. The
global step is the optimizer's iteration count, restored from the newest checkpoint; a
run resumed in the middle of an epoch first finishes that epoch (one short ``fit``
call), then runs the remaining whole epochs, and its data continue at exactly the batch
they would have reached (``source.train(start_batch=step, ...)``).

Output directory (every file written under a temporary name and renamed, so a run killed
at any moment leaves each one whole; ``.lock`` names the process writing it,
:mod:`nemot.files`)::

    .lock                      the process id of the run writing here (while it runs)
    config.toml                the resolved run config (when given)
    train_state/ckpt-<step>.npz  training checkpoints (keep K; nemot.training.checkpoints)
    logs/                      TensorBoard scalars
    results.csv                epoch, loss, val_loss, val_metric (+ per-term losses, extras)
    best.json                  the ♣ / ♠ epochs and values
    model_last.keras, model_best_loss.keras (♣), model_best_metric.keras (♠)

Example:
    >>> source = DataSource(train=make_train, steps_per_epoch=100, metric=score)
    >>> result = run(build, source, TrainConfig(epochs=3), "runs/try",
    ...              compile_model=lambda m: m.compile(keras.optimizers.Adam(1e-3), "mse"))
    >>> result.best["metric_epoch"]
"""

import contextlib
import dataclasses
import functools
import logging
import os
from pathlib import Path

import keras

from nemot import files
from nemot.ranges import Count, NonNegativeInt, Verbosity
from nemot.training import accumulation
from nemot.training import distributed
from nemot.training import callbacks as cb
from nemot.training.checkpoints import TrainingCheckpoint

logger = logging.getLogger(__name__)
# Training checkpoints of a run: <out_dir>/train_state/ckpt-<step>.npz.
TRAIN_STATE = "train_state"


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """How long and how to train.

    Args:
        batch_size: GLOBAL batch size (split across replicas).
        epochs: epochs to train.
        steps_per_epoch: optimizer steps per epoch; 0 = one pass over the
            training split (fine-tuning only).
        checkpoint_every: save a training checkpoint every N steps (0 = at epoch ends only).
        keep_checkpoints: how many training checkpoints to keep.
        strategy: ``default`` (one device); TensorFlow ``mirrored`` or ``multi-worker``,
            JAX ``data-parallel`` or ``multi-host`` (:mod:`nemot.training.distributed`).
        mixed_precision: ``None`` or a Keras dtype policy (``mixed_bfloat16``).
        jit_compile: XLA-compile the train step (TensorFlow; NeMoT's runs on JAX always
            compile it).
        decode_jit_compile: XLA-compile the validation decoding loop.
        init_blocks_from_lm: general training: copy the ``lm`` output block into
            ``mqa``/``gqa`` (thesis §3.5.3); False = leave them random, as the
            original code did by accident (docs/spec.md section 9).
        init_from: a saved model (``.keras``, e.g. a pre-training run's
            ``model_last.keras``) whose weights start this run, matched by name
            (:func:`nemot.models.weights.load_pretrained`; NeMoT runs).
        init_skip: components of the model (``"output_set"``, ``"head"``, ...) not taken
            from ``init_from``: they keep their initial values, and may differ from the
            saved model's in shape.
        resume_allow: run-config keys (``"train.batch_size"``, ``"schedule.rate"``, ...)
            a resumed NeMoT run may change from its ``run_config.toml`` beyond those
            always allowed (:data:`nemot.training.run_config.RESUMABLE`).
        optimizer: ``adam`` (the thesis: Adam with Keras defaults) or ``sgd``
            (plain gradient descent; its update is linear in the gradient, which
            the distribution tests use to compare weights to 1e-5 - Adam's
            ``g / (|g| + eps)`` turns rounding noise in near-zero gradients into
            full-size steps).
        log_every: TensorBoard scalars every N steps.
        verbose: Keras progress bar (1), one line per epoch (2) or none (0).
        freeze: parameter groups kept fixed: attribute paths of layers from the model,
            e.g. ``("vanilla_set.token_embedding",)`` or ``("backbone",)``.
        gradient_accumulation_steps: k > 1 runs each batch of ``batch_size`` as k
            micro-batches and one update equal to the whole batch's
            (:mod:`nemot.training.accumulation`); steps, epochs and checkpoints count
            updates. The compiled optimizer must accumulate as many.
    """

    batch_size: Count = 32
    epochs: Count = 1
    steps_per_epoch: NonNegativeInt = 0
    checkpoint_every: NonNegativeInt = 0
    keep_checkpoints: Count = 5
    strategy: str = "default"
    mixed_precision: str | None = None
    jit_compile: bool = False
    decode_jit_compile: bool = True
    init_blocks_from_lm: bool = True
    init_from: str | None = None
    init_skip: tuple = ()
    resume_allow: tuple = ()
    optimizer: str = "adam"
    log_every: Count = 100
    verbose: Verbosity = 1
    freeze: tuple = ()
    gradient_accumulation_steps: Count = 1


@dataclasses.dataclass
class DataSource:
    """The datasets of a run, as functions of the distribution arguments.

    Args:
        train: ``train(start_batch, batch_size, input_context)`` -> an infinite dataset
            starting at global batch ``start_batch``.
        steps_per_epoch: optimizer steps per epoch.
        validation: ``validation(batch_size, input_context)`` -> one pass, or None.
        metric: ``metric(model)`` -> a float (higher is better) or a dict with key
            ``"metric"`` and extra values for the results row; None for no metric.
        validation_batches: how many validation batches the loss reads (0 = all).
    """

    train: object
    steps_per_epoch: int
    validation: object = None
    metric: object = None
    validation_batches: int = 0


@dataclasses.dataclass
class TrainResult:
    """What a finished run reports."""

    out_dir: str
    step: int
    epochs_done: int
    best: dict
    history: dict
    model: object = None


def freeze(model, paths):
    """Set ``trainable = False`` on the layers at attribute ``paths`` of ``model``."""
    for path in paths:
        layer = model
        for name in path.split("."):
            if not hasattr(layer, name):
                raise ValueError(f"train.freeze: {path!r}: {type(layer).__name__} has no "
                                 f"attribute {name!r}")
            layer = getattr(layer, name)
        if not isinstance(layer, keras.layers.Layer):
            raise ValueError(f"train.freeze: {path!r} is a {type(layer).__name__}, not a layer")
        layer.trainable = False


def _datasets(source, strategy, batch_size, start_batch, micro=1):
    """Train (from ``start_batch``) and validation datasets, distributed when needed;
    ``micro`` > 1: each training batch as that many micro-batches, and the validation
    batches of a micro-batch's size (as many examples)."""
    replicas = strategy.num_replicas_in_sync
    train_fn = functools.partial(source.train, start_batch)
    validation_batches = source.validation_batches
    if micro > 1:
        accumulation.check_batch(batch_size, micro, replicas)
        train_fn = accumulation.accumulated(train_fn, micro,
                                            per_replica=not distributed.is_jax(strategy))
        validation_batches *= micro

    def distributed_or_plain(fn, batch_size):
        if distributed.is_jax(strategy):
            # keras.distribution splits each host's batch over its devices.
            if batch_size % strategy.num_replicas_in_sync:
                raise ValueError(f"global batch size {batch_size} is not divisible by the "
                                 f"{strategy.num_replicas_in_sync} devices of --strategy "
                                 f"{strategy.name}")
            return fn(batch_size=batch_size, input_context=strategy.input_context())
        if strategy.num_replicas_in_sync == 1 and not distributed.is_multi_worker(strategy):
            return fn(batch_size=batch_size, input_context=None)
        return distributed.distribute(strategy, fn, batch_size)

    train = distributed_or_plain(train_fn, batch_size)
    validation = source.validation and distributed_or_plain(
        functools.partial(_limited, source.validation, validation_batches),
        batch_size // micro)
    return train, validation


def _limited(validation, batches, batch_size, input_context):
    """The first ``batches`` global batches of a validation dataset (all when 0)."""
    dataset = validation(batch_size, input_context)
    if not batches:
        return dataset
    per_pipeline = 1 if input_context is None else (
        input_context.num_replicas_in_sync // input_context.num_input_pipelines)
    return dataset.take(batches * per_pipeline)


def run(build_model, source, train, out_dir, compile_model=None, seed=0, strategy=None,
        callbacks=(), config_toml=None, perplexity=False):
    """Train (or resume) one run; see the module docstring.

    Args:
        build_model: ``build_model()`` -> a keras.Model, called in the strategy's scope.
        compile_model: ``compile_model(model)`` compiles it, after the parameter groups
            of ``train.freeze`` are frozen (Keras fixes the trainable variables at
            compile time). None: ``build_model`` returns a compiled model and nothing
            can be frozen.
        source: a :class:`DataSource`.
        train: a :class:`TrainConfig`.
        out_dir: the run directory.
        seed: ``keras.utils.set_random_seed`` before building.
        strategy: a strategy of :func:`nemot.training.distributed.make_strategy` (default
            from ``train.strategy``).
        callbacks: more Keras callbacks, run after the trainer's own.
        config_toml: text written to ``<out_dir>/config.toml`` (the resolved config).
        perplexity: also log ``val_perplexity`` = exp(val_loss) (language modelling).

    Raises:
        cb.TrainingDiverged: the loss became NaN or infinite; the newest checkpoint in
            ``train_state/`` is the last good one.
    """
    out_dir = str(out_dir)
    show_run_messages()
    keras.utils.set_random_seed(seed)
    previous_policy = keras.config.dtype_policy()
    if train.mixed_precision:
        keras.config.set_dtype_policy(train.mixed_precision)
    try:
        return _run(build_model, compile_model, source, train, out_dir,
                    strategy or distributed.make_strategy(train.strategy), list(callbacks),
                    config_toml, perplexity)
    finally:
        keras.config.set_dtype_policy(previous_policy)


def show_run_messages():
    """Show the INFO lines of the ``nemot`` loggers (what a run started from, where it
    resumed) on stderr when the program has set up no logging of its own; a program
    that configures ``logging`` keeps its configuration."""
    ours = logging.getLogger("nemot")
    if not ours.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        ours.addHandler(handler)
        ours.setLevel(logging.INFO)
        # Not also through the root logger: a library's later module-level
        # ``logging.warning(...)`` gives the root a handler of its own
        # (``logging.basicConfig``), which would print every line twice.
        ours.propagate = False


def _build(build_model, compile_model, train, strategy):
    if train.freeze and compile_model is None:
        raise ValueError(f"train.freeze = {list(train.freeze)}: freezing needs compile_model= "
                         "(the model is compiled after its groups are frozen)")
    with strategy.scope():
        model = build_model()
        freeze(model, train.freeze)
        if compile_model is not None:
            compile_model(model)
    accumulating = getattr(model.optimizer, "inner_optimizer", model.optimizer)
    accumulating = getattr(accumulating, "gradient_accumulation_steps", None) or 1
    if accumulating != train.gradient_accumulation_steps:
        raise ValueError(f"train.gradient_accumulation_steps = "
                         f"{train.gradient_accumulation_steps}: the model's optimizer "
                         f"accumulates {accumulating} (build it with "
                         "gradient_accumulation_steps=k, or k = None for 1)")
    return model


def _run(build_model, compile_model, source, train, out_dir, strategy, extra_callbacks,
         config_toml, perplexity):
    is_chief, _ = distributed.worker_info(strategy)
    os.makedirs(out_dir, exist_ok=True)
    # JAX: the distribution stays set while fit runs (it lays out each batch).
    with directory_lock(out_dir, is_chief), (
            strategy.scope() if distributed.is_jax(strategy) else contextlib.nullcontext()):
        return _run_locked(build_model, compile_model, source, train, out_dir, strategy,
                           extra_callbacks, config_toml, perplexity, is_chief)


def directory_lock(out_dir, is_chief=True):
    """The run directory's lock (:func:`nemot.files.run_lock`), held by the chief alone (the
    other workers of a multi-worker run write only scratch files)."""
    return files.run_lock(out_dir, "training run") if is_chief else contextlib.nullcontext()


def _run_locked(build_model, compile_model, source, train, out_dir, strategy, extra_callbacks,
                config_toml, perplexity, is_chief):
    from nemot.data.tf_errors import python_errors

    if is_chief and config_toml is not None:
        files.write_text(Path(out_dir, "config.toml"), config_toml)
    model = _build(build_model, compile_model, train, strategy)
    with strategy.scope():
        checkpoint = TrainingCheckpoint(model, os.path.join(out_dir, TRAIN_STATE),
                                        keep=train.keep_checkpoints, is_chief=is_chief)
        step = checkpoint.restore()
    spe, epochs = train.steps_per_epoch or source.steps_per_epoch, train.epochs
    micro = train.gradient_accumulation_steps
    if step:
        logger.info("resumed from step %d (checkpoint %s), data position: global batch %d of "
                    "the training stream (example %d at batch size %d), epoch %d at step %d "
                    "of %d", step, checkpoint.restored, step, step * train.batch_size,
                    train.batch_size, step // spe + 1, step % spe, spe)
    guard = cb.NonFiniteGuard()
    validation = cb.EpochValidation(out_dir, source.metric, guard, enabled=is_chief,
                                    perplexity=perplexity)
    validation.forget_after(step // spe)
    saver = cb.StepCheckpoint(checkpoint, train.checkpoint_every, guard)
    preemption = cb.Preemption(saver, distributed.any_process(strategy))
    callbacks = [guard, cb.ResumedEpoch(checkpoint.epoch_metrics, step % spe), validation, saver,
                 cb.ScalarLogger(os.path.join(out_dir, "logs"), train.log_every,
                                 enabled=is_chief), preemption] + extra_callbacks
    if micro > 1:  # every callback counts updates
        callbacks = [accumulation.UpdateBoundaries(callbacks, micro)]
    history = {}
    # At most two segments: the rest of an interrupted epoch, then whole epochs.
    while step < spe * epochs and guard.failure is None:
        epoch = step // spe
        segment_end = epoch + 1 if step % spe else epochs
        train_ds, val_ds = _datasets(source, strategy, train.batch_size, step, micro)
        kwargs = dict(epochs=segment_end, initial_epoch=epoch,
                      steps_per_epoch=micro * (spe - step % spe if step % spe else spe),
                      validation_data=val_ds, callbacks=callbacks, verbose=train.verbose)
        # A DataError of the data (a malformed line...) is raised as itself.
        with python_errors(), contextlib.closing(preemption):
            if distributed.is_multi_worker(strategy):
                with distributed.lost_workers_named(checkpoint.directory):
                    h = distributed.multi_worker_fit(model, strategy, train_ds,
                                                     jit_compile=train.jit_compile, **kwargs)
            else:
                # The batches are token ids and targets already (under a strategy, a
                # distributed dataset, which KerasHub's fit would try to convert): Keras'
                # own fit. shuffle=False: the datasets are already in their seeded order.
                h = keras.Model.fit(model, train_ds, shuffle=False, **kwargs)
        for key, values in h.history.items():
            history.setdefault(key, []).extend(values)
        new_step = checkpoint.step
        if new_step == step:
            break
        step = new_step
    if guard.failure is not None:
        raise cb.TrainingDiverged(
            f"run in {out_dir} stopped: {guard.failure}. Nothing was saved after it; the last "
            f"good checkpoint is {checkpoint.latest or '(none yet)'} (resume from it with a "
            "lower learning rate, or check the data)")
    return TrainResult(out_dir=out_dir, step=step, epochs_done=step // spe,
                       best=dict(validation.best), history=history, model=model)
