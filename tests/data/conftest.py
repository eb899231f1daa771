import pytest

from nemot.data import Tokenizer
from tests.data import fixtures
from tests.data.superglue_records import superglue_dir, tokenizer, vocab_file  # noqa: F401


@pytest.fixture(scope="session")
def tok():
    return Tokenizer()


@pytest.fixture(scope="session")
def raw_dirs(tmp_path_factory):
    return fixtures.write_all(tmp_path_factory.mktemp("raw"))
