"""Gradient accumulation that gives the update of the whole batch: ``train.batch_size = B``
with ``train.gradient_accumulation_steps = k`` runs k micro-batches of B / k examples and
one optimizer update, the update of one batch of B (the thesis' batch of 32 on a device
that holds 8 of its examples).

Keras's optimizers accumulate (``gradient_accumulation_steps``): they add up the k
gradients and apply their mean. That mean is the big batch's gradient only when each
micro-batch's loss is a mean over equal parts, and NeMoT's is not: each loss term divides
by its count of target tokens over the batch (docs/spec.md section 3), and micro-batches
of answers of different lengths hold different counts. So each micro-batch carries, per
example, the mean count of each term's target tokens over the whole batch
(``<targets>_share``): the micro-batch's shares add up to k-th of the batch's count, and
the loss divides by that sum (over all replicas), so the mean of the k micro-batch
gradients is exactly the gradient of the batch of B. Each example also carries the task
tokens of k examples of the batch (``batch_task_tokens``), so that the routing rule
(:mod:`nemot.models.routing`) keeps only the output blocks that no example of the whole
batch selects.

The step count is the count of updates: the optimizer's ``iterations`` (Keras's floor
division by k), the learning-rate schedule (:class:`PerUpdate`), checkpoints (taken only
at update boundaries: the run's callbacks see only the last micro-batch of each update,
:class:`UpdateBoundaries`), ``steps_per_epoch`` and the data position of a resumed run.
"""

import keras
import tensorflow as tf

from nemot import vocab
from nemot.models.losses import share_key
from nemot.models.routing import BATCH_TASKS

# The targets whose counts the loss divides by.
SHARED_TARGETS = ("task_targets", "lm_targets")


def check_batch(batch_size, steps, replicas):
    """Refuse a batch that k micro-batches (each split over ``replicas``) cannot share."""
    if batch_size % (steps * replicas):
        where = f" and {replicas} replicas" if replicas > 1 else ""
        raise ValueError(f"train.batch_size = {batch_size} is not divisible into "
                         f"train.gradient_accumulation_steps = {steps} micro-batches{where}: "
                         f"expected a multiple of {steps * replicas}")


def micro_batches(dataset, steps, pieces=1):
    """Each batch of ``dataset`` (``(x, y)`` or ``(x, y, sample_weight)``) as ``steps``
    micro-batches of consecutive examples, each in ``pieces`` consecutive parts (one per
    replica that this input pipeline feeds); a ``y`` dict with NeMoT's targets gains the
    shares and batch task tokens of the module docstring."""
    def split(*batch):
        x, y = batch[0], batch[1]
        size = tf.shape(tf.nest.flatten(x)[0])[0]
        if isinstance(y, dict) and isinstance(x, dict) and "token_ids" in x:
            y = dict(y, **_whole_batch(x, y, size, steps))
        parts = steps * pieces

        def cut(tensor):
            shape = tf.shape(tensor)
            return tf.reshape(tensor, tf.concat([[parts, shape[0] // parts], shape[1:]], 0))

        return tf.nest.map_structure(cut, (x, y, *batch[2:]))

    return dataset.map(split).unbatch()


def _whole_batch(x, y, size, steps):
    """The shares and the batch task tokens of a batch of ``size`` examples."""
    extra = {}
    for targets in SHARED_TARGETS:
        if targets in y:
            count = tf.reduce_sum(tf.cast(tf.not_equal(y[targets], vocab.IGNORE_ID), "float32"))
            extra[share_key(targets)] = tf.fill([size], count / tf.cast(size, "float32"))
    tasks = tf.cast(x["token_ids"][:, vocab.TASK_POSITION], "int32")
    # Example t of every micro-batch carries the tokens of examples t, t + m, ... (m =
    # size / steps): each micro-batch holds all of them, and every part of one holds its
    # own rows.
    rows = tf.transpose(tf.reshape(tasks, [steps, size // steps]))
    extra[BATCH_TASKS] = tf.tile(rows, [steps, 1])
    return extra


def accumulated(train_fn, steps, per_replica):
    """``train_fn(batch_size, input_context)`` as micro-batches: each input pipeline reads
    its share of the whole batch (all of it on one), then cuts it into ``steps``
    micro-batches; ``per_replica`` (``tf.distribute``, which takes a pipeline's batches
    one replica at a time): each micro-batch in one part per replica the pipeline feeds;
    otherwise whole (JAX, whose ``keras.distribution`` splits a host's batch itself)."""
    def micro(batch_size, input_context):
        pipelines = 1 if input_context is None else input_context.num_input_pipelines
        replicas = 1 if input_context is None else input_context.num_replicas_in_sync
        context = input_context and tf.distribute.InputContext(
            num_input_pipelines=pipelines, input_pipeline_id=input_context.input_pipeline_id,
            num_replicas_in_sync=pipelines)
        return micro_batches(train_fn(batch_size=batch_size, input_context=context), steps,
                             pieces=replicas // pipelines if per_replica else 1)

    return micro


@keras.saving.register_keras_serializable(package="nemot")
class PerUpdate(keras.optimizers.schedules.LearningRateSchedule):
    """``schedule`` stepped once per update: Keras gives a schedule the count of
    micro-batches (``iterations`` before its division by ``steps``)."""

    def __init__(self, schedule, steps):
        self.schedule = schedule
        self.steps = int(steps)

    def __call__(self, step):
        return self.schedule(keras.ops.floor_divide(step, self.steps))

    def get_config(self):
        return {"schedule": keras.saving.serialize_keras_object(self.schedule),
                "steps": self.steps}

    @classmethod
    def from_config(cls, config):
        return cls(keras.saving.deserialize_keras_object(config["schedule"]), config["steps"])


class UpdateBoundaries(keras.callbacks.CallbackList):
    """``callbacks`` driven by updates instead of micro-batches: ``fit`` counts k
    micro-batches per update; these callbacks see one batch per update (the last
    micro-batch's end, the first one's beginning) and ``steps`` per epoch in updates, so
    every checkpoint, preemption stop and log falls on an update boundary."""

    def __init__(self, callbacks, steps):
        self.steps = int(steps)
        super().__init__(list(callbacks))

    def set_params(self, params):
        if params and params.get("steps"):
            params = dict(params, steps=params["steps"] // self.steps)
        super().set_params(params)

    def on_train_batch_begin(self, batch, logs=None):
        if batch % self.steps == 0:
            super().on_train_batch_begin(batch // self.steps, logs)

    def on_train_batch_end(self, batch, logs=None):
        if (batch + 1) % self.steps == 0:
            super().on_train_batch_end(batch // self.steps, logs)
