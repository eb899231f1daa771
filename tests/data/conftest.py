import pytest

from nemot.data import Tokenizer
from tests.data import fixtures


@pytest.fixture(scope="session")
def tok():
    return Tokenizer()


@pytest.fixture(scope="session")
def raw_dirs(tmp_path_factory):
    return fixtures.write_all(tmp_path_factory.mktemp("raw"))
