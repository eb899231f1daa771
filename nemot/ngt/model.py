"""The Neuromodulation Gated Transformer (NGT): BERT with a gating block after layer k.

Paper: "Neuromodulation Gated Transformer" (ICLR 2023 Tiny Paper). A block of ``n``
BERT-shaped layers reads the output ``h`` of BERT layer ``k`` (counted from 1) and gives
``g``; layer ``k + 1`` then receives

- ``sigmoid(g) * h`` (``neuromodulated-gating``, the NGT),
- ``g`` (``non-neuromodulated-gating``: ``n`` extra layers in series), or
- ``h`` (``no-gating-block``: plain BERT).

The head is one Dense on the raw ``[CLS]`` hidden state of the last layer
(no pooler, no dropout): 1 sigmoid unit, or ``num_classes`` softmax units (CB).
"""

import keras
import keras_hub

from nemot.modulation.gating_block import GatingBlock, store_config

VARIANTS = ("neuromodulated-gating", "non-neuromodulated-gating", "no-gating-block")

# bert-large-cased (the paper's backbone); KerasHub calls this preset "bert_large_en".
BERT_LARGE_CASED = dict(
    vocabulary_size=28996,
    num_layers=24,
    num_heads=16,
    hidden_dim=1024,
    intermediate_dim=4096,
    max_sequence_length=512,
)
BERT_LARGE_CASED_PRESET = "bert_large_en"


@keras.saving.register_keras_serializable(package="nemot.ngt")
class NGTModel(keras.Model):
    """BERT (a KerasHub ``BertBackbone``) with the NGT gating block and a [CLS] head.

    The model reuses the backbone's own layers, so a backbone loaded with
    ``BertBackbone.from_preset`` (KerasHub preset or Hugging Face BERT
    directory) brings its pretrained weights; the gating block and the head are
    new. The pooler stays in the model (it counts towards the parameters, as in
    the paper's Table 2) but is not used, so it gets no gradient.

    Inputs: a dict of int32 ``[batch, L]`` tensors ``token_ids``,
    ``segment_ids``, ``padding_mask`` (as ``BertBackbone``). With
    ``num_aux_tokens = a > 0`` the first ``a`` positions of every row are the
    auxiliary tokens: they are embedded like the rest, then seen only by the
    gating block. Output: ``[batch, num_classes]`` probabilities (sigmoid for
    1 unit, softmax otherwise).

    Args:
        backbone: a ``keras_hub.models.BertBackbone``.
        variant: one of ``VARIANTS``.
        gate_position: k, the BERT layer (from 1) whose output is gated
            (paper: 21 "end", 3 "start"). Ignored for ``no-gating-block``.
        num_gating_layers: n, layers in the gating block (paper: 3).
        num_classes: head units: 1 (sigmoid) or e.g. 3 (softmax, CB).
        num_aux_tokens: auxiliary tokens for the gating block (paper: 0).
        gating_dropout: dropout inside the gating block (paper: 0.1).

    Example:
    >>> import numpy as np, keras_hub
    >>> backbone = keras_hub.models.BertBackbone(vocabulary_size=50, num_layers=2,
    ...     num_heads=2, hidden_dim=8, intermediate_dim=16, max_sequence_length=16)
    >>> model = NGTModel(backbone, gate_position=1, num_gating_layers=1)
    >>> x = {"token_ids": np.ones((2, 6), "int32"), "segment_ids": np.zeros((2, 6), "int32"),
    ...      "padding_mask": np.ones((2, 6), "int32")}
    >>> tuple(model(x).shape)
    (2, 1)
    """

    def __init__(
        self,
        backbone,
        variant="neuromodulated-gating",
        gate_position=21,
        num_gating_layers=3,
        num_classes=1,
        num_aux_tokens=0,
        gating_dropout=0.1,
        **kwargs,
    ):
        if variant not in VARIANTS:
            raise ValueError(f"variant={variant!r}: expected one of {', '.join(VARIANTS)}")
        gated = variant != "no-gating-block"
        if gated and not 1 <= gate_position < backbone.num_layers:
            # After the last layer there is no layer k+1 to receive the gated state.
            raise ValueError(
                f"gate_position={gate_position}: expected 1 <= k < {backbone.num_layers} "
                "(layer k counted from 1; layer k+1 must exist)"
            )
        if num_aux_tokens and not gated:
            raise ValueError("num_aux_tokens > 0 needs a gating block: only the gating block reads them")
        if num_classes < 1:
            raise ValueError(f"num_classes={num_classes}: expected >= 1")

        # === Layers ===
        self.backbone = backbone
        self.gate = None
        if gated:
            self.gate = GatingBlock(
                num_layers=num_gating_layers,
                num_heads=backbone.num_heads,
                intermediate_dim=backbone.intermediate_dim,
                neuromodulated=variant == "neuromodulated-gating",
                num_aux_tokens=num_aux_tokens,
                dropout=gating_dropout,
                dtype=backbone.dtype_policy,
                name="gating_block",
            )
        # The original `cls_dense` set no initializer: Keras' Glorot-uniform.
        self.cls_dense = keras.layers.Dense(
            num_classes,
            activation="sigmoid" if num_classes == 1 else "softmax",
            dtype=backbone.dtype_policy,
            name="cls_dense",
        )

        # === Functional model ===
        inputs = {
            name: keras.Input(shape=(None,), dtype="int32", name=name)
            for name in ("token_ids", "segment_ids", "padding_mask")
        }
        sequence_output = self._encode(inputs, num_aux_tokens, gate_position if gated else None)
        outputs = self.cls_dense(sequence_output[:, 0, :])
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self._sequence_output = sequence_output

        store_config(
            self,
            variant=variant,
            gate_position=gate_position,
            num_gating_layers=num_gating_layers,
            num_classes=num_classes,
            num_aux_tokens=num_aux_tokens,
            gating_dropout=gating_dropout,
        )

    def _encode(self, inputs, num_aux_tokens, gate_position):
        """BertBackbone's forward pass, layer by layer, with the gate after layer k."""
        b = self.backbone
        tokens = b.token_embedding(inputs["token_ids"])
        positions = b.position_embedding(tokens)
        segments = b.segment_embedding(inputs["segment_ids"])
        x = b.embeddings_add((tokens, positions, segments))
        x = b.embeddings_layer_norm(x)
        x = b.embeddings_dropout(x)
        # Auxiliary positions are split off after the embeddings (notes s.1).
        aux, h = x[:, :num_aux_tokens, :], x[:, num_aux_tokens:, :]
        aux_mask = inputs["padding_mask"][:, :num_aux_tokens]
        mask = inputs["padding_mask"][:, num_aux_tokens:]
        for k, layer in enumerate(b.transformer_layers, start=1):
            h = layer(h, padding_mask=mask)
            if k == gate_position:
                if num_aux_tokens:
                    h = self.gate(h, mask, aux, aux_mask)
                else:
                    h = self.gate(h, mask)
        return h

    def sequence_model(self):
        """A ``keras.Model`` on the same inputs and weights giving the last layer's states [batch, L, d]."""
        return keras.Model(self.input, self._sequence_output)

    def get_config(self):
        # No super().get_config(): the functional graph is rebuilt from these values.
        return {
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            **self._config,
            "name": self.name,
            "trainable": self.trainable,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        return cls(**config)


def load_backbone(backbone, load_weights=True):
    """A ``BertBackbone`` from a spec.

    Args:
        backbone: a KerasHub preset name (needs the network), a KerasHub preset
            directory, a Hugging Face BERT checkpoint directory (``config.json``
            + ``model.safetensors``; converted by KerasHub), or a dict of
            ``BertBackbone`` sizes for random weights (e.g. ``BERT_LARGE_CASED``).
        load_weights: False: the preset's architecture with random weights.
    """
    if isinstance(backbone, dict):
        return keras_hub.models.BertBackbone(**backbone)
    if isinstance(backbone, str):
        return keras_hub.models.BertBackbone.from_preset(backbone, load_weights=load_weights)
    raise TypeError(f"backbone is {type(backbone).__name__}: expected a preset name, a directory or a dict of sizes")


def build_ngt(backbone=BERT_LARGE_CASED_PRESET, **kwargs):
    """An :class:`NGTModel` on :func:`load_backbone` ``(backbone)``; ``kwargs`` go to ``NGTModel``.

    Example (no weights, the paper's sizes):
    >>> model = build_ngt(BERT_LARGE_CASED, gate_position=21)     # doctest: +SKIP
    >>> model.count_params()                                      # doctest: +SKIP
    371368961
    """
    return NGTModel(load_backbone(backbone), **kwargs)
