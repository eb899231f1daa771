"""The comparison's model: one small transformer encoder, the per-task heads of
the PALs report, and one way of conditioning the encoder on the task per variant.

Reading order of :meth:`CompareModel.call` (``t`` is each example's task)::

    x = Drop(E_tok[ids] + E_pos)                          # embeddings, learned positions
    for l = 1..L:                                         # pre-LN TransformerLayers
        x = layer_l(x, t)                                 #   pals / hypergrid / modulated_ffn
        if l == k: x = sigmoid(G([e_t; x]))[text] * x     #   ngt_block: NGT's gating block
    x = LN(x)
    nemot_gate: g = NM([e_t; x]);                         # NeMoT: neuromodulatory set,
                x = OutputBlock_t(sigmoid(Drop(g))[text] * x)   # gate, per-task output block
    pooled = tanh(W_p x[:, 0])                            # the [CLS] position
    out    = [Linear_t(Drop_0.3(pooled)) for every task]  # the PALs report's heads, side by side

Everything but the mechanism is the same for every variant. The mechanisms are the
library's own pieces: :class:`nemot.layers.TransformerLayer` hosts the per-layer kinds
(``[[model.modulation]]`` specs built by :func:`nemot.modulation.stack.stack_modulations`),
NGT's block is :class:`nemot.modulation.GatingBlock`, NeMoT's sets and gate are
:class:`nemot.layers.sets.NeuromodulatorySet`, :class:`nemot.modulation.Gate` and
:class:`nemot.layers.sets.OutputSet`. ``e_t`` is a learned task embedding (one row per
task): the task token of NeMoT and of NGT's auxiliary tokens.

Targets are ``[B, 2]`` float: the task index and the label;
:class:`nemot.hosts.losses.TaskHeadsLoss` gives each example its own task's loss
(cross-entropy, BCE with logits, squared error).
"""

import dataclasses

import keras
import numpy as np
from keras import ops

from nemot import dropout as drop
from nemot import ranges, vocab
from nemot.config import THESIS_OUTPUT_BLOCKS, NeMoTConfig
from nemot.layers.sets import NeuromodulatorySet, OutputSet
from nemot.layers.transformer import TransformerLayer
from nemot.models.baseline import GPT2BaselineBackbone, GPT2BaselineCausalLM
from nemot.models.nemot_backbone import BackboneNode
from nemot.models.weights import count_weights
from nemot.modulation.gate import Gate
from nemot.modulation.gating_block import GatingBlock
from nemot.modulation.spec import ModulationSpec
from nemot.modulation.stack import stack_modulations
from nemot.ranges import Count, DropoutRate, NonNegativeInt, PositiveFloat

# The PALs report, s.4.2: what each task's head predicts -> (head, units).
HEADS = {"sst": ("classes", 5), "cfimdb": ("classes", 2), "quora": ("binary", 1),
         "sts": ("regression", 1)}
MECHANISMS = ("none", "nemot_gate", "ngt_block", "pals", "hypergrid", "modulated_ffn")
# The per-layer kinds, hosted by every chosen encoder layer (nemot.modulation.KINDS).
HOSTED = ("pals", "hypergrid", "modulated_ffn")
STACK = "encoder"
# What the encoder passes its hosted modulations: the task, and (HyperGrid's MHSA source,
# paper eq. 6) the layer's input sequence with its padding mask.
CONDITIONING = ("task_index", "sequence", "sequence_mask")
# Options of the two mechanisms that are not per-layer kinds, with their defaults
# (None: from the encoder's sizes, see :meth:`Settings.mechanism_options`).
BLOCK_OPTIONS = {
    # NGT: n = 3 BERT-shaped layers gating layer k's output (paper: k = 21 of 24, "end").
    "ngt_block": {"num_layers": 3, "position": None},
    # NeMoT: M neuromodulatory layers (thesis: M = Y) and Z layers per output block
    # (thesis: Z = 3 with Y = 12, i.e. a quarter of the vanilla set).
    "nemot_gate": {"nm_layers": None, "output_layers": None},
}


def variant_tables(tables):
    """``{variant: (mechanism, options)}`` of a config's ``[variants.<name>]`` tables: the
    ``mechanism`` key, by default the variant's name, and the mechanism's options."""
    out = {}
    for name, table in tables.items():
        options = dict(table)
        out[name] = (options.pop("mechanism", name), options)
    return out


def mechanism_of(variants, variant, mechanism=None, where="variants"):
    """``(mechanism, options)`` of ``variant`` (of ``mechanism`` with no options when
    given: the ``none`` model a variant is timed against), checked."""
    name, options = variants[variant] if mechanism is None else (mechanism, {})
    if name not in MECHANISMS:
        raise ValueError(f"{where}: mechanism {name!r}: expected one of {MECHANISMS}")
    return name, options


def hosted_specs(mechanism, options, stack):
    """``(ModulationSpec,)`` of a per-layer kind in the host's ``stack`` (``()`` for the
    other mechanisms): the variant's options, without ``kind`` and ``sets``."""
    if mechanism not in HOSTED:
        return ()
    table = {"kind": mechanism, **options, "sets": [stack]}
    return (ModulationSpec.from_dict(table, source=f"mechanism {mechanism}"),)


def block_options(mechanism, options, num_layers):
    """The options of ``ngt_block`` or ``nemot_gate`` on a backbone of ``num_layers``, the
    defaults (:data:`BLOCK_OPTIONS`) filled in and checked."""
    defaults = BLOCK_OPTIONS[mechanism]
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        raise ValueError(f"{mechanism}: unknown option(s) {unknown}; expected some of "
                         f"{sorted(defaults)}")
    out = {**defaults, **options}
    if mechanism == "ngt_block":
        k = out["position"]
        if k is None:  # NGT's "end" position, 21 of 24, scaled; layer k + 1 must exist
            k = min(max(round(num_layers * 21 / 24), 1), num_layers - 1)
        elif not (isinstance(k, int) and 1 <= k < num_layers):
            raise ValueError(f"ngt_block: position={k!r}: expected 1 <= k < {num_layers} "
                             "(layer k counted from 1; layer k + 1 must exist)")
        out["position"] = k
    else:
        out["nm_layers"] = out["nm_layers"] or num_layers
        out["output_layers"] = out["output_layers"] or max(1, round(num_layers / 4))
    return out


@dataclasses.dataclass(frozen=True)
class Settings:
    """The model of one variant.

    Args:
        vocab_size: rows of the token embedding (from the tokenizer).
        sequence_length: positions (learned position embeddings).
        pad_id: the padding id (never attended to).
        d_model, num_heads, d_ff, num_layers: the encoder's sizes (the backbone).
        dropout: on embeddings, sub-layer outputs, attention probabilities and inside the
            mechanisms.
        head_dropout: before each task head (the PALs report: 0.3).
        layer_norm_epsilon: of every LayerNorm.
        tasks: task names of :data:`HEADS`, in task-index order.
        mechanism: one of :data:`MECHANISMS`.
        options: the mechanism's options: a ``[[model.modulation]]`` table without
            ``kind``/``sets`` for the hosted kinds, :data:`BLOCK_OPTIONS` keys otherwise.
    """

    vocab_size: Count
    sequence_length: Count = 64
    pad_id: NonNegativeInt = 0
    d_model: Count = 128
    num_heads: Count = 4
    d_ff: Count = 512
    num_layers: Count = 4
    dropout: DropoutRate = 0.1
    head_dropout: DropoutRate = 0.3
    layer_norm_epsilon: PositiveFloat = 1e-5
    tasks: tuple = ("sst", "quora", "sts")
    mechanism: str = "none"
    options: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        ranges.check(self)
        object.__setattr__(self, "tasks", tuple(self.tasks))
        object.__setattr__(self, "options", dict(self.options))
        unknown = [t for t in self.tasks if t not in HEADS]
        if not self.tasks or unknown or len(set(self.tasks)) != len(self.tasks):
            raise ValueError(f"tasks={list(self.tasks)}: expected distinct names among "
                             f"{sorted(HEADS)}")
        if self.mechanism not in MECHANISMS:
            raise ValueError(f"mechanism={self.mechanism!r}: expected one of {MECHANISMS}")
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by "
                             f"num_heads={self.num_heads}")
        if self.mechanism == "none" and self.options:
            raise ValueError(f"mechanism 'none' takes no options, got {sorted(self.options)}")
        if self.mechanism in BLOCK_OPTIONS:
            self.mechanism_options()
        if self.mechanism == "nemot_gate" and len(self.tasks) > len(THESIS_OUTPUT_BLOCKS):
            raise ValueError(f"nemot_gate routes by NeMoT's {len(THESIS_OUTPUT_BLOCKS)} "
                             f"task tokens: at most that many tasks, got {len(self.tasks)}")

    def mechanism_options(self):
        """The options of ``ngt_block`` / ``nemot_gate``, defaults filled in."""
        return block_options(self.mechanism, self.options, self.num_layers)

    def modulation_specs(self):
        """The ``[[model.modulation]]`` spec of a hosted kind (empty otherwise)."""
        return hosted_specs(self.mechanism, self.options, STACK)

    def nemot_config(self):
        """NeMoT's config of the neuromodulatory set and output blocks at these sizes (the
        output set routes by the thesis' task tokens: task i takes the i-th block name)."""
        options = self.mechanism_options()
        return NeMoTConfig(
            vocab_size=self.vocab_size, max_text_length=self.sequence_length,
            max_position_embeddings=self.sequence_length, d_model=self.d_model,
            num_heads=self.num_heads, d_ff=self.d_ff, dropout=self.dropout,
            attention_dropout=self.dropout, layer_norm_epsilon=self.layer_norm_epsilon,
            num_nm_layers=options["nm_layers"], num_output_layers=options["output_layers"],
            output_blocks=THESIS_OUTPUT_BLOCKS[:len(self.tasks)])

    def to_dict(self):
        return dataclasses.asdict(self) | {"tasks": list(self.tasks)}


@keras.saving.register_keras_serializable(package="nemot.compare")
class CompareModel(keras.Model):
    """The encoder, one mechanism, and the task heads (see the module docstring).

    Inputs: a dict of int32 ``token_ids`` [B, L] (``[CLS] a [SEP] b [SEP]``, right-padded)
    and ``task_index`` [B] (position in ``settings.tasks``). Output: [B, sum of head
    units], the heads side by side (:meth:`task_outputs`).

    Args:
        settings: a :class:`Settings` (or its dict).

    Example:
        >>> model = CompareModel(Settings(vocab_size=50, d_model=16, num_heads=2, d_ff=32,
        ...                               num_layers=2, mechanism="pals",
        ...                               options={"hidden_size": 6, "num_heads": 2}))
        >>> x = {"token_ids": np.ones((2, 5), "int32"), "task_index": np.array([0, 2])}
        >>> model(x).shape
        TensorShape([2, 7])
    """

    def __init__(self, settings, **kwargs):
        super().__init__(**kwargs)
        self.settings = settings if isinstance(settings, Settings) else Settings(**settings)
        s = self.settings
        self.token_embedding = keras.layers.Embedding(s.vocab_size, s.d_model,
                                                      name="token_embedding")
        self.position_embedding = keras.layers.Embedding(s.sequence_length, s.d_model,
                                                         name="position_embedding")
        self.embeddings_dropout = keras.layers.Dropout(s.dropout)
        per_layer, self.shared_modulations = stack_modulations(
            s.modulation_specs(), STACK, s.num_layers, len(s.tasks), s.d_model,
            available=CONDITIONING)
        self.encoder_layers = [
            TransformerLayer(s.num_heads, s.d_ff, dropout=s.dropout,
                             attention_dropout=s.dropout, layer_norm_epsilon=s.layer_norm_epsilon,
                             normalize_first=True, activation="gelu", modulations=modulations,
                             dense_replacements=replacements, name=f"encoder_layer_{i}")
            for i, (modulations, replacements) in enumerate(per_layer)]
        self.encoder_layer_norm = keras.layers.LayerNormalization(
            epsilon=s.layer_norm_epsilon, name="encoder_layer_norm")
        self.task_embedding = None
        if s.mechanism in BLOCK_OPTIONS:
            self.task_embedding = keras.layers.Embedding(len(s.tasks), s.d_model,
                                                         name="task_embedding")
        self.gating_block = self.neuromodulatory_set = None
        if s.mechanism == "ngt_block":
            options = s.mechanism_options()
            self.gate_position = options["position"]
            self.gating_block = GatingBlock(options["num_layers"], s.num_heads, s.d_ff,
                                            num_aux_tokens=1, dropout=s.dropout,
                                            name="gating_block")
        if s.mechanism == "nemot_gate":
            config = s.nemot_config()
            self.neuromodulatory_set = NeuromodulatorySet(config, name="neuromodulatory_set")
            self.gate = Gate(dropout=s.dropout, name="gate")
            self.output_set = OutputSet(config, name="output_set")
            self.task_token_ids = config.task_token_ids
        self.pooled_dense = keras.layers.Dense(s.d_model, activation="tanh", name="pooled_dense")
        self.head_dropout = keras.layers.Dropout(s.head_dropout)
        self.heads = [keras.layers.Dense(HEADS[t][1], name=f"head_{t}") for t in s.tasks]

    def build(self, input_shape=None):
        s = self.settings
        shape = (None, None, s.d_model)
        self.token_embedding.build(None)
        self.position_embedding.build(None)
        for layer in self.encoder_layers:
            layer.build(shape)
        self.encoder_layer_norm.build(shape)
        if self.task_embedding is not None:
            self.task_embedding.build(None)
        if self.gating_block is not None:
            self.gating_block.build(shape)
        if self.neuromodulatory_set is not None:
            self.neuromodulatory_set.build(None)
            self.output_set.build(None)
        self.pooled_dense.build((None, s.d_model))
        for head in self.heads:
            head.build((None, s.d_model))
        self.built = True

    def encode(self, inputs, training=None):
        """The sequence the heads read, [B, L, d] (after the mechanism)."""
        ids = ops.cast(inputs["token_ids"], "int32")
        task = ops.cast(inputs["task_index"], "int32")
        valid = ops.not_equal(ids, self.settings.pad_id)
        batch, length = ops.shape(ids)[0], ops.shape(ids)[1]
        mask = ops.broadcast_to(valid[:, None, :], (batch, length, length))  # bidirectional
        x = self.token_embedding(ids) + self.position_embedding(ops.arange(length))[None]
        x = self.embeddings_dropout(x, training=training)
        for i, layer in enumerate(self.encoder_layers):
            conditioning = {"task_index": task, "sequence": x, "sequence_mask": valid[:, None, :]}
            x, _ = layer(x, mask, training=training, conditioning=conditioning)
            if self.gating_block is not None and i + 1 == self.gate_position:
                aux = {"aux_tokens": self._task_token(task),
                       "aux_mask": ops.ones((batch, 1, 1), "bool")}
                x = self.gating_block(x, conditioning=aux, attention_mask=valid[:, None, :],
                                      training=training)
        x = self.encoder_layer_norm(x)
        if self.neuromodulatory_set is None:
            return x
        # NeMoT <enc> mode (thesis Figure 3.2): every position sees every non-pad one.
        keys = ops.concatenate([ops.ones((batch, 1), "bool"), valid], axis=1)
        nm_mask = ops.broadcast_to(keys[:, None, :], (batch, length + 1, length + 1))
        nm_out = self.neuromodulatory_set(ops.concatenate([self._task_token(task), x], axis=1),
                                          nm_mask, training=training)
        _, gated = self.gate(nm_out, x, training=training)
        task_ids = ops.take(ops.convert_to_tensor(self.task_token_ids, "int32"), task)
        return self.output_set(gated, task_ids, mask, training=training)

    def _task_token(self, task):
        """[B, 1, d]: the task's embedding, one auxiliary position."""
        return self.task_embedding(task)[:, None, :]

    def call(self, inputs, training=None):
        pooled = self.pooled_dense(self.encode(inputs, training=training)[:, 0, :])
        pooled = self.head_dropout(pooled, training=training)
        return ops.concatenate([head(pooled) for head in self.heads], axis=-1)

    def task_outputs(self, outputs):
        """``{task: its head's columns}`` of the model's output."""
        out, start = {}, 0
        for task in self.settings.tasks:
            units = HEADS[task][1]
            out[task] = outputs[..., start:start + units]
            start += units
        return out

    def get_config(self):
        return {"settings": self.settings.to_dict(), "name": self.name}


def predict_tasks(model, token_ids, batch_size=256):
    """``{task: predictions}`` for ``{task: token_ids [N, L]}`` (numpy): class indices, 0/1
    (logit > 0), or regression values. Every task's examples go together, in mixed
    batches (each example reads its own task): one eager call when they fit in one batch,
    else one compiled ``predict`` (one trace per model, where eager calls cost seconds a
    batch on a busy CPU)."""
    tasks = list(token_ids)
    inputs = {"token_ids": np.concatenate([token_ids[t] for t in tasks]),
              "task_index": np.concatenate([
                  np.full((len(token_ids[t]),), model.settings.tasks.index(t), "int32")
                  for t in tasks])}
    if len(inputs["token_ids"]) <= batch_size:
        outputs = np.asarray(model(inputs, training=False))
    else:
        outputs = model.predict(inputs, batch_size=batch_size, verbose=0)
    ends = np.cumsum([len(token_ids[t]) for t in tasks])
    out = {}
    for task, rows in zip(tasks, np.split(outputs, ends[:-1])):
        column = model.task_outputs(rows)[task]
        head = HEADS[task][0]
        if head == "classes":
            out[task] = np.argmax(column, axis=-1)
        elif head == "binary":
            out[task] = (column[:, 0] > 0).astype("int64")
        else:
            out[task] = np.asarray(column[:, 0], "float64")
    return out


@keras.saving.register_keras_serializable(package="nemot.compare")
class ConditionedGPT2Backbone(GPT2BaselineBackbone):
    """The thesis' GPT-2 baseline conditioned on the task token, for the comparison on
    the thesis' QA data (``configs/compare/thesis_pool.toml``): the per-layer kinds ride
    on its layers as ``config.modulation`` specs of the ``vanilla`` set (task index from
    the task token, :meth:`GPT2BaselineBackbone.conditioning`), and NGT's block gates
    layer ``k``'s output, causal like GPT-2, reading the task token's embedding. The task
    around it is :class:`nemot.models.baseline.GPT2BaselineCausalLM`.

    Args:
        config: a ``NeMoTConfig`` (its vanilla-set fields, ``modulation`` and
            ``output_blocks``: the task tokens).
        gating: None, or NGT's ``{"num_layers": n, "position": k}``.

    With a gating block the model keeps no key/value cache for it (``supports_cache`` is
    False): it decodes by recomputation.
    """

    def __init__(self, config, gating=None, **kwargs):
        self.gating = dict(gating) if gating else None
        super().__init__(config, **kwargs)

    def build_layers(self):
        super().build_layers()
        self.gating_block = self.task_embedding = None
        if self.gating:
            cfg = self.config
            self.gating_block = GatingBlock(self.gating["num_layers"], cfg.num_heads, cfg.d_ff,
                                            num_aux_tokens=1, dropout=cfg.dropout,
                                            name="gating_block")
            self.task_embedding = keras.layers.Embedding(cfg.num_output_blocks, cfg.d_model,
                                                         name="task_embedding")
            self.gating_block.build((None, None, cfg.d_model))
            self.task_embedding.build(None)

    @property
    def supports_cache(self):
        return not self.gating and super().supports_cache

    def forward(self, aux_ids, text_ids, text_mask, nm_mask=None, pos_tags=None, cache=None,
                cache_update_index=0, training=None):
        if not self.gating:
            return super().forward(aux_ids, text_ids, text_mask, nm_mask, pos_tags, cache,
                                   cache_update_index, training)
        if cache is not None:
            raise ValueError("NGT's gating block keeps no key/value cache (supports_cache is "
                             "False): decode by recomputation")
        if isinstance(text_ids, keras.KerasTensor):  # the functional graph
            return {"hidden_states": BackboneNode(self.gated_output, name="gated_vanilla_set")(
                aux_ids, text_ids, text_mask), "cache": None}
        return {"hidden_states": self.gated_output(aux_ids, text_ids, text_mask, training),
                "cache": None}

    def gated_output(self, aux_ids, text_ids, mask, training=None):
        """GPT-2 with NGT's block between layers k and k + 1."""
        vanilla = self.vanilla_set
        conditioning = self.conditioning(aux_ids)
        seed = drop.draw_seed(vanilla.seed_generator, training)
        layers = vanilla.transformer_layers
        x = drop.dropout(vanilla.embed(text_ids), self.config.dropout,
                         drop.salted(seed, len(layers)))
        for i, layer in enumerate(layers):
            x, _ = layer(x, mask, training=training, conditioning=conditioning,
                         dropout_seed=drop.salted(seed, i))
            if i + 1 == self.gating["position"]:
                task = self.task_embedding(conditioning["task_index"])[:, None, :]
                aux = {"aux_tokens": task, "aux_mask": ops.ones((ops.shape(x)[0], 1, 1), "bool")}
                x = self.gating_block(x, conditioning=aux, attention_mask=mask,
                                      training=training)
        return vanilla.layer_norm(x)

    def parameter_breakdown(self):
        parts = super().parameter_breakdown()
        if self.gating:
            parts["gating_block"] = count_weights(self.gating_block) + count_weights(
                self.task_embedding)
        return parts

    def get_config(self):
        return {**super().get_config(), "gating": self.gating}


def conditioned_gpt2(config, gating=None):
    """The task model of :class:`ConditionedGPT2Backbone` (token ids in, no preprocessor)."""
    return GPT2BaselineCausalLM(ConditionedGPT2Backbone(config, gating=gating),
                                preprocessor=None)
