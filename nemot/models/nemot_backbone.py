"""The NeMoT backbone (thesis chapter 3, Figure 3.1, eqs. 3.11-3.14): the network, no heads,
no loss. The task around it is :class:`nemot.models.nemot_causal_lm.NeMoTCausalLM`.

``NeMoTBackbone.forward`` reads top to bottom::

    aux, text   = token_ids[:, :3], token_ids[:, 3:]      # [<cls>, <mode>, <task>] + text
    v           = vanilla_set(text)                      # GPT-2, eq. 3.11
    r           = reading_strategies(v, text, pos_tags)  # optional, thesis s.3.4.3 (or after
                                                         # the embeddings)
    nm          = neuromodulatory_set([aux_emb ; r])     # eq. 3.12
    gates, x    = gate(nm, r)                            # sigmoid(Drop(nm)), x = gates[:, 3:] * r
    y           = output_set[task](x)                    # eq. 3.13, per example

Per-layer modulations named in the config (PALs, HyperGrid, modulated activations:
:mod:`nemot.modulation`) read the task index in every set and, in the output set, the
neuromodulatory output too. The same method runs with key/value caches: the task's
``_build_cache`` and ``call_with_cache`` (KerasHub's decoding hooks) call it with them.
"""

import keras
import numpy as np
from keras import ops
from keras_hub.models import Backbone

from nemot import vocab
from nemot.backend import concrete
from nemot.config import as_config
from nemot.layers.masks import mask_from_positions
from nemot.layers.reading_strategies import ReadingStrategies
from nemot.layers.sets import NeuromodulatorySet, OutputSet, VanillaSet
from nemot.models.weights import count_weights
from nemot.modulation.base import Modulation, task_index
from nemot.modulation.gate import Gate


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


def unpack_inputs(inputs, owner, extra_keys=()):
    """``(token_ids, pos_tags)`` of a model input, checked as KerasHub checks its inputs:
    a dict with ``"token_ids"`` (and ``extra_keys``); any other key is an error naming it.
    A bare array is taken as the token ids."""
    if not isinstance(inputs, dict):
        return inputs, None
    unknown = sorted(set(inputs) - {"token_ids", *extra_keys})
    if unknown or "token_ids" not in inputs:
        why = (f"keys {unknown} are not inputs of this model" if unknown
               else "no 'token_ids'")
        hint = (" (padding is read from <pad> in token_ids: NeMoT takes no padding_mask)"
                if "padding_mask" in unknown else "")
        raise ValueError(f"{owner}: {why}{hint}; expected "
                         f"{sorted({'token_ids', *extra_keys})}")
    return inputs["token_ids"], inputs.get("pos_tags")


@keras.saving.register_keras_serializable(package="nemot")
class TextToTextInputs(keras.layers.Layer):
    """Token ids of the unified format -> ``(aux_ids, text_ids, text_mask, nm_mask)``.

    The masks of thesis Figure 3.2 for each example's mode token, built when the model
    runs (their size is the batch's), and the checks of the ids: a mode or task token the
    model cannot serve, or more text than its positions, is a clear error.
    """

    def __init__(self, config, reads_aux_tokens=True, **kwargs):
        super().__init__(**kwargs)
        self.config = as_config(config)
        self.reads_aux_tokens = reads_aux_tokens

    def call(self, token_ids):
        self.check_rank(token_ids.shape)
        token_ids = ops.cast(token_ids, "int32")
        # A gather of fixed positions tells shape inference (and model.summary()) there are
        # NUM_AUX of them, under TensorFlow's unknown and JAX's symbolic sequence lengths.
        aux_ids = ops.take(token_ids, list(range(vocab.NUM_AUX)), axis=1)
        text_ids = token_ids[:, vocab.NUM_AUX:]
        self.check_text_length(text_ids.shape[1])
        self.check_id_range(token_ids)
        if self.reads_aux_tokens:
            self.check_aux_tokens(aux_ids)
            is_enc = ops.equal(aux_ids[:, vocab.MODE_POSITION], vocab.ENC_ID)
        else:  # GPT-2: always causal, any task token
            is_enc = ops.zeros((ops.shape(text_ids)[0],), "bool")
        text_mask, nm_mask = text_masks(ops.not_equal(text_ids, vocab.PAD_ID), is_enc, 0,
                                        ops.shape(text_ids)[1], vocab.NUM_AUX, with_aux=True)
        return aux_ids, text_ids, text_mask, nm_mask

    def compute_output_spec(self, token_ids):
        """The shapes of :meth:`call`'s results, with its checks of a symbolic input's
        shape, without tracing it (Keras's symbolic calls: the functional graph)."""
        self.check_rank(token_ids.shape)
        batch, length = token_ids.shape
        n = None if length is None else length - vocab.NUM_AUX
        self.check_text_length(n)
        return (keras.KerasTensor((batch, vocab.NUM_AUX), "int32"),
                keras.KerasTensor((batch, n), "int32"),
                keras.KerasTensor((batch, n, n), "bool"),
                keras.KerasTensor((batch, length, length), "bool"))

    def check_aux_tokens(self, aux_ids, where="token_ids", modes=vocab.MODES):
        """A clear error for a mode or task token this model cannot serve (eager values;
        inside a traced function the data pipelines have checked every example)."""
        aux = concrete(aux_ids)
        if aux is not None:
            vocab.check_aux_tokens(aux, self.config.output_blocks, where=where, modes=modes)

    @staticmethod
    def check_rank(shape):
        """A clear error for ids that are not a batch of rows."""
        if len(shape) != 2:
            raise ValueError(f"token_ids: shape {tuple(shape)}; expected [batch, 3 + n] ids "
                             "(a dataset of single examples: batch it first, "
                             "dataset.batch(batch_size))")

    def check_id_range(self, token_ids):
        """A clear error for an id outside the vocabulary (eager values, as above)."""
        ids = concrete(token_ids)
        if ids is not None:
            vocab.check_id_range(ids, self.config.vocab_size)

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
        self.check_rank(np.shape(token_ids))
        self.check_text_length(np.shape(token_ids)[1] - vocab.NUM_AUX)
        vocab.check_id_range(token_ids, self.config.vocab_size)
        if self.reads_aux_tokens:
            self.check_aux_tokens(token_ids)

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict(),
                "reads_aux_tokens": self.reads_aux_tokens}


class BackboneNode(keras.layers.Layer):
    """One node of a backbone's functional graph running ``function`` (a method of the
    backbone) when the model runs: code that draws dropout seeds in training or passes
    callables between layers, which a graph of layers cannot hold. The layers it uses are
    the backbone's (not tracked here)."""

    def __init__(self, function, **kwargs):
        super().__init__(**kwargs)
        object.__setattr__(self, "function", function)

    def call(self, *args, training=None, **kwargs):
        return self.function(*args, training=training, **kwargs)


@keras.saving.register_keras_serializable(package="nemot")
class NeMoTBackbone(Backbone):
    """The NeMoT network: vanilla set, auxiliary embedding, neuromodulatory set, gate and
    output set (thesis Figure 3.1). No heads and no loss: see ``nemot.NeMoTCausalLM``.

    Call it on ``{"token_ids": int [batch, 3 + n]}`` (auxiliary tokens first, text
    right-padded with ``<pad>``; ``"pos_tags"`` [batch, n] too with the highlighting
    reading strategy). Each example's mode token (``<dec>``/``<enc>``) picks its masks and
    its task token its output block. Returns ``"hidden_states"`` [batch, n, d_model] (the
    output set's), ``"vanilla_hidden_states"`` [batch, n, d_model] (the vanilla set's, what
    the vanilla head reads) and ``"gates"`` [batch, 3 + n, d_model]. Like KerasHub's
    backbones it is a functional model; its graph is written in ``__init__``, top to
    bottom as the module docstring reads. Any other input key is an error.

    Args:
        config: a ``NeMoTConfig`` (or its dict).
        dtype: the dtype policy of the weights and computation.

    Example:
        >>> backbone = NeMoTBackbone(nemot.NeMoTConfig.preset("tiny"))
        >>> out = backbone({"token_ids": ids})
        >>> out["hidden_states"].shape, out["gates"].shape  # (B, n, 32), (B, 3 + n, 32)
    """

    def __init__(self, config, dtype=None, **kwargs):
        cfg = as_config(config)
        regularizer = keras.regularizers.L2(cfg.kernel_l2) if cfg.kernel_l2 else None
        # === Layers ===
        self.inputs_layer = TextToTextInputs(cfg, name="inputs", dtype=dtype)
        self.vanilla_set = VanillaSet(cfg, name="vanilla_set", dtype=dtype)
        self.reading_strategies = None
        if cfg.reading_strategies:
            self.reading_strategies = ReadingStrategies(
                cfg.reading_strategies, dropout=cfg.dropout, aoi_bias=cfg.compat_aoi_bias,
                kernel_regularizer=regularizer, name="reading_strategies", dtype=dtype)
        self.aux_embedding = None
        if cfg.aux_embedding == "separate":
            self.aux_embedding = keras.layers.Embedding(cfg.vocab_size, cfg.d_model,
                                                        name="aux_embedding", dtype=dtype)
        self.neuromodulatory_set = NeuromodulatorySet(cfg, name="neuromodulatory_set",
                                                      dtype=dtype)
        self.gate = Gate(cfg.dropout, dropout_before_sigmoid=cfg.nm_dropout_before_sigmoid,
                         name="gate", dtype=dtype)
        self.output_set = OutputSet(cfg, name="output_set", dtype=dtype)
        self.config = cfg
        self._build_sets()

        # === Functional model: the uncached pass (eqs. 3.11-3.14) ===
        token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
        inputs = {"token_ids": token_ids}
        pos_tags = None
        if "highlighting" in cfg.reading_strategies:
            pos_tags = inputs["pos_tags"] = keras.Input(shape=(None,), dtype="int32",
                                                        name="pos_tags")
        aux_ids, text_ids, text_mask, nm_mask = self.inputs_layer(token_ids)
        outputs = self.forward(aux_ids, text_ids, text_mask, nm_mask, pos_tags)
        del outputs["cache"]
        super().__init__(inputs=inputs, outputs=outputs,
                         dtype=dtype, **kwargs)

    def _build_sets(self):
        cfg = self.config
        self.vanilla_set.build(None)
        if self.reading_strategies is not None:
            self.reading_strategies.build((None, None, cfg.d_model))
        if self.aux_embedding is not None:
            self.aux_embedding.build((None, vocab.NUM_AUX))
        self.neuromodulatory_set.build(None)
        self.output_set.build(None)

    def call(self, inputs, training=None, mask=None):
        if not isinstance(inputs, dict):
            inputs = {"token_ids": inputs}
        unpack_inputs(inputs, type(self).__name__,
                      ("pos_tags",) if "highlighting" in self.config.reading_strategies else ())
        return super().call(inputs, training=training, mask=mask)

    def check_aux_tokens(self, aux_ids, where="token_ids", modes=vocab.MODES):
        self.inputs_layer.check_aux_tokens(aux_ids, where, modes)

    def check_text_length(self, text_length):
        self.inputs_layer.check_text_length(text_length)

    def check_batch(self, token_ids):
        self.inputs_layer.check_batch(token_ids)

    @property
    def token_embedding(self):
        """The vanilla set's word embedding (KerasHub's ``Backbone.token_embedding``)."""
        return self.vanilla_set.token_embedding

    @property
    def supports_cache(self):
        """False when a hosted modulation keeps no key/value cache (PALs): the model then
        decodes by recomputation (``nemot.models.generation``)."""
        return all(m.supports_cache for m in self._flatten_layers()
                   if isinstance(m, Modulation))

    def conditioning(self, tasks):
        """What the hosted modulations read: each example's task index."""
        return {"task_index": task_index(tasks, self.config.task_token_ids)}

    def nm_input(self, aux_ids, read_out):
        """``[aux embeddings ; r]``: the auxiliary tokens' embeddings (no position, no
        scaling: the original code) before the text."""
        embedding = self.vanilla_set.token_embedding if self.aux_embedding is None \
            else self.aux_embedding
        return ops.concatenate([ops.cast(embedding(aux_ids), read_out.dtype), read_out],
                               axis=1)

    def forward(self, aux_ids, text_ids, text_mask, nm_mask, pos_tags=None, cache=None,
                cache_update_index=0, training=None):
        """The network, eqs. 3.11-3.14, with or without key/value caches: the functional
        graph, the prefill of cached decoding and each decoding step all run this.

        Args:
            aux_ids: int [batch, 3], ``[<cls>, <mode>, <task>]``.
            text_ids: int [batch, q], the text positions of this pass.
            text_mask, nm_mask: the attention masks of the text queries and of the
                neuromodulatory set's queries (:func:`text_masks`).
            pos_tags: int [batch, q] POS ids, with the highlighting reading strategy.
            cache: None (no cache), or from :meth:`init_cache`. The auxiliary tokens run
                through the neuromodulatory set in this pass unless the cache already
                holds their result (``"task_context"``, written by the pass that ran them).
            cache_update_index: the text position of ``text_ids[:, 0]``.

        Returns:
            A dict: ``"hidden_states"`` [batch, q, d] (the output set's),
            ``"vanilla_hidden_states"`` [batch, q, d] (what the vanilla head reads),
            ``"gates"`` [batch, 3 + q, d] ([batch, q, d] when the auxiliary tokens are
            cached) and ``"cache"`` (None without one).
        """
        caching = cache is not None
        aux_cached = caching and "task_context" in cache
        tasks = aux_ids[:, vocab.TASK_POSITION]
        conditioning = self.conditioning(tasks)
        # v = vanilla_set(text); r = reading_strategies(v) where the config puts them.
        if self.reading_strategies is not None and isinstance(text_ids, keras.KerasTensor):
            # The strategies reach the vanilla set as a callable, which a functional graph
            # holds only inside a node of its own.
            vanilla_out, read_out = BackboneNode(
                lambda *args, **kwargs: self.run_vanilla_set(*args, **kwargs)[:2],
                name="vanilla_reading")(text_ids, text_mask, pos_tags, conditioning=conditioning)
            vanilla_cache = None
        else:
            vanilla_out, read_out, vanilla_cache = self.run_vanilla_set(
                text_ids, text_mask, pos_tags, cache=cache["vanilla"] if caching else None,
                cache_update_index=cache_update_index, training=training,
                conditioning=conditioning)
        # nm = neuromodulatory_set([aux embeddings ; r]) (the aux part once, when caching).
        nm_in = read_out if aux_cached else self.nm_input(aux_ids, read_out)
        nm = self.neuromodulatory_set(
            nm_in, nm_mask, cache=cache["neuromodulatory"] if caching else None,
            cache_update_index=vocab.NUM_AUX + cache_update_index if aux_cached else 0,
            training=training, conditioning=conditioning)
        nm_out, nm_cache = nm if caching else (nm, None)
        # gates = sigmoid(Drop(nm)); x = gates[:, 3:] * r.
        gates, x_gate = self.gate(nm_out, read_out, training=training)
        task_context = cache["task_context"] if aux_cached else gates[:, vocab.TASK_POSITION]
        conditioning.update(context=task_context,
                            context_tokens=gates if aux_cached else gates[:, vocab.NUM_AUX:])
        # y = output_set[task](x), per example.
        y = self.output_set(x_gate, tasks, text_mask,
                            cache=cache["output"] if caching else None,
                            cache_update_index=cache_update_index, training=training,
                            conditioning=conditioning)
        y, output_cache = y if caching else (y, None)
        new_cache = None
        if caching:
            new_cache = {"vanilla": vanilla_cache, "neuromodulatory": nm_cache,
                         "output": output_cache,
                         "task_context": ops.cast(task_context, cache["vanilla"].dtype)}
        return {"hidden_states": y, "vanilla_hidden_states": vanilla_out, "gates": gates,
                "cache": new_cache}

    def init_cache(self, batch_size, text_length, dtype=None):
        """Empty key/value caches of the three sets for ``text_length`` text positions
        (:meth:`forward` adds ``"task_context"`` when it runs the auxiliary tokens)."""
        cfg = self.config
        dtype = dtype or self.compute_dtype
        head_dim = cfg.d_model // cfg.num_heads

        def zeros(*layers, length):
            return ops.zeros((batch_size, *layers, 2, length, cfg.num_heads, head_dim), dtype)

        return {
            "vanilla": zeros(cfg.num_vanilla_layers, length=text_length),
            "neuromodulatory": zeros(cfg.num_nm_layers, length=vocab.NUM_AUX + text_length),
            "output": zeros(cfg.num_output_blocks, cfg.num_output_layers, length=text_length),
        }

    def decoding_masks(self, text_valid, query_start, query_length, cache):
        """The masks of a cached pass over the text queries ``[query_start, +query_length)``
        (decoding runs ``<dec>`` prompts only); the NM set's queries include the auxiliary
        tokens until the cache holds their result."""
        is_enc = ops.zeros((ops.shape(text_valid)[0],), "bool")
        return text_masks(text_valid, is_enc, query_start, query_length, vocab.NUM_AUX,
                          with_aux="task_context" not in cache)

    def run_vanilla_set(self, text_ids, attention_mask, pos_tags=None, cache=None,
                        cache_update_index=0, training=None, conditioning=None):
        """The vanilla set with the reading strategies where the config puts them.

        Returns ``(vanilla_out, read_out, cache)`` (the cache None without one):
        ``read_out`` is what the NM set and the gate read. At ``"vanilla_output"``
        (thesis) it is ``strategies(vanilla_out)`` while the vanilla head keeps the
        vanilla set's own output; at ``"embeddings"`` the strategies act on the input of
        the first vanilla layer and both outputs are the same.
        """
        strategies = self.reading_strategies

        def read(x):
            return strategies(x, text_ids, pos_tags, training=training)

        at_embeddings = (strategies is not None
                         and self.config.reading_strategy_position == "embeddings")
        out = self.vanilla_set(text_ids, attention_mask, cache=cache,
                               cache_update_index=cache_update_index, training=training,
                               embeddings_transform=read if at_embeddings else None,
                               conditioning=conditioning)
        out, cache = (out, None) if cache is None else out
        read_out = out if strategies is None or at_embeddings else read(out)
        return out, read_out, cache

    def parameter_breakdown(self):
        """Parameters per set (``vanilla_set``, ``aux_embedding``, ``neuromodulatory_set``,
        ``output_set``, ``reading_strategies``; 0 where absent) and ``output_blocks`` with
        each named block's count."""
        parts = {
            "vanilla_set": count_weights(self.vanilla_set),
            "aux_embedding": count_weights(self.aux_embedding)
            if self.aux_embedding is not None else 0,
            "neuromodulatory_set": count_weights(self.neuromodulatory_set),
            "output_set": count_weights(self.output_set),
            "reading_strategies": count_weights(self.reading_strategies)
            if self.reading_strategies is not None else 0,
        }
        parts["output_blocks"] = {name: count_weights(block)
                                  for name, block in self.output_set.blocks.items()}
        return parts

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict()}
