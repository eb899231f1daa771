"""BERT: checkpoints, sizes, the word-piece tokenizer, the input packer, and
:class:`ModulatedBert`, KerasHub's ``BertBackbone`` hosting ``[[model.modulation]]`` specs.

Checkpoints: a KerasHub preset name (``"bert_base_en_uncased"``; needs the network), a
KerasHub preset directory, a Hugging Face BERT directory (``config.json`` +
``model.safetensors``; KerasHub converts it), or a table of ``BertBackbone`` sizes for
random weights (:data:`BERT_LARGE_CASED`, NGT's backbone).

Example:
    >>> backbone = load_backbone({"vocabulary_size": 50, "num_layers": 2, "num_heads": 2,
    ...                           "hidden_dim": 8, "intermediate_dim": 16})
    >>> bert = ModulatedBert(backbone, num_tasks=2, modulation=[
    ...     {"kind": "pals", "sets": ["bert"], "hidden_size": 4, "num_heads": 2}])
    >>> x = {"token_ids": np.ones((2, 5), "int32"), "segment_ids": np.zeros((2, 5), "int32"),
    ...      "padding_mask": np.ones((2, 5), "int32")}
    >>> bert.encode(x, {"task_index": np.array([0, 1])}).shape
    TensorShape([2, 5, 8])
"""

import keras
import keras_hub
import numpy as np
from keras import ops

from nemot.data.benchmarks.wordpiece import load_tokenizer
from nemot.modulation.base import HOST_KEYS
from nemot.modulation.gating_block import AUX_KEYS
from nemot.modulation.host import BERT, host_stack
from nemot.modulation.spec import ModulationSpec

# bert-large-cased (NGT's backbone); KerasHub calls this preset "bert_large_en".
BERT_LARGE_CASED = dict(vocabulary_size=28996, num_layers=24, num_heads=16, hidden_dim=1024,
                        intermediate_dim=4096, max_sequence_length=512)
BERT_LARGE_CASED_PRESET = "bert_large_en"
# A small BERT in Hugging Face's config names (PALs' synthetic runs and tests).
STACK = "bert"  # the stack's name in the specs' ``sets``
ACTIVATIONS = {"gelu": lambda x: keras.activations.gelu(x, approximate=False),
               "gelu_tanh": None}  # None: the backbone's own, KerasHub's tanh GELU


def load_backbone(backbone, load_weights=True):
    """A ``keras_hub.models.BertBackbone``.

    Args:
        backbone: a KerasHub preset name (needs the network), a KerasHub preset
            directory, a Hugging Face BERT checkpoint directory (``config.json``
            + ``model.safetensors``; converted by KerasHub), or a dict of
            ``BertBackbone`` sizes for random weights (e.g. :data:`BERT_LARGE_CASED`).
        load_weights: False: the preset's architecture with random weights.
    """
    if isinstance(backbone, dict):
        return keras_hub.models.BertBackbone(**backbone)
    if isinstance(backbone, str):
        return keras_hub.models.BertBackbone.from_preset(backbone, load_weights=load_weights)
    raise TypeError(f"backbone is {type(backbone).__name__}: expected a preset name, a "
                    "directory or a dict of sizes")


def model_tokenizer(tokenizer, backbone, lowercase=True):
    """The word-piece tokenizer of a config's ``[model]`` table: ``tokenizer`` (a
    ``vocab.txt``, a preset or a directory), by default the ``backbone``'s."""
    spec = tokenizer or backbone
    if not isinstance(spec, str):
        raise ValueError("model.tokenizer (a vocab.txt, a preset or a directory) is required "
                         "when model.backbone is a table of sizes")
    return load_tokenizer(spec, lowercase)


class ModulatedBert(keras.layers.Layer):
    """BERT (a KerasHub ``BertBackbone``, its own layers and weights) with modulations
    hosted in its layers (:mod:`nemot.modulation.host`; the stack is ``"bert"`` in the
    specs' ``sets``). Without modulations (and the backbone's activation) each layer
    runs KerasHub's own ``call``.

    Reading order::

        x = Drop(LN(token_emb + position_emb + segment_emb))    # the backbone's embeddings
        aux, x = x[:, :a], x[:, a:]                             # auxiliary tokens
        x = layer_l(x)   for l = 1..L                           # post-LN BERT layers, hosting

    Args:
        backbone: a ``keras_hub.models.BertBackbone``.
        modulation: :class:`nemot.modulation.ModulationSpec` s or their TOML tables.
        num_tasks: tasks of the per-task weights (``conditioning["task_index"]``).
        activation: ``"gelu"`` (exact, BERT's own) or ``"gelu_tanh"`` (KerasHub's
            ``BertBackbone``) in every feed-forward layer.
        num_aux_tokens: a: the first a positions of every row are auxiliary tokens:
            embedded like the rest, then seen only by the modulations that read
            ``aux_tokens`` (with ``aux_mask``, bool [B, 1, a]).
    """

    def __init__(self, backbone, modulation=(), num_tasks=1, activation="gelu_tanh",
                 num_aux_tokens=0, **kwargs):
        super().__init__(dtype=backbone.dtype_policy, **kwargs)
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation={activation!r}: expected one of {list(ACTIVATIONS)}")
        self.backbone = backbone
        self.modulation = tuple(ModulationSpec.from_dict(spec, "modulation")
                                for spec in modulation)
        self.num_tasks, self.activation = int(num_tasks), activation
        self.num_aux_tokens = int(num_aux_tokens)
        self.transformer_layers, self.shared_modulations = host_stack(
            BERT, backbone.transformer_layers, self.modulation, STACK, self.num_tasks,
            available=HOST_KEYS + (AUX_KEYS if num_aux_tokens else ()),
            activation=ACTIVATIONS[activation], dtype=backbone.dtype_policy)
        self.built = True

    def embed(self, inputs, training=None):
        """The backbone's embeddings of ``token_ids`` and ``segment_ids``: [B, L, d]."""
        b = self.backbone
        tokens = b.token_embedding(inputs["token_ids"])
        x = b.embeddings_add((tokens, b.position_embedding(tokens),
                              b.segment_embedding(inputs["segment_ids"])))
        return b.embeddings_dropout(b.embeddings_layer_norm(x), training=training)

    def encode(self, inputs, conditioning=None, training=None):
        """The last layer's hidden states [B, L - a, d] of ``token_ids``, ``segment_ids``
        and ``padding_mask``."""
        x = self.embed(inputs, training)
        mask = ops.cast(inputs["padding_mask"], "bool")[:, None, :]
        conditioning = dict(conditioning or {})
        a = self.num_aux_tokens
        if a:
            conditioning.update(aux_tokens=x[:, :a], aux_mask=mask[:, :, :a])
            x, mask = x[:, a:], mask[:, :, a:]
        for layer in self.transformer_layers:
            x = layer(x, mask, conditioning=conditioning, training=training)
        return x

    def call(self, inputs, conditioning=None, training=None):
        return self.encode(inputs, conditioning, training)
