"""Adam and AdamW whose TensorFlow update is TensorFlow's fused Adam kernel.

Keras 3 writes Adam's per-variable update as about forty graph operations (casts, powers,
the moment updates, the step), so tracing a train step spends most of its time on the
optimizer: ~5,200 of the ~12,400 operations of the tiny NeMoT's step, for 127 variables.
TensorFlow's ``ResourceApplyAdam`` does the same update in one kernel, as ``tf.keras``'
Adam before TensorFlow 2.11 (OptimizerV2) did. The formula is Keras' (``epsilon``
outside the square root, bias correction through the step size); the moments are Keras'
own slot variables, so checkpoints, ``from_config``, gradient clipping, loss scaling and
the block update guard (:mod:`nemot.models.routing`) see no difference. Other backends,
and AMSGrad, run Keras' update unchanged.

One difference, on purpose: an embedding's gradient comes as rows, one per occurrence
of a token. Here they are summed into the gradient first, so the second moment squares
the sum: Adam (Kingma & Ba) on the whole gradient, as OptimizerV2 made it by
deduplicating the rows. Keras 3's Adam squares each row and then sums, so a token
repeated in a batch gets a smaller second moment and a larger step. Learning can differ
(a positional copy task of the suite is learnt faster by Keras 3's; see
tests/training/test_learning_span.py).
"""

import keras
from keras import ops

from nemot.keras_internals import optimizer_slots, variable_index


def _handle(variable):
    """The resource handle (Keras passes its own variables or, under ``tf.distribute``,
    the TensorFlow variables inside them)."""
    return (variable.value if isinstance(variable, keras.Variable) else variable).handle


class _FusedAdamStep:
    """The fused step for an Adam subclass (the mixin goes first)."""

    # the step's scalars, made by the first variable's update of an ``apply``
    _step_coefficients = None

    def build(self, variables):
        super().build(variables)
        slots = optimizer_slots(self, variables)
        self._slots = [slots.get(id(variable), {}) for variable in variables]

    def apply(self, grads, trainable_variables=None):
        try:
            return super().apply(grads, trainable_variables)
        finally:
            self._step_coefficients = None

    def update_step(self, gradient, variable, learning_rate):
        if not self._fused():
            return super().update_step(gradient, variable, learning_rate)
        self._fused_update(gradient, variable, learning_rate)

    def masked_update_step(self, gradient, variable, learning_rate, keep):
        """The step where the bool scalar ``keep`` is True, and weight and moments left
        as they were elsewhere, in the one kernel (:mod:`nemot.models.routing`'s guard
        of unselected output blocks, which otherwise copies and restores them). False
        where the step is not the fused one: the caller masks."""
        if not self._fused():
            return False
        self._fused_update(gradient, variable, learning_rate, keep)
        return True

    def _fused(self):
        return keras.backend.backend() == "tensorflow" and not self.amsgrad

    def _coefficients(self, learning_rate, dtype):
        """The step's scalars (bias-correction powers, rate, betas, epsilon), made by the
        first variable's update of an ``apply`` and reused by the others."""
        cached = self._step_coefficients
        if cached is not None and cached[0] is learning_rate and cached[1] == dtype:
            return cached[2]
        step = ops.cast(self.iterations + 1, dtype)
        beta_1, beta_2 = ops.cast(self.beta_1, dtype), ops.cast(self.beta_2, dtype)
        values = dict(beta1_power=ops.power(beta_1, step), beta2_power=ops.power(beta_2, step),
                      lr=ops.cast(learning_rate, dtype), beta1=beta_1, beta2=beta_2,
                      epsilon=ops.cast(self.epsilon, dtype))
        self._step_coefficients = (learning_rate, dtype, values)
        return values

    def _fused_update(self, gradient, variable, learning_rate, keep=None):
        import tensorflow as tf

        slots = self._slots[variable_index(self, variable)]
        coefficients = self._coefficients(learning_rate, variable.dtype)
        if keep is not None:
            # Rate 0 and betas 1 leave the weight and both moments exactly as they were:
            # m + (g - m) * 0 = m, v likewise, w - 0 * m / (sqrt(v) + eps) = w.
            coefficients = dict(coefficients, **{
                name: ops.where(keep, coefficients[name], value)
                for name, value in (("lr", 0.0), ("beta1", 1.0), ("beta2", 1.0))})
        tf.raw_ops.ResourceApplyAdam(
            var=_handle(variable), m=_handle(slots["momentum"]), v=_handle(slots["velocity"]),
            # sparse rows (an embedding's) summed into a dense gradient, as OptimizerV2 did
            grad=tf.convert_to_tensor(ops.cast(gradient, variable.dtype)),
            **coefficients)


@keras.saving.register_keras_serializable(package="nemot")
class Adam(_FusedAdamStep, keras.optimizers.Adam):
    """``keras.optimizers.Adam`` (same arguments); one fused kernel per variable on TF."""


@keras.saving.register_keras_serializable(package="nemot")
class AdamW(_FusedAdamStep, keras.optimizers.AdamW):
    """``keras.optimizers.AdamW`` (decoupled weight decay, applied by Keras before the
    step); the Adam step as :class:`Adam`'s."""
