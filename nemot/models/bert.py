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

from nemot.modulation.base import HOST_KEYS
from nemot.modulation.gating_block import AUX_KEYS
from nemot.modulation.host import BERT, host_stack
from nemot.modulation.spec import ModulationSpec

# bert-large-cased (NGT's backbone); KerasHub calls this preset "bert_large_en".
BERT_LARGE_CASED = dict(vocabulary_size=28996, num_layers=24, num_heads=16, hidden_dim=1024,
                        intermediate_dim=4096, max_sequence_length=512)
BERT_LARGE_CASED_PRESET = "bert_large_en"
# A small BERT in Hugging Face's config names (PALs' synthetic runs and tests).
TINY_BERT = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
             "intermediate_size": 128, "max_position_embeddings": 64}
STACK = "bert"  # the stack's name in the specs' ``sets``
ACTIVATIONS = {"gelu": lambda x: keras.activations.gelu(x, approximate=False),
               "gelu_tanh": None}  # None: the backbone's own, KerasHub's tanh GELU
TRUNCATIONS = ("round_robin", "waterfall", "only_first")


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


def load_tokenizer(spec, lowercase=True):
    """A ``keras_hub.models.BertTokenizer``: a ``vocab.txt`` path (``lowercase`` as the
    checkpoint was trained: uncased models lower-case), or a preset name or directory
    (KerasHub or Hugging Face BERT)."""
    spec = str(spec)
    if spec.endswith(".txt"):
        return keras_hub.models.BertTokenizer(vocabulary=spec, lowercase=lowercase)
    return keras_hub.models.BertTokenizer.from_preset(spec)


class InputPacker:
    """Word-piece segments -> BERT inputs of exactly ``sequence_length`` ids:
    ``prefix [CLS] A [SEP] B [SEP]``, padded with ``[PAD]`` on the right; segment ids 0
    for ``prefix [CLS] A [SEP]``, 1 for ``B [SEP]`` (KerasHub's ``MultiSegmentPacker``).

    Args:
        tokenizer: a ``keras_hub.models.BertTokenizer`` (or anything with ``token_to_id``).
        sequence_length: ids per row.
        truncate: when a row is too long: ``"round_robin"`` (cut the segments in turn),
            ``"waterfall"`` (cut the last first), or ``"only_first"`` (cut only the end of
            A; the others stay whole, and a row whose others do not fit is an error: Hugging
            Face's ``truncation="only_first"``).
        prefix_ids: ids placed before ``[CLS]`` (NGT's auxiliary tokens), in segment 0.

    Example:
        >>> packer = InputPacker(tokenizer, 16, truncate="only_first")   # doctest: +SKIP
        >>> packer([tokenizer(["a cat"]), tokenizer(["a dog"])])["token_ids"].shape
        (1, 16)
    """

    def __init__(self, tokenizer, sequence_length, truncate="round_robin", prefix_ids=()):
        if truncate not in TRUNCATIONS:
            raise ValueError(f"truncate={truncate!r}: expected one of {TRUNCATIONS}")
        self.sequence_length = int(sequence_length)
        self.truncate = truncate
        self.prefix_ids = [int(i) for i in prefix_ids]
        self.pad_id = tokenizer.token_to_id("[PAD]")
        self.packer = keras_hub.layers.MultiSegmentPacker(
            sequence_length=self.sequence_length,
            start_value=[*self.prefix_ids, tokenizer.token_to_id("[CLS]")],
            end_value=tokenizer.token_to_id("[SEP]"), pad_value=self.pad_id,
            truncate="waterfall" if truncate == "only_first" else truncate)

    def _cut_first(self, segments, row_names):
        """Segment A of each row cut to the room the others leave."""
        fixed = len(self.prefix_ids) + 1 + len(segments)  # prefix, [CLS], the [SEP]s
        first = []
        for r, row in enumerate(zip(*segments)):
            later = sum(len(ids) for ids in row[1:])
            room = self.sequence_length - fixed - later
            if room < 0:
                name = f"row {r}" if row_names is None else f"row {r} ({row_names[r]})"
                raise ValueError(
                    f"{name}: segment B has {later} word pieces, more than the "
                    f"{self.sequence_length - fixed} a sequence of {self.sequence_length} can "
                    "hold (truncate='only_first' cuts only segment A)")
            first.append(list(row[0])[:room])
        return [first, *segments[1:]]

    def __call__(self, segments, row_names=None):
        """``segments``: one list per segment of each row's ids (lists, or a tokenizer's
        ragged output); ``row_names``: how errors name the rows. Returns int32 numpy
        ``token_ids``, ``segment_ids`` and ``padding_mask`` [rows, sequence_length]."""
        segments = [s.to_list() if hasattr(s, "to_list") else [list(ids) for ids in s]
                    for s in segments]
        if self.truncate == "only_first":
            segments = self._cut_first(segments, row_names)
        if not segments[0]:
            empty = np.zeros((0, self.sequence_length), "int32")
            return {"token_ids": empty, "segment_ids": empty, "padding_mask": empty}
        token_ids, segment_ids = self.packer(tuple(segments))
        token_ids = np.asarray(token_ids, "int32")
        return {"token_ids": token_ids, "segment_ids": np.asarray(segment_ids, "int32"),
                "padding_mask": (token_ids != self.pad_id).astype("int32")}


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
