"""The Neuromodulated Transformer (thesis chapter 3, Figure 3.1, eqs. 3.1-3.14).

Reading order of ``NeMoT.forward`` (``call`` and cached decoding both run it)::

    aux, text   = token_ids[:, :3], token_ids[:, 3:]      # [<cls>, <mode>, <task>] + text
    v           = vanilla_set(text)                      # GPT-2, eq. 3.11
    v           = reading_strategies(v, text, pos_tags)  # optional, thesis s.3.4.3 (or after
                                                         # the embeddings); vanilla head: raw v
    nm          = neuromodulatory_set([aux_emb ; v])     # eq. 3.12
    gates, x    = gate(nm, v)                            # sigmoid(Drop(nm)), x = gates[:, 3:] * v
                                                         # (eqs. 3.12, 3.14)
    y           = output_set[task](x)                    # eq. 3.13, per example
    logits      = head(y); vanilla_logits = vanilla_head(v)   # eq. 3.14

Per-layer modulations named in the config (PALs, HyperGrid, modulated activations:
:mod:`nemot.modulation`) read the task index in every set and, in the output set, the
neuromodulatory output too.
"""

import keras
import numpy as np
from keras import ops

from nemot import vocab
from nemot.backend import concrete
from nemot.config import NeMoTConfig
from nemot.layers.masks import mask_from_positions
from nemot.layers.reading_strategies import ReadingStrategies
from nemot.layers.sets import NeuromodulatorySet, OutputSet, VanillaSet
from nemot.models.conventions import DatasetFitMixin, PresetMixin
from nemot.models.gpt2 import load_vanilla_set
from nemot.models.losses import CombinedLossMixin
from nemot.models.routing import BlockUpdateGuard
from nemot.models.weights import count_weights, transfer_weights
from nemot.modulation.base import HostsModulations, task_index
from nemot.modulation.gate import Gate


def as_config(config):
    return NeMoTConfig.from_dict(config) if isinstance(config, dict) else config


def text_masks(text_valid, is_enc, query_start, query_length, num_aux, with_aux):
    """The text mask and the NM-set mask of the queries ``[query_start, +query_length)``.

    ``text_valid`` bool [batch, n]: non-pad text positions (of the whole cache when
    decoding). Keys at or after ``query_start + query_length`` are not written yet.
    ``with_aux``: the NM queries include the auxiliary tokens (the uncached pass and
    the prefill); otherwise they are text positions only.
    """
    n = ops.shape(text_valid)[1]
    query_pos = query_start + ops.arange(query_length, dtype="int32")
    key_pos = ops.arange(n, dtype="int32")
    written = ops.logical_and(text_valid, (key_pos < query_start + query_length)[None])
    text_mask = mask_from_positions(query_pos, key_pos, written, is_enc, 0)
    nm_valid = ops.concatenate([ops.ones((ops.shape(text_valid)[0], num_aux), "bool"),
                                written], axis=1)
    nm_query = ops.arange(num_aux + query_length, dtype="int32") if with_aux \
        else num_aux + query_pos
    nm_mask = mask_from_positions(nm_query, ops.arange(num_aux + n, dtype="int32"), nm_valid,
                                  is_enc, num_aux)
    return text_mask, nm_mask


@keras.saving.register_keras_serializable(package="nemot")
class NeMoT(PresetMixin, DatasetFitMixin, CombinedLossMixin, HostsModulations, keras.Model):
    """The NeMoT model: vanilla set, neuromodulatory set, gate, output set, heads.

    Call it on ``{"token_ids": int [batch, 3 + n]}`` (auxiliary tokens first,
    text right-padded with ``<pad>``). Returns a dict with ``"logits"``
    [batch, n, vocab] of the main head, ``"vanilla_logits"`` of the vanilla
    head when ``config.vanilla_head`` (skipped in training when the compiled loss
    has no vanilla-set term), and ``"gates"`` [batch, 3 + n, d_model] when
    ``return_gates``. Each example's mode token (``<dec>``/``<enc>``) picks its
    masks and its task token picks its output block.

    Training: ``compile(optimizer)`` uses ``L1 + 0.2 L2 + 0.5 L3`` (eq. 3.17);
    ``compile(optimizer, loss=nemot.NeMoTLoss(...))`` sets other weights. An output
    block that no example of a training batch selects is not updated, its optimizer
    slots included (:mod:`nemot.models.routing`).

    Saving: ``model.save("m.keras")`` (one file, :func:`nemot.load_model`), or KerasHub's
    preset directory with the tokenizer: ``model.save_to_preset(dir)``,
    ``NeMoT.from_preset(dir)`` (:mod:`nemot.models.conventions`).

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
        self.config = as_config(config)
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
        self.gate = Gate(cfg.dropout, dropout_before_sigmoid=cfg.nm_dropout_before_sigmoid,
                         name="gate")
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
            self.aux_embedding.build((None, vocab.NUM_AUX))
        self.neuromodulatory_set.build(None)
        self.output_set.build(None)
        self.head.build((None, None, cfg.d_model))
        if cfg.vanilla_head:
            self.vanilla_head.build((None, None, cfg.d_model))
        self.built = True

    def _on_compile_loss(self, loss):
        # A head no active term reads gets no gradient: freeze it rather than let the
        # optimizer warn about it at every step (pre-training is L1 only).
        if self.config.vanilla_head:
            self.vanilla_head.trainable = bool(loss.vanilla_weight)

    def compile(self, optimizer="adam", loss=None, **kwargs):
        super().compile(optimizer, loss=loss, **kwargs)
        self.block_update_guard = BlockUpdateGuard(
            self.optimizer, [block.trainable_variables
                             for block in self.output_set.blocks.values()])

    def train_step(self, *args):
        """Keras's train step (``(data)``, or ``(state, data)`` on JAX), with the blocks
        the batch selects given to the block update guard."""
        x, _, _ = keras.utils.unpack_x_y_sample_weight(args[-1])
        tasks = ops.cast(x["token_ids"], "int32")[:, vocab.TASK_POSITION]
        self.block_update_guard.select(ops.any(self.output_set.selection(tasks), axis=0))
        try:
            return super().train_step(*args)
        finally:
            self.block_update_guard.release()

    def embed_aux_tokens(self, aux_ids):
        """Auxiliary-token embeddings: no position, no scaling (original code)."""
        if self.config.aux_embedding == "shared":
            return self.vanilla_set.token_embedding(aux_ids)
        return self.aux_embedding(aux_ids)

    def check_aux_tokens(self, aux_ids, where="token_ids", modes=vocab.MODES):
        """A clear error for a mode or task token this model cannot serve (eager values;
        inside a traced function the data pipelines have checked every example)."""
        aux = concrete(aux_ids)
        if aux is not None:
            vocab.check_aux_tokens(aux, self.config.output_blocks, where=where, modes=modes)

    def check_text_length(self, text_length):
        """A clear error for more text positions than the learned position table has
        (past it a gather fails on CPU and reads zeros on GPU); None (unknown) passes."""
        cfg = self.config
        if (isinstance(text_length, int) and cfg.position_encoding == "learned"
                and text_length > cfg.max_position_embeddings):
            raise ValueError(
                f"token_ids: {text_length} text positions ({text_length + vocab.NUM_AUX} ids "
                f"with the auxiliary tokens), but the model has {cfg.max_position_embeddings} "
                f"positions (max_position_embeddings; its max_text_length is "
                f"{cfg.max_text_length}): "
                f"make the data with max_text_length={cfg.max_text_length}, e.g. "
                "qa_dataset(..., max_text_length=config.max_text_length)")

    def check_batch(self, token_ids):
        """The ``ValueError`` of calling the model, for concrete token ids [batch, 3 + n]."""
        self.check_text_length(np.shape(token_ids)[1] - vocab.NUM_AUX)
        self.check_aux_tokens(token_ids)

    def fit(self, x=None, y=None, *args, validation_data=None, **kwargs):
        """Keras' ``fit``, with the data checked on the host: a compiled train step sees no
        values, so a task token no output block serves, or a text longer than the model's
        positions, would otherwise train silently or fail obscurely. Arrays are checked
        now, a ``tf.data`` dataset as it is read
        (:func:`nemot.data.pipelines.check_as_read`), with the error calling the model
        raises."""
        if validation_data is not None:
            kwargs["validation_data"] = validation_data
        if not hasattr(x, "element_spec"):  # not tf.data: arrays, checked now
            features = x[0] if isinstance(x, (tuple, list)) else x
            if isinstance(features, dict) and "token_ids" in features:
                self.check_batch(np.asarray(features["token_ids"]))
            return super().fit(x, y, *args, **kwargs)
        from nemot.data import pipelines  # tf.data is in use, so TensorFlow is loaded

        def checked(data):
            return pipelines.check_as_read(data, self.check_batch, self.check_text_length)

        if validation_data is not None:
            kwargs["validation_data"] = checked(validation_data)
        with pipelines.python_errors():
            return super().fit(checked(x), y, *args, **kwargs)

    def call(self, inputs, training=None, return_gates=None):
        token_ids = ops.cast(inputs["token_ids"], "int32")
        aux_ids, text_ids = token_ids[:, :vocab.NUM_AUX], token_ids[:, vocab.NUM_AUX:]
        self.check_aux_tokens(aux_ids)
        self.check_text_length(text_ids.shape[1])
        outputs, _ = self.forward(aux_ids, text_ids, ops.not_equal(text_ids, vocab.PAD_ID),
                                  pos_tags=inputs.get("pos_tags"), training=training,
                                  vanilla_logits=self.config.vanilla_head and (
                                      not training or self.needs_output("vanilla")))
        if not (self.return_gates if return_gates is None else return_gates):
            outputs.pop("gates")
        return outputs

    def forward(self, aux_ids, text_ids, text_valid, cache=None, cache_update_index=0,
                pos_tags=None, training=None, vanilla_logits=False):
        """The forward pass, over the whole text or, with a cache, over new positions.

        Args:
            aux_ids: int [batch, 3] auxiliary tokens.
            text_ids: int [batch, q] text tokens at positions ``[index, index + q)``.
            text_valid: bool [batch, n] non-pad text positions (n = q without a cache,
                the cache length with one).
            cache: from :meth:`init_cache`, or None.
            cache_update_index: text position of ``text_ids[:, 0]``; the auxiliary
                tokens run (prefill) when it is the Python int 0.
            pos_tags: int [batch, q], needed with the highlighting reading strategy.
            vanilla_logits: also return the vanilla head's logits.

        Returns:
            ``(outputs, cache)``: ``outputs`` has ``"logits"``, ``"gates"`` and maybe
            ``"vanilla_logits"``; ``cache`` is None without one.
        """
        a = vocab.NUM_AUX
        first = isinstance(cache_update_index, int) and cache_update_index == 0
        is_enc = ops.equal(aux_ids[:, vocab.MODE_POSITION], vocab.ENC_ID)
        text_mask, nm_mask = text_masks(text_valid, is_enc, cache_update_index,
                                        ops.shape(text_ids)[1], a, with_aux=first)
        tasks = aux_ids[:, vocab.TASK_POSITION]
        conditioning = {"task_index": task_index(tasks, self.config.task_token_ids)}
        caches = cache or {}

        vanilla_out, read_out, vanilla_cache = self.run_vanilla_set(
            text_ids, text_mask, pos_tags, cache=caches.get("vanilla"),
            cache_update_index=cache_update_index, training=training, conditioning=conditioning)
        nm_in = read_out
        if first:
            nm_in = ops.concatenate(
                [ops.cast(self.embed_aux_tokens(aux_ids), read_out.dtype), read_out], axis=1)
        nm_out = self.neuromodulatory_set(
            nm_in, nm_mask, cache=caches.get("neuromodulatory"),
            cache_update_index=0 if first else a + cache_update_index, training=training,
            conditioning=conditioning)
        nm_out, nm_cache = nm_out if cache is not None else (nm_out, None)
        gates, x_gate = self.gate(nm_out, read_out, training=training)
        # The NM output at the task token: from this pass, or kept from the prefill.
        task_context = gates[:, vocab.TASK_POSITION] if first else caches["task_context"]
        conditioning.update(context=task_context, context_tokens=gates[:, -ops.shape(
            text_ids)[1]:])
        y = self.output_set(x_gate, tasks, text_mask, cache=caches.get("output"),
                            cache_update_index=cache_update_index, training=training,
                            conditioning=conditioning)
        y, output_cache = y if cache is not None else (y, None)

        outputs = {"logits": self.head(y), "gates": gates}
        if vanilla_logits:
            outputs["vanilla_logits"] = self.vanilla_head(vanilla_out)
        new_cache = None
        if cache is not None:
            new_cache = {"vanilla": vanilla_cache, "neuromodulatory": nm_cache,
                         "output": output_cache,
                         "task_context": ops.cast(task_context, cache["task_context"].dtype)}
        return outputs, new_cache

    def run_vanilla_set(self, text_ids, attention_mask, pos_tags=None, cache=None,
                        cache_update_index=0, training=None, conditioning=None):
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
                               embeddings_transform=read if at_embeddings else None,
                               conditioning=conditioning)
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
            "neuromodulatory": zeros(cfg.num_nm_layers, length=vocab.NUM_AUX + text_length),
            "output": zeros(cfg.num_output_blocks, cfg.num_output_layers, length=text_length),
            "task_context": ops.zeros((batch_size, cfg.d_model), dtype),
        }

    def call_with_cache(self, aux_ids, text_ids, cache, cache_update_index, text_valid,
                        pos_tags=None):
        """Run text positions ``[index, index + q)`` against the caches (inference).

        Args:
            aux_ids: int [batch, 3] auxiliary tokens (mode must be ``<dec>``).
            text_ids: int [batch, q] the new text tokens.
            cache: from ``init_cache`` (or the previous call).
            cache_update_index: text position of ``text_ids[:, 0]``; pass the Python
                int 0 for the prefill call (it runs the auxiliary tokens).
            text_valid: bool [batch, text_length], False at padding positions.
            pos_tags: int [batch, q] POS category ids of ``text_ids``, needed with the
                highlighting reading strategy.

        Returns:
            ``(logits [batch, q, vocab], cache)``.
        """
        outputs, cache = self.forward(aux_ids, text_ids, text_valid, cache=cache,
                                      cache_update_index=cache_update_index, pos_tags=pos_tags)
        return outputs["logits"], cache

    def parameter_breakdown(self):
        """Parameters per component; ``total`` is their sum (every weight counted once).

        Keys: ``vanilla_set``, ``aux_embedding``, ``neuromodulatory_set``,
        ``output_set`` (all blocks), ``head``, ``vanilla_head``, ``reading_strategies``
        (0 without them), ``total``, and ``output_blocks`` with each named block's count.
        """
        cfg = self.config
        parts = {
            "vanilla_set": count_weights(self.vanilla_set),
            "aux_embedding": count_weights(self.aux_embedding)
            if cfg.aux_embedding == "separate" else 0,
            "neuromodulatory_set": count_weights(self.neuromodulatory_set),
            "output_set": count_weights(self.output_set),
            "head": count_weights(self.head),
            "vanilla_head": count_weights(self.vanilla_head) if cfg.vanilla_head else 0,
            "reading_strategies": count_weights(self.reading_strategies)
            if cfg.reading_strategies else 0,
        }
        parts["total"] = sum(parts.values())
        parts["output_blocks"] = {name: count_weights(block)
                                  for name, block in self.output_set.blocks.items()}
        return parts

    def get_config(self):
        return {"config": self.config.to_dict(), "return_gates": self.return_gates,
                "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    @staticmethod
    def config_for_preset(name):
        """The ``NeMoTConfig`` a preset name stands for (``from_preset``)."""
        return NeMoTConfig.preset(name)


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
    _, fresh, unplaced = transfer_weights(source, model)
    if unplaced:
        raise ValueError(f"{path}: weights {unplaced[:5]} have no place in the model")
    return fresh


def parameter_breakdown(model):
    """Parameters per component of ``model`` (NeMoT or the GPT-2 baseline); see their
    ``parameter_breakdown`` methods."""
    return model.parameter_breakdown()
