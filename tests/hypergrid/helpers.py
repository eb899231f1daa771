"""Helpers for the HyperGrid reproduction tests: a tiny T5 and its inputs, a Hugging Face
T5 checkpoint written in its real layout."""

import json

import keras
import keras_hub
import numpy as np

TINY_T5 = dict(vocabulary_size=64, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
               dropout=0.0, use_gated_activation=False)


def tiny_backbone(**overrides):
    return keras_hub.models.T5Backbone(**(TINY_T5 | overrides))


def t5_inputs(batch=2, enc=7, dec=4, vocabulary_size=64, seed=0, tasks=(0, 1)):
    """Random ids; example 2 padded (encoder after 5, decoder after 3 tokens)."""
    rng = np.random.default_rng(seed)
    enc_mask = np.ones((batch, enc), "int32")
    enc_mask[1, 5:] = 0
    dec_mask = np.ones((batch, dec), "int32")
    dec_mask[1, 3:] = 0
    return {"encoder_token_ids": rng.integers(2, vocabulary_size, (batch, enc)).astype("int32")
            * enc_mask, "encoder_padding_mask": enc_mask,
            "decoder_token_ids": rng.integers(2, vocabulary_size, (batch, dec)).astype("int32")
            * dec_mask, "decoder_padding_mask": dec_mask,
            "task_index": np.array(tasks[:batch], "int32")}


def write_hf_t5(directory, backbone):
    """``config.json`` + ``model.safetensors`` of ``backbone`` under Hugging Face T5's names.

    The names are spelled out here from the Hugging Face layout (``encoder.block.{i}.layer.0
    .SelfAttention.q.weight`` ...; linear weights [out, in]), independently of the loader.
    """
    from safetensors.numpy import save_file

    def t(variable):
        return np.ascontiguousarray(np.asarray(variable).T)

    tensors = {"shared.weight": np.asarray(backbone.token_embedding.embeddings),
               "encoder.final_layer_norm.weight": np.asarray(backbone.encoder_layer_norm.weight),
               "decoder.final_layer_norm.weight": np.asarray(backbone.decoder_layer_norm.weight)}
    for stack, layers in (("encoder", backbone.encoder_transformer_layers),
                          ("decoder", backbone.decoder_transformer_layers)):
        for i, layer in enumerate(layers):
            b = f"{stack}.block.{i}.layer"
            attentions = [("0.SelfAttention", layer.self_attention)]
            if stack == "decoder":
                attentions.append(("1.EncDecAttention", layer.cross_attention))
                tensors[f"{b}.1.layer_norm.weight"] = np.asarray(
                    layer.cross_attention_layer_norm.weight)
            for name, attention in attentions:
                tensors[f"{b}.{name}.q.weight"] = t(attention.query_projector.kernel)
                tensors[f"{b}.{name}.k.weight"] = t(attention.key_projector.kernel)
                tensors[f"{b}.{name}.v.weight"] = t(attention.value_projector.kernel)
                tensors[f"{b}.{name}.o.weight"] = t(attention.output_projector.kernel)
            tensors[f"{b}.0.layer_norm.weight"] = np.asarray(layer.self_attention_layer_norm.weight)
            if i == 0:
                tensors[f"{b}.0.SelfAttention.relative_attention_bias.weight"] = np.asarray(
                    layer.self_attention.relative_attention_bias)
            ff = "1" if stack == "encoder" else "2"
            tensors[f"{b}.{ff}.DenseReluDense.wi.weight"] = t(layer.input_projector.kernel)
            tensors[f"{b}.{ff}.DenseReluDense.wo.weight"] = t(layer.output_projector.kernel)
            tensors[f"{b}.{ff}.layer_norm.weight"] = np.asarray(layer.layer_norm.weight)
    directory.mkdir(parents=True, exist_ok=True)
    save_file({k: v.astype(np.float32) for k, v in tensors.items()},
              str(directory / "model.safetensors"))
    config = {"model_type": "t5", "architectures": ["T5ForConditionalGeneration"],
              "vocab_size": backbone.vocabulary_size, "d_model": backbone.hidden_dim,
              "d_kv": backbone.hidden_dim // backbone.num_heads, "d_ff": backbone.intermediate_dim,
              "num_layers": backbone.num_layers, "num_decoder_layers": backbone.num_layers,
              "num_heads": backbone.num_heads, "relative_attention_num_buckets": 32,
              "relative_attention_max_distance": 128, "dropout_rate": 0.1,
              "layer_norm_epsilon": 1e-6, "feed_forward_proj": "relu",
              "tie_word_embeddings": True}
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return directory


def randomise(layer, scale=0.5, seed=0):
    rng = np.random.default_rng(seed)
    for w in layer.weights:
        w.assign(rng.normal(0, scale, w.shape).astype(keras.backend.standardize_dtype(w.dtype)))
