"""Write a tiny random GPT-2 checkpoint in the Hugging Face layout (for tests).

The directory holds what ``transformers.GPT2Model.save_pretrained`` writes:
``config.json`` (``model_type: gpt2``) and ``model.safetensors`` with the
``GPT2Model`` key names (``wte.weight``, ``h.{i}.attn.c_attn.weight`` as a
Conv1D [d, 3d] matrix, ..., ``ln_f.bias``). Weights are random with a large
scale, so that a wrong mapping changes the outputs by far more than any
tolerance. Other test folders may import it (trainer, CLI).

Example:
    >>> path = write_tiny_gpt2(tmp_path / "gpt2")
    >>> model = nemot.build_model(nemot.config_from_gpt2(path, cfg), gpt2=path)
"""

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from nemot import vocab

TINY_GPT2 = dict(n_embd=32, n_layer=2, n_head=2, n_positions=64)


def tiny_gpt2_weights(n_embd, n_layer, n_positions, vocab_size=vocab.GPT2_VOCAB_SIZE, seed=0):
    """Random ``GPT2Model`` state dict as float32 numpy arrays."""
    rng = np.random.default_rng(seed)
    d = n_embd

    def normal(*shape, scale=0.2):
        return (scale * rng.standard_normal(shape)).astype("float32")

    weights = {"wte.weight": normal(vocab_size, d, scale=0.5),
               "wpe.weight": normal(n_positions, d, scale=0.5),
               "ln_f.weight": 1 + normal(d), "ln_f.bias": normal(d)}
    for i in range(n_layer):
        prefix = f"h.{i}."
        weights.update({
            prefix + "ln_1.weight": 1 + normal(d), prefix + "ln_1.bias": normal(d),
            prefix + "attn.c_attn.weight": normal(d, 3 * d), prefix + "attn.c_attn.bias": normal(3 * d),
            prefix + "attn.c_proj.weight": normal(d, d), prefix + "attn.c_proj.bias": normal(d),
            prefix + "ln_2.weight": 1 + normal(d), prefix + "ln_2.bias": normal(d),
            prefix + "mlp.c_fc.weight": normal(d, 4 * d), prefix + "mlp.c_fc.bias": normal(4 * d),
            prefix + "mlp.c_proj.weight": normal(4 * d, d), prefix + "mlp.c_proj.bias": normal(d),
        })
    return weights


def write_tiny_gpt2(path, n_embd=TINY_GPT2["n_embd"], n_layer=TINY_GPT2["n_layer"],
                    n_head=TINY_GPT2["n_head"], n_positions=TINY_GPT2["n_positions"], seed=0,
                    **config_overrides):
    """Write ``config.json`` + ``model.safetensors`` under ``path``; returns ``path``."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    config = {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
        "vocab_size": vocab.GPT2_VOCAB_SIZE, "n_positions": n_positions, "n_ctx": n_positions,
        "n_embd": n_embd, "n_layer": n_layer, "n_head": n_head, "n_inner": None,
        "activation_function": "gelu_new", "resid_pdrop": 0.1, "embd_pdrop": 0.1,
        "attn_pdrop": 0.1, "layer_norm_epsilon": 1e-5, "initializer_range": 0.02,
        "bos_token_id": 50256, "eos_token_id": 50256,
    }
    config.update(config_overrides)
    (path / "config.json").write_text(json.dumps(config, indent=2))
    save_file(tiny_gpt2_weights(n_embd, n_layer, n_positions, seed=seed),
              str(path / "model.safetensors"), metadata={"format": "pt"})
    return path


def padded_text_ids(seed=0):
    """GPT-2 ids (< 50,257), three rows, two of them right-padded with <pad>."""
    from nemot import vocab

    ids = np.random.default_rng(seed).integers(0, vocab.GPT2_VOCAB_SIZE, (3, 12)).astype("int32")
    ids[0, 8:] = vocab.PAD_ID
    ids[1, 5:] = vocab.PAD_ID
    return ids
