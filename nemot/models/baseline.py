"""The GPT-2 baseline of the thesis (docs/spec.md section 5): GPT-2 plus a new head."""

import keras
from keras import ops

from nemot import vocab
from nemot.config import NeMoTConfig
from nemot.layers.sets import VanillaSet
from nemot.models.conventions import DatasetFitMixin, PresetMixin
from nemot.models.gpt2 import GPT2_SIZES, config_from_gpt2, load_vanilla_set
from nemot.models.losses import CombinedLossMixin, NeMoTLoss
from nemot.models.nemot import as_config, text_masks
from nemot.models.weights import count_weights
from nemot.modulation.base import HostsModulations, task_index


@keras.saving.register_keras_serializable(package="nemot")
class GPT2Baseline(PresetMixin, DatasetFitMixin, CombinedLossMixin, HostsModulations,
                   keras.Model):
    """GPT-2 and a new randomly initialised ``Dense(vocab_size)`` head.

    Takes the same input as NeMoT, ``{"token_ids": int [batch, 3 + n]}``; the
    auxiliary tokens (mode and task included) are dropped and the last n
    positions run through GPT-2 (the vanilla set, causal, padding masked) and the
    head. Returns ``{"logits": [batch, n, vocab]}``. Default loss: ``L1 + 0.2 L2``,
    no vanilla-set term. Cached decoding has NeMoT's interface (``init_cache``,
    ``call_with_cache``), so the same decoders serve both.

    Args:
        config: a ``NeMoTConfig`` (or its dict); only the vanilla-set fields,
            ``vocab_size``, ``max_text_length`` and ``kernel_l2`` are used.

    Example:
        >>> model = build_baseline("tiny")
        >>> model({"token_ids": ids})["logits"].shape   # (batch, n, 50313)
        >>> model.compile(keras.optimizers.Adam(1e-5)); model.fit(dataset)
    """

    loss_terms = ("task", "lm")
    default_loss = NeMoTLoss(vanilla_weight=0)

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        self.config = as_config(config)
        cfg = self.config
        regularizer = keras.regularizers.L2(cfg.kernel_l2) if cfg.kernel_l2 else None
        self.vanilla_set = VanillaSet(cfg, name="vanilla_set")
        self.head = keras.layers.Dense(cfg.vocab_size, kernel_regularizer=regularizer,
                                       name="head")
        self._init_loss_terms()

    def build(self, input_shape=None):
        self.vanilla_set.build(None)
        self.head.build((None, None, self.config.d_model))
        self.built = True

    def call(self, inputs, training=None):
        token_ids = ops.cast(inputs["token_ids"], "int32")
        aux_ids, text_ids = token_ids[:, :vocab.NUM_AUX], token_ids[:, vocab.NUM_AUX:]
        outputs, _ = self.forward(aux_ids, text_ids, ops.not_equal(text_ids, vocab.PAD_ID),
                                  training=training)
        return outputs

    def forward(self, aux_ids, text_ids, text_valid, cache=None, cache_update_index=0,
                pos_tags=None, training=None):
        """GPT-2 over the text (always causal), with an optional cache; see
        :meth:`nemot.models.NeMoT.forward`."""
        out = self.vanilla_set(text_ids, self.text_mask(text_ids, text_valid, cache_update_index),
                               cache=cache and cache["vanilla"],
                               cache_update_index=cache_update_index, training=training,
                               conditioning=self.conditioning(aux_ids))
        out, vanilla_cache = (out, None) if cache is None else out
        new_cache = None if cache is None else {"vanilla": vanilla_cache}
        return {"logits": self.head(out)}, new_cache

    @staticmethod
    def text_mask(text_ids, text_valid, cache_update_index=0):
        """GPT-2's causal mask of the queries ``text_ids`` (padding masked)."""
        is_enc = ops.zeros((ops.shape(text_ids)[0],), "bool")
        return text_masks(text_valid, is_enc, cache_update_index, ops.shape(text_ids)[1],
                          vocab.NUM_AUX, with_aux=False)[0]

    def conditioning(self, aux_ids):
        """What the hosted modulations (``config.modulation`` on the ``vanilla`` set) read:
        the task index of each example's task token, as in NeMoT."""
        return {"task_index": task_index(aux_ids[:, vocab.TASK_POSITION],
                                         self.config.task_token_ids)}

    def init_cache(self, batch_size, text_length, dtype=None):
        cfg = self.config
        return {"vanilla": ops.zeros(
            (batch_size, cfg.num_vanilla_layers, 2, text_length, cfg.num_heads,
             cfg.d_model // cfg.num_heads), dtype or self.compute_dtype)}

    def call_with_cache(self, aux_ids, text_ids, cache, cache_update_index, text_valid,
                        pos_tags=None):
        outputs, cache = self.forward(aux_ids, text_ids, text_valid, cache=cache,
                                      cache_update_index=cache_update_index)
        return outputs["logits"], cache

    def parameter_breakdown(self):
        """Parameters of the baseline: ``vanilla_set``, ``head`` and ``total``."""
        parts = {"vanilla_set": count_weights(self.vanilla_set),
                 "head": count_weights(self.head)}
        parts["total"] = sum(parts.values())
        return parts

    def get_config(self):
        return {"config": self.config.to_dict(), "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    @staticmethod
    def config_for_preset(name):
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
    """Build a ``GPT2Baseline`` whose weights exist.

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
    model = GPT2Baseline(config)
    model.build()
    if gpt2 is not None:
        load_vanilla_set(model, gpt2, seed=seed)
    return model
