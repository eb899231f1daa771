"""BERT with projected attention layers and the report's task heads (Rotzal's PALs report, s.4).

Reading order of :meth:`PALBert.call`::

    x      = LN(token_emb + position_emb + segment_emb)          # BERT's embeddings
    x      = layer_l(x, TS_t)   for l = 1..12                      # post-LN BERT layers hosting
                                                                   # PALs: LN2(a + Drop(FFN(a))
                                                                   #          + TS_t(x))
    pooled = tanh(W_p x[:, 0])                                     # BERT's pooler, shared
    out    = [Linear_t(Drop_0.3(pooled)) for every task t]         # heads, concatenated

BERT is a KerasHub ``BertBackbone`` (a KerasHub preset or a Hugging Face BERT directory,
:func:`build_pal_bert`), its own layers and weights, hosting the PALs of
:mod:`nemot.modulation.pals` as ``[[model.modulation]]`` specs
(:class:`nemot.hosts.bert.ModulatedBert`). Its feed-forward activation is BERT's exact
GELU by default (Hugging Face and minBERT use it); ``activation="gelu_tanh"`` keeps
KerasHub's tanh approximation, with which the model without PALs is that backbone
exactly.

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

from nemot.hosts.bert import STACK, ModulatedBert, load_backbone
from nemot.hosts.losses import TaskHeadsLoss
from nemot.modulation.gating_block import bert_initializer
from nemot.modulation.pals import pal_parameters
from nemot.modulation.spec import ModulationSpec
from nemot.pals.tasks import get_task

PAL_OPTIONS = ("hidden_size", "layers", "num_heads", "attention_dropout", "decoder_init")
# The paper's two PAL settings (Rotzal s.4.3, after Stickland & Murray).
PAL_PRESETS = {
    "zero": None,
    "half": {"hidden_size": 276, "layers": "top_half"},
    "full": {"hidden_size": 204, "layers": "all"},
}
SIZES = ("vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim",
         "max_sequence_length", "num_segments")


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


@keras.saving.register_keras_serializable(package="nemot.pals")
class PALBert(keras.Model):
    """BERT, PALs in chosen layers, and one head per task.

    Inputs: a dict of int32 ``token_ids``, ``segment_ids``, ``padding_mask`` [B, L] (as
    KerasHub's ``BertBackbone``) and ``task_index`` [B] (position in ``tasks``). Output:
    [B, sum of head units], the heads' outputs side by side (:meth:`task_outputs`).

    Args:
        vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim,
            max_sequence_length, num_segments: BERT's sizes (``BertBackbone``'s names), for
            a new BERT; or ``backbone``:
        backbone: a ``BertBackbone`` whose layers and weights the model uses (its sizes
            must agree with any given).
        tasks: task names of :data:`nemot.pals.tasks.TASKS`, in task-index order.
        pals: None (no PALs), or ``{"hidden_size": d_s, "layers": "all" | "top_half" |
            [indices], "num_heads": 6, "attention_dropout": 0.1, "decoder_init": "normal" |
            "zeros"}`` (:class:`nemot.modulation.pals.ProjectedAttentionAdapter`).
        head_dropout: dropout before each head (seed: 0.3).
        dropout: BERT's dropout (embeddings, attention probabilities, sub-layers) of a new
            BERT (default 0.1); a given backbone keeps its own.
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

    def __init__(self, vocabulary_size=None, num_layers=None, num_heads=None, hidden_dim=None,
                 intermediate_dim=None, max_sequence_length=512, num_segments=2,
                 tasks=("sst", "quora", "sts"), pals=None, head_dropout=0.3, dropout=None,
                 activation="gelu", backbone=None, **kwargs):
        super().__init__(**kwargs)
        sizes = dict(vocabulary_size=vocabulary_size, num_layers=num_layers,
                     num_heads=num_heads, hidden_dim=hidden_dim,
                     intermediate_dim=intermediate_dim,
                     max_sequence_length=max_sequence_length, num_segments=num_segments)
        if backbone is None:
            backbone = keras_hub.models.BertBackbone(
                **sizes, dropout=0.1 if dropout is None else dropout)
        else:
            # Sizes without defaults (and the dropout) must be the backbone's, if given.
            given = {k: v for k, v in dict(sizes, dropout=dropout).items()
                     if v is not None and k not in ("max_sequence_length", "num_segments")}
            differ = sorted(k for k, v in given.items() if getattr(backbone, k) != v)
            if differ:
                raise ValueError(f"{differ}: given {[given[k] for k in differ]}, but the "
                                 f"backbone has {[getattr(backbone, k) for k in differ]}")
        self.sizes = {k: getattr(backbone, k) for k in SIZES}
        self.tasks = tuple(get_task(t).name for t in tasks)
        if not self.tasks or len(set(self.tasks)) != len(self.tasks):
            raise ValueError(f"tasks={list(tasks)}: expected distinct task names")
        self.pals = None if pals is None else dict(pals)
        self.head_dropout, self.dropout, self.activation = head_dropout, backbone.dropout, \
            activation
        spec = pal_spec(self.pals)
        self.backbone = backbone
        self.bert = ModulatedBert(backbone, [spec] if spec else [], len(self.tasks),
                                  activation=activation, name="bert")
        self.head_dropout_layer = keras.layers.Dropout(head_dropout)
        self.heads = [keras.layers.Dense(get_task(t).units, kernel_initializer=bert_initializer(),
                                         name=f"head_{t}") for t in self.tasks]

    def build(self, input_shape=None):
        for head in self.heads:
            head.build((None, self.sizes["hidden_dim"]))
        self.built = True

    def encode(self, inputs, training=None):
        """The last layer's hidden states [B, L, d]."""
        conditioning = {"task_index": ops.cast(inputs["task_index"], "int32")}
        return self.bert.encode(inputs, conditioning, training=training)

    def call(self, inputs, training=None):
        pooled = self.backbone.pooled_dense(self.encode(inputs, training=training)[:, 0, :])
        pooled = self.head_dropout_layer(pooled, training=training)
        return ops.concatenate([head(pooled) for head in self.heads], axis=-1)

    def freeze_bert(self):
        """Part 1's "pretrain" mode: BERT's weights (embeddings, layers, pooler) stay fixed;
        the PALs and the heads learn. Call before ``compile``."""
        self.backbone.trainable = False

    def task_outputs(self, outputs):
        """``{task: its head's columns}`` of the model's output."""
        out, start = {}, 0
        for task in self.tasks:
            units = get_task(task).units
            out[task] = outputs[..., start:start + units]
            start += units
        return out

    def pal_parameters_per_task(self):
        """The report's formula for this model's PALs (0 without them)."""
        if self.pals is None:
            return 0
        spec = pal_spec(self.pals)
        return pal_parameters(self.sizes["hidden_dim"], spec.kwargs.get("hidden_size", 204),
                              len(spec.layer_indices(self.sizes["num_layers"])))

    @classmethod
    def from_backbone(cls, backbone, **kwargs):
        """A model on ``backbone``'s layers and weights (the PALs and heads are new)."""
        model = cls(backbone=backbone, **kwargs)
        model.build()
        return model

    def get_config(self):
        return {**self.sizes, "tasks": list(self.tasks), "pals": self.pals,
                "head_dropout": self.head_dropout, "dropout": self.dropout,
                "activation": self.activation, "name": self.name, "trainable": self.trainable}


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
class PALsLoss(TaskHeadsLoss):
    """Each example's own task loss (Rotzal s.5.3), :class:`nemot.hosts.losses.TaskHeadsLoss`
    with the heads of the tasks named: cross-entropy on a ``classes`` head, BCE with
    logits on a ``binary`` head, squared error on a ``regression`` head.

    Args:
        tasks: the model's task names, in task-index order.

    Example:
        >>> PALsLoss(("sst", "sts"))([[0, 3], [1, 2.5]],
        ...                          [[0, 0, 0, 20, 0, 0], [0, 0, 0, 0, 0, 2.5]])   # ~0
    """

    def __init__(self, tasks, name="pals_loss", **kwargs):
        kwargs.pop("heads", None)  # get_config's; the tasks say them
        self.tasks = tuple(get_task(t).name for t in tasks)
        super().__init__([(get_task(t).head, get_task(t).units) for t in self.tasks],
                         name=name, **kwargs)

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
