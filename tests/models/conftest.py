import pytest

from tests.models.gpt2_checkpoint import write_tiny_gpt2


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory):
    """A tiny random GPT-2 in the Hugging Face layout."""
    return write_tiny_gpt2(tmp_path_factory.mktemp("hf") / "gpt2")
