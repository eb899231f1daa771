"""What a padded vocabulary (``NeMoTConfig.vocab_padding = 64``: heads 50,368 wide, logits
sliced back to 50,313) costs on this machine, against the unpadded model, on the current
Keras backend (``KERAS_BACKEND=jax python -m bench vocab_padding`` for JAX).

NeMoT with both heads and the default loss (``L1 + 0.2 L2 + 0.5 L3``) at three sizes: the
``tiny`` preset, the ``small`` preset and the thesis width (d_model 768, one layer per
set, so the heads weigh as in a short thesis-size step). Each pair starts from the same
seed, so the padded model's real weights equal the unpadded one's: the first step's loss
of each pair is recorded beside the timings (equal to float tolerance). Training steps
(``train_on_batch``: TensorFlow's ``tf.function`` without XLA, JAX's ``jax.jit``) of the
two models are interleaved after two warm-up steps, and each median reported with the
ratio padded / unpadded.
"""

import statistics
import time

import keras
import numpy as np

import nemot
from nemot import backend, vocab

PADDING = 64
ROUNDS = 7
THESIS_WIDTH = dict(num_vanilla_layers=1, num_nm_layers=1, num_output_layers=1,
                    output_blocks=("lm", "mqa", "gqa"))
SIZES = {
    "tiny": (nemot.NeMoTConfig.preset("tiny"), 8),
    "small": (nemot.NeMoTConfig.preset("small").replace(max_text_length=128,
                                                        output_blocks=("lm", "mqa", "gqa")), 4),
    "thesis_width": (nemot.NeMoTConfig.preset("thesis").replace(max_text_length=128,
                                                                **THESIS_WIDTH), 1),
}


def batch(config, size, rng):
    n = config.max_text_length
    text = rng.integers(0, vocab.GPT2_VOCAB_SIZE, (size, n)).astype("int32")
    aux = np.array([vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id("gqa")], "int32")
    x = {"token_ids": np.concatenate([np.tile(aux, (size, 1)), text], axis=1)}
    targets = np.roll(text, -1, axis=1)
    return x, {"task_targets": targets, "lm_targets": targets}


def model(config):
    keras.utils.set_random_seed(0)
    lm = nemot.build_model(config.replace(dropout=0.0, vanilla_attention_dropout=0.0),
                           preprocessor=None)
    lm.compile(keras.optimizers.Adam(1e-4))
    return lm


def pair(config, size):
    x, y = batch(config, size, np.random.default_rng(0))
    models = {"unpadded": model(config), "padded": model(config.replace(vocab_padding=PADDING))}
    first_loss = {name: m.train_on_batch(x, y, return_dict=True)["loss"]
                  for name, m in models.items()}
    for m in models.values():
        m.train_on_batch(x, y)
    times = {name: [] for name in models}
    for _ in range(ROUNDS):
        for name, m in models.items():
            start = time.perf_counter()
            m.train_on_batch(x, y)
            times[name].append(time.perf_counter() - start)
    median = {name: statistics.median(values) for name, values in times.items()}
    return {
        "config": {"d_model": config.d_model, "layers": [config.num_vanilla_layers,
                                                         config.num_nm_layers,
                                                         config.num_output_layers],
                   "batch": size, "text_length": config.max_text_length,
                   "head_width": [config.vocab_size, config.replace(
                       vocab_padding=PADDING).padded_vocab_size]},
        "median_step_seconds": {k: round(v, 4) for k, v in median.items()},
        "ratio_padded_vs_unpadded": round(median["padded"] / median["unpadded"], 3),
        "first_step_loss": {k: round(float(v), 6) for k, v in first_loss.items()},
    }


def run():
    return {"backend": backend.name(), "padding": PADDING, "rounds": ROUNDS,
            "sizes": {name: pair(config, size) for name, (config, size) in SIZES.items()}}


def result_name(result):
    return f"vocab_padding_{result['backend']}"
