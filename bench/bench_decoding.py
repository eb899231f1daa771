"""Decoding speed: cached generation vs full recomputation, and per-token latency vs KerasHub GPT-2.

A CPU-sized NeMoT (d 256, 4 heads, d_ff 1024, Y = M = Z = 2, random weights,
no vanilla head) greedily generates 64 tokens after a 512-token prompt, batch 1:

- ``cached``: ``nemot.models.generation.Generator`` (KV caches in all three
  sets, one compiled while-loop);
- ``full_recompute``: a compiled forward pass of the whole 3 + 576 buffer per
  new token (the model's own ``call``, logits at every position, as decoding
  without a cache does), argmax at the next position.

Per-token latency, for ours and for KerasHub's ``GPT2CausalLM.generate`` with
random weights of the same width and depth Y + M + Z (the same vocabulary
size): ``(time for 64 new tokens - time for 1 new token) / 63``, so the
prefill of the 512-token prompt cancels out. Times are the best of a few
repeats after a warm-up call that compiles.
"""

import time

import numpy as np

PROMPT_LENGTH = 512
NEW_TOKENS = 64
REPEATS = 3
WIDTH = dict(d_model=256, num_heads=4, d_ff=1024)
DEPTHS = dict(num_vanilla_layers=2, num_nm_layers=2, num_output_layers=2)


def _best_time(fn, repeats=REPEATS):
    fn()  # compile
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def _nemot():
    import keras

    import nemot

    keras.utils.set_random_seed(0)
    config = nemot.NeMoTConfig.preset("small").replace(
        max_text_length=PROMPT_LENGTH + NEW_TOKENS, max_position_embeddings=1024,
        output_blocks=("lm", "mqa", "gqa"), vanilla_head=False, **WIDTH, **DEPTHS)
    return nemot.build_model(config)


def _prompt(model):
    from nemot import vocab

    rng = np.random.default_rng(0)
    text = rng.integers(0, vocab.GPT2_VOCAB_SIZE, PROMPT_LENGTH).tolist()
    return [vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id("gqa")] + text


def _full_recompute(model, prompt, new_tokens):
    """Greedy decoding by a compiled full forward pass per token on a static buffer."""
    import tensorflow as tf

    from nemot import vocab

    width = len(prompt) + new_tokens
    buffer = np.full((1, width), vocab.PAD_ID, np.int32)
    buffer[0, :len(prompt)] = prompt

    @tf.function(jit_compile=True)
    def step(token_ids, position):
        logits = model({"token_ids": token_ids}, training=False)["logits"]
        return tf.argmax(logits[0, position - 1 - 3], output_type=tf.int32)

    def run():
        ids = tf.constant(buffer)
        for position in range(len(prompt), width):
            token = step(ids, tf.constant(position))
            ids = tf.tensor_scatter_nd_update(ids, [[0, position]], token[None])
        return ids

    return run


def _keras_hub_gpt2(num_layers, vocabulary_size):
    import keras
    import keras_hub

    keras.utils.set_random_seed(0)
    backbone = keras_hub.models.GPT2Backbone(
        vocabulary_size=vocabulary_size, num_layers=num_layers, num_heads=WIDTH["num_heads"],
        hidden_dim=WIDTH["d_model"], intermediate_dim=WIDTH["d_ff"], max_sequence_length=1024)
    lm = keras_hub.models.GPT2CausalLM(backbone=backbone, preprocessor=None)
    lm.compile(sampler="greedy")
    return lm


def _keras_hub_generate(lm, prompt_text, new_tokens):
    width = len(prompt_text) + new_tokens
    token_ids = np.zeros((1, width), np.int32)
    token_ids[0, :len(prompt_text)] = prompt_text
    mask = np.arange(width)[None] < len(prompt_text)
    inputs = {"token_ids": token_ids, "padding_mask": mask}
    return lambda: lm.generate(inputs, stop_token_ids=None)


def run():
    from nemot.models.generation import Generator

    model = _nemot()
    prompt = _prompt(model)
    generator = Generator(model, stop_token_ids=())
    cached = {n: _best_time(lambda n=n: generator([prompt], max_new_tokens=n))
              for n in (1, NEW_TOKENS)}
    recompute = _best_time(_full_recompute(model, prompt, NEW_TOKENS), repeats=1)

    depth = sum(DEPTHS[k] for k in ("num_vanilla_layers", "num_nm_layers", "num_output_layers"))
    lm = _keras_hub_gpt2(depth, model.config.vocab_size)
    hub = {n: _best_time(_keras_hub_generate(lm, prompt[3:], n)) for n in (1, NEW_TOKENS)}

    def per_token_ms(times):
        return 1000 * (times[NEW_TOKENS] - times[1]) / (NEW_TOKENS - 1)

    return {
        "setting": dict(prompt_length=PROMPT_LENGTH, new_tokens=NEW_TOKENS, batch=1,
                        **WIDTH, **DEPTHS, vocab_size=model.config.vocab_size),
        "nemot_cached_s": round(cached[NEW_TOKENS], 3),
        "nemot_full_recompute_s": round(recompute, 3),
        "speedup_cached_vs_recompute": round(recompute / cached[NEW_TOKENS], 1),
        "nemot_cached_ms_per_token": round(per_token_ms(cached), 2),
        "keras_hub_gpt2_ms_per_token": round(per_token_ms(hub), 2),
        "keras_hub_gpt2_layers": depth,
        "nemot_prefill_plus_1_token_s": round(cached[1], 3),
        "keras_hub_gpt2_prefill_plus_1_token_s": round(hub[1], 3),
    }
