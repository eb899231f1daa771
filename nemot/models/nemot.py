"""The Neuromodulated Transformer (thesis chapter 3, Figure 3.1, eqs. 3.1-3.14).

Reading order of ``NeMoT.call``::

    aux, text   = token_ids[:, :3], token_ids[:, 3:]      # [<cls>, <mode>, <task>] + text
    v           = vanilla_set(text)                      # GPT-2, eqs. 3.1-3.5
    v           = reading_strategies(v, text, pos_tags)  # optional, thesis s.3.4.3 (or after
                                                         # the embeddings); vanilla head: raw v
    gates       = neuromodulatory_set([aux_emb ; v])     # sigmoid(Drop(NM(.))), eqs. 3.6-3.7
    x_gate      = gates[:, 3:] * v                       # the gate, eq. 3.8
    y           = output_set[task](x_gate)               # eqs. 3.9-3.13, per example
    logits      = head(y); vanilla_logits = vanilla_head(v)   # eq. 3.14
"""

import keras
import numpy as np
from keras import ops

from nemot import vocab
from nemot.config import NeMoTConfig
from nemot.layers.masks import attention_mask, mask_from_positions
from nemot.layers.reading_strategies import ReadingStrategies
from nemot.layers.sets import Gate, NeuromodulatorySet, OutputSet, VanillaSet
from nemot.training.losses import CombinedLossMixin

MODE_POSITION = 1
TASK_POSITION = 2


@keras.saving.register_keras_serializable(package="nemot")
class NeMoT(CombinedLossMixin, keras.Model):
    """The NeMoT model: vanilla set, neuromodulatory set, gate, output set, heads.

    Call it on ``{"token_ids": int [batch, 3 + n]}`` (auxiliary tokens first,
    text right-padded with ``<pad>``). Returns a dict with ``"logits"``
    [batch, n, vocab] of the main head, ``"vanilla_logits"`` of the vanilla
    head when ``config.vanilla_head``, and ``"gates"`` [batch, 3 + n, d_model]
    when ``return_gates``. Each example's mode token (``<dec>``/``<enc>``)
    picks its masks and its task token picks its output block.

    Training: ``compile(optimizer, loss=nemot.training.NeMoTLoss(...))`` and
    ``fit`` on ``(inputs, {"task_targets", "lm_targets"})``; see
    ``nemot.training.losses``.

    Args:
        config: a ``NeMoTConfig`` (or its dict).
        return_gates: also return the gate values by default.

    Example:
        >>> model = nemot.build_model(nemot.NeMoTConfig.preset("tiny"))
        >>> out = model({"token_ids": ids})
        >>> out["logits"].shape   # (batch, n, 50313)
    """

    def __init__(self, config, return_gates=False, **kwargs):
        super().__init__(**kwargs)
        self.config = NeMoTConfig.from_dict(config) if isinstance(config, dict) else config
        self.return_gates = return_gates
        cfg = self.config
        regularizer = keras.regularizers.L2(cfg.kernel_l2) if cfg.kernel_l2 else None
        self.vanilla_set = VanillaSet(cfg, name="vanilla_set")
        if cfg.reading_strategies:
            self.reading_strategies = ReadingStrategies(
                cfg.reading_strategies, dropout=cfg.dropout, aoi_bias=cfg.compat_aoi_bias,
                kernel_regularizer=regularizer, name="reading_strategies")
        if cfg.aux_embedding == "separate":
            self.aux_embedding = keras.layers.Embedding(cfg.vocab_size, cfg.d_model,
                                                        name="aux_embedding")
        self.neuromodulatory_set = NeuromodulatorySet(cfg, name="neuromodulatory_set")
        self.gate = Gate(name="gate")
        self.output_set = OutputSet(cfg, name="output_set")
        self.head = keras.layers.Dense(cfg.vocab_size, kernel_regularizer=regularizer,
                                       name="head")
        if cfg.vanilla_head:
            self.vanilla_head = keras.layers.Dense(cfg.vocab_size,
                                                   kernel_regularizer=regularizer,
                                                   name="vanilla_head")
        self._init_loss_terms()

    def build(self, input_shape=None):
        cfg = self.config
        self.vanilla_set.build(None)
        if cfg.reading_strategies:
            self.reading_strategies.build((None, None, cfg.d_model))
        if cfg.aux_embedding == "separate":
            self.aux_embedding.build(None)
        self.neuromodulatory_set.build(None)
        self.output_set.build(None)
        self.head.build((None, None, cfg.d_model))
        if cfg.vanilla_head:
            self.vanilla_head.build((None, None, cfg.d_model))
        self.built = True

    def embed_aux_tokens(self, aux_ids):
        """Auxiliary-token embeddings: no position, no scaling (original code)."""
        if self.config.aux_embedding == "shared":
            return self.vanilla_set.token_embedding(aux_ids)
        return self.aux_embedding(aux_ids)

    def _check_aux_tokens(self, aux_ids):
        """A clear error for a mode or task token the model cannot serve.

        Checked when the values are concrete (eager calls); the data pipelines
        check every example against the config before training.
        """
        try:
            aux = np.asarray(ops.convert_to_numpy(aux_ids))
        except (TypeError, ValueError, NotImplementedError, AttributeError):
            return  # symbolic tensor inside a traced function
        modes = set(aux[:, MODE_POSITION].tolist()) - {vocab.DEC_ID, vocab.ENC_ID}
        if modes:
            raise ValueError(f"mode token id(s) {sorted(modes)} at auxiliary position "
                             f"{MODE_POSITION}: expected <dec> ({vocab.DEC_ID}) or <enc> "
                             f"({vocab.ENC_ID})")
        known = set(self.config.task_token_ids)
        tasks = set(aux[:, TASK_POSITION].tolist()) - known
        if tasks:
            names = {v: k for k, v in vocab.ADDED_TOKEN_IDS.items()}
            raise ValueError(
                f"task token(s) {[names.get(t, t) for t in sorted(tasks)]} at auxiliary "
                f"position {TASK_POSITION} have no output block; this model's blocks are "
                f"{list(self.config.output_blocks)}")

    def call(self, inputs, training=None, return_gates=None):
        cfg = self.config
        token_ids = ops.cast(inputs["token_ids"], "int32")
        a = cfg.num_aux_tokens
        aux_ids, text_ids = token_ids[:, :a], token_ids[:, a:]
        self._check_aux_tokens(aux_ids)
        is_enc = ops.equal(aux_ids[:, MODE_POSITION], vocab.ENC_ID)
        text_mask = attention_mask(text_ids, mode=is_enc, num_aux=0)
        full_mask = attention_mask(token_ids, mode=is_enc, num_aux=a)

        vanilla_out, read_out, _ = self.run_vanilla_set(text_ids, text_mask,
                                                        inputs.get("pos_tags"), training=training)
        nm_in = ops.concatenate(
            [ops.cast(self.embed_aux_tokens(aux_ids), read_out.dtype), read_out], axis=1)
        gates = self.neuromodulatory_set(nm_in, full_mask, training=training)
        x_gate = self.gate(gates, read_out)
        y = self.output_set(x_gate, aux_ids[:, TASK_POSITION], text_mask, training=training)

        outputs = {"logits": self.head(y)}
        if cfg.vanilla_head:
            outputs["vanilla_logits"] = self.vanilla_head(vanilla_out)
        if self.return_gates if return_gates is None else return_gates:
            outputs["gates"] = gates
        return outputs

    def run_vanilla_set(self, text_ids, attention_mask, pos_tags=None, cache=None,
                        cache_update_index=0, training=None):
        """The vanilla set with the reading strategies where the config puts them.

        Returns ``(vanilla_out, read_out, cache)``: ``read_out`` is what the NM
        set and the gate read. At ``"vanilla_output"`` (thesis) it is
        ``strategies(vanilla_out)`` while the vanilla head keeps the vanilla
        set's own output; at ``"embeddings"`` the strategies act on the input
        of the first vanilla layer and both outputs are the same.
        """
        strategies = getattr(self, "reading_strategies", None)

        def read(x):
            return strategies(x, text_ids, pos_tags, training=training)

        at_embeddings = (strategies is not None
                         and self.config.reading_strategy_position == "embeddings")
        out = self.vanilla_set(text_ids, attention_mask, cache=cache,
                               cache_update_index=cache_update_index, training=training,
                               embeddings_transform=read if at_embeddings else None)
        out, cache = (out, None) if cache is None else out
        if strategies is None or at_embeddings:
            return out, out, cache
        return out, read(out), cache

    # ---- cached decoding (<dec> mode; the auxiliary tokens are a cached prefix) ----

    def init_cache(self, batch_size, text_length, dtype=None):
        """Empty key/value caches of the three sets for ``text_length`` text positions."""
        cfg = self.config
        dtype = dtype or self.compute_dtype
        head_dim = cfg.d_model // cfg.num_heads

        def zeros(*layers, length):
            return ops.zeros((batch_size, *layers, 2, length, cfg.num_heads, head_dim), dtype)

        return {
            "vanilla": zeros(cfg.num_vanilla_layers, length=text_length),
            "neuromodulatory": zeros(cfg.num_nm_layers,
                                     length=cfg.num_aux_tokens + text_length),
            "output": zeros(cfg.num_output_blocks, cfg.num_output_layers,
                            length=text_length),
        }

    def call_with_cache(self, aux_ids, text_ids, cache, cache_update_index, text_valid,
                        pos_tags=None):
        """Run text positions ``[index, index + q)`` against the caches (inference).

        Args:
            aux_ids: int [batch, 3] auxiliary tokens (mode must be ``<dec>``).
            text_ids: int [batch, q] the new text tokens.
            cache: from ``init_cache`` (or the previous call).
            cache_update_index: text position of ``text_ids[:, 0]``; the
                auxiliary tokens are run (prefill) when it is 0 — pass a Python
                int 0 for the prefill call.
            text_valid: bool [batch, text_length], False at padding positions.
            pos_tags: int [batch, q] POS category ids of ``text_ids``, needed
                with the highlighting reading strategy.

        Returns:
            ``(logits [batch, q, vocab], cache)``.
        """
        cfg = self.config
        a = cfg.num_aux_tokens
        q = ops.shape(text_ids)[1]
        text_length = ops.shape(text_valid)[1]
        is_enc = ops.zeros((ops.shape(text_ids)[0],), "bool")
        query_pos = cache_update_index + ops.arange(q, dtype="int32")
        key_pos = ops.arange(text_length, dtype="int32")
        written = ops.logical_and(text_valid, (key_pos < cache_update_index + q)[None])
        text_mask = mask_from_positions(query_pos, key_pos, written, is_enc, 0)

        _, vanilla_out, vanilla_cache = self.run_vanilla_set(
            text_ids, text_mask, pos_tags, cache=cache["vanilla"],
            cache_update_index=cache_update_index)
        nm_key_valid = ops.concatenate([ops.ones_like(aux_ids, "bool"), written], axis=1)
        nm_key_pos = ops.arange(a + text_length, dtype="int32")
        prefill = isinstance(cache_update_index, int) and cache_update_index == 0
        if prefill:
            nm_in = ops.concatenate(
                [ops.cast(self.embed_aux_tokens(aux_ids), vanilla_out.dtype), vanilla_out], 1)
            nm_query_pos = ops.arange(a + q, dtype="int32")
            nm_index = 0
        else:
            nm_in, nm_query_pos, nm_index = vanilla_out, a + query_pos, a + cache_update_index
        nm_mask = mask_from_positions(nm_query_pos, nm_key_pos, nm_key_valid, is_enc, a)
        gates, nm_cache = self.neuromodulatory_set(nm_in, nm_mask, cache=cache["neuromodulatory"],
                                                   cache_update_index=nm_index)
        x_gate = self.gate(gates, vanilla_out)
        y, output_cache = self.output_set(x_gate, aux_ids[:, TASK_POSITION], text_mask,
                                          cache=cache["output"],
                                          cache_update_index=cache_update_index)
        new_cache = {"vanilla": vanilla_cache, "neuromodulatory": nm_cache,
                     "output": output_cache}
        return self.head(y), new_cache

    def get_config(self):
        return {"config": self.config.to_dict(), "return_gates": self.return_gates,
                "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def build_model(config, gpt2=None, return_gates=False):
    """Build a NeMoT whose weights exist.

    Args:
        config: a ``NeMoTConfig``.
        gpt2: optional GPT-2 weights for the vanilla set: a KerasHub preset
            name or directory, or a Hugging Face GPT-2 checkpoint directory.
        return_gates: return the gate values from every call.
    """
    model = NeMoT(config, return_gates=return_gates)
    model.build()
    if gpt2 is not None:
        from nemot.models.gpt2 import load_vanilla_set

        load_vanilla_set(model, gpt2)
    return model


def load_weights_partial(model, path):
    """Start a NeMoT with reading strategies from a checkpoint of the same model without them.

    Thesis s.3.5.5: NeMoT_aoi and NeMoT_high start from NeMoT_general's weights;
    the reading-strategy weights keep their Glorot-uniform start. A checkpoint
    that already has the strategies loads with ``model.load_weights``.

    Args:
        model: a built NeMoT (any ``reading_strategies``).
        path: a ``.keras`` or ``.weights.h5`` file saved from a NeMoT whose
            config is ``model.config`` without reading strategies.

    Returns:
        The paths of the weights left at their initial values.

    Example:
        >>> model = build_model(cfg.replace(reading_strategies=("aoi",)))
        >>> load_weights_partial(model, "checkpoints/general/model_last.keras")
        ['ne_mo_t/reading_strategies/aoi/w1/kernel', ...]
    """
    path = str(path)
    if not path.endswith((".keras", ".weights.h5")):
        raise ValueError(f"{path}: expected a .keras or .weights.h5 checkpoint")
    source = NeMoT(model.config.replace(reading_strategies=()))
    source.build()
    try:
        source.load_weights(path)
    except (ValueError, KeyError) as error:
        raise ValueError(f"{path}: not a checkpoint of this NeMoT without reading strategies "
                         f"(config {model.config.replace(reading_strategies=())}): "
                         f"{error}") from error
    # Paths without the model's own name ("ne_mo_t", "ne_mo_t_1", ...).
    saved = {v.path.split("/", 1)[1]: v for v in source.weights}
    fresh = []
    for variable in model.weights:
        match = saved.pop(variable.path.split("/", 1)[1], None)
        if match is None:
            fresh.append(variable.path)
        else:
            variable.assign(match.value)
    if saved:
        raise ValueError(f"{path}: weights {sorted(saved)[:5]} have no place in the model")
    return fresh


def _count(layer):
    return int(sum(np.prod(w.shape) for w in layer.weights))


def parameter_breakdown(model):
    """Parameters per component; ``total`` is their sum (every weight counted once).

    Keys: ``vanilla_set``, ``aux_embedding``, ``neuromodulatory_set``,
    ``output_set`` (all blocks), ``head``, ``vanilla_head``, ``total``, and
    ``output_blocks`` with the count of each named block, ``reading_strategies``
    (0 without them). For the GPT-2 baseline: ``vanilla_set``, ``head`` and ``total``.
    """
    if not isinstance(model, NeMoT):
        from nemot.models.gpt2 import baseline_parameter_breakdown

        return baseline_parameter_breakdown(model)
    parts = {
        "vanilla_set": _count(model.vanilla_set),
        "aux_embedding": _count(model.aux_embedding) if model.config.aux_embedding == "separate" else 0,
        "neuromodulatory_set": _count(model.neuromodulatory_set),
        "output_set": _count(model.output_set),
        "head": _count(model.head),
        "vanilla_head": _count(model.vanilla_head) if model.config.vanilla_head else 0,
        "reading_strategies": (_count(model.reading_strategies)
                               if model.config.reading_strategies else 0),
    }
    parts["total"] = sum(parts.values())
    parts["output_blocks"] = {name: _count(block)
                              for name, block in model.output_set.blocks.items()}
    return parts
