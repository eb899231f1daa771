"""KerasHub's causal-LM habits, side by side: the same calls on a tiny ``GPT2CausalLM`` (an
in-memory vocabulary, offline) and on a tiny ``NeMoTCausalLM`` give the same kinds of
results. Where NeMoT differs by design, docs/gpt2.md ("KerasHub's habits") states it and
the test asserts the difference.
"""

import re

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

import nemot
from nemot import vocab

# KerasHub's generate traces its loop anew for each sampler and buffer shape; run eagerly,
# these few short generations cost less than their traces (the compiled loop is
# tests/models/test_generation.py's).
pytestmark = pytest.mark.usefixtures("eager")

PROMPTS = ["<q> Is the sky blue? <sep>", "<p1> The cat sat. <q> Where did it sit? <sep>"]
GPT2_PROMPTS = ["the quick fox", "a quick"]
GPT2_MERGES = ["Ġ q", "u i", "c k", "ui ck", "Ġq uick", "Ġ f", "o x", "Ġf ox", "t h", "th e",
               "Ġ t", "Ġt h", "Ġth e", "Ġ a", "Ġ j", "u m", "p e", "um pe", "Ġj umpe", "Ġjumpe d"]
# Every character and every merge's result, after GPT-2's end token.
GPT2_VOCABULARY = {token: i for i, token in enumerate(dict.fromkeys(
    ["<|endoftext|>", *"Ġthequickfoxajmpd"] + [m.replace(" ", "") for m in GPT2_MERGES]))}
SAMPLERS = ("greedy", "top_k", "top_p", "random", "beam", "contrastive")


@pytest.fixture(scope="module")
def gpt2():
    keras.utils.set_random_seed(0)
    tokenizer = keras_hub.models.GPT2Tokenizer(vocabulary=GPT2_VOCABULARY, merges=GPT2_MERGES)
    preprocessor = keras_hub.models.GPT2CausalLMPreprocessor(tokenizer, sequence_length=12)
    backbone = keras_hub.models.GPT2Backbone(
        vocabulary_size=len(GPT2_VOCABULARY), num_layers=1, num_heads=2, hidden_dim=8,
        intermediate_dim=16, max_sequence_length=32)
    lm = keras_hub.models.GPT2CausalLM(backbone=backbone, preprocessor=preprocessor)
    # NeMoT's default sampler (the thesis decoded greedily); no XLA: less to compile here.
    lm.compile(sampler="greedy", jit_compile=False)
    return lm


@pytest.fixture(scope="module")
def nemot_lm():
    keras.utils.set_random_seed(0)
    # One layer per set and the two blocks the prompts select: less to trace.
    config = nemot.NeMoTConfig.preset("tiny").replace(
        num_vanilla_layers=1, num_nm_layers=1, output_blocks=("lm", "gqa"), max_text_length=24)
    lm = nemot.build_model(config)
    lm.compile(jit_compile=False)
    return lm


@pytest.fixture(scope="module")
def models(gpt2, nemot_lm):
    return [(gpt2, GPT2_PROMPTS), (nemot_lm, PROMPTS)]


def test_generate_takes_a_string_a_list_and_batched_or_unbatched_datasets(models):
    for lm, prompts in models:
        name = type(lm).__name__
        single = lm.generate(prompts[0], max_length=10)
        assert isinstance(single, str) and single.startswith(prompts[0]), name
        batch = lm.generate(prompts, max_length=10)
        assert isinstance(batch, list) and batch[0] == single, name
    # KerasHub's generate reads a dataset batch by batch; its GPT-2 tokenizer (0.32) takes
    # Python strings only and refuses the byte arrays a dataset yields, NeMoT's takes them.
    lm, prompts = models[1]
    batch = lm.generate(prompts, max_length=10)
    for dataset in (tf.data.Dataset.from_tensor_slices(prompts).batch(2),
                    tf.data.Dataset.from_tensor_slices(prompts)):
        assert lm.generate(dataset, max_length=10) == batch


def test_generate_strips_the_prompt_and_stops_where_told(models):
    for lm, prompts in models:
        name = type(lm).__name__
        full = lm.generate(prompts[0], max_length=10, stop_token_ids=None)
        answer = lm.generate(prompts[0], max_length=10, stop_token_ids=None, strip_prompt=True)
        assert full.startswith(prompts[0]) and not answer.startswith(prompts[0]), name
        assert full.endswith(answer), name
        # With the first token the model generates a stop token, it ends generation and is
        # kept: one new token, as a buffer one longer than the prompt. (A stop list of the
        # whole vocabulary says the same, at 50,000 comparisons per step.)
        length = int(np.asarray(
            lm.preprocessor.generate_preprocess([prompts[0]])["padding_mask"]).sum())
        x = lm.preprocessor.generate_preprocess([prompts[0]], sequence_length=length + 1)
        aux = np.shape(x["token_ids"])[1] - (length + 1)
        first = int(np.asarray(lm.generate_step(x, stop_token_ids=None)["token_ids"])[
            0, aux + length])
        one_token = lm.generate(prompts[0], max_length=length + 1, stop_token_ids=None)
        assert lm.generate(prompts[0], max_length=10, stop_token_ids=[first]) == one_token, name
        assert one_token != prompts[0] and one_token.startswith(prompts[0]), name


def test_generate_preprocess_and_postprocess_round_trip(models):
    """Both pad the prompts to max_length with a padding_mask over them; NeMoT puts its three
    auxiliary tokens first, outside the mask (they are not text)."""
    for lm, prompts in models:
        x = lm.preprocessor.generate_preprocess(prompts, sequence_length=20)
        aux = vocab.NUM_AUX if isinstance(lm, nemot.NeMoTCausalLM) else 0
        assert set(x) == {"token_ids", "padding_mask"}
        assert np.shape(x["token_ids"]) == np.shape(x["padding_mask"]) == (2, aux + 20)
        assert not np.asarray(x["padding_mask"])[:, :aux].any()
        assert list(lm.preprocessor.generate_postprocess(x)) == prompts
    aux_ids = np.asarray(models[1][0].preprocessor.generate_preprocess(PROMPTS)["token_ids"])
    assert (aux_ids[:, :3] == [vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id("gqa")]).all()


def test_every_built_in_sampler_generates(nemot_lm):
    lm = nemot_lm
    for sampler in SAMPLERS:  # GPT-2 runs them all in KerasHub's own tests
        lm.compile(sampler=sampler, jit_compile=False)
        out = lm.generate(PROMPTS, max_length=10, strip_prompt=True)
        assert len(out) == 2 and all(isinstance(o, str) for o in out), sampler
    lm.compile(sampler="greedy", jit_compile=False)


def test_nemots_additions_ride_on_kerashubs_generate(nemot_lm):
    lm = nemot_lm
    short = lm.generate(PROMPTS, max_new_tokens=2, stop_token_ids=None, strip_prompt=True)
    longer = lm.generate(PROMPTS, max_new_tokens=4, stop_token_ids=None, strip_prompt=True)
    tokenizer = lm.preprocessor.tokenizer.tokenizer
    assert all(longer_text.startswith(text) for text, longer_text in zip(short, longer))
    assert [len(tokenizer.encode(t)) for t in longer] != [len(tokenizer.encode(t)) for t in short]
    lm_block = lm.generate(PROMPTS[0], max_new_tokens=4, strip_prompt=True, task="lm")
    reference = nemot.generate(lm, [vocab.aux_ids("dec", "lm") + tokenizer.encode(PROMPTS[0])],
                               max_new_tokens=4)
    assert lm_block == tokenizer.decode(reference[0])
    with pytest.raises(ValueError, match="task token"):
        lm.generate(PROMPTS[0], task="mqa")  # no such block in this model
    with pytest.raises(ValueError, match="decoder mask only"):
        lm.generate(PROMPTS[0], mode="enc")
    with pytest.raises(ValueError, match="max_new_tokens=0"):
        lm.generate(PROMPTS[0], max_new_tokens=0)


@pytest.mark.parametrize("bad, error, words", [
    (None, TypeError, "got NoneType"), (123, TypeError, "got int"),
    ([], ValueError, "empty list"), ([1, 2], TypeError, "a prompt is int"),
])
def test_wrong_prompts_are_refused_by_name(nemot_lm, bad, error, words):
    with pytest.raises(error, match=words):
        nemot_lm.generate(bad)


def test_the_docs_list_every_method_the_task_overrides():
    """docs/gpt2.md's table of overrides names exactly the KerasHub and Keras methods that
    NeMoT's task classes define again (KerasHub's generation hooks aside)."""
    from pathlib import Path

    from nemot.models.task import TextToTextCausalLM

    hooks = {"generate_step", "preprocessor_cls", "backbone_cls"}
    bases = keras_hub.models.CausalLM.__mro__
    overridden = {name for cls in (TextToTextCausalLM, nemot.NeMoTCausalLM)
                  for name in vars(cls)
                  if not name.startswith("__") and name not in hooks
                  and any(name in vars(base) for base in bases)}
    docs = (Path(__file__).resolve().parents[2] / "docs" / "gpt2.md").read_text()
    table = docs.split("### What the task changes in KerasHub's `CausalLM`", 1)[1]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "`" in line]
    listed = {name for row in rows for name in re.findall(r"`(\w+)`", row.rsplit("|", 2)[1])}
    assert listed == overridden
