"""Distribution strategies and the multi-worker training loop.

The strategies of each Keras backend (:data:`STRATEGIES`):

- TensorFlow: ``default`` trains on the one default device, ``mirrored`` on all GPUs of
  one host (``tf.distribute.MirroredStrategy``), ``multi-worker`` on several hosts
  (``tf.distribute.MultiWorkerMirroredStrategy``; the cluster comes from ``TF_CONFIG``).
  Its all-reduce collectives sum the gradients and the loss's target counts
  (:mod:`nemot.models.losses`).
- JAX: ``default`` one device, ``data-parallel`` all local devices
  (``keras.distribution.DataParallel``), ``multi-host`` every device of several hosts
  (``jax.distributed.initialize`` from the cluster's environment, then ``DataParallel``
  over all of them; each host reads its own slice of every global batch). A step is one
  program on global arrays, so the loss's sums are global already.

Either way any strategy computes what one device computes on the same global batch.

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

import contextlib
import json
import os
import re

import keras
import numpy as np
import tensorflow as tf

from nemot.errors import WorkerLost

STRATEGIES = {"tensorflow": ("default", "mirrored", "multi-worker"),
              "jax": ("default", "data-parallel", "multi-host")}
# Every name, whichever backend: a run config names any (make_strategy checks the backend).
ALL_STRATEGIES = tuple(dict.fromkeys(n for names in STRATEGIES.values() for n in names))
# keras.distribution.initialize's environment: the coordinator's address (or every
# host's, comma-separated), the number of processes and this one's index.
KERAS_CLUSTER_ENV = ("KERAS_DISTRIBUTION_JOB_ADDRESSES", "KERAS_DISTRIBUTION_NUM_PROCESSES",
                     "KERAS_DISTRIBUTION_PROCESS_ID")


def make_strategy(name):
    """The strategy called ``name`` on the active Keras backend (one of
    :data:`STRATEGIES`); a name of the other backend is refused, naming those of this
    one."""
    backend = keras.backend.backend()
    names = STRATEGIES.get(backend, STRATEGIES["tensorflow"])
    if name not in names:
        other = [b for b, n in STRATEGIES.items() if name in n and b != backend]
        where = f" (a {other[0]} strategy)" if other else ""
        raise ValueError(f"strategy {name!r}{where}: on KERAS_BACKEND={backend} expected "
                         f"one of {names}")
    if backend == "jax":
        return JaxStrategy(name)
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


class JaxStrategy:
    """A JAX strategy with the few members of a ``tf.distribute`` strategy the trainer
    uses: ``scope()`` (here: ``keras.distribution.DataParallel`` over the devices, or
    nothing for ``default``), ``num_replicas_in_sync``, and this host's place
    (``process_index`` of ``process_count``)."""

    def __init__(self, name):
        import jax

        self.name = name
        if name == "multi-host" and not jax.distributed.is_initialized():
            _initialize_hosts()
        devices = jax.devices() if name != "default" else jax.devices()[:1]
        self.num_replicas_in_sync = len(devices)
        self.process_index, self.process_count = jax.process_index(), jax.process_count()
        # Each host reads its own slice of the global batch (input_context): no sharding
        # of a global dataset by Keras.
        self.distribution = None if name == "default" else keras.distribution.DataParallel(
            devices=devices, auto_shard_dataset=False)

    def scope(self):
        import contextlib

        return contextlib.nullcontext() if self.distribution is None \
            else self.distribution.scope()

    def input_context(self):
        """This host's share of each global batch (None on one host: all of it)."""
        if self.process_count == 1:
            return None
        return tf.distribute.InputContext(num_input_pipelines=self.process_count,
                                          input_pipeline_id=self.process_index,
                                          num_replicas_in_sync=self.process_count)


def _initialize_hosts():
    """``jax.distributed.initialize`` from the cluster's environment: Keras's variables
    (:data:`KERAS_CLUSTER_ENV`) when set, otherwise what JAX detects itself (SLURM, Open
    MPI, Kubernetes, Cloud TPU)."""
    import jax

    if all(key in os.environ for key in KERAS_CLUSTER_ENV):
        try:
            processes = int(os.environ[KERAS_CLUSTER_ENV[1]])
            process = int(os.environ[KERAS_CLUSTER_ENV[2]])
        except ValueError:
            raise ValueError(f"--strategy multi-host: {KERAS_CLUSTER_ENV[1]} and "
                             f"{KERAS_CLUSTER_ENV[2]} must be integers") from None
        keras.distribution.initialize(os.environ[KERAS_CLUSTER_ENV[0]], processes, process)
        return
    try:
        jax.distributed.initialize()
    except (ValueError, RuntimeError) as error:
        raise ValueError(f"--strategy multi-host: no cluster found in the environment "
                         f"({error}); set {', '.join(KERAS_CLUSTER_ENV)} (the coordinator's "
                         "host:port, the number of hosts and this host's index from 0) or "
                         "run under SLURM or Open MPI") from None


def is_jax(strategy):
    return isinstance(strategy, JaxStrategy)


def any_process(strategy):
    """``flag -> bool``: whether any worker or host of ``strategy`` passed a true flag,
    a collective every one of them must call at the same point; None with one process
    (nothing to agree on). ``MultiWorkerMirroredStrategy``: an all-reduce; JAX across
    hosts: ``multihost_utils.process_allgather``."""
    if is_jax(strategy):
        if strategy.process_count == 1:
            return None
        from jax.experimental import multihost_utils

        return lambda flag: bool(np.asarray(
            multihost_utils.process_allgather(np.int32(bool(flag)))).any())
    if not is_multi_worker(strategy):
        return None

    @tf.function
    def any_worker(flag):
        return strategy.reduce("SUM", strategy.run(lambda: tf.identity(flag)), axis=None)

    return lambda flag: int(any_worker(tf.constant(int(bool(flag)))).numpy()) > 0


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
    """``(is_chief, worker_index)``; worker 0 (JAX: process 0) is the chief (no separate
    chief task)."""
    if is_jax(strategy):
        return strategy.process_index == 0, strategy.process_index
    if not is_multi_worker(strategy):
        return True, 0
    task = json.loads(os.environ["TF_CONFIG"]).get("task", {})
    index = int(task.get("index", 0))
    return task.get("type", "worker") in ("chief", "worker") and index == 0, index


# What a collective raises on a worker when another worker has died: the coordination
# service names the tasks that stopped sending heartbeats (a few seconds after).
LOST_WORKER_ERRORS = (tf.errors.UnavailableError, tf.errors.AbortedError,
                      tf.errors.DeadlineExceededError)


def _task_names(text):
    """``worker 1 (127.0.0.1:23456)`` for each task a coordination-service error names as
    unhealthy, or else for the remote target a collective's call found gone (the chief,
    whose death takes the coordination service with it: "Socket closed ... from remote
    target /job:worker/replica:0/task:0"), the address from ``TF_CONFIG``'s cluster;
    ``another worker`` when the error names none."""
    cluster = json.loads(os.environ.get("TF_CONFIG", "{}")).get("cluster", {})
    task = r"/job:(\w+)/replica:\d+/task:(\d+)"
    named = sorted(set(re.findall(task, text.partition("unhealthy")[2])
                       or re.findall(r"remote target " + task, text)))
    return ", ".join(f"{job} {index} ({cluster.get(job, [])[int(index)]})"
                     if int(index) < len(cluster.get(job, [])) else f"{job} {index}"
                     for job, index in named) or "another worker"


@contextlib.contextmanager
def lost_workers_named(checkpoints):
    """Turn the error a worker's collective raises when another worker has died into a
    one-line :class:`~nemot.errors.WorkerLost` naming that worker and ``checkpoints``, the
    directory whose newest checkpoint every worker resumes from."""
    try:
        yield
    except LOST_WORKER_ERRORS as error:
        raise WorkerLost(
            f"{_task_names(error.message)} stopped answering (killed, or its machine lost), "
            f"so this worker stopped too; start every worker again with its same command to "
            f"resume from the newest checkpoint in {checkpoints}"
        ) from None


def _reduce_logs(strategy, logs):
    """Mean over replicas of each scalar log (``axis=None``: see the module docstring)."""
    return {key: strategy.reduce("MEAN", value, axis=None) for key, value in logs.items()}


def _step_function(strategy, step, jit_compile):
    """``step`` (Keras's ``train_step``/``test_step``) on every replica, logs reduced."""
    replica_step = tf.function(step, jit_compile=True, autograph=False) if jit_compile else step

    # No AutoGraph, as Keras's own train function: the step has no Python control flow
    # over tensors (it runs under jax.jit too), and converting its source costs seconds.
    @tf.function(autograph=False)
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
