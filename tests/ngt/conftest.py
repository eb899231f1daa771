"""Fixtures for the NGT tests: SuperGLUE files, a tiny word-piece vocabulary and tokenizer."""

import keras
import keras_hub
import pytest

from tests.ngt.helpers import RECORDS, make_vocab, strings, write_jsonl


@pytest.fixture(autouse=True)
def _seed():
    """Same random weights on every run, so a failure can be replayed."""
    keras.utils.set_random_seed(0)


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
