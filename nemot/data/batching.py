"""Rows to training batches: the batch layout every NeMoT dataset yields, its share for each
replica, the seeded epoch order and the ``tf.data`` view (docs/spec.md §4-5). The C4
stream (:mod:`nemot.data.c4.pipeline`) and the QA datasets (:mod:`nemot.data.qa.pipelines`,
:mod:`nemot.data.qa.pool`) build on it.

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
(C4: see :mod:`nemot.data.c4.stream`; QA: epoch ``e`` is
``default_rng([seed, e]).permutation``, :func:`epoch_indices`). ``tf.data`` adds static
shapes and prefetching.

Distribution: ``batch_size`` is always the **global** batch size. With an
``input_context`` (from :func:`nemot.training.distributed.distribute`) each input
pipeline reads the same global stream and keeps its own contiguous slice of every
global batch, cut into per-replica batches; replica ``r`` of step ``s`` therefore sees
rows ``[r*b, (r+1)*b)`` of global batch ``s``: no example is duplicated or dropped, and
the union over replicas is the single-device batch. (Every worker reads the whole
stream: cheap from pre-tokenised shards, which is what multi-worker runs should use.)

Finite datasets (``repeat=False``, validation) pad the last global batch with rows of
``<pad>`` whose targets are all ignored, so no example is dropped and shapes stay static.
"""

import itertools

import numpy as np
import tensorflow as tf

from nemot import vocab
from nemot.data.memory import keep_freed_memory
from nemot.data.tf_errors import remembered_generator
from nemot.vocab import NUM_AUX, POS_PAD_ID


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


def epoch_indices(size, seed_key, start=0, shuffle=True, repeat=True):
    """Example indices from position ``start``: epoch ``e`` is
    ``default_rng([*seed_key, e]).permutation(size)`` (or ``range(size)``)."""
    epoch, i = divmod(int(start), size)
    while repeat or epoch == 0:
        order = (np.random.default_rng([*seed_key, epoch]).permutation(size) if shuffle
                 else np.arange(size))
        yield from order[i:].tolist()
        i, epoch = 0, epoch + 1


def generator_dataset(make_batches, signature, input_context=None, batches=None):
    """A ``tf.data`` view of the Python batches of ``make_batches()``, with static shapes
    from ``signature`` (their ``tf.TensorSpec`` structure). A Python exception raised in
    them reaches the trainer as itself (:func:`nemot.data.tf_errors.python_errors`), and
    the process keeps the memory it frees (:func:`nemot.data.memory.keep_freed_memory`).

    Args:
        input_context: given when the batches already are this input pipeline's share of
            every global batch (:func:`batches`): tf.data's auto-sharding is then off.
        batches: how many a finite stream yields. Keras' ``evaluate`` on a dataset of
            unknown length averages in one empty step (the loss comes out N/(N+1) of the
            true value; seen with Keras 3.15), so validation losses would be low.
    """
    def generate():
        keep_freed_memory()  # after TensorFlow's patch, which the iterator makes as it starts
        yield from make_batches()

    ds = tf.data.Dataset.from_generator(remembered_generator(generate),
                                        output_signature=signature)
    if input_context is not None:
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
        ds = ds.with_options(options)
    if batches is not None:
        ds = ds.apply(tf.data.experimental.assert_cardinality(batches))
    return ds.prefetch(tf.data.AUTOTUNE)


def rows_dataset(make_batches, batch_size, max_text_length, input_context, pos_tags=False,
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
