"""The combined NeMoT loss, thesis eqs. 3.16/3.17 (docs/spec.md section 3).

``L = w1 * L1(logits) + w2 * L2(logits) + w3 * L3(vanilla_logits)`` with
w = (1, 0.2, 0.5) by default:

- L1, the task loss, on ``task_targets`` (answer tokens and ``</s>`` from the
  ``<sep>`` position, or the single ``(k)`` of label-mode multiple choice);
- L2, language modelling, on ``lm_targets`` (next token over the example's
  own input);
- L3, the vanilla-set loss, on ``task_targets`` through the vanilla head.

Each term is the summed cross-entropy over its target positions divided by
its own count of target tokens over the **global** batch: under a
``tf.distribute`` strategy the counts are all-reduced, so the loss and the
(summed) gradients equal single-device training on the same global batch (on
JAX, ``keras.distribution`` computes the loss on the global batch already).
Targets equal to ``nemot.vocab.IGNORE_ID`` do not count. Under gradient accumulation
each micro-batch divides by k-th of the whole batch's counts, which it carries
(:mod:`nemot.training.accumulation`).

The loss lives with the task models (as KerasHub keeps a task's default loss with
the task): ``model.compile(optimizer)`` uses the task's ``default_loss``.
"""

import keras
from keras import ops

from nemot import backend, vocab
from nemot.backend import global_sum, replica_context


# ``y``'s key of the vanilla-set term's targets where the vanilla logits were computed at
# the task targets' positions only: those targets, in the logits' order.
VANILLA_TARGETS = "vanilla_targets"


def share_key(targets):
    """``y``'s key, under gradient accumulation, of each example's share of the whole
    batch's count of ``targets`` (``task_targets_share``; nemot.training.accumulation)."""
    return f"{targets}_share"


def lean_cross_entropy(targets, logits):
    """Cross-entropy [batch, n] (float32) of valid int ``targets``: ``logsumexp`` of the
    float32 view of the logits minus the target's logit.

    Under XLA the cast fuses into the reduction, so no float32 [batch, n, vocab] copy
    exists, and the backward pass is one fused ``softmax - onehot`` in the logits'
    dtype; Keras's ``sparse_categorical_crossentropy`` on JAX keeps a float32
    log-softmax and a one-hot of that size (the lean one measured 2.2x faster on JAX's
    CPU, ``bench/results/speed_jax.json``).
    """
    picked = ops.take_along_axis(logits, targets[..., None], axis=-1)[..., 0]
    return ops.logsumexp(ops.cast(logits, "float32"), axis=-1) - ops.cast(picked, "float32")


def softmax_once_cross_entropies(targets_list, logits):
    """Cross-entropy [batch, n] (float32) of each int targets tensor of ``targets_list``
    against the same ``logits``, on TensorFlow: one softmax for them all and for the
    gradient (``softmax * sum of upstreams - onehots``, a custom gradient).

    TensorFlow's fused sparse softmax cross-entropy kernel computes a softmax per call
    and autodiff keeps a [batch, n, vocab] gradient per term: the task and language-
    modelling terms read the same logits, so that was two softmaxes and two such
    gradients per step (``python -m bench speed`` measures the two side by side).
    """
    import tensorflow as tf

    z = tf.cast(logits, tf.float32)
    shape = tf.shape(z)
    flat = tf.reshape(z, [-1, shape[-1]])
    rows = tf.range(tf.shape(flat)[0])
    picks = [tf.stack([rows, tf.reshape(tf.cast(t, tf.int32), [-1])], axis=1)
             for t in targets_list]

    @tf.custom_gradient
    def cross_entropy(flat):
        top = tf.reduce_max(flat, axis=-1, keepdims=True)
        exp = tf.exp(flat - top)
        total = tf.reduce_sum(exp, axis=-1, keepdims=True)
        log_total = tf.math.log(total[:, 0]) + top[:, 0]
        values = tf.stack([log_total - tf.gather_nd(flat, pick) for pick in picks])

        def gradient(upstream):  # [len(targets_list), rows]
            probs = exp * (tf.reduce_sum(upstream, axis=0) / total[:, 0])[:, None]
            # Repeated (row, target) pairs add up, as the one-hots they stand for do.
            return tf.tensor_scatter_nd_add(probs, tf.concat(picks, axis=0),
                                            -tf.reshape(upstream, [-1]))

        return values, gradient

    values = cross_entropy(flat)
    return [tf.reshape(values[k], shape[:-1]) for k in range(len(targets_list))]


def token_cross_entropies(targets_list, logits):
    """Cross-entropy [batch, n] (float32) of each targets tensor against the same logits,
    the same values (to 1e-5) on every backend: :func:`lean_cross_entropy` on JAX (XLA
    fuses each into its reduction), :func:`softmax_once_cross_entropies` on TensorFlow."""
    if backend.name() == "jax":
        return [lean_cross_entropy(targets, logits) for targets in targets_list]
    return softmax_once_cross_entropies(targets_list, logits)


def masked_cross_entropies(targets_list, logits):
    """``[(summed cross-entropy over non-ignored targets, their count)]`` (float32), one
    pair per targets tensor of ``targets_list``, all against ``logits``."""
    targets_list = [ops.cast(targets, "int32") for targets in targets_list]
    valid = [ops.not_equal(targets, vocab.IGNORE_ID) for targets in targets_list]
    ce = token_cross_entropies(
        [ops.where(v, targets, 0) for v, targets in zip(valid, targets_list)], logits)
    valid = [ops.cast(v, "float32") for v in valid]
    return [(ops.sum(c * v), ops.sum(v)) for c, v in zip(ce, valid)]


def masked_cross_entropy(targets, logits):
    """Summed cross-entropy over non-ignored targets and their count (float32)."""
    return masked_cross_entropies([targets], logits)[0]


@keras.saving.register_keras_serializable(package="nemot")
class NeMoTLoss(keras.losses.Loss):
    """Weights of the three terms; a weight of 0 switches its term off.

    The default loss of nemot's causal LMs (``model.compile(optimizer)``); a Keras
    ``Loss``, so a compiled model saves and reloads with it. The task models read its
    terms (:meth:`terms`) in their ``compute_loss``, with one metric per active term.

    Examples:
        >>> NeMoTLoss()                              # general / fine-tuning: 1, 0.2, 0.5
        >>> NeMoTLoss(lm_weight=0, vanilla_weight=0) # pre-training: L1 only
        >>> NeMoTLoss(vanilla_weight=0)              # GPT-2 baseline: L1 + 0.2 L2
    """

    def __init__(self, task_weight=1.0, lm_weight=0.2, vanilla_weight=0.5, name="nemot_loss",
                 **kwargs):
        super().__init__(name=name, **kwargs)
        self.task_weight = float(task_weight)
        self.lm_weight = float(lm_weight)
        self.vanilla_weight = float(vanilla_weight)

    def weights(self):
        """``{"task": w1, "lm": w2, "vanilla": w3}``."""
        return {"task": self.task_weight, "lm": self.lm_weight,
                "vanilla": self.vanilla_weight}

    def __eq__(self, other):
        if not isinstance(other, NeMoTLoss):
            return NotImplemented
        return self.weights() == other.weights()

    def __hash__(self):
        return hash(tuple(self.weights().values()))

    def __repr__(self):
        return (f"NeMoTLoss(task_weight={self.task_weight}, lm_weight={self.lm_weight}, "
                f"vanilla_weight={self.vanilla_weight})")

    def terms(self, y, y_pred):
        """Per-replica contributions ``{term: sum / global count}`` of the active terms."""
        sources = {
            "task": (self.task_weight, "task_targets", "logits"),
            "lm": (self.lm_weight, "lm_targets", "logits"),
            "vanilla": (self.vanilla_weight, "task_targets", "vanilla_logits"),
        }
        active = {term: source for term, source in sources.items() if source[0]}
        for term, (_, target_key, logit_key) in active.items():
            if target_key not in y:
                raise ValueError(f"loss term {term!r} needs targets {target_key!r}; "
                                 f"got {sorted(y)}")
            if logit_key not in y_pred:
                raise ValueError(f"loss term {term!r} needs model output {logit_key!r} "
                                 "(build the model with vanilla_head=True)")
        # The vanilla head's logits at the task targets' positions only come with those
        # targets (NeMoTCausalLM.loss_inputs); the count is the same.
        targets = {term: y[VANILLA_TARGETS] if term == "vanilla" and VANILLA_TARGETS in y
                   else y[source[1]] for term, source in active.items()}
        # The terms that read the same logits share one softmax (task and lm: the main head).
        sums = {}
        for logit_key in dict.fromkeys(source[2] for source in active.values()):
            terms = [term for term, source in active.items() if source[2] == logit_key]
            pairs = masked_cross_entropies([targets[term] for term in terms],
                                           y_pred[logit_key])
            sums.update(zip(terms, pairs))
        result = {}
        for term, (weight, target_key, _) in active.items():
            total, count = sums[term]
            share = share_key(target_key)
            if share in y:
                # Gradient accumulation: the count over the whole batch, k-th of it per
                # micro-batch (nemot.training.accumulation).
                count = ops.sum(ops.cast(y[share], "float32"))
            result[term] = (weight, total / ops.maximum(global_sum(count), 1.0))
        return result

    def __call__(self, y, y_pred, sample_weight=None, tracker=None):
        """The weighted loss of this replica; per-term values go to ``tracker``'s metrics."""
        terms = self.terms(y, y_pred)
        if tracker is not None:
            _track(tracker, {name: value for name, (_, value) in terms.items()})
        return sum(weight * value for weight, value in terms.values())

    def call(self, y_true, y_pred):
        return self(y_true, y_pred)

    def get_config(self):
        return {**super().get_config(), **{f"{term}_weight": weight
                                          for term, weight in self.weights().items()}}


def _track(model, values):
    """Update one ``Mean`` metric per loss term on ``model`` (``task_loss`` ...)."""
    trackers = getattr(model, "_loss_term_trackers", None)
    if trackers is None:
        return
    context = replica_context()
    replicas = 1 if context is None else context.num_replicas_in_sync
    for name, value in values.items():
        # Each replica holds sum/global_count; the metric averages replicas.
        trackers[name].update_state(value * replicas)
