"""Multi-head scaled dot-product attention (thesis eqs. 3.2-3.3) with a key/value cache."""

import math

import keras
from keras import ops

from nemot import backend
from nemot.dropout import dropout
from nemot.modulation.base import call_dense, dense_or_modulated


@keras.saving.register_keras_serializable(package="nemot")
class MultiHeadAttention(keras.layers.Layer):
    """Self-attention with separate W_Q, W_K, W_V, W_O and an optional KV cache.

    The weight layout is that of ``keras.layers.MultiHeadAttention`` (and so of
    KerasHub's GPT-2), which keeps checkpoint conversion one-to-one. It is
    written here rather than reused because NeMoT needs two things the Keras
    and KerasHub layers do not offer: no dropout on attention probabilities by
    default (as the original code), and the original code's bug of projecting
    values with the key weights (``values_use_key_weights``, docs/spec.md section 9),
    in which case no W_V exists.

    Two implementations of the same function (equal to 1e-5 in float32, tested):

    - **fused** (``fused=True``; by default where the device has a fused kernel,
      :func:`nemot.backend.has_fused_attention`): ``keras.ops.dot_product_attention``,
      which on JAX with a GPU runs cuDNN's flash attention (no [B, H, L, L] scores in
      memory). cuDNN needs lengths that are multiples of 64, so queries and keys are
      padded up to one (:func:`nemot.backend.attention_length_multiple`: 771 -> 832 in
      the NM set) with the padded keys masked and the padded rows dropped. It has no
      dropout on probabilities: a training call with ``dropout > 0`` (the vanilla set's
      GPT-2 0.1) runs the unfused path.
    - **unfused**: scores in float32, masked, softmax, dropout, values.

    Masked scores are filled with a large finite negative number, so a row with no
    allowed column gives a uniform distribution, not NaN (the fused path's padding
    adds its padded keys to such a row's average: rows that only an all-padding text
    has).

    Args:
        num_heads: attention heads.
        key_dim: size of each head.
        dropout: dropout on attention probabilities.
        values_use_key_weights: compat switch, values = keys (no W_V).
        fused: True/False: the fused/unfused implementation (see above); None: fused
            where the device has a fused kernel.
        kernel_regularizer: optional regulariser of every kernel.
        dense_replacements: ``{"query"|"key"|"value": factory}``, dense-site
            modulations replacing those projections (:mod:`nemot.modulation.base`).

    Example:
        >>> mha = MultiHeadAttention(num_heads=2, key_dim=4)
        >>> y, _ = mha(ops.ones((1, 5, 8)), attention_mask=ops.ones((1, 5, 5), "bool"))
    """

    def __init__(self, num_heads, key_dim, dropout=0.0, values_use_key_weights=False,
                 kernel_regularizer=None, dense_replacements=None, fused=None, **kwargs):
        super().__init__(**kwargs)
        self.dense_replacements = dict(dense_replacements or {})
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.dropout = dropout
        self.values_use_key_weights = values_use_key_weights
        self.fused = fused
        # Lengths of the fused path are padded to a multiple of this (None: the device's).
        self.length_multiple = None
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

    def call(self, x, attention_mask, cache=None, cache_update_index=None, training=None,
             conditioning=None, dropout_seed=None):
        """Returns ``(output, new_cache)``.

        Args:
            x: [batch, q, d_model].
            attention_mask: bool [batch, q, k], k = q without a cache, else the
                cache length.
            cache: optional [batch, 2, max_length, heads, key_dim] keys and values.
            cache_update_index: where ``x``'s keys and values go in the cache.
            conditioning: read by modulated projections only.
            dropout_seed: seed [2] of the probability dropout (training with
                ``dropout > 0``; :mod:`nemot.dropout`).
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
        drop = bool(training) and self.dropout > 0
        if drop and dropout_seed is None:
            raise ValueError(f"{self.name}: training with dropout={self.dropout} needs "
                             "dropout_seed= (nemot.dropout.draw_seed)")
        fused = backend.has_fused_attention() if self.fused is None else self.fused
        if fused and not drop:
            context = self._fused_attention(query, key, value, attention_mask)
        else:
            context = self._attention(query, key, value, attention_mask,
                                      dropout_seed if drop else None)
        return self.output_dense(context), cache

    def _attention(self, query, key, value, attention_mask, dropout_seed):
        scores = ops.einsum("bqhd,bkhd->bhqk", query, key)
        scores = ops.cast(scores, "float32") / math.sqrt(self.key_dim)
        scores = ops.where(ops.expand_dims(attention_mask, 1), scores, -1e9)
        probs = ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)
        probs = dropout(probs, self.dropout, dropout_seed)
        return ops.einsum("bhqk,bkhd->bqhd", probs, value)

    def _fused_attention(self, query, key, value, attention_mask):
        multiple = self.length_multiple or backend.attention_length_multiple()
        q_length, k_length = query.shape[1], key.shape[1]
        pad_q = pad_k = 0
        # One decoded query at a time runs no flash kernel: nothing to pad for.
        if multiple > 1 and q_length is not None and k_length is not None and q_length > 1:
            pad_q, pad_k = -q_length % multiple, -k_length % multiple
        if pad_q or pad_k:
            def pad(t, length):
                return ops.pad(t, [[0, 0], [0, length], [0, 0], [0, 0]])

            query, key, value = pad(query, pad_q), pad(key, pad_k), pad(value, pad_k)
            attention_mask = ops.pad(attention_mask, [[0, 0], [0, pad_q], [0, pad_k]],
                                     constant_values=False)
        context = ops.dot_product_attention(query, key, value,
                                            mask=ops.expand_dims(attention_mask, 1),
                                            scale=1.0 / math.sqrt(self.key_dim))
        return context[:, :q_length] if pad_q else context

    def compute_output_spec(self, x, attention_mask, cache=None, cache_update_index=None,
                            training=None, conditioning=None, dropout_seed=None):
        return keras.KerasTensor(x.shape, dtype=self.compute_dtype), cache

    def get_config(self):
        config = super().get_config()
        config.update(
            num_heads=self.num_heads, key_dim=self.key_dim, dropout=self.dropout,
            values_use_key_weights=self.values_use_key_weights, fused=self.fused,
            kernel_regularizer=keras.regularizers.serialize(self.kernel_regularizer),
        )
        return config
