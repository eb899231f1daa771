"""The GPT-2 baseline of the thesis (docs/spec.md section 5): GPT-2 plus a new head."""

import keras
from keras import ops
from keras_hub.models import Backbone

from nemot import vocab
from nemot.config import NeMoTConfig, as_config
from nemot.layers.sets import VanillaSet
from nemot.models.gpt2 import GPT2_SIZES, config_from_gpt2, load_vanilla_set
from nemot.models.heads import vocabulary_head
from nemot.models.losses import NeMoTLoss
from nemot.models.nemot_backbone import TextToTextInputs, text_masks, unpack_inputs
from nemot.models.nemot_preprocessor import NeMoTPreprocessor
from nemot.models.nemot_tokenizer import NeMoTTokenizer
from nemot.models.task import TextToTextCausalLM
from nemot.models.weights import count_weights
from nemot.modulation.base import Modulation, task_index


@keras.saving.register_keras_serializable(package="nemot")
class GPT2BaselineBackbone(Backbone):
    """GPT-2 (the vanilla set) on the text of NeMoT's input.

    Takes NeMoT's input, ``{"token_ids": int [batch, 3 + n]}``; the auxiliary tokens are
    dropped (their task token still conditions the modulations a config hosts on the
    ``vanilla`` set) and the last n positions run through GPT-2, causal, padding masked.
    Returns ``{"hidden_states": [batch, n, d_model]}``.

    Args:
        config: a ``NeMoTConfig`` (or its dict); only the vanilla-set fields,
            ``vocab_size``, ``max_text_length`` and ``kernel_l2`` are used.
        dtype: the dtype policy.
    """

    def __init__(self, config, dtype=None, **kwargs):
        cfg = as_config(config)
        # === Layers ===
        self.inputs_layer = TextToTextInputs(cfg, reads_aux_tokens=False, name="inputs",
                                             dtype=dtype)
        self.vanilla_set = VanillaSet(cfg, name="vanilla_set", dtype=dtype)
        self.config = cfg
        self.build_layers()
        # === Functional model ===
        token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
        aux_ids, text_ids, text_mask, nm_mask = self.inputs_layer(token_ids)
        outputs = self.forward(aux_ids, text_ids, text_mask, nm_mask)
        del outputs["cache"]
        super().__init__(inputs={"token_ids": token_ids}, outputs=outputs, dtype=dtype,
                         **kwargs)

    def build_layers(self):
        self.vanilla_set.build(None)

    def forward(self, aux_ids, text_ids, text_mask, nm_mask=None, pos_tags=None, cache=None,
                cache_update_index=0, training=None):
        """GPT-2 over the text, with or without a key/value cache (NeMoT's
        :meth:`~nemot.models.nemot_backbone.NeMoTBackbone.forward` interface: ``nm_mask``
        and ``pos_tags`` are not read). Returns ``{"hidden_states", "cache"}``."""
        out = self.vanilla_set(text_ids, text_mask,
                               cache=None if cache is None else cache["vanilla"],
                               cache_update_index=cache_update_index, training=training,
                               conditioning=self.conditioning(aux_ids))
        if cache is None:
            return {"hidden_states": out, "cache": None}
        return {"hidden_states": out[0], "cache": {"vanilla": out[1]}}

    def init_cache(self, batch_size, text_length, dtype=None):
        """An empty key/value cache of the vanilla set for ``text_length`` positions."""
        cfg = self.config
        return {"vanilla": ops.zeros(
            (batch_size, cfg.num_vanilla_layers, 2, text_length, cfg.num_heads,
             cfg.d_model // cfg.num_heads), dtype or self.compute_dtype)}

    def decoding_masks(self, text_valid, query_start, query_length, cache):
        """GPT-2's causal mask of the text queries ``[query_start, +query_length)`` (padding
        masked), and no NM-set mask."""
        is_enc = ops.zeros((ops.shape(text_valid)[0],), "bool")
        return text_masks(text_valid, is_enc, query_start, query_length, vocab.NUM_AUX,
                          with_aux=False)[0], None

    def call(self, inputs, training=None, mask=None):
        if not isinstance(inputs, dict):
            inputs = {"token_ids": inputs}
        unpack_inputs(inputs, type(self).__name__)
        return super().call(inputs, training=training, mask=mask)

    def check_text_length(self, text_length):
        self.inputs_layer.check_text_length(text_length)

    def check_batch(self, token_ids):
        """GPT-2 reads no mode and serves any task token: the text length only."""
        self.inputs_layer.check_batch(token_ids)

    @property
    def token_embedding(self):
        return self.vanilla_set.token_embedding

    @property
    def supports_cache(self):
        return all(m.supports_cache for m in self._flatten_layers()
                   if isinstance(m, Modulation))

    def conditioning(self, aux_ids):
        """What the hosted modulations (``config.modulation`` on the ``vanilla`` set) read:
        the task index of each example's task token, as in NeMoT."""
        return {"task_index": task_index(aux_ids[:, vocab.TASK_POSITION],
                                         self.config.task_token_ids)}

    def parameter_breakdown(self):
        """Parameters per component: ``vanilla_set``."""
        return {"vanilla_set": count_weights(self.vanilla_set)}

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict()}


@keras.saving.register_keras_serializable(package="nemot")
class GPT2BaselineTokenizer(NeMoTTokenizer):
    """:class:`NeMoTTokenizer` of the baseline's presets (KerasHub finds a preset's
    tokenizer class by its backbone)."""

    backbone_cls = GPT2BaselineBackbone


@keras.saving.register_keras_serializable(package="nemot")
class GPT2BaselinePreprocessor(NeMoTPreprocessor):
    """:class:`NeMoTPreprocessor` of the baseline's presets: the same format (the
    baseline drops the auxiliary tokens)."""

    backbone_cls = GPT2BaselineBackbone
    tokenizer_cls = GPT2BaselineTokenizer


@keras.saving.register_keras_serializable(package="nemot")
class GPT2BaselineCausalLM(TextToTextCausalLM):
    """The thesis' GPT-2 baseline: :class:`GPT2BaselineBackbone` and a new randomly
    initialised ``Dense(vocab_size)`` head. Returns ``{"logits": [batch, n, vocab]}``.
    Default loss: ``L1 + 0.2 L2``, no vanilla-set term. Its backbone has NeMoT's
    ``forward`` and ``init_cache``, so KerasHub's ``generate`` decodes both the same way.

    Example:
        >>> model = build_baseline("tiny")
        >>> model({"token_ids": ids})["logits"].shape   # (batch, n, 50313)
        >>> model.compile(keras.optimizers.Adam(1e-5)); model.fit(dataset)
    """

    backbone_cls = GPT2BaselineBackbone
    preprocessor_cls = GPT2BaselinePreprocessor
    loss_terms = ("task", "lm")
    default_loss = NeMoTLoss(vanilla_weight=0)

    def make_heads(self):
        self.head = vocabulary_head(self.config, "head", self.backbone.dtype_policy)

    def heads(self, backbone_outputs):
        return {"logits": self.head(backbone_outputs["hidden_states"])}

    def parameter_breakdown(self):
        """Parameters of the baseline: ``vanilla_set``, ``head`` and ``total`` (and the
        backbone's other components, if it has any)."""
        parts = {**self.backbone.parameter_breakdown(), "head": count_weights(self.head)}
        parts["total"] = sum(parts.values())
        return parts

    @classmethod
    def config_for_preset(cls, name):
        """The config a preset name stands for (``from_preset``): :func:`baseline_config`."""
        return baseline_config(name)


def baseline_config(name="gpt2_medium"):
    """Baseline config by name: ``gpt2_medium`` (default), ``gpt2_small``, or a NeMoT preset."""
    if name in GPT2_SIZES:
        return NeMoTConfig.preset("thesis").replace(**GPT2_SIZES[name])
    if name in ("thesis", "small", "tiny"):
        return NeMoTConfig.preset(name)
    raise ValueError(f"unknown baseline preset {name!r}; expected one of "
                     f"{sorted(GPT2_SIZES) + ['small', 'thesis', 'tiny']}")


def build_baseline(config_or_preset=None, gpt2=None, seed=None):
    """Build a :class:`GPT2BaselineCausalLM` whose weights exist.

    Args:
        config_or_preset: a ``NeMoTConfig`` (or dict) or a preset name for
            ``baseline_config``. ``None``: the checkpoint's sizes on the thesis
            preset when ``gpt2`` is given, else GPT-2 Medium sizes.
        gpt2: optional GPT-2 weights (as in ``load_vanilla_set``); a size
            mismatch with an explicit config is an error.
        seed: seed of the new embedding rows.

    Example:
        >>> build_baseline(gpt2="gpt2_medium_en")       # the thesis baseline (online)
        >>> build_baseline(gpt2="/data/gpt2-medium")   # a downloaded HF checkpoint
    """
    if config_or_preset is None:
        config = config_from_gpt2(gpt2) if gpt2 is not None else baseline_config()
    elif isinstance(config_or_preset, str):
        config = baseline_config(config_or_preset)
    else:
        config = as_config(config_or_preset)
    model = GPT2BaselineCausalLM.from_config_object(config)
    if gpt2 is not None:
        load_vanilla_set(model, gpt2, seed=seed)
    return model
