"""NGT's gating block (Neuromodulation Gated Transformer): a few BERT-shaped layers that
read a layer's output and gate it, ``sigmoid(g) * h`` (paper eq. 1): kind
``"gating_block"``, an ``output``-site modulation (``nemot.ngt.NGTModel`` hosts it after
BERT layer k).

Example (TOML; a BERT host's stack is ``"bert"``)::

    [[model.modulation]]
    kind = "gating_block"
    sets = ["bert"]
    layers = [20]
    num_layers = 3
    num_heads = 16
    intermediate_dim = 4096
"""

import keras
import keras_hub
from keras import ops

from nemot.modulation.base import Modulation, require

# The auxiliary tokens a host may give (NGT: embedded, then read by the gating block only).
AUX_KEYS = ("aux_tokens", "aux_mask")


def bert_initializer():
    """HF TF ``get_initializer(0.02)``: a truncated normal, standard deviation 0.02."""
    return keras.initializers.TruncatedNormal(stddev=0.02)


def store_config(layer, **config):
    """Keep the constructor arguments as attributes and as ``layer._config`` (for get_config)."""
    layer._config = config
    for name, value in config.items():
        setattr(layer, name, value)


@keras.saving.register_keras_serializable(package="nemot.ngt")
class GatingBlock(Modulation):
    """The gating block: ``num_layers`` post-LN BERT layers and the gate (paper eq. 1).

    Args:
        num_layers: n, BERT-shaped layers in the block (paper: 3).
        num_heads: attention heads of each layer.
        intermediate_dim: feed-forward width of each layer.
        neuromodulated: True: return ``sigmoid(g) * h``; False: return ``g``.
        num_aux_tokens: auxiliary token positions prepended to the block's input
            (context for the gate only; dropped from its output): the host's
            ``conditioning["aux_tokens"]`` [B, a, d] and ``["aux_mask"]`` bool [B, 1, a].
        dropout: dropout on attention probabilities and sub-layer outputs.
        activation: feed-forward activation (HF BERT's ``hidden_act="gelu"``
            is the exact erf GELU).

    Example:
    >>> import numpy as np
    >>> block = GatingBlock(num_layers=1, num_heads=2, intermediate_dim=16)
    >>> h = np.ones((2, 5, 8), "float32")
    >>> tuple(block(h, attention_mask=np.ones((2, 1, 5), bool)).shape)
    (2, 5, 8)
    """

    site = "output"
    supports_cache = False  # the block attends over the whole sequence

    def __init__(self, num_layers=3, num_heads=16, intermediate_dim=4096, neuromodulated=True,
                 num_aux_tokens=0, dropout=0.1, activation="gelu", **kwargs):
        super().__init__(**kwargs)
        store_config(self, num_layers=num_layers, num_heads=num_heads,
                     intermediate_dim=intermediate_dim, neuromodulated=neuromodulated,
                     num_aux_tokens=num_aux_tokens, dropout=dropout, activation=activation)
        self.gating_layers = [
            keras_hub.layers.TransformerEncoder(
                num_heads=num_heads, intermediate_dim=intermediate_dim, activation=activation,
                dropout=dropout, layer_norm_epsilon=1e-12,
                kernel_initializer=bert_initializer(), dtype=self.dtype_policy,
                name=f"gating_block_layer_{i}")
            for i in range(num_layers)]

    @classmethod
    def needs(cls, options):
        return AUX_KEYS if options.get("num_aux_tokens") else ()

    def build(self, h_shape):
        for layer in self.gating_layers:
            layer.build(h_shape)
        self.built = True

    def call(self, h, conditioning=None, attention_mask=None, training=None):
        """``h``: [B, L, d] output of the hosting layer; ``attention_mask``: bool, True = may
        attend: a key mask [B, 1, L] (bidirectional, BERT and the paper: the auxiliary
        positions see the text too), or [B, L, L] (e.g. causal in a decoder: every position
        still sees the auxiliary tokens, which see each other only)."""
        g, mask = h, attention_mask
        if self.num_aux_tokens:
            who = f"GatingBlock {self.name!r}"
            aux = require(conditioning, "aux_tokens", who)
            g = ops.concatenate([ops.cast(aux, h.dtype), h], axis=1)
            if mask is None:
                mask = ops.ones((ops.shape(h)[0], 1, ops.shape(h)[1]), "bool")
            mask = _with_aux(mask, require(conditioning, "aux_mask", who))
        for layer in self.gating_layers:
            g = layer(g, attention_mask=mask, training=training)
        g = g[:, self.num_aux_tokens:, :]
        if self.neuromodulated:
            return ops.sigmoid(g) * h
        return g

    def compute_output_spec(self, h, conditioning=None, attention_mask=None, training=None):
        return keras.KerasTensor(h.shape, dtype=self.compute_dtype)

    def get_config(self):
        return {**super().get_config(), **self._config}


def _with_aux(attention_mask, aux_mask):
    """The mask over ``[aux; h]`` from the mask over ``h`` and the auxiliary key mask
    ``aux_mask`` [B, 1, a]: a key mask [B, 1, L] gains the auxiliary keys; a full mask
    [B, L, L] becomes [B, a + L, a + L], whose auxiliary rows see the auxiliary columns
    only and whose other rows see them too and keep their own mask (NeMoT's ``<dec>``
    rule)."""
    aux_mask = ops.cast(aux_mask, "bool")
    if attention_mask.shape[1] == 1:
        return ops.concatenate([aux_mask, ops.cast(attention_mask, "bool")], axis=-1)
    batch, length = ops.shape(attention_mask)[0], ops.shape(attention_mask)[1]
    num_aux = aux_mask.shape[-1]
    aux_rows = ops.concatenate([ops.broadcast_to(aux_mask, (batch, num_aux, num_aux)),
                                ops.zeros((batch, num_aux, length), "bool")], axis=2)
    text_rows = ops.concatenate([ops.broadcast_to(aux_mask, (batch, length, num_aux)),
                                 ops.cast(attention_mask, "bool")], axis=2)
    return ops.concatenate([aux_rows, text_rows], axis=1)
