"""GPT-2 checkpoints and the vanilla set: initialising it from GPT-2 and exporting it
back (docs/spec.md section 2; the GPT-2 baseline model is :mod:`nemot.models.baseline`).

Loading goes through KerasHub: ``keras_hub.models.GPT2Backbone.from_preset``
reads a KerasHub preset name (``gpt2_base_en``, ``gpt2_medium_en``; online), a
KerasHub preset directory, or a Hugging Face GPT-2 checkpoint directory
(``config.json`` + ``model.safetensors``, offline) with KerasHub's own
converter; the backbone's weights are then copied into the vanilla set, whose
layout is the same (``nemot.layers.transformer`` names its sub-layers after
KerasHub's ``TransformerDecoder``). Export builds a ``GPT2Backbone`` from the
vanilla set and writes it with KerasHub's Hugging Face exporter.

The vocabulary is resized to 50,313 rows (docs/spec.md section 1): the
checkpoint's 50,257 rows are copied and the new rows drawn from a truncated
normal with standard deviation 0.02.

Example:
    >>> cfg = config_from_gpt2("gpt2_base_en", NeMoTConfig.preset("thesis"))
    >>> model = nemot.build_model(cfg, gpt2="gpt2_base_en")
    >>> export_vanilla_set(model, "exported_gpt2")  # a Hugging Face GPT-2 dir, tokenizer too
"""

import json
import os
from pathlib import Path

import keras
import numpy as np
from keras import ops
from keras_hub.models import GPT2Backbone

from nemot import vocab
from nemot.config import NeMoTConfig
from nemot.keras_internals import preset_config
from nemot.models.weights import load_uncompiled

# Vanilla-set sizes of the GPT-2 models (NeMoTConfig fields, on top of the thesis preset).
GPT2_SIZES = {
    "gpt2_small": dict(d_model=768, num_heads=12, d_ff=3072, num_vanilla_layers=12),
    "gpt2_medium": dict(d_model=1024, num_heads=16, d_ff=4096, num_vanilla_layers=24),
}
# Hugging Face activation names of GPT-2's tanh-approximated GELU.
TANH_GELU_NAMES = ("gelu_new", "gelu_pytorch_tanh", "gelu_fast")
CHECKED_FIELDS = ("d_model", "num_heads", "d_ff", "num_vanilla_layers",
                  "max_position_embeddings", "layer_norm_epsilon")
NEW_ROW_STDDEV = 0.02


# ---------------------------------------------------------------- reading a checkpoint

def _preset_config(source):
    """``(config, from_transformers)`` of a GPT-2 preset, read from its config.json only
    (:func:`nemot.keras_internals.preset_config`), and the source as str."""
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"gpt2={source!r}: expected a preset name or a directory path")
    source = str(source)
    is_dir = os.path.isdir(source)
    if not is_dir and "://" not in source and source not in GPT2Backbone.presets:
        raise ValueError(
            f"gpt2={source!r}: not a directory, not a KerasHub GPT-2 preset name "
            f"(one of {sorted(GPT2Backbone.presets)}) and not a kaggle:// or hf:// handle")
    if is_dir and not os.path.isfile(os.path.join(source, "config.json")):
        raise FileNotFoundError(f"{source}: no config.json; expected a Hugging Face GPT-2 "
                                "checkpoint directory or a KerasHub preset directory")
    try:
        config, backbone_class, from_transformers = preset_config(source)
    except OSError as error:  # requests' ConnectionError is one
        if is_dir:
            raise
        raise ConnectionError(
            f"gpt2={source!r}: a KerasHub preset name or handle is downloaded, and the "
            f"download failed (offline?): {type(error).__name__}. Offline, give a Hugging "
            "Face GPT-2 checkpoint directory or a KerasHub preset directory") from error
    if backbone_class is not GPT2Backbone:
        found = config.get("model_type", getattr(backbone_class, "__name__", backbone_class))
        raise ValueError(f"{source}/config.json: model is {found!r}; expected GPT-2 "
                         "(model_type 'gpt2' or a KerasHub GPT2Backbone preset)")
    return config, from_transformers, source


def _hf_sizes(source, hf):
    """Checks of the Hugging Face config fields GPT-2's layout assumes, and the
    ``GPT2Backbone`` arguments of the checkpoint."""
    config_file = os.path.join(source, "config.json")
    n_inner = hf.get("n_inner")
    if n_inner is not None and not (isinstance(n_inner, int) and n_inner > 0):
        raise ValueError(f"{config_file}: field n_inner={n_inner!r}; expected null (GPT-2's "
                         "4 * n_embd) or a positive feed-forward width")
    activation = hf.get("activation_function", "gelu_new")
    if activation not in TANH_GELU_NAMES:
        raise ValueError(f"{config_file}: field activation_function={activation!r}; the "
                         f"vanilla set uses GPT-2's tanh GELU, one of {TANH_GELU_NAMES}")
    if os.path.isdir(source) and not any(
            os.path.isfile(os.path.join(source, name))
            for name in ("model.safetensors", "model.safetensors.index.json")):
        raise FileNotFoundError(
            f"{source}: no model.safetensors (or model.safetensors.index.json); only "
            "safetensors weights are read (convert a pytorch_model.bin with safetensors)")
    # KerasHub's converter assumes 4 * n_embd; Hugging Face's n_inner (written by
    # export_vanilla_set for any d_ff) is the feed-forward width when set.
    kwargs = dict(vocabulary_size=hf["vocab_size"], num_layers=hf["n_layer"],
                  num_heads=hf["n_head"], hidden_dim=hf["n_embd"],
                  intermediate_dim=n_inner or 4 * hf["n_embd"],
                  max_sequence_length=hf["n_positions"])
    return kwargs, hf.get("layer_norm_epsilon", 1e-5)


def gpt2_sizes(source):
    """The vanilla-set sizes of a GPT-2 checkpoint, read from its config.json only.

    Args:
        source: KerasHub preset name (``gpt2_base_en``, ``gpt2_medium_en``...),
            KerasHub preset directory, or Hugging Face GPT-2 checkpoint directory.

    Returns:
        ``NeMoTConfig`` field values (``d_model``, ``num_heads``, ``d_ff``,
        ``num_vanilla_layers``, ``max_position_embeddings``,
        ``layer_norm_epsilon``) plus ``"vocab_size"``, the checkpoint's rows.

    Example:
        >>> gpt2_sizes("gpt2_medium_en")["d_model"]
        1024
    """
    config, from_transformers, source = _preset_config(source)
    if from_transformers:
        kwargs, epsilon = _hf_sizes(source, config)
    else:
        kwargs, epsilon = config["config"], 1e-5  # GPT2Backbone's fixed epsilon
    return {
        "d_model": kwargs["hidden_dim"], "num_heads": kwargs["num_heads"],
        "d_ff": kwargs["intermediate_dim"], "num_vanilla_layers": kwargs["num_layers"],
        "max_position_embeddings": kwargs["max_sequence_length"],
        "layer_norm_epsilon": float(epsilon), "vocab_size": kwargs["vocabulary_size"],
    }


def config_from_gpt2(source, base_config=None):
    """``base_config`` with the vanilla-set sizes of a GPT-2 checkpoint.

    The text length is capped at the checkpoint's position table. The other
    sets share ``d_model``, ``num_heads`` and ``d_ff`` with the vanilla set.

    Args:
        source: as in ``gpt2_sizes``.
        base_config: a ``NeMoTConfig`` (default: the thesis preset).

    Example:
        >>> cfg = config_from_gpt2("path/to/hf_gpt2", NeMoTConfig.preset("tiny"))
        >>> model = nemot.build_model(cfg, gpt2="path/to/hf_gpt2")
    """
    base = base_config if base_config is not None else NeMoTConfig.preset("thesis")
    sizes = gpt2_sizes(source)
    sizes.pop("vocab_size")
    return base.replace(max_text_length=min(base.max_text_length,
                                            sizes["max_position_embeddings"]), **sizes)


def check_sizes(config, sizes, source):
    """A clear error when the vanilla set cannot hold the checkpoint's weights."""
    for field in CHECKED_FIELDS:
        if sizes[field] != getattr(config, field):
            raise ValueError(
                f"GPT-2 checkpoint {source}: {field} is {sizes[field]} in the checkpoint but "
                f"{getattr(config, field)} in the model config; build the config with "
                "nemot.models.gpt2.config_from_gpt2(source, base_config)")
    if sizes["vocab_size"] > config.vocab_size:
        raise ValueError(f"GPT-2 checkpoint {source}: vocab_size is {sizes['vocab_size']} in "
                         f"the checkpoint but {config.vocab_size} in the model config")
    check_gpt2_layout(config, f"GPT-2 checkpoint {source}")


def check_gpt2_layout(config, what):
    """A clear error when the vanilla set lacks a GPT-2 weight (``what`` starts the message)."""
    if config.position_encoding != "learned":
        raise ValueError(f"{what}: position_encoding is {config.position_encoding!r} in the "
                         "model config; GPT-2's wpe needs 'learned'")
    if config.vocab_size < vocab.GPT2_VOCAB_SIZE:
        raise ValueError(f"{what}: vocab_size is {config.vocab_size} in the model config; "
                         f"GPT-2 needs at least {vocab.GPT2_VOCAB_SIZE} rows")


# ---------------------------------------------------------------- weight mapping

def _paired_weights(backbone, vanilla_set):
    """(GPT2Backbone variable, vanilla-set variable) pairs, all but the word embedding."""
    pairs = [(backbone.position_embedding.position_embeddings,
              vanilla_set.position_embedding.embeddings)]
    sublayers = [(backbone.layer_norm, vanilla_set.layer_norm)]
    for hub, ours in zip(backbone.transformer_layers, vanilla_set.transformer_layers,
                         strict=True):
        hub_attention, attention = hub._self_attention_layer, ours.self_attention
        sublayers += [
            (hub._self_attention_layer_norm, ours.self_attention_layer_norm),
            (hub_attention.query_dense, attention.query_dense),
            (hub_attention.key_dense, attention.key_dense),
            (hub_attention.value_dense, attention.value_dense),
            (hub_attention.output_dense, attention.output_dense),
            (hub._feedforward_layer_norm, ours.feedforward_layer_norm),
            (hub._feedforward_intermediate_dense, ours.feedforward_intermediate_dense),
            (hub._feedforward_output_dense, ours.feedforward_output_dense),
        ]
    for hub, ours in sublayers:
        names = ("gamma", "beta") if isinstance(ours, keras.layers.LayerNormalization) \
            else ("kernel", "bias")
        pairs += [(getattr(hub, name), getattr(ours, name)) for name in names]
    return pairs


def _copy(source_variable, target_variable):
    value = ops.convert_to_numpy(source_variable)
    if tuple(value.shape) != tuple(target_variable.shape):
        raise ValueError(f"weight {target_variable.path}: shape {tuple(value.shape)} in the "
                         f"source, {tuple(target_variable.shape)} in the target")
    target_variable.assign(value)


def load_gpt2_backbone(source):
    """KerasHub's ``GPT2Backbone`` with the checkpoint's weights (any supported source)."""
    sizes = gpt2_sizes(source)
    return GPT2Backbone.from_preset(str(source), intermediate_dim=sizes["d_ff"])


def load_vanilla_set(model, source, seed=None):
    """Initialise ``model.backbone.vanilla_set`` from GPT-2 weights (docs/spec.md §2.1).

    Works for any task whose backbone has a ``vanilla_set`` (NeMoT, the GPT-2
    baseline). The checkpoint's word-embedding rows are copied; the rows it
    lacks (the 56 added tokens) are drawn from a truncated normal, stddev 0.02.

    Args:
        model: a built model.
        source: KerasHub preset name or directory, or Hugging Face GPT-2
            checkpoint directory.
        seed: seed of the new embedding rows.

    Returns:
        ``model``.

    Example:
        >>> load_vanilla_set(nemot.build_model(cfg), "gpt2_base_en")
    """
    sizes = gpt2_sizes(source)
    check_sizes(model.config, sizes, source)
    backbone = load_gpt2_backbone(source)
    vanilla_set = model.backbone.vanilla_set
    for hub_variable, variable in _paired_weights(backbone, vanilla_set):
        _copy(hub_variable, variable)
    embeddings = vanilla_set.token_embedding.embeddings
    new_rows = keras.initializers.TruncatedNormal(stddev=NEW_ROW_STDDEV, seed=seed)(
        (embeddings.shape[0], embeddings.shape[1]), dtype=embeddings.dtype)
    table = np.array(ops.convert_to_numpy(new_rows))
    gpt2_rows = ops.convert_to_numpy(backbone.token_embedding.embeddings)
    table[: gpt2_rows.shape[0]] = gpt2_rows
    embeddings.assign(table)
    return model


def export_vanilla_set(model, out_dir):
    """Write ``model.backbone.vanilla_set`` as a Hugging Face GPT-2 checkpoint directory.

    ``config.json`` + ``model.safetensors`` (``GPT2LMHeadModel`` key names, head tied to
    ``wte``), vocabulary rows 0..50256 only (the added tokens are NeMoT's own), and GPT-2's
    tokenizer files: ``vocab.json``, ``merges.txt``, ``tokenizer_config.json`` and
    ``special_tokens_map.json``, what ``transformers.GPT2TokenizerFast.from_pretrained``
    and KerasHub's ``GPT2CausalLM.from_preset`` read.

    Which loaders read it: a vanilla set of GPT-2's shape (``d_ff = 4 * d_model``) loads in
    ``transformers``, KerasHub (``GPT2CausalLM.from_preset``) and
    :func:`load_vanilla_set`. Another feed-forward width (the ``tiny`` preset's) is carried
    by ``n_inner``, which ``transformers`` and :func:`load_vanilla_set` read; KerasHub's
    converter ignores it (it assumes ``4 * n_embd``) and loads such a directory only with
    ``intermediate_dim=`` given: ``GPT2Backbone.from_preset(dir, intermediate_dim=d_ff)``.
    The export warns then.

    Args:
        model: a task whose backbone has a vanilla set (NeMoT, the baseline), or the
            path of one saved as a ``.keras`` file.
        out_dir: directory to write (created if missing).

    Returns:
        ``out_dir`` as a ``Path``.

    Example:
        >>> export_vanilla_set("checkpoints/nemot.keras", "gpt2_from_nemot")
    """
    import warnings

    if isinstance(model, (str, os.PathLike)):
        if Path(model).suffix != ".keras":
            raise ValueError(f"{model}: expected a model saved as a .keras file "
                             "(keras.Model.save), or the model itself")
        model = load_uncompiled(model)
    cfg = model.config
    vanilla_set = model.backbone.vanilla_set
    check_gpt2_layout(cfg, f"export of the vanilla set to {out_dir}")
    backbone = GPT2Backbone(
        vocabulary_size=vocab.GPT2_VOCAB_SIZE, num_layers=cfg.num_vanilla_layers,
        num_heads=cfg.num_heads, hidden_dim=cfg.d_model, intermediate_dim=cfg.d_ff,
        dropout=cfg.dropout, max_sequence_length=cfg.max_position_embeddings)
    for hub_variable, variable in _paired_weights(backbone, vanilla_set):
        _copy(variable, hub_variable)
    rows = ops.convert_to_numpy(vanilla_set.token_embedding.embeddings)
    backbone.token_embedding.embeddings.assign(rows[: vocab.GPT2_VOCAB_SIZE])
    out_dir = Path(out_dir)
    backbone.export_to_transformers(str(out_dir))
    # KerasHub writes a fixed epsilon and no architecture; state ours.
    config_file = out_dir / "config.json"
    hf_config = json.loads(config_file.read_text())
    hf_config.update(layer_norm_epsilon=cfg.layer_norm_epsilon,
                     architectures=["GPT2LMHeadModel"], n_ctx=cfg.max_position_embeddings)
    config_file.write_text(json.dumps(hf_config, indent=2))
    write_gpt2_tokenizer(out_dir, cfg.max_position_embeddings)
    if cfg.d_ff != 4 * cfg.d_model:
        warnings.warn(
            f"{out_dir}: d_ff={cfg.d_ff} is not 4 * d_model={4 * cfg.d_model}; its n_inner "
            "loads in transformers and nemot, while KerasHub's GPT2 loaders need "
            f"intermediate_dim={cfg.d_ff} passed to from_preset", UserWarning, stacklevel=2)
    return out_dir


def write_gpt2_tokenizer(out_dir, max_length):
    """GPT-2's tokenizer files in ``out_dir``: the BPE vocabulary and merges nemot's
    tokenizer reads (GPT-2's own 50,257 tokens; nemot's added tokens are not part of an
    exported GPT-2) and the configs ``transformers`` reads beside them."""
    import shutil

    from nemot.data.tokenizer import default_files

    vocabulary, merges = default_files()
    shutil.copyfile(vocabulary, Path(out_dir) / "vocab.json")
    shutil.copyfile(merges, Path(out_dir) / "merges.txt")
    end = "<|endoftext|>"
    special = {"bos_token": end, "eos_token": end, "unk_token": end}
    (Path(out_dir) / "special_tokens_map.json").write_text(json.dumps(special, indent=2))
    (Path(out_dir) / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "GPT2Tokenizer", "model_max_length": int(max_length),
         "add_prefix_space": False, **special}, indent=2))
