"""Output blocks that no example of a batch selects are not updated.

Routing gives an unused block a zero gradient, not none, and Adam still moves a
variable whose gradient is zero: its momentum decays but ``m / (sqrt(v) + eps)`` keeps
stepping (a ``<mqa>``-trained block moved by 6.7e-4 on a ``<gqa>``-only step). In the
original code such a block got no gradient and no update. Here the task's train step
records which blocks the global batch selects (summed over replicas) and masks the step:
the weights of a block it did not select and their optimizer slots (Adam's momentum and
velocity) keep the values they had before it. The iteration count advances for every
step, as Keras 2 optimizers did for a variable without a gradient.

On JAX the train step is a pure function of the state: the masked state is
``where(selected, new, old)`` of its arrays. On TensorFlow the weights and slots are
copied before Keras's step and restored after it where unselected (under
``tf.distribute``, in the cross-replica context, each device's copy by itself).
"""

from keras import ops

from nemot import backend
from nemot.backend import global_sum
from nemot.keras_internals import optimizer_slots

# ``y``'s key, under gradient accumulation, of the task tokens of the whole batch that each
# micro-batch carries (nemot.training.accumulation): the rule reads the whole batch.
BATCH_TASKS = "batch_task_tokens"


def _guarded(model, blocks):
    """``[(block index, variable)]``: the blocks' trainable variables and their slots."""
    optimizer = getattr(model.optimizer, "inner_optimizer", model.optimizer)
    slots = optimizer_slots(optimizer, model.trainable_variables)
    out = []
    for block, variables in enumerate(blocks):
        for variable in variables:
            out += [(block, variable)] + [(block, s) for s in slots.get(id(variable), {}).values()]
    return out


def masked_train_step(model, train_step, args, selected, blocks):
    """``train_step(*args)`` with the variables of unselected blocks and their optimizer
    slots kept as they were.

    Args:
        model: the task (its optimizer is built).
        train_step: Keras's train step of the model.
        args: its arguments, ``(data,)`` or, on JAX, ``(state, data)``.
        selected: bool [blocks], the blocks this replica's batch selects.
        blocks: per block, its trainable variables (in selection order).
    """
    # One scalar per block, sliced once, not once per variable and slot: the tiny preset's
    # traced step on TensorFlow 8,476 -> 7,829 graph operations (nemot's fused Adam).
    keep = ops.unstack(global_sum(ops.cast(selected, "float32")) > 0, num=len(blocks))
    guarded = _guarded(model, blocks)
    if backend.name() == "jax":
        return _masked_jax_step(model, train_step, args, keep, guarded)
    before = [ops.copy(variable.value) for _, variable in guarded]
    logs = train_step(*args)
    context = backend.replica_context()
    if context is None:
        for (block, variable), old in zip(guarded, before):
            variable.assign(ops.where(keep[block], variable.value, old))
        return logs

    def restore(strategy, keeps, before):
        def assign(var, old, keep_block):
            return var.assign(ops.where(keep_block, var, old))

        for (block, variable), old in zip(guarded, before):
            strategy.extended.update(variable.value, assign, args=(old, keeps[block]),
                                     group=False)

    # Per block, so that each is a per-replica value of its own in the merge.
    context.merge_call(restore, args=(keep, before))
    return logs


def _masked_jax_step(model, train_step, args, keep, guarded):
    state, data = args
    logs, new_state = train_step(state, data)
    trainable, non_trainable, optimizer_values, *rest = new_state
    old_trainable, _, old_optimizer, *_ = state
    position = {id(v): ("trainable", i) for i, v in enumerate(model.trainable_variables)}
    position.update({id(v): ("optimizer", i) for i, v in enumerate(model.optimizer.variables)})
    trainable, optimizer_values = list(trainable), list(optimizer_values)
    for block, variable in guarded:
        where, i = position[id(variable)]
        new, old = (trainable, old_trainable) if where == "trainable" \
            else (optimizer_values, old_optimizer)
        new[i] = ops.where(keep[block], new[i], old[i])
    return logs, (trainable, non_trainable, optimizer_values, *rest)
