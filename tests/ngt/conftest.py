"""Fixtures for the NGT tests: SuperGLUE files, a tiny word-piece vocabulary and tokenizer."""

import keras
import pytest

from tests.data.superglue_records import superglue_dir, tokenizer, vocab_file  # noqa: F401


@pytest.fixture(autouse=True)
def _seed():
    """Same random weights on every run, so a failure can be replayed."""
    keras.utils.set_random_seed(0)
