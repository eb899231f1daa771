"""One transformer layer: pre-LN (GPT-2, the vanilla and NM sets) or post-LN (the output
set, BERT), hosting the per-layer modulations of :mod:`nemot.modulation`."""

import keras
from keras import ops

from nemot import dropout as drop
from nemot.layers.attention import MultiHeadAttention
from nemot.modulation.base import DENSE_NAMES, call_dense, dense_or_modulated, parallel_sum

ACTIVATIONS = ("gelu_tanh", "gelu")


@keras.saving.register_keras_serializable(package="nemot")
class TransformerLayer(keras.layers.Layer):
    """Multi-head self-attention and a feed-forward network, each with a residual.

    - ``normalize_first=True`` (pre-LN, GPT-2, thesis eqs. 3.5, 3.7, 3.9):
      ``a = x + Drop(MHA(LN1(x)))``, then
      ``a + Drop(FFN(LN2(a))) + P(LN1(x))``.
    - ``normalize_first=False`` (post-LN, the output blocks, eqs. 3.6, 3.8, 3.10, BERT):
      ``a = LN1(x + Drop(MHA(x)))``, then ``LN2(a + Drop(FFN(a)) + P(x))``.

    ``P`` is the sum of the hosted ``parallel`` modulations (none by default); an
    ``activation`` modulation replaces the FFN's nonlinearity; ``dense`` modulations
    replace named projections; ``output`` modulations transform the layer's output, in
    order (:mod:`nemot.modulation.base`). Without modulations the layer is exactly the
    plain one, with the same weights. The other backbones host the same sites through
    :mod:`nemot.modulation.host`.

    Sub-layer names follow KerasHub's ``TransformerDecoder`` so that GPT-2 weights map
    one-to-one.

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
        modulations: :class:`nemot.modulation.Modulation` instances to host; dense-site
            ones are given as ``{name: factory}`` through ``dense_replacements``.
        dense_replacements: ``{projection name: factory(**dense args)}`` building the
            dense-site modulation that replaces that projection.
        fused_attention: True/False/None (the device decides): the attention path
            (:class:`nemot.layers.attention.MultiHeadAttention`).

    Dropout (:mod:`nemot.dropout`) takes its seed from the hosting stack
    (``dropout_seed=``), which draws it outside any branch; a layer called on its own
    in training draws from its own generator.

    Example:
        >>> layer = TransformerLayer(num_heads=2, d_ff=16)
        >>> y, _ = layer(ops.ones((1, 5, 8)), attention_mask=ops.ones((1, 5, 5), "bool"))
    """

    def __init__(self, num_heads, d_ff, dropout=0.1, attention_dropout=0.0,
                 layer_norm_epsilon=1e-5, normalize_first=True, activation="gelu_tanh",
                 values_use_key_weights=False, kernel_regularizer=None, modulations=(),
                 dense_replacements=None, fused_attention=None, **kwargs):
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
        self.fused_attention = fused_attention
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.dense_replacements = dict(dense_replacements or {})
        unknown = sorted(set(self.dense_replacements) - set(DENSE_NAMES))
        if unknown:
            raise ValueError(f"dense_replacements {unknown}: expected names among {DENSE_NAMES}")
        modulations = list(modulations)
        sites = [m.site for m in modulations]
        bad = [m.name for m in modulations if m.site not in ("parallel", "activation", "output")]
        if bad:
            raise ValueError(f"modulations {bad}: pass dense-site modulations through "
                             "dense_replacements; modulations= takes parallel, activation and "
                             "output ones")
        if sites.count("activation") > 1:
            raise ValueError("at most one activation modulation per layer")
        self.parallel = [m for m in modulations if m.site == "parallel"]
        self.activation_modulation = next(
            (m for m in modulations if m.site == "activation"), None)
        self.output_modulations = [m for m in modulations if m.site == "output"]
        self.seed_generator = drop.seed_generator(
            dropout or attention_dropout or any(m.draws_dropout for m in self.parallel))

    def build(self, input_shape):
        d_model = input_shape[-1]
        policy = self.dtype_policy

        def norm(name):
            layer = keras.layers.LayerNormalization(epsilon=self.layer_norm_epsilon,
                                                    name=name, dtype=policy)
            layer.build(input_shape)
            return layer

        self.self_attention = MultiHeadAttention(
            self.num_heads, d_model // self.num_heads, dropout=self.attention_dropout,
            values_use_key_weights=self.values_use_key_weights,
            kernel_regularizer=self.kernel_regularizer, dense_replacements={
                k: v for k, v in self.dense_replacements.items()
                if k in ("query", "key", "value")}, fused=self.fused_attention,
            name="self_attention", dtype=policy,
        )
        self.self_attention.build(input_shape)
        self.self_attention_layer_norm = norm("self_attention_layer_norm")
        # EinsumDense, not Dense: Dense's tensordot has no XLA gradient inside the
        # ops.cond that routes output blocks ("0 is duplicated" in InvertPermutation).
        # Same kernel [in, out] and bias [out] as Dense.
        common = dict(replacements=self.dense_replacements,
                      kernel_regularizer=self.kernel_regularizer, dtype=policy)
        self.feedforward_intermediate_dense = dense_or_modulated(
            "feedforward_intermediate_dense", "abc,cd->abd", (None, self.d_ff), "d",
            input_shape, **common)
        self.feedforward_output_dense = dense_or_modulated(
            "feedforward_output_dense", "abc,cd->abd", (None, d_model), "d",
            tuple(input_shape[:-1]) + (self.d_ff,), **common)
        self.feedforward_layer_norm = norm("feedforward_layer_norm")
        for modulation in self.parallel:
            modulation.build(input_shape)
        if self.activation_modulation is not None:
            self.activation_modulation.build(tuple(input_shape[:-1]) + (self.d_ff,),
                                             input_shape)
        for modulation in self.output_modulations:
            modulation.build(input_shape)

    def _activation(self, h):
        return keras.activations.gelu(h, approximate=self.activation == "gelu_tanh")

    def _feedforward(self, x, conditioning, training):
        h = call_dense(self.feedforward_intermediate_dense, x, conditioning)
        if self.activation_modulation is None:
            h = self._activation(h)
        else:
            h = self.activation_modulation(h, x, conditioning=conditioning,
                                           activation=self._activation, training=training)
        return call_dense(self.feedforward_output_dense, h, conditioning)

    def call(self, x, attention_mask, cache=None, cache_update_index=None, training=None,
             conditioning=None, dropout_seed=None):
        """Returns ``(output, new_cache)``; see ``MultiHeadAttention.call``.

        ``conditioning``: the dict of :mod:`nemot.modulation.base`, read by the hosted
        modulations only. ``dropout_seed``: this layer's seed from its stack (else, in
        training, the layer's own generator draws one).
        """
        if cache is not None:
            hosted = self.parallel + self.output_modulations + [self.activation_modulation]
            uncached = [m.name for m in hosted if m is not None and not m.supports_cache]
            if uncached:
                raise ValueError(f"{self.name}: modulations {uncached} keep no key/value cache; "
                                 "run this model without one (recompute the whole prefix)")
        if dropout_seed is None:
            dropout_seed = drop.draw_seed(self.seed_generator, training)
        if not training:
            dropout_seed = None

        def dropout(h, salt):
            return drop.dropout(h, self.dropout, drop.salted(dropout_seed, salt))

        attend = dict(cache=cache, cache_update_index=cache_update_index, training=training,
                      conditioning=conditioning, dropout_seed=drop.salted(dropout_seed, 2))
        if self.normalize_first:
            normed = self.self_attention_layer_norm(x)
            h, cache = self.self_attention(normed, attention_mask, **attend)
            a = x + dropout(h, 0)
            out = a + dropout(
                self._feedforward(self.feedforward_layer_norm(a), conditioning, training), 1)
        else:
            normed = x
            h, cache = self.self_attention(x, attention_mask, **attend)
            a = self.self_attention_layer_norm(x + dropout(h, 0))
            out = a + dropout(self._feedforward(a, conditioning, training), 1)
        extra = parallel_sum(self.parallel, normed, conditioning, attention_mask, training,
                             dropout_seed)
        out = out if extra is None else out + extra
        if not self.normalize_first:
            out = self.feedforward_layer_norm(out)
        for modulation in self.output_modulations:
            out = modulation(out, conditioning=conditioning, attention_mask=attention_mask,
                             training=training)
        return out, cache

    def compute_output_spec(self, x, attention_mask, cache=None, cache_update_index=None,
                            training=None, conditioning=None, dropout_seed=None):
        return keras.KerasTensor(x.shape, dtype=self.compute_dtype), cache

    def get_config(self):
        # Modulations are rebuilt by the hosting set from its model config.
        config = super().get_config()
        config.update(
            num_heads=self.num_heads, d_ff=self.d_ff, dropout=self.dropout,
            attention_dropout=self.attention_dropout,
            layer_norm_epsilon=self.layer_norm_epsilon, normalize_first=self.normalize_first,
            activation=self.activation, values_use_key_weights=self.values_use_key_weights,
            fused_attention=self.fused_attention,
            kernel_regularizer=keras.regularizers.serialize(self.kernel_regularizer),
        )
        return config
