"""BERT with projected attention layers and the seed's task heads (seed 002, s.4).

Reading order of :meth:`PALBert.call`::

    x      = LN(token_emb + position_emb + segment_emb)          # BERT's embeddings
    x      = layer_l(x, TS_t)   for l = 1..12                      # post-LN BERT layers hosting
                                                                   # PALs: LN2(a + Drop(FFN(a))
                                                                   #          + TS_t(x))
    pooled = tanh(W_p x[:, 0])                                     # BERT's pooler, shared
    out    = [Linear_t(Drop_0.3(pooled)) for every task t]         # heads, concatenated

The layers are :class:`nemot.layers.TransformerLayer` (post-LN, exact GELU, epsilon
1e-12) hosting the PALs of :mod:`nemot.modulation.pals` through
:func:`nemot.modulation.stack.stack_modulations`; :meth:`PALBert.from_backbone` copies a
KerasHub ``BertBackbone``'s weights in (a KerasHub preset or a Hugging Face BERT
directory, :func:`build_pal_bert`). Without PALs the stack is that backbone exactly
(with the backbone's tanh-approximate GELU, ``activation="gelu_tanh"``: KerasHub's
``BertBackbone`` uses it, while BERT, Hugging Face and minBERT use the exact one, this
model's default).

Choices where the seed is silent: the head reads BERT's pooler output (minBERT's
``pooler_output``; the official PALs code shares the pooler across tasks); a sentence
pair is one input ``[CLS] a [SEP] b [SEP]`` (:mod:`nemot.pals.data`).

Training targets are ``[B, 2]`` float: the task index and the label; :class:`PALsLoss`
gives each example its own task's loss, so a batch may mix tasks.
"""

import keras
import keras_hub
import numpy as np
from keras import ops

from nemot.layers.transformer import TransformerLayer
from nemot.modulation.gating_block import bert_initializer
from nemot.modulation.pals import pal_parameters
from nemot.modulation.spec import ModulationSpec
from nemot.modulation.stack import stack_modulations
from nemot.ngt.model import load_backbone
from nemot.pals.tasks import get_task

STACK = "bert"
PAL_OPTIONS = ("hidden_size", "layers", "num_heads", "attention_dropout", "decoder_init")
# The paper's two PAL settings (seed s.4.3, after Stickland & Murray).
PAL_PRESETS = {
    "zero": None,
    "half": {"hidden_size": 276, "layers": "top_half"},
    "full": {"hidden_size": 204, "layers": "all"},
}


def pal_spec(pals, where="pals"):
    """The :class:`ModulationSpec` of ``pals`` (a dict of :data:`PAL_OPTIONS`), or None."""
    if pals is None:
        return None
    unknown = sorted(set(pals) - set(PAL_OPTIONS))
    if unknown:
        raise ValueError(f"{where}: unknown keys {unknown}: expected some of {PAL_OPTIONS}")
    options = {k: v for k, v in pals.items() if k != "layers"}
    return ModulationSpec(kind="pals", sets=(STACK,), layers=pals.get("layers", "all"),
                          options=options)


class _PositionEmbedding(keras_hub.layers.PositionEmbedding):
    """KerasHub's layer, whose ``build`` and ``compute_output_shape`` name their argument
    differently (``inputs_shape``/``input_shape``): ``model.summary()`` calls the latter
    with the former's name."""

    def compute_output_shape(self, inputs_shape):
        return super().compute_output_shape(inputs_shape)


@keras.saving.register_keras_serializable(package="nemot.pals")
class PALBert(keras.Model):
    """BERT, PALs in chosen layers, and one head per task.

    Inputs: a dict of int32 ``token_ids``, ``segment_ids``, ``padding_mask`` [B, L] (as
    KerasHub's ``BertBackbone``) and ``task_index`` [B] (position in ``tasks``). Output:
    [B, sum of head units], the heads' outputs side by side (:meth:`task_outputs`).

    Args:
        vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim,
            max_sequence_length, num_segments: BERT's sizes (``BertBackbone``'s names).
        tasks: task names of :data:`nemot.pals.tasks.TASKS`, in task-index order.
        pals: None (no PALs), or ``{"hidden_size": d_s, "layers": "all" | "top_half" |
            [indices], "num_heads": 6, "attention_dropout": 0.1, "decoder_init": "normal" |
            "zeros"}`` (:class:`nemot.modulation.pals.ProjectedAttentionAdapter`).
        head_dropout: dropout before each head (seed: 0.3).
        dropout: BERT's dropout (embeddings, attention probabilities, sub-layers).
        activation: ``"gelu"`` (exact, BERT) or ``"gelu_tanh"`` (KerasHub's BERT).

    Example:
        >>> model = PALBert(vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=12,
        ...                 intermediate_dim=24, tasks=("sst", "sts"),
        ...                 pals={"hidden_size": 6, "num_heads": 2})
        >>> x = {"token_ids": np.ones((2, 5), "int32"), "segment_ids": np.zeros((2, 5), "int32"),
        ...      "padding_mask": np.ones((2, 5), "int32"), "task_index": np.array([0, 1])}
        >>> model(x).shape
        TensorShape([2, 6])
    """

    def __init__(self, vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim,
                 max_sequence_length=512, num_segments=2, tasks=("sst", "quora", "sts"),
                 pals=None, head_dropout=0.3, dropout=0.1, activation="gelu", **kwargs):
        super().__init__(**kwargs)
        self.sizes = dict(vocabulary_size=vocabulary_size, num_layers=num_layers,
                          num_heads=num_heads, hidden_dim=hidden_dim,
                          intermediate_dim=intermediate_dim,
                          max_sequence_length=max_sequence_length, num_segments=num_segments)
        self.tasks = tuple(get_task(t).name for t in tasks)
        if not self.tasks or len(set(self.tasks)) != len(self.tasks):
            raise ValueError(f"tasks={list(tasks)}: expected distinct task names")
        self.pals = None if pals is None else dict(pals)
        self.head_dropout, self.dropout, self.activation = head_dropout, dropout, activation
        init = bert_initializer()
        d = hidden_dim

        self.token_embedding = keras.layers.Embedding(vocabulary_size, d, init,
                                                      name="token_embedding")
        self.position_embedding = _PositionEmbedding(
            max_sequence_length, initializer=init, name="position_embedding")
        self.segment_embedding = keras.layers.Embedding(num_segments, d, init,
                                                        name="segment_embedding")
        self.embeddings_layer_norm = keras.layers.LayerNormalization(
            epsilon=1e-12, name="embeddings_layer_norm")
        self.embeddings_dropout = keras.layers.Dropout(dropout)
        spec = pal_spec(self.pals)
        per_layer, self.shared_modulations = stack_modulations(
            [spec] if spec else [], STACK, num_layers, len(self.tasks), d,
            available=("task_index",))
        self.transformer_layers = [
            TransformerLayer(num_heads, intermediate_dim, dropout=dropout,
                             attention_dropout=dropout, layer_norm_epsilon=1e-12,
                             normalize_first=False, activation=activation,
                             modulations=modulations, name=f"transformer_layer_{i}")
            for i, (modulations, _) in enumerate(per_layer)]
        self.pooled_dense = keras.layers.Dense(d, activation="tanh", kernel_initializer=init,
                                               name="pooled_dense")
        self.head_dropout_layer = keras.layers.Dropout(head_dropout)
        self.heads = [keras.layers.Dense(get_task(t).units, kernel_initializer=init,
                                         name=f"head_{t}") for t in self.tasks]

    def build(self, input_shape=None):
        d = self.sizes["hidden_dim"]
        self.token_embedding.build((None, None))
        self.position_embedding.build((None, None, d))
        self.segment_embedding.build((None, None))
        self.embeddings_layer_norm.build((None, None, d))
        for layer in self.transformer_layers:
            layer.build((None, None, d))
        self.pooled_dense.build((None, d))
        for head in self.heads:
            head.build((None, d))
        self.built = True

    def encode(self, inputs, training=None):
        """The last layer's hidden states [B, L, d]."""
        token_ids = ops.cast(inputs["token_ids"], "int32")
        tokens = self.token_embedding(token_ids)
        x = tokens + self.position_embedding(tokens) + self.segment_embedding(
            ops.cast(inputs["segment_ids"], "int32"))
        x = self.embeddings_dropout(self.embeddings_layer_norm(x), training=training)
        keys = ops.cast(inputs["padding_mask"], "bool")[:, None, :]
        mask = ops.broadcast_to(keys, (ops.shape(x)[0], ops.shape(x)[1], ops.shape(x)[1]))
        conditioning = {"task_index": ops.cast(inputs["task_index"], "int32")}
        for layer in self.transformer_layers:
            x, _ = layer(x, mask, training=training, conditioning=conditioning)
        return x

    def call(self, inputs, training=None):
        pooled = self.pooled_dense(self.encode(inputs, training=training)[:, 0, :])
        pooled = self.head_dropout_layer(pooled, training=training)
        return ops.concatenate([head(pooled) for head in self.heads], axis=-1)

    def freeze_bert(self):
        """Part 1's "pretrain" mode: BERT's weights (embeddings, layers, pooler) stay fixed;
        the PALs and the heads learn. Call before ``compile``."""
        for layer in (self.token_embedding, self.position_embedding, self.segment_embedding,
                      self.embeddings_layer_norm, self.pooled_dense):
            layer.trainable = False
        for block in self.transformer_layers:
            for layer in (block.self_attention, block.self_attention_layer_norm,
                          block.feedforward_intermediate_dense, block.feedforward_output_dense,
                          block.feedforward_layer_norm):
                layer.trainable = False

    def task_outputs(self, outputs):
        """``{task: its head's columns}`` of the model's output."""
        out, start = {}, 0
        for task in self.tasks:
            units = get_task(task).units
            out[task] = outputs[..., start:start + units]
            start += units
        return out

    def pal_parameters_per_task(self):
        """The seed's formula for this model's PALs (0 without them)."""
        if self.pals is None:
            return 0
        spec = pal_spec(self.pals)
        return pal_parameters(self.sizes["hidden_dim"], spec.kwargs.get("hidden_size", 204),
                              len(spec.layer_indices(self.sizes["num_layers"])))

    @classmethod
    def from_backbone(cls, backbone, **kwargs):
        """A model of ``backbone``'s sizes with its weights (embeddings, layers, pooler)
        copied in; the PALs and heads keep their initial values."""
        sizes = {k: getattr(backbone, k) for k in (
            "vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim",
            "max_sequence_length", "num_segments")}
        model = cls(**sizes, **kwargs)
        model.build()
        for target, source in _weight_pairs(model, backbone):
            if tuple(target.shape) != tuple(source.shape):
                raise ValueError(f"{source.path} has shape {tuple(source.shape)}; "
                                 f"{target.path} expects {tuple(target.shape)}")
            target.assign(source)
        return model

    def get_config(self):
        return {**self.sizes, "tasks": list(self.tasks), "pals": self.pals,
                "head_dropout": self.head_dropout, "dropout": self.dropout,
                "activation": self.activation, "name": self.name, "trainable": self.trainable}


def _weight_pairs(model, backbone):
    """``(PALBert weight, BertBackbone weight)`` for every pretrained weight."""
    pairs = [
        (model.token_embedding.embeddings, backbone.token_embedding.embeddings),
        (model.position_embedding.position_embeddings,
         backbone.position_embedding.position_embeddings),
        (model.segment_embedding.embeddings, backbone.segment_embedding.embeddings),
    ]
    pairs += _layer_pairs(model.embeddings_layer_norm, backbone.embeddings_layer_norm)
    for ours, theirs in zip(model.transformer_layers, backbone.transformer_layers):
        attention, keras_mha = ours.self_attention, theirs._self_attention_layer
        for a, b in ((attention.query_dense, keras_mha._query_dense),
                     (attention.key_dense, keras_mha._key_dense),
                     (attention.value_dense, keras_mha._value_dense),
                     (attention.output_dense, keras_mha._output_dense),
                     (ours.self_attention_layer_norm, theirs._self_attention_layer_norm),
                     (ours.feedforward_intermediate_dense,
                      theirs._feedforward_intermediate_dense),
                     (ours.feedforward_output_dense, theirs._feedforward_output_dense),
                     (ours.feedforward_layer_norm, theirs._feedforward_layer_norm)):
            pairs += _layer_pairs(a, b)
    return pairs + _layer_pairs(model.pooled_dense, backbone.pooled_dense)


def _layer_pairs(ours, theirs):
    names = ("gamma", "beta") if isinstance(ours, keras.layers.LayerNormalization) \
        else ("kernel", "bias")
    return [(getattr(ours, n), getattr(theirs, n)) for n in names]


def build_pal_bert(backbone, **kwargs):
    """A :class:`PALBert` on BERT weights.

    Args:
        backbone: a KerasHub preset name (``"bert_base_en_uncased"``, needs the network), a
            KerasHub preset directory or a Hugging Face BERT directory (``config.json`` +
            ``model.safetensors``), a ``BertBackbone``, or a dict of ``BertBackbone`` sizes
            (random weights).
        **kwargs: :class:`PALBert` arguments (``tasks``, ``pals``, ...).
    """
    if not isinstance(backbone, keras_hub.models.BertBackbone):
        backbone = load_backbone(backbone)
    return PALBert.from_backbone(backbone, **kwargs)


@keras.saving.register_keras_serializable(package="nemot.pals")
class PALsLoss(keras.losses.Loss):
    """Each example's own task loss (seed s.5.3): cross-entropy on a ``classes`` head,
    BCE with logits on a ``binary`` head, squared error on a ``regression`` head.

    ``y_true`` [B, 2] is (task index, label); ``y_pred`` the model's concatenated heads.

    Args:
        tasks: the model's task names, in task-index order.

    Example:
        >>> PALsLoss(("sst", "sts"))([[0, 3], [1, 2.5]],
        ...                          [[0, 0, 0, 20, 0, 0], [0, 0, 0, 0, 0, 2.5]])   # ~0
    """

    def __init__(self, tasks, name="pals_loss", **kwargs):
        super().__init__(name=name, **kwargs)
        self.tasks = tuple(get_task(t).name for t in tasks)

    def call(self, y_true, y_pred):
        y_true = ops.cast(y_true, "float32")
        y_pred = ops.cast(y_pred, "float32")
        task, label = ops.cast(y_true[:, 0], "int32"), y_true[:, 1]
        loss, start = ops.zeros_like(label), 0
        for i, name in enumerate(self.tasks):
            spec = get_task(name)
            out = y_pred[:, start:start + spec.units]
            start += spec.units
            mine = ops.equal(task, i)
            # Other tasks' labels may be out of this head's range: neutralise them, so
            # that no NaN reaches the gradient through the unselected branch.
            own = ops.where(mine, label, 0.0)
            if spec.head == "classes":
                term = keras.losses.sparse_categorical_crossentropy(
                    ops.cast(own, "int32"), out, from_logits=True)
            elif spec.head == "binary":
                term = keras.losses.binary_crossentropy(own[:, None], out, from_logits=True)
            else:
                term = ops.square(out[:, 0] - own)
            loss = ops.where(mine, term, loss)
        return loss

    def get_config(self):
        return {**super().get_config(), "tasks": list(self.tasks)}


def predictions(model, arrays, task, batch_size=64):
    """Predicted labels of ``task`` for encoded ``arrays`` (:mod:`nemot.pals.data`):
    class indices, 0/1 (logit > 0), or regression values (numpy [N])."""
    index = model.tasks.index(task)
    n = len(arrays["token_ids"])
    inputs = {k: arrays[k] for k in ("token_ids", "segment_ids", "padding_mask")}
    inputs["task_index"] = np.full((n,), index, "int32")
    outputs = model.task_outputs(model.predict(inputs, batch_size=batch_size, verbose=0))[task]
    head = get_task(task).head
    if head == "classes":
        return np.argmax(outputs, axis=-1)
    if head == "binary":
        return (outputs[:, 0] > 0).astype("int64")
    return np.asarray(outputs[:, 0], "float64")
