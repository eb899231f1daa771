import hashlib
import json
import re

import pydoc_data.topics
import pytest
import tiktoken
from tiktoken.load import data_gym_to_mergeable_bpe_ranks
from tiktoken_ext.openai_public import r50k_pat_str

from nemot import vocab
from nemot.data import Tokenizer
from nemot.data.tokenizer import UNUSED_ID, default_files

# sha256 of OpenAI's published GPT-2 files (tiktoken_ext.openai_public.gpt2).
GPT2_SHA256 = {"vocab.bpe": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
               "encoder.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"}


@pytest.fixture(scope="module")
def reference():
    """tiktoken's GPT-2 encoding built by tiktoken's own loader from the same files."""
    encoder_json, vocab_bpe = default_files()
    ranks = data_gym_to_mergeable_bpe_ranks(str(vocab_bpe), str(encoder_json))
    return tiktoken.Encoding("gpt2-reference", pat_str=r50k_pat_str, mergeable_ranks=ranks,
                             special_tokens={"<|endoftext|>": 50256})


@pytest.fixture(scope="module")
def pages(tok):
    added = re.compile("|".join(re.escape(t) for t in vocab.ADDED_TOKEN_IDS))
    texts = [t for _, t in sorted(pydoc_data.topics.topics.items()) if not added.search(t)]
    assert len(texts) >= 20
    return texts[:40]


def test_default_files_are_openai_gpt2():
    for path in default_files():
        assert hashlib.sha256(path.read_bytes()).hexdigest() == GPT2_SHA256[path.name]


def test_every_added_token_has_its_spec_id(tok):
    assert len(vocab.ADDED_TOKEN_IDS) == 55
    for token, idx in vocab.ADDED_TOKEN_IDS.items():
        assert tok.token_to_id(token) == idx
        assert tok.encode(token) == [idx]
        assert tok.id_to_token(idx) == token
    assert tok.token_to_id("<sep>") == 50302 and tok.token_to_id("</s>") == 50300
    assert tok.token_to_id("<p1>") == 50258 and tok.token_to_id("(1)") == 50269
    assert tok.vocab_size == 50313


def test_whitespace_next_to_added_tokens_is_stripped(tok, reference):
    yes = reference.encode_ordinary("yes")
    assert len(yes) == 1 and yes != reference.encode_ordinary(" yes")
    assert tok.encode("<sep> yes </s>") == [50302, yes[0], 50300]
    assert tok.encode("<q>\n  Who?\t(1) a") == (
        [50268] + reference.encode_ordinary("Who?") + [50269] + reference.encode_ordinary("a"))
    # No whitespace is invented between adjacent added tokens or at the ends.
    assert tok.encode("<cls><dec>  ") == [50301, 50279]
    assert tok.encode("  lead <sep>") == reference.encode_ordinary("  lead") + [50302]


@pytest.mark.parametrize("engine", ["tiktoken", "tokenizers"])
def test_ordinary_text_matches_tiktoken_gpt2(engine, pages, reference):
    tok = Tokenizer(engine=engine)
    expected = reference.encode_ordinary_batch(pages)
    assert tok.encode_batch(pages) == expected
    assert tok.encode(pages[0]) == expected[0]
    unicode = "Zoë’s café — naïve 東京 🙂\n\n  tabs\tand  spaces  "
    assert tok.encode(unicode) == reference.encode_ordinary(unicode)


def test_decode_round_trip(tok, pages):
    for page in pages[:10]:
        assert tok.decode(tok.encode(page)) == page
    text = "<p1> Zoë’s café. <q> Where? (1) here (2) there <sep> (2)"
    assert tok.decode(tok.encode(text)) == text
    # Without the added tokens the stripped pieces are simply concatenated.
    assert tok.decode(tok.encode(text), skip_added_tokens=True) == "Zoë’s café.Where?herethere"


def test_unused_row_is_skipped_and_out_of_range_rejected(tok):
    ids = tok.encode("a bean <sep>")
    assert tok.decode(ids[:2] + [UNUSED_ID] + ids[2:]) == tok.decode(ids)
    assert tok.id_to_token(UNUSED_ID) is None
    with pytest.raises(ValueError, match="50313"):
        tok.decode([50313])
    with pytest.raises(KeyError):
        tok.token_to_id("<nope>")


def _write_hf_dir(directory, keras_hub=False):
    encoder_json, vocab_bpe = default_files()
    target = directory / "assets/tokenizer" if keras_hub else directory
    target.mkdir(parents=True, exist_ok=True)
    (target / ("vocabulary.json" if keras_hub else "vocab.json")).write_bytes(encoder_json.read_bytes())
    (target / "merges.txt").write_bytes(vocab_bpe.read_bytes())


@pytest.mark.parametrize("keras_hub", [False, True])
def test_loads_hugging_face_and_keras_hub_directories(tmp_path, tok, keras_hub):
    _write_hf_dir(tmp_path, keras_hub)
    other = Tokenizer(tmp_path)
    text = "Hello <sep> world </s>"
    assert other.encode(text) == tok.encode(text)
    assert other.files[0].parent.name == ("tokenizer" if keras_hub else tmp_path.name)


def test_explicit_files_and_bad_files(tmp_path):
    encoder_json, vocab_bpe = default_files()
    assert Tokenizer(vocabulary=encoder_json, merges=vocab_bpe).encode("hi") == [5303]
    with pytest.raises(FileNotFoundError, match="vocab.json"):
        Tokenizer(tmp_path)
    bad = tmp_path / "vocab.json"
    bad.write_text(json.dumps({"a": 0}))
    with pytest.raises(ValueError, match="50257"):
        Tokenizer(vocabulary=bad, merges=vocab_bpe)
    with pytest.raises(ValueError, match="together"):
        Tokenizer(vocabulary=bad)


def test_files_are_read_once_per_process_and_again_when_edited(tmp_path):
    encoder_json, vocab_bpe = default_files()
    assert Tokenizer()._engine is Tokenizer()._engine  # read once, shared
    assert Tokenizer(engine="tokenizers")._engine is not Tokenizer()._engine
    vocabulary = tmp_path / "vocab.json"
    vocabulary.write_bytes(encoder_json.read_bytes())
    copy = Tokenizer(vocabulary=vocabulary, merges=vocab_bpe)
    assert copy.encode("hi") == [5303] and copy._engine is not Tokenizer()._engine
    vocabulary.write_text(json.dumps({"a": 0}))  # edited: read again, and refused
    with pytest.raises(ValueError, match="50257"):
        Tokenizer(vocabulary=vocabulary, merges=vocab_bpe)


def test_token_bytes_are_the_raw_bytes_each_token_decodes_to(tok, reference):
    ids = tok.encode("<q> naïve 🐶 dogs <sep>")
    pieces = [tok.token_bytes(i) for i in ids[1:-1]]
    assert pieces == [reference.decode_single_token_bytes(i) for i in ids[1:-1]]
    # The emoji is split: some pieces alone are not valid UTF-8, all together are.
    assert b"".join(pieces) == "naïve 🐶 dogs".encode()
    assert any(not piece.decode("utf-8", errors="ignore").encode() == piece for piece in pieces)
    assert (tok.token_bytes(ids[0]), tok.token_bytes(UNUSED_ID)) == (b"<q>", b"")
    with pytest.raises(ValueError, match="token id 60000"):
        tok.token_bytes(60000)
