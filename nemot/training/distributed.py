"""Distribution strategies and the multi-worker training loop.

``--strategy default`` trains on the one default device, ``mirrored`` on all
GPUs of one host (``tf.distribute.MirroredStrategy``), ``multi-worker`` on
several hosts (``tf.distribute.MultiWorkerMirroredStrategy``; the cluster comes
from ``TF_CONFIG``). The engine is always TensorFlow's: its all-reduce
collectives sum the gradients and the loss's target counts
(:mod:`nemot.models.losses`), so any strategy computes what one device
computes on the same global batch.

Why ``model.fit`` is not used under ``MultiWorkerMirroredStrategy``
(keras-team/keras#20585, tensorflow/tensorflow#72388). With TF 2.21 /
Keras 3.15 ``fit`` fails with "Attempt to convert a value (PerReplica:...)
to a Tensor". Two places in Keras's TensorFlow trainer (its
``TensorFlowTrainer``) assume the single-host
``MirroredStrategy``:

1. ``_maybe_symbolic_build`` takes the first distributed batch and calls
   ``strategy.reduce("MEAN", batch, axis=None)`` on the whole nested
   ``(x, y)`` structure. ``MirroredStrategy`` tolerates a nest there;
   ``CollectiveAllReduceExtended._reduce_to`` hands it straight to
   ``CrossDeviceOps.reduce``, which converts its argument to one tensor:
   the error above. (Reducing a data batch just to learn its shapes would
   also be a needless all-reduce.)
2. Past that, ``reduce_per_replica`` reduces each log value of the step
   with ``strategy.reduce("MEAN", v, axis=0)`` when it detects a
   multi-worker strategy, which is invalid for the scalar losses and
   metrics a train step returns ("Invalid reduction dimension 0 for input
   with 0 dimensions").

Neither is reachable through Keras's public extension points (the failing
code runs outside ``train_step``), so for this strategy only we run our own
loop, :func:`multi_worker_fit`: Keras's own ``model.train_step`` /
``model.test_step`` inside ``strategy.run`` in a ``tf.function``, their logs
reduced with ``axis=None``, the same callbacks driven through a
``keras.callbacks.CallbackList``, the same checkpoints. Model, loss,
optimizer and callbacks are exactly those of the ``fit`` path.

Example:
    >>> strategy = make_strategy("mirrored")
    >>> with strategy.scope():
    ...     model = nemot.build_model(cfg)
"""

import json
import os

import keras
import numpy as np
import tensorflow as tf

STRATEGIES = ("default", "mirrored", "multi-worker")


def make_strategy(name):
    """The ``tf.distribute`` strategy called ``name`` (one of :data:`STRATEGIES`)."""
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "multi-worker":
        if "TF_CONFIG" not in os.environ:
            raise ValueError("--strategy multi-worker needs the TF_CONFIG environment variable "
                             '({"cluster": {"worker": ["host1:port", ...]}, "task": {"type": '
                             '"worker", "index": i}})')
        # AUTO picks NCCL on GPUs and RING on CPUs.
        options = tf.distribute.experimental.CommunicationOptions(
            implementation=tf.distribute.experimental.CommunicationImplementation.AUTO)
        return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    raise ValueError(f"strategy {name!r}: expected one of {STRATEGIES}")


def is_multi_worker(strategy):
    return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)


def distribute(strategy, dataset_fn, global_batch_size):
    """A distributed dataset: ``dataset_fn(batch_size=global_batch_size, input_context=ctx)``
    on every worker through ``strategy.distribute_datasets_from_function``.

    Args:
        strategy: a ``tf.distribute`` strategy (``MirroredStrategy``,
            ``MultiWorkerMirroredStrategy``, ...).
        dataset_fn: e.g. ``functools.partial(nemot.data.c4.pipeline.c4_dataset, "c4/en", seed=1)``.
        global_batch_size: examples per step over all replicas.

    Example:
        >>> strategy = tf.distribute.MirroredStrategy()                      # doctest: +SKIP
        >>> ds = distribute(strategy, partial(pool_dataset, data_dir="data"), 32)  # doctest: +SKIP
    """
    replicas = strategy.num_replicas_in_sync
    if global_batch_size % replicas:
        raise ValueError(f"global batch size {global_batch_size} is not divisible by the "
                         f"{replicas} replicas of {type(strategy).__name__}")
    return strategy.distribute_datasets_from_function(
        lambda ctx: dataset_fn(batch_size=global_batch_size, input_context=ctx))


def worker_info(strategy):
    """``(is_chief, worker_index)``; worker 0 is the chief (no separate chief task)."""
    if not is_multi_worker(strategy):
        return True, 0
    task = json.loads(os.environ["TF_CONFIG"]).get("task", {})
    index = int(task.get("index", 0))
    return task.get("type", "worker") in ("chief", "worker") and index == 0, index


def _reduce_logs(strategy, logs):
    """Mean over replicas of each scalar log (``axis=None``: see the module docstring)."""
    return {key: strategy.reduce("MEAN", value, axis=None) for key, value in logs.items()}


def _step_function(strategy, step, jit_compile):
    """``step`` (Keras's ``train_step``/``test_step``) on every replica, logs reduced."""
    replica_step = tf.function(step, jit_compile=True) if jit_compile else step

    @tf.function
    def one_step(data):
        return _reduce_logs(strategy, strategy.run(replica_step, args=(data,)))

    return one_step


def _evaluate(model, test_step, dataset):
    """Validation logs over a finite distributed dataset."""
    model.reset_metrics()
    logs = {}
    iterator = iter(dataset)
    while True:
        # A distributed iterator agrees across workers on whether data is left,
        # so every worker leaves the loop at the same batch.
        optional = iterator.get_next_as_optional()
        if not bool(optional.has_value()):
            break
        logs = test_step(optional.get_value())
    return {f"val_{k}": float(np.asarray(v)) for k, v in logs.items()}


def multi_worker_fit(model, strategy, dataset, *, epochs, steps_per_epoch, initial_epoch=0,
                     validation_data=None, callbacks=(), verbose=1, jit_compile=False):
    """``model.fit`` for ``MultiWorkerMirroredStrategy`` (see the module docstring).

    Args:
        model: a compiled model built in ``strategy.scope()``.
        strategy: the ``MultiWorkerMirroredStrategy``.
        dataset: a distributed dataset (``strategy.distribute_datasets_from_function``),
            infinite; ``steps_per_epoch`` batches make an epoch.
        epochs, steps_per_epoch, initial_epoch: as in ``fit``.
        validation_data: a finite distributed dataset, or None.
        callbacks: keras callbacks (the same as the ``fit`` path).
        verbose: progress bar as in ``fit`` (chief only).
        jit_compile: XLA-compile the per-replica step.

    Returns:
        A ``keras.callbacks.History``.
    """
    history = keras.callbacks.History()
    callback_list = keras.callbacks.CallbackList(
        list(callbacks) + [history], add_history=False, add_progbar=verbose != 0,
        model=model, verbose=verbose, epochs=epochs, steps=steps_per_epoch)
    train_step = _step_function(strategy, model.train_step, jit_compile)
    test_step = _step_function(strategy, model.test_step, False)
    iterator = iter(dataset)
    model.stop_training = False
    callback_list.on_train_begin()
    for epoch in range(initial_epoch, epochs):
        model.reset_metrics()
        callback_list.on_epoch_begin(epoch)
        logs = {}
        for batch in range(steps_per_epoch):
            callback_list.on_train_batch_begin(batch)
            logs = {k: float(np.asarray(v)) for k, v in train_step(next(iterator)).items()}
            callback_list.on_train_batch_end(batch, logs)
            if model.stop_training:
                break
        epoch_logs = dict(logs)
        if validation_data is not None and not model.stop_training:
            epoch_logs.update(_evaluate(model, test_step, validation_data))
        callback_list.on_epoch_end(epoch, epoch_logs)
        if model.stop_training:
            break
    callback_list.on_train_end(logs)
    return history
