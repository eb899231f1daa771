"""The vocabulary heads (thesis eq. 3.14): ``Dense(vocab_size)`` logits, computed by a
kernel whose width may be padded (``NeMoTConfig.vocab_padding``).

An odd width such as 50,313 keeps a GPU's GEMM libraries off the head's matrix products
(XLA runs them as its own fusions, a tenth of the chip's peak, docs/performance.md); a
kernel of 50,368 columns does not. The padded columns are zero and the head returns the
first ``vocab_size`` logits only, so the loss, the metrics, decoding and the samplers see
what an unpadded head gives. Under XLA (JAX; TensorFlow with ``jit_compile``) the head
multiplies by the whole kernel and the slice fuses into the logits' consumers; TensorFlow
outside XLA multiplies by the kernel's first ``vocab_size`` columns instead.
"""

import keras
import numpy as np
from keras import ops

from nemot import backend


@keras.saving.register_keras_serializable(package="nemot")
class VocabularyHead(keras.layers.Dense):
    """``Dense(vocab_size)`` whose kernel and bias have ``padded_size`` columns.

    The padded columns start at zero and, since no logit reads them, get no gradient: they
    stay zero. The real columns are drawn as ``Dense(vocab_size)`` draws them, so a padded
    head starts equal to an unpadded one of the same seed. Weights saved at another padded
    width of the same vocabulary load: columns past ``vocab_size`` are dropped (they must be
    zero) or zero-filled.

    Args:
        vocab_size: logits returned.
        padded_size: columns of the kernel (default ``vocab_size``).
        **kwargs: ``keras.layers.Dense``'s other arguments.

    Example:
        >>> head = VocabularyHead(50313, padded_size=50368)
        >>> head(ops.zeros((2, 5, 768))).shape, head.kernel.shape
        ((2, 5, 50313), (768, 50368))
    """

    def __init__(self, vocab_size, padded_size=None, **kwargs):
        kwargs.pop("units", None)  # get_config's: the width is padded_size
        padded_size = vocab_size if padded_size is None else padded_size
        if padded_size < vocab_size:
            raise ValueError(f"padded_size={padded_size}: expected at least "
                             f"vocab_size={vocab_size}")
        super().__init__(padded_size, **kwargs)
        self.vocab_size = int(vocab_size)

    @property
    def padded_size(self):
        return self.units

    def build(self, input_shape):
        super().build(input_shape)
        if self.padded_size > self.vocab_size:
            real = self.kernel_initializer((input_shape[-1], self.vocab_size), self.kernel.dtype)
            self.kernel.assign(self.fit_columns(real))

    def call(self, inputs, training=None):
        if self.padded_size == self.vocab_size:
            return super().call(inputs, training=training)
        if backend.dynamic_shapes():
            # TensorFlow outside XLA fuses nothing: slicing the logits would copy them, and
            # its gradient pad them, at every step; the kernel's real columns are a slice of
            # far fewer values (and its width no GEMM library there cares about).
            logits = ops.matmul(inputs, self.kernel[:, :self.vocab_size])
            if self.bias is not None:
                logits = ops.add(logits, self.bias[:self.vocab_size])
            return self.activation(logits)
        return super().call(inputs, training=training)[..., :self.vocab_size]

    def quantize(self, mode=None, type_check=True, config=None):
        """Dense's: the kernel, padded columns included, quantizes as a Dense kernel
        (Keras quantizes a subclass of Dense only when it says it can)."""
        super().quantize(mode, type_check=False, config=config)

    def quantized_call(self, inputs, training=None):
        """Dense's quantized product (Keras calls it instead of ``call`` once quantized),
        the first ``vocab_size`` logits."""
        logits = super().quantized_call(inputs, training=training)
        return logits if self.padded_size == self.vocab_size else logits[..., :self.vocab_size]

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], self.vocab_size)

    def fit_columns(self, value, source="weights"):
        """``value`` (a kernel [d, w] or bias [w] of this vocabulary at any padded width
        w >= vocab_size) with ``padded_size`` columns: the first ``vocab_size`` kept,
        zeros after. Columns dropped must be zero (padding); other values mean another
        vocabulary, a ``ValueError`` naming ``source``."""
        value = np.asarray(value)
        width = value.shape[-1]
        if width == self.padded_size:
            return value
        if width < self.vocab_size:
            raise ValueError(f"{source}: {self.name} has {width} columns; this head scores "
                             f"{self.vocab_size} tokens (vocab_size): weights of another "
                             "vocabulary")
        if np.any(value[..., self.vocab_size:]):
            raise ValueError(f"{source}: {self.name} has {width} columns, non-zero past "
                             f"column {self.vocab_size}: not this {self.vocab_size}-token "
                             "vocabulary with zero padding")
        real = value[..., :self.vocab_size]
        pad = [(0, 0)] * (value.ndim - 1) + [(0, self.padded_size - self.vocab_size)]
        return np.pad(real, pad)

    def load_own_variables(self, store):
        """Keras' loading (``load_weights``, ``load_model``, presets), with the columns of
        a checkpoint of another padded width fitted (:meth:`fit_columns`)."""
        fitted = {key: self.fit_columns(store[key], "saved weights") for key in store.keys()}
        super().load_own_variables(fitted)

    def get_config(self):
        config = super().get_config()
        del config["units"]
        return {**config, "vocab_size": self.vocab_size, "padded_size": self.padded_size}


def vocabulary_head(config, name, dtype=None):
    """The :class:`VocabularyHead` of a ``NeMoTConfig``: its vocabulary, padding and L2."""
    regularizer = keras.regularizers.L2(config.kernel_l2) if config.kernel_l2 else None
    return VocabularyHead(config.vocab_size, config.padded_vocab_size,
                          kernel_regularizer=regularizer, name=name, dtype=dtype)
