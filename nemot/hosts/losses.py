"""The loss of per-task heads side by side on one encoder (the PALs report's heads, s.4.2):
the PALs recipe's BERT and the comparison's encoder are trained with it."""

import keras
from keras import ops

HEAD_KINDS = ("classes", "binary", "regression")


@keras.saving.register_keras_serializable(package="nemot")
class TaskHeadsLoss(keras.losses.Loss):
    """Each example's own task loss, for a model whose task heads sit side by side in its
    output (the PALs report, s.5.3): cross-entropy on a ``classes`` head, BCE with logits on a
    ``binary`` head (one logit), squared error on a ``regression`` head (one value).

    ``y_true`` [B, 2] is (task index, label); ``y_pred`` [B, sum of units] the heads in
    task order. A batch may mix tasks.

    Args:
        heads: ``(kind, units)`` of each task's head, in task-index order.

    Example:
        >>> loss = TaskHeadsLoss([("classes", 5), ("regression", 1)])
        >>> loss([[0, 3], [1, 2.5]], [[0, 0, 0, 20, 0, 0], [0, 0, 0, 0, 0, 2.5]])  # ~0
    """

    def __init__(self, heads, name="task_heads_loss", **kwargs):
        super().__init__(name=name, **kwargs)
        self.heads = tuple((str(kind), int(units)) for kind, units in heads)
        bad = [h for h in self.heads if h[0] not in HEAD_KINDS
               or (h[0] != "classes" and h[1] != 1)]
        if not self.heads or bad:
            raise ValueError(f"heads {list(bad or self.heads)}: expected (kind, units) with "
                             f"kind in {HEAD_KINDS} (units 1 unless 'classes')")

    def call(self, y_true, y_pred):
        y_true, y_pred = ops.cast(y_true, "float32"), ops.cast(y_pred, "float32")
        task, label = ops.cast(y_true[:, 0], "int32"), y_true[:, 1]
        loss, start = ops.zeros_like(label), 0
        for i, (kind, units) in enumerate(self.heads):
            out = y_pred[:, start:start + units]
            start += units
            mine = ops.equal(task, i)
            # Other tasks' labels may be out of this head's range: neutralise them, so
            # that no NaN reaches the gradient through the unselected branch.
            own = ops.where(mine, label, 0.0)
            if kind == "classes":
                term = keras.losses.sparse_categorical_crossentropy(
                    ops.cast(own, "int32"), out, from_logits=True)
            elif kind == "binary":
                term = keras.losses.binary_crossentropy(own[:, None], out, from_logits=True)
            else:
                term = ops.square(out[:, 0] - own)
            loss = ops.where(mine, term, loss)
        return loss

    def get_config(self):
        return {**super().get_config(), "heads": [list(h) for h in self.heads]}
