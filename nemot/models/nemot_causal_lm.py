"""NeMoT as a KerasHub causal LM: :class:`NeMoTBackbone` plus the main and vanilla heads
(thesis eq. 3.14), the combined loss (eq. 3.17), the routing rule of the output blocks in
training, and cached decoding (KerasHub's ``call_with_cache``, ``<dec>`` mode).

Routing rule: an output block that no example of a training batch selects keeps its
weights and its optimizer slots. Routing gives such a block a zero gradient, and Adam
still moves a variable whose gradient is zero (its momentum decays but
``m / (sqrt(v) + eps)`` keeps stepping); in the original code such a block got no update.
:meth:`NeMoTCausalLM.train_step` keeps them (:mod:`nemot.models.routing`).
"""

import keras
from keras import ops

from nemot import vocab
from nemot.layers.heads import vocabulary_head
from nemot.models.gpt2 import load_vanilla_set
from nemot.models.nemot_backbone import NeMoTBackbone, text_masks
from nemot.models.routing import masked_train_step
from nemot.models.task import TextToTextCausalLM
from nemot.models.weights import count_weights, transfer_weights


@keras.saving.register_keras_serializable(package="nemot")
class NeMoTCausalLM(TextToTextCausalLM):
    """The NeMoT model for generation and training: backbone, heads, loss, ``generate``.

    Call it on ``{"token_ids": int [batch, 3 + n]}`` (auxiliary tokens first, text
    right-padded with ``<pad>``). Returns ``"logits"`` [batch, n, vocab] of the main head,
    ``"vanilla_logits"`` of the vanilla head when ``config.vanilla_head`` (skipped in
    training when the compiled loss has no vanilla-set term) and, with
    ``return_gates=True``, ``"gates"`` [batch, 3 + n, d_model].

    Training: ``compile(optimizer)`` uses ``NeMoTLoss()`` (``L1 + 0.2 L2 + 0.5 L3``, eq.
    3.17); ``fit`` takes formatted strings (through the preprocessor) or token ids with
    ``{"task_targets", "lm_targets"}``. An output block no example of a batch selects is
    not updated, its optimizer slots included.

    Args:
        backbone: a :class:`NeMoTBackbone`.
        preprocessor: a :class:`NeMoTPreprocessor`, or None (token ids in and out).

    Example:
        >>> lm = nemot.NeMoTCausalLM.from_preset("tiny", load_weights=False)
        >>> lm.generate("<q> Is the sky blue? <sep>", max_new_tokens=4, strip_prompt=True)
        >>> lm.compile(keras.optimizers.Adam(1e-4)); lm.fit(["<q> Sky? <sep> blue </s>"])
    """

    backbone_cls = NeMoTBackbone

    def make_heads(self):
        dtype = self.backbone.dtype_policy
        self.head = vocabulary_head(self.config, "head", dtype)
        self.vanilla_head = None
        if self.config.vanilla_head:
            self.vanilla_head = vocabulary_head(self.config, "vanilla_head", dtype)

    def heads(self, backbone_outputs, vanilla=True):
        """The main head on the output set (and the vanilla head on the vanilla set's
        output, when the config has one and ``vanilla``), eq. 3.14."""
        outputs = {"logits": self.head(backbone_outputs["hidden_states"])}
        if self.vanilla_head is not None and vanilla:
            outputs["vanilla_logits"] = self.vanilla_head(
                backbone_outputs["vanilla_hidden_states"])
        return outputs

    def on_compile_loss(self, loss):
        # A head no active term reads gets no gradient: freeze it rather than let the
        # optimizer warn about it at every step (pre-training is L1 only).
        if self.vanilla_head is not None:
            self.vanilla_head.trainable = bool(loss.vanilla_weight)

    def call(self, inputs, training=None, return_gates=False):
        """The graph of ``__init__``, with the vanilla head skipped in training when the
        compiled loss does not read it, and the gates when asked for."""
        out = self.backbone(inputs, training=training)
        outputs = self.heads(out, vanilla=not training or self.needs_output("vanilla"))
        if return_gates:
            outputs["gates"] = out["gates"]
        return outputs

    def train_step(self, *args):
        """Keras's train step (``(data)``, or ``(state, data)`` on JAX) with the routing
        rule: the blocks no example of the (global) batch selects keep weights and slots."""
        x, _, _ = keras.utils.unpack_x_y_sample_weight(args[-1])
        self.backbone.inputs_layer.check_rank(x["token_ids"].shape)
        tasks = ops.cast(x["token_ids"], "int32")[:, vocab.TASK_POSITION]
        selected = ops.any(self.backbone.output_set.selection(tasks), axis=0)
        blocks = [block.trainable_variables
                  for block in self.backbone.output_set.blocks.values()]
        return masked_train_step(self, super().train_step, args, selected, blocks)

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

    def prefill(self, aux_ids, text_ids, cache, text_valid, pos_tags=None):
        """Run the auxiliary tokens and the prompt's first text positions into the caches.

        Args:
            aux_ids: int [batch, 3] auxiliary tokens (mode ``<dec>``).
            text_ids: int [batch, q] text positions ``[0, q)``.
            cache: from :meth:`init_cache`.
            text_valid: bool [batch, text_length], False at padding positions.
            pos_tags: int [batch, q] POS category ids of ``text_ids``, needed with the
                highlighting reading strategy.

        Returns:
            ``(logits [batch, q, vocab], cache)``.
        """
        backbone = self.backbone
        tasks = aux_ids[:, vocab.TASK_POSITION]
        is_enc = ops.equal(aux_ids[:, vocab.MODE_POSITION], vocab.ENC_ID)
        text_mask, nm_mask = text_masks(text_valid, is_enc, 0, ops.shape(text_ids)[1],
                                        vocab.NUM_AUX, with_aux=True)
        conditioning = backbone.conditioning(tasks)
        _, read_out, vanilla_cache = backbone.run_vanilla_set(
            text_ids, text_mask, pos_tags, cache=cache["vanilla"], conditioning=conditioning)
        nm_out, nm_cache = backbone.neuromodulatory_set(
            backbone.nm_input(aux_ids, read_out), nm_mask, cache=cache["neuromodulatory"],
            conditioning=conditioning)
        gates, x_gate = backbone.gate(nm_out, read_out)
        task_context = gates[:, vocab.TASK_POSITION]
        conditioning.update(context=task_context, context_tokens=gates[:, vocab.NUM_AUX:])
        y, output_cache = backbone.output_set(x_gate, tasks, text_mask, cache=cache["output"],
                                              conditioning=conditioning)
        return self.head(y), {"vanilla": vanilla_cache, "neuromodulatory": nm_cache,
                              "output": output_cache,
                              "task_context": ops.cast(task_context,
                                                       cache["task_context"].dtype)}

    def call_with_cache(self, aux_ids, text_ids, cache, cache_update_index, text_valid,
                        pos_tags=None):
        """Run new text positions ``[index, index + q)`` against the caches (after
        :meth:`prefill`), as KerasHub's ``GPT2CausalLM.call_with_cache``.

        Args:
            aux_ids: int [batch, 3] auxiliary tokens (their keys are in the caches).
            text_ids: int [batch, q] the new text tokens.
            cache: from :meth:`prefill` (or the previous call).
            cache_update_index: text position of ``text_ids[:, 0]``.
            text_valid: bool [batch, text_length], False at padding positions.
            pos_tags: as in :meth:`prefill`.

        Returns:
            ``(logits [batch, q, vocab], cache)``.
        """
        backbone = self.backbone
        tasks = aux_ids[:, vocab.TASK_POSITION]
        is_enc = ops.equal(aux_ids[:, vocab.MODE_POSITION], vocab.ENC_ID)
        text_mask, nm_mask = text_masks(text_valid, is_enc, cache_update_index,
                                        ops.shape(text_ids)[1], vocab.NUM_AUX, with_aux=False)
        conditioning = backbone.conditioning(tasks)
        _, read_out, vanilla_cache = backbone.run_vanilla_set(
            text_ids, text_mask, pos_tags, cache=cache["vanilla"],
            cache_update_index=cache_update_index, conditioning=conditioning)
        nm_out, nm_cache = backbone.neuromodulatory_set(
            read_out, nm_mask, cache=cache["neuromodulatory"],
            cache_update_index=vocab.NUM_AUX + cache_update_index, conditioning=conditioning)
        gates, x_gate = backbone.gate(nm_out, read_out)
        # The NM output at the task token, kept from the prefill.
        conditioning.update(context=cache["task_context"], context_tokens=gates)
        y, output_cache = backbone.output_set(x_gate, tasks, text_mask, cache=cache["output"],
                                              cache_update_index=cache_update_index,
                                              conditioning=conditioning)
        return self.head(y), {"vanilla": vanilla_cache, "neuromodulatory": nm_cache,
                              "output": output_cache, "task_context": cache["task_context"]}

    def parameter_breakdown(self):
        """Parameters per component; ``total`` is their sum (every weight counted once).

        Keys: ``vanilla_set``, ``aux_embedding``, ``neuromodulatory_set``,
        ``output_set`` (all blocks), ``head``, ``vanilla_head``, ``reading_strategies``
        (0 without them), ``total``, and ``output_blocks`` with each named block's count.
        """
        parts = self.backbone.parameter_breakdown()
        blocks = parts.pop("output_blocks")
        parts["head"] = count_weights(self.head)
        parts["vanilla_head"] = count_weights(self.vanilla_head) if self.vanilla_head else 0
        parts["total"] = sum(parts.values())
        parts["output_blocks"] = blocks
        return parts


def build_model(config, gpt2=None, preprocessor="default"):
    """Build a :class:`NeMoTCausalLM` whose weights exist.

    Args:
        config: a ``NeMoTConfig``.
        gpt2: optional GPT-2 weights for the vanilla set: a KerasHub preset
            name or directory, or a Hugging Face GPT-2 checkpoint directory.
        preprocessor: a :class:`NeMoTPreprocessor`, None, or ``"default"`` (GPT-2's
            tokenizer files, the config's text length).
    """
    model = NeMoTCausalLM.from_config_object(config, preprocessor=preprocessor)
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
        ['nemot_backbone/reading_strategies/aoi/w1/kernel', ...]
    """
    path = str(path)
    if not path.endswith((".keras", ".weights.h5")):
        raise ValueError(f"{path}: expected a .keras or .weights.h5 checkpoint")
    source = build_model(model.config.replace(reading_strategies=()), preprocessor=None)
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
