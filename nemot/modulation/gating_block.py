"""NGT's gating block (Neuromodulation Gated Transformer): a few BERT-shaped layers that
read a layer's output and gate it, ``sigmoid(g) * h`` (paper eq. 1), hosted between two
layers of a stack (``nemot.ngt.NGTModel`` puts it after BERT layer k)."""

import keras
import keras_hub
from keras import ops


def bert_initializer():
    """HF TF ``get_initializer(0.02)``: a truncated normal, standard deviation 0.02."""
    return keras.initializers.TruncatedNormal(stddev=0.02)


def store_config(layer, **config):
    """Keep the constructor arguments as attributes and as ``layer._config`` (for get_config)."""
    layer._config = config
    for name, value in config.items():
        setattr(layer, name, value)


@keras.saving.register_keras_serializable(package="nemot.ngt")
class GatingBlock(keras.layers.Layer):
    """The gating block: ``num_layers`` post-LN BERT layers and the gate (paper eq. 1).

    Args:
        num_layers: n, BERT-shaped layers in the block (paper: 3).
        num_heads: attention heads of each layer.
        intermediate_dim: feed-forward width of each layer.
        neuromodulated: True: return ``sigmoid(g) * h``; False: return ``g``.
        num_aux_tokens: auxiliary token positions prepended to the block's
            input (context for the gate only; dropped from its output).
        dropout: dropout on attention probabilities and sub-layer outputs.
        activation: feed-forward activation (HF BERT's ``hidden_act="gelu"``
            is the exact erf GELU).

    Example:
    >>> import numpy as np
    >>> block = GatingBlock(num_layers=1, num_heads=2, intermediate_dim=16)
    >>> h = np.ones((2, 5, 8), "float32")
    >>> tuple(block(h, padding_mask=np.ones((2, 5), "int32")).shape)
    (2, 5, 8)
    """

    def __init__(
        self,
        num_layers,
        num_heads,
        intermediate_dim,
        neuromodulated=True,
        num_aux_tokens=0,
        dropout=0.1,
        activation="gelu",
        **kwargs,
    ):
        super().__init__(**kwargs)
        store_config(
            self,
            num_layers=num_layers,
            num_heads=num_heads,
            intermediate_dim=intermediate_dim,
            neuromodulated=neuromodulated,
            num_aux_tokens=num_aux_tokens,
            dropout=dropout,
            activation=activation,
        )
        self.gating_layers = [
            keras_hub.layers.TransformerEncoder(
                num_heads=num_heads,
                intermediate_dim=intermediate_dim,
                activation=activation,
                dropout=dropout,
                layer_norm_epsilon=1e-12,
                kernel_initializer=bert_initializer(),
                dtype=self.dtype_policy,
                name=f"gating_block_layer_{i}",
            )
            for i in range(num_layers)
        ]

    def build(self, h_shape, padding_mask_shape=None, aux_shape=None, aux_mask_shape=None,
              attention_mask_shape=None):
        for layer in self.gating_layers:
            layer.build(h_shape)
        self.built = True

    def call(self, h, padding_mask, aux=None, aux_mask=None, attention_mask=None,
             training=None):
        """``h``: [batch, L, d] output of layer k; ``aux``: [batch, a, d] auxiliary embeddings.

        ``attention_mask``: optional bool [batch, L, L] over ``h`` (True = may attend), e.g.
        causal in a decoder; every position still sees the auxiliary tokens, which see
        each other only. None: bidirectional (BERT, the paper)."""
        g, mask = h, padding_mask
        if self.num_aux_tokens:
            g = ops.concatenate([aux, h], axis=1)
            mask = ops.concatenate([aux_mask, padding_mask], axis=1)
            if attention_mask is not None:
                attention_mask = _with_aux(attention_mask, self.num_aux_tokens)
        for layer in self.gating_layers:
            g = layer(g, padding_mask=mask, attention_mask=attention_mask, training=training)
        g = g[:, self.num_aux_tokens :, :]
        if self.neuromodulated:
            return ops.sigmoid(g) * h
        return g

    def compute_output_shape(self, h_shape, *args, **kwargs):
        return h_shape

    def get_config(self):
        return {**super().get_config(), **self._config}


def _with_aux(attention_mask, num_aux):
    """[B, L, L] -> [B, a + L, a + L]: the auxiliary rows see the auxiliary columns, the
    other rows see them too and keep their own mask (NeMoT's ``<dec>`` rule)."""
    batch, length = ops.shape(attention_mask)[0], ops.shape(attention_mask)[1]
    aux_rows = ops.concatenate([ops.ones((batch, num_aux, num_aux), "bool"),
                                ops.zeros((batch, num_aux, length), "bool")], axis=2)
    text_rows = ops.concatenate([ops.ones((batch, length, num_aux), "bool"),
                                 ops.cast(attention_mask, "bool")], axis=2)
    return ops.concatenate([aux_rows, text_rows], axis=1)
