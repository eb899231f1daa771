"""T5: checkpoints, tokenizer, sizes, and :class:`ModulatedT5`, KerasHub's ``T5Backbone``
hosting ``[[model.modulation]]`` specs in its encoder and decoder layers.

Checkpoints and tokenizer: a KerasHub preset (``t5_base_multi``...), a KerasHub
preset directory, a Hugging Face T5 directory (``config.json``, ``model.safetensors``
or its sharded index, ``spiece.model``; read offline), or a table of sizes for a
randomly initialised T5 (tests, smoke runs). :func:`backbone_sizes` and
:func:`t5_parameters` give a source's sizes and parameter count offline, without
weights (``nemot hypergrid params``).

KerasHub 0.32 has no Hugging Face converter for T5, so :func:`from_hugging_face`
maps the checkpoint's tensors onto ``T5Backbone`` itself (PyTorch ``[out, in]`` →
Keras ``[in, out]``). The paper's model is T5 v1.0 (``feed_forward_proj = "relu"``,
tied embeddings); v1.1's ``gated-gelu`` (untied head) loads too.

Example:
    >>> backbone = load_backbone("hf/t5-base")            # a Hugging Face directory
    >>> model = ModulatedT5(backbone, num_tasks=8, modulation=[
    ...     {"kind": "hypergrid", "sets": ["encoder", "decoder"], "mode": "LG",
    ...      "grid": [32, 128], "conditioning": "self_attention"}])
    >>> tokenizer = load_tokenizer("hf/t5-base")
    >>> backbone = load_backbone({"vocabulary_size": 64, "num_layers": 2, "num_heads": 2,
    ...                           "hidden_dim": 16, "intermediate_dim": 32})
"""

import json
import os
from pathlib import Path

import keras
import numpy as np
from keras import ops

from nemot.modulation.host import T5, host_stack
from nemot.modulation.spec import ModulationSpec

# Sizes of the original T5 checkpoints (Raffel et al. 2020, Table 14), for configs and
# parameter counts without a download.
T5_SIZES = {
    "t5_small": dict(num_layers=6, num_heads=8, hidden_dim=512, intermediate_dim=2048),
    "t5_base": dict(num_layers=12, num_heads=12, hidden_dim=768, intermediate_dim=3072),
    "t5_large": dict(num_layers=24, num_heads=16, hidden_dim=1024, intermediate_dim=4096),
    "t5_3b": dict(num_layers=24, num_heads=32, hidden_dim=1024, intermediate_dim=16384,
                  key_value_dim=128),
    "t5_11b": dict(num_layers=24, num_heads=128, hidden_dim=1024, intermediate_dim=65536,
                   key_value_dim=128),
}
T5_VOCABULARY = 32128
# KerasHub's T5 v1.0 presets (the paper's model) -> their T5_SIZES; their parameter
# counts equal KerasHub's preset metadata (tested).
PRESET_SIZES = {"t5_small_multi": "t5_small", "t5_base_multi": "t5_base",
                "t5_large_multi": "t5_large"}
HF_ACTIVATIONS = {"relu": False, "gated-gelu": True}  # -> use_gated_activation
RELATIVE_BUCKETS = 32  # KerasHub's T5 (and every released checkpoint)


def _is_hugging_face(source):
    config = Path(source) / "config.json"
    if not config.is_file():
        return False
    return json.loads(config.read_text(encoding="utf-8")).get("model_type") is not None


def backbone_sizes(source):
    """The ``T5Backbone`` arguments (no weights, no network) of a source of
    :func:`load_backbone`: a table of sizes, a :data:`T5_SIZES` name, a preset of
    :data:`PRESET_SIZES`, or a Hugging Face / KerasHub preset directory's config.json."""
    if isinstance(source, dict):
        return {"use_gated_activation": False, **source}
    name = PRESET_SIZES.get(source, source)
    if name in T5_SIZES:
        return dict(vocabulary_size=T5_VOCABULARY, use_gated_activation=False, **T5_SIZES[name])
    config = Path(source) / "config.json"
    if config.is_file():
        if _is_hugging_face(source):
            return _hf_sizes(_hf_config(source))
        saved = json.loads(config.read_text(encoding="utf-8"))
        if saved.get("class_name") == "T5Backbone":  # a KerasHub preset directory
            return {k: v for k, v in saved["config"].items()
                    if k not in ("name", "trainable", "dtype", "dropout", "activation",
                                 "layer_norm_epsilon")}
    raise ValueError(f"backbone {source!r}: its sizes are not known offline; expected a preset "
                     f"among {sorted(PRESET_SIZES)}, a name among {sorted(T5_SIZES)}, a Hugging "
                     f"Face T5 or KerasHub preset directory (config.json) or a table of sizes")


def t5_parameters(sizes):
    """``T5Backbone(**sizes).count_params()`` without building it: the shared embedding
    (and the untied head), per layer Q/K/V/O, the feed-forward matrices and RMS norms
    (decoder: cross-attention too), the first layers' relative position biases and the
    two final norms."""
    d, f, layers = sizes["hidden_dim"], sizes["intermediate_dim"], sizes["num_layers"]
    inner = sizes["num_heads"] * (sizes.get("key_value_dim") or d // sizes["num_heads"])
    attention = 4 * d * inner
    feedforward = (3 if sizes.get("use_gated_activation", True) else 2) * d * f
    encoder_layer = attention + feedforward + 2 * d
    decoder_layer = encoder_layer + attention + d
    embedding = sizes["vocabulary_size"] * d * (1 if sizes.get("tie_embedding_weights", True)
                                                else 2)
    return (embedding + layers * (encoder_layer + decoder_layer)
            + 2 * RELATIVE_BUCKETS * sizes["num_heads"] + 2 * d)


def load_backbone(source, dropout=0.1):
    """A ``keras_hub.models.T5Backbone``.

    Args:
        source: a KerasHub preset name or directory, a Hugging Face T5 directory, a
            :data:`T5_SIZES` name (random weights), or a dict of ``T5Backbone``
            arguments (random weights).
        dropout: for random and Hugging Face backbones (T5's fine-tuning used 0.1).
    """
    import keras_hub

    if isinstance(source, dict):
        return keras_hub.models.T5Backbone(**{"dropout": dropout, "use_gated_activation": False,
                                              **source})
    if source in T5_SIZES:
        return keras_hub.models.T5Backbone(vocabulary_size=T5_VOCABULARY, dropout=dropout,
                                           use_gated_activation=False, **T5_SIZES[source])
    if os.path.isdir(source) and _is_hugging_face(source):
        return from_hugging_face(source, dropout)
    return keras_hub.models.T5Backbone.from_preset(source)


def load_tokenizer(source):
    """The T5 SentencePiece tokenizer of a preset, or ``spiece.model`` of a directory."""
    import keras_hub

    if os.path.isdir(source):
        proto = Path(source) / "spiece.model"
        if proto.is_file():
            return keras_hub.models.T5Tokenizer(proto=str(proto))
        if _is_hugging_face(source):
            raise FileNotFoundError(f"{source}: no spiece.model (the T5 SentencePiece model)")
    return keras_hub.models.T5Tokenizer.from_preset(source)


def _hf_config(source):
    path = Path(source) / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    if config.get("model_type") != "t5":
        raise ValueError(f"{path}: field 'model_type': expected 't5', got "
                         f"{config.get('model_type')!r}")
    expected = {"relative_attention_num_buckets": 32, "relative_attention_max_distance": 128,
                "num_decoder_layers": config.get("num_layers")}
    for key, value in expected.items():
        if config.get(key, value) != value:
            raise ValueError(f"{path}: field {key!r}: expected {value} (KerasHub's T5), got "
                             f"{config[key]!r}")
    proj = config.get("feed_forward_proj", "relu")
    if proj not in HF_ACTIVATIONS:
        raise ValueError(f"{path}: field 'feed_forward_proj': expected one of "
                         f"{sorted(HF_ACTIVATIONS)}, got {proj!r}")
    return config


def _hf_tensors(source):
    from safetensors.numpy import load_file

    source = Path(source)
    single, index = source / "model.safetensors", source / "model.safetensors.index.json"
    if single.is_file():
        return load_file(str(single))
    if index.is_file():
        shards = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
        tensors = {}
        for shard in shards:
            tensors.update(load_file(str(source / shard)))
        return tensors
    raise FileNotFoundError(f"{source}: no model.safetensors (or model.safetensors.index.json); "
                            "only safetensors weights are read")


def hf_weight_map(backbone):
    """``{Hugging Face tensor name: (Keras variable, transpose)}`` for a ``T5Backbone``."""
    pairs = {"shared.weight": (backbone.token_embedding.embeddings, False),
             "encoder.final_layer_norm.weight": (backbone.encoder_layer_norm.weight, False),
             "decoder.final_layer_norm.weight": (backbone.decoder_layer_norm.weight, False)}
    if not backbone.tie_embedding_weights:
        pairs["lm_head.weight"] = (backbone.token_embedding.reverse_embeddings, True)

    def attention(prefix, layer):
        for short, dense in (("q", layer.query_projector), ("k", layer.key_projector),
                             ("v", layer.value_projector), ("o", layer.output_projector)):
            pairs[f"{prefix}.{short}.weight"] = (dense.kernel, True)
        if layer.use_relative_attention_bias:
            pairs[f"{prefix}.relative_attention_bias.weight"] = (layer.relative_attention_bias,
                                                                 False)

    def feedforward(prefix, layer):
        if layer.use_gated_activation:
            pairs[f"{prefix}.DenseReluDense.wi_0.weight"] = (layer.input_projector.kernel, True)
            pairs[f"{prefix}.DenseReluDense.wi_1.weight"] = (layer.gate_projector.kernel, True)
        else:
            pairs[f"{prefix}.DenseReluDense.wi.weight"] = (layer.input_projector.kernel, True)
        pairs[f"{prefix}.DenseReluDense.wo.weight"] = (layer.output_projector.kernel, True)
        pairs[f"{prefix}.layer_norm.weight"] = (layer.layer_norm.weight, False)

    for i, layer in enumerate(backbone.encoder_transformer_layers):
        block = f"encoder.block.{i}.layer"
        attention(f"{block}.0.SelfAttention", layer.self_attention)
        pairs[f"{block}.0.layer_norm.weight"] = (layer.self_attention_layer_norm.weight, False)
        feedforward(f"{block}.1", layer)
    for i, layer in enumerate(backbone.decoder_transformer_layers):
        block = f"decoder.block.{i}.layer"
        attention(f"{block}.0.SelfAttention", layer.self_attention)
        pairs[f"{block}.0.layer_norm.weight"] = (layer.self_attention_layer_norm.weight, False)
        attention(f"{block}.1.EncDecAttention", layer.cross_attention)
        pairs[f"{block}.1.layer_norm.weight"] = (layer.cross_attention_layer_norm.weight, False)
        feedforward(f"{block}.2", layer)
    return pairs


def _hf_sizes(config):
    """``T5Backbone`` sizes of a Hugging Face T5 config."""
    return dict(vocabulary_size=config["vocab_size"], num_layers=config["num_layers"],
                num_heads=config["num_heads"], hidden_dim=config["d_model"],
                intermediate_dim=config["d_ff"], key_value_dim=config["d_kv"],
                use_gated_activation=HF_ACTIVATIONS[config.get("feed_forward_proj", "relu")],
                tie_embedding_weights=config.get("tie_word_embeddings", True))


def from_hugging_face(source, dropout=0.1):
    """A ``T5Backbone`` with the weights of a Hugging Face T5 directory."""
    import keras_hub

    config = _hf_config(source)
    sizes = _hf_sizes(config)
    # HF's gated-gelu is the tanh GELU (KerasHub's own, as its T5 presets save it)
    activation = keras.saving.get_registered_object("keras_hub>gelu_approximate") if sizes["use_gated_activation"] else "relu"
    backbone = keras_hub.models.T5Backbone(
        **sizes, dropout=dropout, activation=activation,
        layer_norm_epsilon=config.get("layer_norm_epsilon", 1e-6))
    tensors = _hf_tensors(source)
    for name, (variable, transpose) in hf_weight_map(backbone).items():
        if name not in tensors:
            raise ValueError(f"{source}: tensor {name!r} missing from the checkpoint")
        value = np.asarray(tensors[name], np.float32)
        value = value.T if transpose else value
        if tuple(value.shape) != tuple(variable.shape):
            raise ValueError(f"{source}: tensor {name!r} has shape {value.shape}; the config "
                             f"gives {tuple(variable.shape)}")
        variable.assign(value)
    return backbone


@keras.saving.register_keras_serializable(package="nemot")
class ModulatedT5(keras.Model):
    """T5 (a KerasHub ``T5Backbone``, its own layers and weights) with modulations hosted
    in its layers (:mod:`nemot.modulation.host`; the stacks are ``"encoder"`` and
    ``"decoder"`` in the specs' ``sets``). Without modulations it is ``T5Backbone``.

    Reading order, per stack::

        x = dropout(embed(ids))
        for each layer: x = layer(x)                   # hosted: T5TransformerLayer's own
        x = dropout(final_norm(x))                     # sub-layers, modulated where named
        logits = embedding^T (x · d^-0.5)              # tied head, as T5 v1.0

    The encoder's attention mask is a key mask (per-example conditioning); the decoder's
    is causal (per-position conditioning: no position reads later target tokens). A
    model hosting modulations that mix positions decodes by rerunning the decoder over
    the target prefix (no key/value cache).

    Args:
        backbone: a ``keras_hub.models.T5Backbone`` (or its serialised config).
        num_tasks: tasks of the per-task weights (``task_index`` in the inputs).
        modulation: :class:`nemot.modulation.ModulationSpec` s or their TOML tables.

    Call it on ``encoder_token_ids``, ``encoder_padding_mask``, ``decoder_token_ids``,
    ``decoder_padding_mask`` (int [B, L]) and ``task_index`` (int [B]); it returns the
    logits [B, L_dec, vocab].
    """

    def __init__(self, backbone, num_tasks=1, modulation=(), **kwargs):
        super().__init__(**kwargs)
        if isinstance(backbone, dict):
            backbone = keras.saving.deserialize_keras_object(backbone)
        self.backbone = backbone
        self.num_tasks = int(num_tasks)
        self.modulation = tuple(ModulationSpec.from_dict(spec, "modulation")
                                for spec in modulation)
        common = dict(specs=self.modulation, num_tasks=self.num_tasks,
                      dtype=backbone.dtype_policy)
        self.encoder_layers, self.encoder_shared = host_stack(
            T5, backbone.encoder_transformer_layers, stack="encoder", **common)
        self.decoder_layers, self.decoder_shared = host_stack(
            T5, backbone.decoder_transformer_layers, stack="decoder", **common)
        self.built = True  # the backbone is built by KerasHub, the modulations by their host

    def stack_state(self, layers, length):
        """The stack's tensors its layers read: the relative position bias
        [1, heads, L, L] and, when a layer has a task token, that of position 0 over
        0..L [1, heads, 1, L + 1]."""
        first = layers[0].layer.self_attention
        state = {"position_bias": first.compute_bias(length, length)}
        if any(layer.task_token is not None for layer in layers):
            state["task_bias"] = first.compute_bias(length + 1, length + 1)[:, :, :1, :]
        return state

    def encode(self, token_ids, padding_mask, task_index, training=None):
        """The encoder output [B, L, d]."""
        bb = self.backbone
        mask = ops.cast(padding_mask, "bool")[:, None, :]
        x = bb.encoder_embedding_dropout(bb.token_embedding(token_ids), training=training)
        state = self.stack_state(self.encoder_layers, ops.shape(token_ids)[1])
        for layer in self.encoder_layers:
            x = layer(x, mask, conditioning={"task_index": task_index}, training=training,
                      stack=state)
        return bb.encoder_dropout(bb.encoder_layer_norm(x), training=training)

    def decode(self, encoder_output, encoder_padding_mask, token_ids, padding_mask, task_index,
               training=None):
        """The decoder output [B, L_dec, d] (teacher forcing over ``token_ids``)."""
        bb = self.backbone
        length = ops.shape(token_ids)[1]
        positions = ops.arange(length)
        causal = positions[:, None] >= positions[None, :]
        mask = ops.logical_and(causal[None], ops.cast(padding_mask, "bool")[:, None, :])
        x = bb.decoder_embedding_dropout(bb.token_embedding(token_ids), training=training)
        state = self.stack_state(self.decoder_layers, length)
        state.update(encoder_output=encoder_output,
                     encoder_mask=ops.cast(encoder_padding_mask, "bool")[:, None, :])
        for layer in self.decoder_layers:
            x = layer(x, mask, conditioning={"task_index": task_index}, training=training,
                      stack=state)
        return bb.decoder_dropout(bb.decoder_layer_norm(x), training=training)

    def logits(self, decoder_output):
        """The LM head (T5 rescales by d^-0.5 when the head is the tied embedding)."""
        bb = self.backbone
        if bb.tie_embedding_weights:
            decoder_output = decoder_output * ops.cast(bb.hidden_dim ** -0.5,
                                                       decoder_output.dtype)
        return bb.token_embedding(decoder_output, reverse=True)

    def call(self, inputs, training=None):
        task_index = ops.cast(inputs["task_index"], "int32")
        encoder_output = self.encode(inputs["encoder_token_ids"], inputs["encoder_padding_mask"],
                                     task_index, training)
        decoder_output = self.decode(encoder_output, inputs["encoder_padding_mask"],
                                     inputs["decoder_token_ids"], inputs["decoder_padding_mask"],
                                     task_index, training)
        return self.logits(decoder_output)

    def get_config(self):
        return {"backbone": keras.saving.serialize_keras_object(self.backbone),
                "num_tasks": self.num_tasks,
                "modulation": [spec.to_dict() for spec in self.modulation], "name": self.name}
