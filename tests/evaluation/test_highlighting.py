"""Decoding and ``nemot evaluate`` for a NeMoT with the highlighting reading strategy.

The POS tagger is a real NLTK perceptron trained on a tiny hand-tagged corpus
(``tests.data.tagger_helper``); for the command it is installed where NLTK looks
for its English tagger, so the command finds it as it would the downloaded one.
"""

import dataclasses

import keras
import nltk
import numpy as np
import pytest

import nemot
from nemot import vocab
from nemot.data import Formatter
from nemot.data.pos_tags import OTHER, POS_PAD_ID, PosTagger
from nemot.data.qa import registry
from nemot.evaluation import choices, evaluate
from nemot.evaluation.report import read_predictions
from nemot.models import generation as decoding
from tests.data.tagger_helper import install_perceptron, perceptron  # noqa: F401 (fixture)
# The raw fixture files, the tokenizer and the command runner of the plain evaluate tests.
from tests.evaluation.test_evaluate import raw, run, tok  # noqa: F401

CFG = nemot.NeMoTConfig.preset("tiny").replace(
    num_vanilla_layers=1, num_nm_layers=1, reading_strategies=("highlighting",))


@pytest.fixture(scope="module")
def tagger(perceptron, tok):
    return PosTagger(perceptron, tok)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    keras.utils.set_random_seed(7)
    path = tmp_path_factory.mktemp("ckpt") / "high.keras"
    nemot.build_model(CFG).save(path)
    return path


@pytest.fixture(scope="module")
def model(checkpoint):
    return evaluate.load_checkpoint(checkpoint)


@pytest.fixture(scope="module")
def race(raw, tok):
    examples = registry.load_examples("race", "dev", raw["race"])
    formatter = Formatter(tok, max_text_length=CFG.max_text_length, task_token="mqa")
    return examples, formatter, formatter.format_batch(examples)


def last_logits(model, prompt, tags):
    x = {"token_ids": np.array([prompt], np.int32), "pos_tags": np.array([tags], np.int32)}
    return np.asarray(model(x, training=False)["logits"])[0, len(prompt) - 4]


def test_prompt_tags_are_the_training_tags_of_the_same_positions(race, tagger):
    _, _, formatted = race
    for item in formatted:
        prompt = tagger.tag_text_ids(item.prompt_ids[3:])
        assert prompt == tagger.tag_text_ids(item.token_ids[3:])[:len(prompt)]


def test_label_mode_feeds_the_tags_of_each_prompt(model, race, tagger):
    _, _, formatted = race
    prompts = [item.prompt_ids for item in formatted]
    logits = np.asarray(choices.next_token_logits(model, prompts[:3], tagger))
    for row, prompt in enumerate(prompts[:3]):
        right = last_logits(model, prompt, tagger.tag_text_ids(prompt[3:]))
        np.testing.assert_allclose(logits[row], right, atol=1e-5)
        wrong = last_logits(model, prompt, [OTHER] * (len(prompt) - 3))
        assert np.abs(wrong - right).max() > 1e-4  # the tags matter
    assert choices.predict_labels(model, prompts, batch_size=3, pos_tagger=tagger) == \
        [int(np.argmax(last_logits(model, p, tagger.tag_text_ids(p[3:])))) for p in prompts]


def test_score_mode_tags_every_prompt_with_its_option(model, race, tagger):
    examples, formatter, _ = race
    example = examples[0]
    scores = choices.score_options(model, formatter, [example], reduction="sum",
                                   pos_tagger=tagger)
    generate_mode = Formatter(formatter.tokenizer, formatter.max_text_length,
                              task_token="mqa", mqa_mode="generate")
    for k, score in enumerate(scores[0]):
        ids = generate_mode.format(dataclasses.replace(example, label=k)).token_ids
        answer_length = len(formatter.tokenizer.encode(f"{example.options[k]} </s>"))
        x = {"token_ids": np.array([ids], np.int32),
             "pos_tags": tagger.tag_batch(np.array([ids], np.int32))}
        logits = model(x, training=False)["logits"][0]
        log_probs = keras.ops.convert_to_numpy(keras.ops.log_softmax(logits, axis=-1))
        text = ids[3:]
        expected = sum(log_probs[t - 1, text[t]]
                       for t in range(len(text) - answer_length, len(text)))
        np.testing.assert_allclose(score, expected, rtol=1e-4, atol=1e-4)


def test_generation_refuses_a_highlighting_model(model, race):
    _, _, formatted = race
    with pytest.raises(ValueError, match="highlighting.*label mode"):
        decoding.generate(model, [formatted[0].prompt_ids], max_new_tokens=2)
    with pytest.raises(ValueError, match="highlighting.*label mode"):
        decoding.Generator(model)


def test_nemot_evaluate_label_mode_end_to_end(checkpoint, model, raw, race, perceptron, tok,
                                              tmp_path, monkeypatch):
    # The command builds NLTK's default English perceptron: it finds ours.
    monkeypatch.setattr(nltk.data, "path", [str(install_perceptron(perceptron,
                                                                   tmp_path / "nltk"))])
    run("--checkpoint", checkpoint, "--dataset", "race", "--split", "dev",
        "--data-dir", raw["race"], "--out", tmp_path / "out", "--batch-size", 3)
    records = read_predictions(tmp_path / "out" / "race_dev_predictions.jsonl")
    examples, _, formatted = race
    assert [r["id"] for r in records] == [e.id for e in examples] and len(records) == 4
    tagger = PosTagger(perceptron, tok)
    for record, item in zip(records, formatted):
        tags = tagger.tag_text_ids(item.prompt_ids[3:])
        assert POS_PAD_ID not in tags and item.prompt_ids[-1] == vocab.SEP_ID
        expected = int(np.argmax(last_logits(model, item.prompt_ids, tags)))
        assert record["prediction"] == tok.decode([expected]).strip()


def test_nemot_evaluate_refuses_generation_and_perplexity(checkpoint, raw, tmp_path):
    with pytest.raises(ValueError, match="generation with the highlighting"):
        run("--checkpoint", checkpoint, "--dataset", "squad_v2", "--split", "dev",
            "--data-dir", raw["squad_v2"], "--out", tmp_path)
    with pytest.raises(ValueError, match="perplexity of a model with the highlighting"):
        run("--checkpoint", checkpoint, "--dataset", "wikitext2", "--split", "test",
            "--data-dir", raw["wikitext2"], "--out", tmp_path)
