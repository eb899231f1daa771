"""Multi-head scaled dot-product attention (thesis eqs. 3.2-3.3) with a key/value cache."""

import math

import keras
from keras import ops

from nemot.modulation.base import call_dense, dense_or_modulated


@keras.saving.register_keras_serializable(package="nemot")
class MultiHeadAttention(keras.layers.Layer):
    """Self-attention with separate W_Q, W_K, W_V, W_O and an optional KV cache.

    The weight layout is that of ``keras.layers.MultiHeadAttention`` (and so of
    KerasHub's GPT-2), which keeps checkpoint conversion one-to-one. It is
    written here rather than reused because NeMoT needs two things the Keras
    and KerasHub layers do not offer: no dropout on attention probabilities by
    default (as the original code), and the original code's bug of projecting
    values with the key weights (``values_use_key_weights``, SPEC.md section 9),
    in which case no W_V exists.

    Masked scores are filled with a large finite negative number in float32,
    so a row with no allowed column gives a uniform distribution, not NaN.

    Args:
        num_heads: attention heads.
        key_dim: size of each head.
        dropout: dropout on attention probabilities.
        values_use_key_weights: compat switch, values = keys (no W_V).
        kernel_regularizer: optional regulariser of every kernel.
        dense_replacements: ``{"query"|"key"|"value": factory}``, dense-site
            modulations replacing those projections (:mod:`nemot.modulation.base`).

    Example:
        >>> mha = MultiHeadAttention(num_heads=2, key_dim=4)
        >>> y, _ = mha(ops.ones((1, 5, 8)), attention_mask=ops.ones((1, 5, 5), "bool"))
    """

    def __init__(self, num_heads, key_dim, dropout=0.0, values_use_key_weights=False,
                 kernel_regularizer=None, dense_replacements=None, **kwargs):
        super().__init__(**kwargs)
        self.dense_replacements = dict(dense_replacements or {})
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.dropout = dropout
        self.values_use_key_weights = values_use_key_weights
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)

    def _projection(self, name, equation, output_shape, bias_axes, input_shape):
        return dense_or_modulated(name, equation, output_shape, bias_axes, input_shape,
                                  self.dense_replacements,
                                  kernel_regularizer=self.kernel_regularizer,
                                  dtype=self.dtype_policy)

    def build(self, input_shape):
        d_model = input_shape[-1]
        heads = (None, self.num_heads, self.key_dim)
        self.query_dense = self._projection("query", "abc,cde->abde", heads, "de", input_shape)
        self.key_dense = self._projection("key", "abc,cde->abde", heads, "de", input_shape)
        if not self.values_use_key_weights:
            self.value_dense = self._projection("value", "abc,cde->abde", heads, "de",
                                                input_shape)
        self.output_dense = self._projection("attention_output", "abcd,cde->abe",
                                             (None, d_model), "e",
                                             (None, None, self.num_heads, self.key_dim))
        self.dropout_layer = keras.layers.Dropout(self.dropout)

    def call(self, x, attention_mask, cache=None, cache_update_index=None, training=None,
             conditioning=None):
        """Returns ``(output, new_cache)``.

        Args:
            x: [batch, q, d_model].
            attention_mask: bool [batch, q, k], k = q without a cache, else the
                cache length.
            cache: optional [batch, 2, max_length, heads, key_dim] keys and values.
            cache_update_index: where ``x``'s keys and values go in the cache.
            conditioning: read by modulated projections only.
        """
        query = call_dense(self.query_dense, x, conditioning)
        key = call_dense(self.key_dense, x, conditioning)
        value = key if self.values_use_key_weights else call_dense(self.value_dense, x,
                                                                    conditioning)
        if cache is not None:
            start = [0, cache_update_index, 0, 0]
            key = ops.slice_update(cache[:, 0], start, ops.cast(key, cache.dtype))
            value = ops.slice_update(cache[:, 1], start, ops.cast(value, cache.dtype))
            cache = ops.stack([key, value], axis=1)
        scores = ops.einsum("bqhd,bkhd->bhqk", query, key)
        scores = ops.cast(scores, "float32") / math.sqrt(self.key_dim)
        scores = ops.where(ops.expand_dims(attention_mask, 1), scores, -1e9)
        probs = ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)
        probs = self.dropout_layer(probs, training=training)
        context = ops.einsum("bhqk,bkhd->bqhd", probs, value)
        return self.output_dense(context), cache

    def compute_output_spec(self, x, attention_mask, cache=None, cache_update_index=None,
                            training=None, conditioning=None):
        return keras.KerasTensor(x.shape, dtype=self.compute_dtype), cache

    def get_config(self):
        config = super().get_config()
        config.update(
            num_heads=self.num_heads, key_dim=self.key_dim, dropout=self.dropout,
            values_use_key_weights=self.values_use_key_weights,
            kernel_regularizer=keras.regularizers.serialize(self.kernel_regularizer),
        )
        return config
