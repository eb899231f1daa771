"""SuperGLUE records in the official jsonl layout, a tiny cased word-piece vocabulary of
their words, and the fixtures that write them (shared by the reader, NGT and HyperGrid
tests)."""

import json
import re

import keras_hub
import pytest

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused1]", "[unused2]"]
LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
PUNCT = ".,?!'@:-<>/"

# Records in the official SuperGLUE jsonl layout (one val set per task; train reuses them).
RECORDS = {
    "BoolQ": [
        {"question": "is the sky blue", "passage": "The sky is blue on a clear day.", "idx": 0, "label": True},
        {"question": "is grass red", "passage": "Grass is green.", "idx": 1, "label": False},
    ],
    "CB": [
        {"premise": "It rained all day.", "hypothesis": "It was wet.", "label": "entailment", "idx": 0},
        {"premise": "He left early.", "hypothesis": "He stayed.", "label": "contradiction", "idx": 1},
        {"premise": "She sang.", "hypothesis": "She was happy.", "label": "neutral", "idx": 2},
    ],
    "COPA": [
        {"premise": "The man broke his toe.", "choice1": "He dropped a hammer on his foot.",
         "choice2": "He got a hole in his sock.", "question": "cause", "idx": 0, "label": 0},
        {"premise": "I tipped the bottle.", "choice1": "The liquid froze.",
         "choice2": "The liquid spilled.", "question": "effect", "idx": 1, "label": 1},
    ],
    "MultiRC": [
        {"idx": 0, "version": 1.1, "passage": {
            "text": "<b>Sent 1: </b>Tom has a dog.<br><b>Sent 2: </b>The dog is old.<br>",
            "questions": [
                {"question": "What does Tom have?", "idx": 0, "answers": [
                    {"text": "A dog", "idx": 0, "label": 1},
                    {"text": "A cat", "idx": 1, "label": 0},
                    {"text": "An old dog", "idx": 2, "label": 1}]},
                {"question": "Is the dog young?", "idx": 1, "answers": [
                    {"text": "No", "idx": 3, "label": 1},
                    {"text": "Yes", "idx": 4, "label": 0}]}]}},
    ],
    "ReCoRD": [
        {"source": "Daily mail", "idx": 0, "passage": {
            "text": "Paris is in France. @highlight U.S. visits Paris",
            "entities": [{"start": 0, "end": 4}, {"start": 12, "end": 17}, {"start": 31, "end": 34},
                         {"start": 43, "end": 47}]},
         "qas": [{"query": "@placeholder is a city", "idx": 7,
                  "answers": [{"start": 0, "end": 4, "text": "Paris"}, {"start": 43, "end": 47, "text": "Paris"}]},
                 {"query": "The @placeholder visited", "idx": 8,
                  "answers": [{"start": 31, "end": 34, "text": "U.S."}]}]},
    ],
    "RTE": [
        {"premise": "Dogs bark.", "hypothesis": "Dogs make noise.", "label": "entailment", "idx": 0},
        {"premise": "Cats sleep.", "hypothesis": "Cats fly.", "label": "not_entailment", "idx": 1},
    ],
    "WiC": [
        {"word": "bank", "sentence1": "He sat on the bank.", "sentence2": "The bank lent money.",
         "idx": 0, "label": False, "start1": 14, "start2": 4, "end1": 18, "end2": 8, "version": 1.1},
        {"word": "run", "sentence1": "I run fast.", "sentence2": "They run daily.",
         "idx": 1, "label": True, "start1": 2, "start2": 5, "end1": 5, "end2": 8, "version": 1.1},
    ],
    "WSC": [
        {"text": "Mark told Pete he was late.", "target": {"span2_index": 3, "span1_index": 0,
         "span1_text": "Mark", "span2_text": "he"}, "idx": 0, "label": False},
        {"text": "Anna hugged Mia because she was sad.", "target": {"span2_index": 4, "span1_index": 2,
         "span1_text": "Mia", "span2_text": "she"}, "idx": 1, "label": True},
    ],
}


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def make_vocab(texts):
    """A cased word-piece vocabulary: special tokens, every word of ``texts``, and every character."""
    words = sorted({w for t in texts for w in re.findall(r"[A-Za-z0-9]+", t)})
    chars = list(LETTERS) + list(PUNCT)
    return SPECIAL + words + [c for c in chars if c not in words] + [f"##{c}" for c in LETTERS]


def write_jsonl(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture(scope="session")
def superglue_dir(tmp_path_factory):
    """``<dir>/<Task>/{train,val}.jsonl`` for every task."""
    root = tmp_path_factory.mktemp("superglue")
    for task, records in RECORDS.items():
        write_jsonl(root / task / "train.jsonl", records)
        write_jsonl(root / task / "val.jsonl", records)
    return root


@pytest.fixture(scope="session")
def vocab_file(tmp_path_factory):
    texts = [s for records in RECORDS.values() for s in strings(records)]
    texts += ["red green blue gold filler words cause effect"]
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(make_vocab(texts)) + "\n")
    return path


@pytest.fixture(scope="session")
def tokenizer(vocab_file):
    return keras_hub.models.BertTokenizer(vocabulary=str(vocab_file), lowercase=False)
