"""Generation: cached decoding against full recomputation, the samplers, the compiled loops."""

import keras
import numpy as np
import pytest

import nemot
from nemot import vocab
from nemot.models import generation as decoding

GQA, LM, MQA = (vocab.task_token_id(name) for name in ("gqa", "lm", "mqa"))
MAX_NEW = 6


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(1234)
    return nemot.build_model(nemot.NeMoTConfig.preset("tiny"))


def prompt(task, text_ids):
    return [vocab.CLS_ID, vocab.DEC_ID, task] + list(text_ids)


@pytest.fixture(scope="module")
def prompts(model):
    """Right-padded batch: lengths 3, 9, 5 and one prompt 2 short of max_text_length."""
    rng = np.random.default_rng(7)
    near_full = model.config.max_text_length - 2
    return [prompt(task, rng.integers(0, vocab.GPT2_VOCAB_SIZE, n).tolist())
            for task, n in [(GQA, 3), (LM, 9), (GQA, 5), (MQA, near_full)]]


def full_logits(model, ids):
    """Main-head logits of the last position of one unpadded sequence, recomputed from scratch."""
    logits = model({"token_ids": np.array([ids], np.int32)}, training=False)["logits"]
    return np.asarray(keras.ops.convert_to_numpy(logits))[0, -1]


def greedy_by_recomputation(model, ids, max_new, stop_ids=()):
    """Greedy decoding of one prompt with a full forward pass per step, no cache, no padding."""
    seq, out = list(ids), []
    while len(out) < max_new and len(seq) - 3 < model.config.max_text_length:
        token = int(np.argmax(full_logits(model, seq)))
        if token in stop_ids:
            return out, True
        out.append(token)
        seq.append(token)
    return out, False


@pytest.fixture(scope="module")
def references(model, prompts):
    return [greedy_by_recomputation(model, p, MAX_NEW)[0] for p in prompts]


def test_cached_greedy_equals_full_recomputation_at_every_step(model, prompts, references):
    # Stop on the first token that prompt 1 generates at step 2 or later and not before
    # (others may generate it earlier): every example must stop at its own first
    # occurrence and nowhere else.
    step = next(k for k in range(2, MAX_NEW) if references[1][k] not in references[1][:k])
    stop = references[1][step]
    generator = decoding.Generator(model, stop_token_ids=(stop,))
    results = generator(prompts, max_new_tokens=MAX_NEW)
    for i, (p, result) in enumerate(zip(prompts, results)):
        expected, stopped = greedy_by_recomputation(model, p, MAX_NEW, stop_ids=(stop,))
        assert result.ids == expected, f"prompt {i}"
        assert result.stopped == stopped, f"prompt {i}"
    assert results[1].stopped and results[1].ids == references[1][:step]
    # The long prompt only had room for 2 new tokens within max_text_length.
    assert results[3].ids == references[3] and len(references[3]) == 2
    # Without it (prompt 0 again in its place: same shapes, same compiled loop) the
    # loop ends once every example has stopped or used its max_new_tokens, although
    # the cache is longer.
    batch = prompts[:3] + prompts[:1]
    tokens, lengths = generator.generate_tokens(batch, max_new_tokens=MAX_NEW)
    assert tokens.shape == (4, model.config.max_text_length)
    # Each example's last written position holds its stop token (forced at the budget).
    last = max(n + len(r.ids) + 1 for n, r in zip(lengths, results[:3] + results[:1]))
    assert (tokens[:, last:] == vocab.PAD_ID).all() and (tokens[:, last - 1] != vocab.PAD_ID).any()


class Uncached:
    """``model`` through its forward pass only: no ``init_cache``/``call_with_cache``."""

    def __init__(self, model):
        self.model, self.config = model, model.config

    def __call__(self, inputs, training=False):
        return self.model(inputs, training=training)


def test_a_model_without_a_cache_decodes_greedily_by_recomputation(model, prompts, references):
    uncached = Uncached(model)
    assert decoding.has_cache(model) and not decoding.has_cache(uncached)
    # Every prompt, the one 2 short of the window included: it stops at the window's end.
    assert decoding.generate(uncached, prompts, max_new_tokens=MAX_NEW, batch_size=3) == references
    stop = references[1][3]
    stopped = decoding.generate_by_recomputation(model, prompts, MAX_NEW, stop_token_ids=(stop,))
    # Each example ends before its own first stop token, nowhere else.
    assert stopped == [ref[:ref.index(stop)] if stop in ref else ref for ref in references]
    with pytest.raises(ValueError, match="no key/value cache; only greedy"):
        decoding.generate(uncached, prompts[:1], sampler="top_k")


def test_top_k_sampler_with_k_1_is_greedy_without_xla(model, prompts, references):
    generator = decoding.Generator(model, sampler=decoding.get_sampler("top_k"),
                                   stop_token_ids=(), jit_compile=False)
    generator.sampler.k = 1
    assert [g.ids for g in generator(prompts[:3], max_new_tokens=MAX_NEW)] == references[:3]


def test_shapes_round_the_prompt_and_cap_the_cache(model):
    generator = decoding.Generator(model, pad_to_multiple_of=8)
    limit = model.config.max_text_length
    assert generator.shapes([3, 9], 4) == (16, 20)
    assert generator.shapes([limit - 1], 4) == (limit - 1, limit)
    assert generator.shapes([limit - 4], 2) == (limit - 1, limit)


def test_bad_prompts_are_refused_with_their_index(model, prompts):
    generator = decoding.Generator(model)
    enc = [vocab.CLS_ID, vocab.ENC_ID, GQA, 5, 6]
    with pytest.raises(ValueError, match=r"prompt 1: <enc> at auxiliary position 1 .*\['dec'\]"):
        generator([prompts[0], enc])
    no_block = prompt(vocab.ADDED_TOKEN_IDS["<summarize_rs>"], [5])
    with pytest.raises(ValueError, match="prompt 0: <summarize_rs> at auxiliary position 2 .*"
                                         "output blocks"):
        generator([no_block])
    full = prompt(GQA, [5] * model.config.max_text_length)
    with pytest.raises(ValueError, match="prompt 0: 32 text tokens leave no room"):
        generator([full])
    with pytest.raises(ValueError, match="max_new_tokens"):
        generator(prompts, max_new_tokens=0)


def test_samplers_come_from_keras_hub(model):
    import keras_hub

    assert isinstance(decoding.get_sampler(None), keras_hub.samplers.GreedySampler)
    assert isinstance(decoding.get_sampler("top_p"), keras_hub.samplers.TopPSampler)
    # The cached call returns hidden states, which contrastive search reads.
    assert isinstance(decoding.get_sampler("contrastive"), keras_hub.samplers.ContrastiveSampler)
    with pytest.raises(TypeError, match="Sampler"):
        decoding.Generator(model, sampler=object())


def test_the_gpt2_baseline_decodes_through_the_same_cached_loop(prompts):
    from nemot.models.baseline import build_baseline

    keras.utils.set_random_seed(5)
    baseline = build_baseline("tiny")
    expected = [greedy_by_recomputation(baseline, p, 4)[0] for p in prompts[:3]]
    assert decoding.generate(baseline, prompts[:3], max_new_tokens=4, batch_size=2) == expected


def test_the_compiled_forward_pass_decodes_as_the_model_and_reads_new_weights(prompts):
    """What ``generate`` runs for a model without a cache on JAX, here on TensorFlow."""
    keras.utils.set_random_seed(5)
    # One layer per set and the two blocks that prompts[:2] select: less to trace.
    config = nemot.NeMoTConfig.preset("tiny").replace(num_vanilla_layers=1, num_nm_layers=1,
                                                      output_blocks=("lm", "gqa"))
    model = nemot.build_model(config)
    forward = decoding.CompiledForward(model, jit_compile=False)
    first = decoding.generate_by_recomputation(forward, prompts[:2], 3)
    assert first == decoding.generate_by_recomputation(model, prompts[:2], 3)
    keras.utils.set_random_seed(6)
    model.set_weights(nemot.build_model(config).get_weights())
    again = decoding.generate_by_recomputation(forward, prompts[:2], 3)
    assert again == decoding.generate_by_recomputation(model, prompts[:2], 3) != first
    with pytest.raises(ValueError, match="inference only"):
        forward({"token_ids": np.array([prompts[0]], "int32")}, training=True)


def test_generate_reuses_the_models_compiled_loop_and_sees_new_weights(prompts):
    """Each epoch's validation calls ``generate``: the model's own compiled generation
    function (KerasHub's ``make_generate_function``), traced once per buffer shape and
    reading the weights of the moment."""
    keras.utils.set_random_seed(3)
    # One layer per set and the two blocks that prompts[:2] select: less to trace.
    config = nemot.NeMoTConfig.preset("tiny").replace(num_vanilla_layers=1, num_nm_layers=1,
                                                      output_blocks=("lm", "gqa"))
    model = nemot.build_model(config)
    model.jit_compile = False
    first = decoding.generate(model, prompts[:2], max_new_tokens=3)
    function = model.generate_function
    keras.utils.set_random_seed(4)
    model.set_weights(nemot.build_model(config).get_weights())
    again = decoding.generate(model, prompts[:2], max_new_tokens=3)
    assert model.generate_function is function
    assert function.experimental_get_tracing_count() == 1
    assert again == decoding.generate_by_recomputation(model, prompts[:2], 3) != first
    model.compile(sampler="greedy")  # a new compile makes a new function, as in KerasHub
    assert model.generate_function is None


def test_logits_at_picks_each_rows_position():
    logits = np.random.default_rng(0).normal(size=(3, 5, 7)).astype("float32")
    positions = np.array([4, 0, 2], np.int32)
    picked = keras.ops.convert_to_numpy(decoding.logits_at(keras.ops.convert_to_tensor(logits),
                                                           positions))
    np.testing.assert_array_equal(picked, logits[np.arange(3), positions])
