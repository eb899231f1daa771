"""Training-step cost of NeMoT against a plain GPT-2 causal LM of the same depth.

NeMoT with depths (Y, M, Z) is compared with KerasHub's ``GPT2Backbone`` of
Y + M + Z layers plus a ``Dense(vocab)`` head, same width, batch and
sequence, both in eager-free ``train_on_batch`` steps (graph mode, no XLA).
Steps of the models are interleaved, and the median of each is reported, so
that drift of the machine affects both alike. Also: a batch mixing two task
tokens against a single-task batch (at most one extra output block).
"""

import statistics
import time

import keras
import keras_hub
import numpy as np

import nemot
from nemot.training import NeMoTLoss
from nemot import vocab

WIDTH = dict(d_model=256, num_heads=4, d_ff=1024)
DEPTH = dict(num_vanilla_layers=4, num_nm_layers=4, num_output_layers=2)
BATCH, TEXT = 8, 128
STEPS = 8


def nemot_model(vanilla_head):
    cfg = nemot.NeMoTConfig.preset("tiny").replace(
        max_text_length=TEXT, max_position_embeddings=TEXT, vanilla_head=vanilla_head,
        output_blocks=("lm", "mqa", "gqa"), **WIDTH, **DEPTH)
    model = nemot.build_model(cfg)
    weights = dict(vanilla_weight=0.5) if vanilla_head else dict(vanilla_weight=0.0)
    model.compile(keras.optimizers.Adam(), loss=NeMoTLoss(lm_weight=0.0, **weights))
    return model


def gpt2_model():
    layers = sum(DEPTH.values())
    backbone = keras_hub.models.GPT2Backbone(
        vocabulary_size=vocab.VOCAB_SIZE, num_layers=layers, num_heads=WIDTH["num_heads"],
        hidden_dim=WIDTH["d_model"], intermediate_dim=WIDTH["d_ff"], max_sequence_length=TEXT)
    ids = keras.Input((TEXT,), dtype="int32", name="token_ids")
    mask = keras.Input((TEXT,), dtype="int32", name="padding_mask")
    hidden = backbone({"token_ids": ids, "padding_mask": mask})
    model = keras.Model([ids, mask], keras.layers.Dense(vocab.VOCAB_SIZE)(hidden))
    model.compile(keras.optimizers.Adam(),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def batches(rng):
    text = rng.integers(0, vocab.GPT2_VOCAB_SIZE, (BATCH, TEXT)).astype("int32")
    targets = np.roll(text, -1, axis=1)
    aux = np.array([vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id("lm")], "int32")
    single = np.concatenate([np.tile(aux, (BATCH, 1)), text], axis=1)
    mixed = single.copy()
    mixed[BATCH // 2:, 2] = vocab.task_token_id("gqa")
    y = {"task_targets": targets, "lm_targets": np.full_like(targets, -1)}
    return single, mixed, y, text, targets


def run():
    rng = np.random.default_rng(0)
    single, mixed, y, text, targets = batches(rng)
    models = {
        "nemot": (nemot_model(False), lambda m: m.train_on_batch({"token_ids": single}, y)),
        "nemot_mixed_tasks": (None, None),
        "nemot_with_vanilla_head": (nemot_model(True),
                                    lambda m: m.train_on_batch({"token_ids": single}, y)),
        "gpt2_same_depth": (gpt2_model(),
                            lambda m: m.train_on_batch([text, np.ones_like(text)], targets)),
    }
    models["nemot_mixed_tasks"] = (models["nemot"][0],
                                   lambda m: m.train_on_batch({"token_ids": mixed}, y))
    times = {name: [] for name in models}
    for name, (model, step) in models.items():  # warm up: trace and build optimizers
        step(model)
        step(model)
    for _ in range(STEPS):
        for name, (model, step) in models.items():
            start = time.perf_counter()
            step(model)
            times[name].append(time.perf_counter() - start)
    median = {name: statistics.median(values) for name, values in times.items()}
    reference = median["gpt2_same_depth"]
    return {
        "setup": {**WIDTH, **DEPTH, "batch": BATCH, "text_length": TEXT,
                  "vocab": vocab.VOCAB_SIZE, "steps": STEPS},
        "median_step_seconds": {k: round(v, 4) for k, v in median.items()},
        "ratio_nemot_vs_gpt2": round(median["nemot"] / reference, 3),
        "ratio_nemot_with_vanilla_head_vs_gpt2": round(median["nemot_with_vanilla_head"] / reference, 3),
        "ratio_mixed_vs_single_task_batch": round(median["nemot_mixed_tasks"] / median["nemot"], 3),
        "one_output_block_share": round(
            DEPTH["num_output_layers"] / sum(DEPTH.values()), 3),
    }
