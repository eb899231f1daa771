"""Multiple choice: label mode is the argmax at ``<sep>``; option scores are the
log-likelihoods of each appended answer."""

import dataclasses

import keras
import numpy as np
import pytest

import nemot
from nemot import vocab
from nemot.data import Formatter, QAExample, Tokenizer
from nemot.evaluation import choices, options
from tests.models.test_generation import full_logits, prompt

GQA, LM, MQA = (vocab.task_token_id(name) for name in ("gqa", "lm", "mqa"))


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(1234)
    # One layer per set: multiple choice sees the model through its logits only.
    return nemot.build_model(nemot.NeMoTConfig.preset("tiny").replace(num_vanilla_layers=1,
                                                                      num_nm_layers=1))


def test_label_mode_is_the_argmax_at_sep_of_each_right_padded_prompt(model):
    rng = np.random.default_rng(7)
    prompts = [prompt(task, rng.integers(0, vocab.GPT2_VOCAB_SIZE, n).tolist())
               for task, n in [(GQA, 3), (LM, 9), (MQA, 5), (MQA, model.config.max_text_length)]]
    labels = choices.predict_labels(model, prompts, batch_size=3)
    assert labels == [int(np.argmax(full_logits(model, p))) for p in prompts]


@pytest.fixture(scope="module")
def formatter(model):
    return Formatter(Tokenizer(), max_text_length=model.config.max_text_length, task_token="mqa")


def test_score_options_is_the_log_likelihood_of_each_appended_answer(model, formatter):
    examples = [
        QAExample(id="a", question="What grows?", options=("a bean", "a very tall rose bush"),
                  label=0, task="mqa"),
        QAExample(id="b", passage="Mia planted it.", question="Who?",
                  options=("Mia", "Tom", "the old farmer"), label=None, task="mqa"),
    ]
    generate_mode = Formatter(formatter.tokenizer, formatter.max_text_length,
                              task_token="mqa", mqa_mode="generate")
    expected_mean, expected_sum = [], []
    for example in examples:
        means, sums = [], []
        for k in range(len(example.options)):
            formatted = generate_mode.format(dataclasses.replace(example, label=k))
            ids = formatted.token_ids
            answer_length = len(formatter.tokenizer.encode(f"{example.options[k]} </s>"))
            logits = model({"token_ids": np.array([ids], np.int32)}, training=False)["logits"]
            log_probs = keras.ops.convert_to_numpy(keras.ops.log_softmax(logits[0], axis=-1))
            text = ids[3:]
            values = [log_probs[t - 1, text[t]] for t in range(len(text) - answer_length, len(text))]
            means.append(np.mean(values))
            sums.append(np.sum(values))
        expected_mean.append(means)
        expected_sum.append(sums)
    got_mean = choices.score_options(model, formatter, examples, batch_size=2)
    got_sum = choices.score_options(model, formatter, examples, reduction="sum", batch_size=4)
    for got, expected in ((got_mean, expected_mean), (got_sum, expected_sum)):
        assert [len(s) for s in got] == [2, 3]
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)


def test_score_options_errors(model, formatter):
    example = QAExample(id="x", question="Q?", options=("a", "b"), task="mqa")
    with pytest.raises(ValueError, match="reduction"):
        choices.score_options(model, formatter, [example], reduction="max")
    with pytest.raises(ValueError, match="'y': no options"):
        choices.score_options(model, formatter, [QAExample(id="y", question="Q?", task="mqa")])


def test_the_evaluation_command_offers_the_reductions_scoring_implements():
    assert set(options.REDUCTIONS) == set(choices.REDUCTIONS)
