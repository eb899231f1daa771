"""One transformer layer: pre-LN (GPT-2, the vanilla and NM sets) or post-LN (the output set)."""

import keras
from keras import ops

from nemot.layers.attention import MultiHeadAttention

ACTIVATIONS = ("gelu_tanh", "gelu")


@keras.saving.register_keras_serializable(package="nemot")
class TransformerLayer(keras.layers.Layer):
    """Multi-head self-attention and a feed-forward network, each with a residual.

    - ``normalize_first=True`` (pre-LN, GPT-2): ``x + Drop(MHA(LN(x)))`` then
      ``h + Drop(FFN(LN(h)))``.
    - ``normalize_first=False`` (post-LN, the output blocks, thesis eqs. 3.9-3.12):
      ``LN(x + Drop(MHA(x)))`` then ``LN(h + Drop(FFN(h)))``.

    Sub-layer names follow KerasHub's ``TransformerDecoder`` so that GPT-2
    weights map one-to-one.

    Args:
        num_heads: attention heads.
        d_ff: feed-forward width.
        dropout: dropout on the two sub-layer outputs.
        attention_dropout: dropout on attention probabilities.
        layer_norm_epsilon: LayerNorm epsilon.
        normalize_first: pre-LN if True, post-LN if False.
        activation: ``"gelu_tanh"`` (GPT-2) or ``"gelu"`` (exact, erf).
        values_use_key_weights: original-code compat switch (no W_V).
        kernel_regularizer: optional regulariser of every kernel.

    Example:
        >>> layer = TransformerLayer(num_heads=2, d_ff=16)
        >>> y, _ = layer(ops.ones((1, 5, 8)), attention_mask=ops.ones((1, 5, 5), "bool"))
    """

    def __init__(self, num_heads, d_ff, dropout=0.1, attention_dropout=0.0,
                 layer_norm_epsilon=1e-5, normalize_first=True, activation="gelu_tanh",
                 values_use_key_weights=False, kernel_regularizer=None, **kwargs):
        super().__init__(**kwargs)
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation={activation!r}: expected one of {ACTIVATIONS}")
        self.num_heads = num_heads
        self.d_ff = d_ff
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.normalize_first = normalize_first
        self.activation = activation
        self.values_use_key_weights = values_use_key_weights
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)

    def build(self, input_shape):
        d_model = input_shape[-1]
        policy = self.dtype_policy

        def norm(name):
            layer = keras.layers.LayerNormalization(epsilon=self.layer_norm_epsilon,
                                                    name=name, dtype=policy)
            layer.build(input_shape)
            return layer

        def dense(units, name, shape):
            # EinsumDense, not Dense: Dense's tensordot has no XLA gradient inside the
            # ops.cond that routes output blocks ("0 is duplicated" in InvertPermutation).
            # Same kernel [in, out] and bias [out] as Dense.
            layer = keras.layers.EinsumDense("abc,cd->abd", output_shape=(None, units),
                                             bias_axes="d",
                                             kernel_regularizer=self.kernel_regularizer,
                                             name=name, dtype=policy)
            layer.build(shape)
            return layer

        self.self_attention = MultiHeadAttention(
            self.num_heads, d_model // self.num_heads, dropout=self.attention_dropout,
            values_use_key_weights=self.values_use_key_weights,
            kernel_regularizer=self.kernel_regularizer, name="self_attention", dtype=policy,
        )
        self.self_attention.build(input_shape)
        self.self_attention_layer_norm = norm("self_attention_layer_norm")
        self.feedforward_intermediate_dense = dense(
            self.d_ff, "feedforward_intermediate_dense", input_shape)
        self.feedforward_output_dense = dense(
            d_model, "feedforward_output_dense", tuple(input_shape[:-1]) + (self.d_ff,))
        self.feedforward_layer_norm = norm("feedforward_layer_norm")
        self.dropout_layer = keras.layers.Dropout(self.dropout)

    def _feedforward(self, x):
        h = self.feedforward_intermediate_dense(x)
        h = keras.activations.gelu(h, approximate=self.activation == "gelu_tanh")
        return self.feedforward_output_dense(h)

    def call(self, x, attention_mask, cache=None, cache_update_index=None, training=None):
        """Returns ``(output, new_cache)``; see ``MultiHeadAttention.call``."""
        if self.normalize_first:
            h, cache = self.self_attention(self.self_attention_layer_norm(x), attention_mask,
                                           cache=cache, cache_update_index=cache_update_index,
                                           training=training)
            x = x + self.dropout_layer(h, training=training)
            h = self._feedforward(self.feedforward_layer_norm(x))
            return x + self.dropout_layer(h, training=training), cache
        h, cache = self.self_attention(x, attention_mask, cache=cache,
                                       cache_update_index=cache_update_index, training=training)
        x = self.self_attention_layer_norm(x + self.dropout_layer(h, training=training))
        h = self._feedforward(x)
        return self.feedforward_layer_norm(x + self.dropout_layer(h, training=training)), cache

    def compute_output_spec(self, x, attention_mask, cache=None, cache_update_index=None,
                            training=None):
        return keras.KerasTensor(x.shape, dtype=self.compute_dtype), cache

    def get_config(self):
        config = super().get_config()
        config.update(
            num_heads=self.num_heads, d_ff=self.d_ff, dropout=self.dropout,
            attention_dropout=self.attention_dropout,
            layer_norm_epsilon=self.layer_norm_epsilon, normalize_first=self.normalize_first,
            activation=self.activation, values_use_key_weights=self.values_use_key_weights,
            kernel_regularizer=keras.regularizers.serialize(self.kernel_regularizer),
        )
        return config
