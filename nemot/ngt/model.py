"""The Neuromodulation Gated Transformer (NGT): BERT with a gating block after layer k.

Paper: "Neuromodulation Gated Transformer" (ICLR 2023 Tiny Paper). A block of ``n``
BERT-shaped layers reads the output ``h`` of BERT layer ``k`` (counted from 1) and gives
``g``; layer ``k + 1`` then receives

- ``sigmoid(g) * h`` (``neuromodulated-gating``, the NGT),
- ``g`` (``non-neuromodulated-gating``: ``n`` extra layers in series), or
- ``h`` (``no-gating-block``: plain BERT).

The block is the ``output``-site modulation ``gating_block``
(:class:`nemot.modulation.gating_block.GatingBlock`) hosted in BERT layer k by
:class:`nemot.hosts.bert.ModulatedBert`. The head is one Dense on the raw ``[CLS]``
hidden state of the last layer (no pooler, no dropout): 1 sigmoid unit, or
``num_classes`` softmax units (CB).
"""

import keras

from nemot.hosts.bert import BERT_LARGE_CASED_PRESET, STACK, ModulatedBert, load_backbone
from nemot.modulation.gating_block import store_config
from nemot.modulation.spec import ModulationSpec

VARIANTS = ("neuromodulated-gating", "non-neuromodulated-gating", "no-gating-block")


def gating_spec(variant, gate_position, num_gating_layers, num_heads, intermediate_dim,
                num_aux_tokens=0, gating_dropout=0.1):
    """The ``[[model.modulation]]`` spec of a variant's gating block (None: no block)."""
    if variant == "no-gating-block":
        return None
    return ModulationSpec("gating_block", sets=(STACK,), layers=(gate_position - 1,), options=dict(
        num_layers=num_gating_layers, num_heads=num_heads, intermediate_dim=intermediate_dim,
        neuromodulated=variant == "neuromodulated-gating", num_aux_tokens=num_aux_tokens,
        dropout=gating_dropout))


@keras.saving.register_keras_serializable(package="nemot.ngt")
class NGTModel(keras.Model):
    """BERT (a KerasHub ``BertBackbone``) with the NGT gating block and a [CLS] head.

    The model reuses the backbone's own layers, so a backbone loaded with
    ``BertBackbone.from_preset`` (KerasHub preset or Hugging Face BERT
    directory) brings its pretrained weights; the gating block and the head are
    new. The pooler stays in the model (it counts towards the parameters, as in
    the paper's Table 2) but is not used: it is frozen (``trainable = False``),
    so the optimizer keeps no slots for it and ``fit`` does not warn that it
    gets no gradient. (The original's PyTorch AdamW skips a parameter without a
    gradient, weight decay included: the same updates.)

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
        spec = gating_spec(variant, gate_position, num_gating_layers, backbone.num_heads,
                           backbone.intermediate_dim, num_aux_tokens, gating_dropout)
        self.backbone = backbone
        backbone.get_layer("pooled_dense").trainable = False   # unused (see above)
        self.bert = ModulatedBert(backbone, [spec] if spec else [],
                                  num_aux_tokens=num_aux_tokens, name="bert")
        self.gate = self.bert.transformer_layers[gate_position - 1].output_modulations[0] \
            if gated else None
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
        sequence_output = self.bert.encode(inputs)
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


def build_ngt(backbone=BERT_LARGE_CASED_PRESET, **kwargs):
    """An :class:`NGTModel` on :func:`nemot.hosts.bert.load_backbone` ``(backbone)``;
    ``kwargs`` go to ``NGTModel``.

    Example (no weights, the paper's sizes):
    >>> model = build_ngt(BERT_LARGE_CASED, gate_position=21)     # doctest: +SKIP
    >>> model.count_params()                                      # doctest: +SKIP
    371368961
    """
    return NGTModel(load_backbone(backbone), **kwargs)
