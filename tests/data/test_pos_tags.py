"""POS tags per BPE token for highlighting: Penn mapping, word alignment, context, batches.

The tagger is a real NLTK averaged perceptron trained on a small hand-tagged corpus
that the test writes (``tests.data.tagger_helper``; no NLTK data download, no network).
"""

import nltk
import numpy as np
import pytest
from nltk.tag import DefaultTagger
from nltk.tag.perceptron import PerceptronTagger

from nemot import vocab
from nemot.config import NeMoTConfig
from nemot.data import Formatter, QAExample, Tokenizer
from nemot.data import pos_tags
from nemot.data.pos_tags import (ADJECTIVE, ADVERB, FOREIGN_WORD, NOUN, NUMERAL, OTHER,
                                 POS_PAD_ID, SPECIAL_TOKEN, VERB, PosTagger, add_pos_tags,
                                 category, pad_pos_tags, pos_tagger_for, split_words)
from tests.data.tagger_helper import install_perceptron, perceptron  # noqa: F401 (fixture)


@pytest.fixture(scope="module")
def tokenizer():
    return Tokenizer()


def pieces(tokenizer, ids):
    return [tokenizer.decode([i]) for i in ids]


def test_penn_tags_map_to_the_eight_categories():
    assert [category(t) for t in ("NN", "NNS", "NNP", "NNPS")] == [NOUN] * 4
    assert [category(t) for t in ("VB", "VBD", "VBG", "VBN", "VBP", "VBZ")] == [VERB] * 6
    assert [category(t) for t in ("JJ", "JJR", "JJS", "RB", "RBR", "RBS", "CD", "FW")] == \
        [ADJECTIVE] * 3 + [ADVERB] * 3 + [NUMERAL, FOREIGN_WORD]
    assert [category(t) for t in ("DT", "IN", "MD", "WRB", "RP", "PRP", ".", None)] == [OTHER] * 8


def test_words_are_split_like_the_treebank():
    text = "He didn't pay $3,000.50 (twice)."
    assert [text[s:e] for s, e in split_words(text)] == \
        ["He", "did", "n't", "pay", "$", "3,000.50", "(", "twice", ")", "."]


def test_a_hand_tagged_sentence_gets_its_tags_per_bpe_token(tokenizer, perceptron):
    ids = tokenizer.encode("<q> The dog barked loudly at 42 visitors. (1) He said bonjour twice "
                           "<sep>")
    assert pieces(tokenizer, ids) == ["<q>", "The", " dog", " bark", "ed", " loudly", " at", " 42",
                                      " visitors", ".", "(1)", "He", " said", " bon", "j", "our",
                                      " twice", "<sep>"]
    assert PosTagger(perceptron, tokenizer).tag_text_ids(ids) == [
        SPECIAL_TOKEN, OTHER, NOUN, VERB, VERB, ADVERB, OTHER, NUMERAL, NOUN, OTHER,
        SPECIAL_TOKEN, OTHER, VERB, FOREIGN_WORD, FOREIGN_WORD, FOREIGN_WORD, ADVERB,
        SPECIAL_TOKEN]


def test_in_context_tags_differ_where_words_alone_cannot(tokenizer, perceptron):
    ids = tokenizer.encode("<q> We book a table. (1) The book was red. <sep>")
    book = [k for k, p in enumerate(pieces(tokenizer, ids)) if p == " book"]
    assert len(book) == 2
    in_context = PosTagger(perceptron, tokenizer).tag_text_ids(ids)
    assert [in_context[k] for k in book] == [VERB, NOUN]
    alone = PosTagger(perceptron, tokenizer, words_alone=True).tag_text_ids(ids)
    assert alone[book[0]] == alone[book[1]] == category(perceptron.tag(["book"])[0][1])


def test_every_piece_of_a_word_and_of_a_character_shares_its_tag(tokenizer):
    tagger = PosTagger(DefaultTagger("NN"), tokenizer)
    ids = tokenizer.encode("<q> naïvely 🐶  ok <sep>")
    names = pieces(tokenizer, ids)
    tags = tagger.tag_text_ids(ids)
    assert len(names) > 6  # "naïvely" and the emoji each take several BPE tokens
    # Word pieces are nouns (DefaultTagger); the double-space token has no word.
    space = names.index(" ")
    assert tags[0] == tags[-1] == SPECIAL_TOKEN
    assert tags[space] == OTHER
    assert all(t == NOUN for k, t in enumerate(tags[1:-1], 1) if k != space)
    # A run cut inside the emoji's bytes (truncation keeps whole tokens only) still tags.
    emoji = tokenizer.encode("🐶")
    assert len(emoji) > 1
    assert tagger.tag_text_ids(emoji[1:]) == [NOUN] * (len(emoji) - 1)


def test_batches_get_tags_of_the_text_with_padding(tokenizer, perceptron):
    fmt = Formatter(tokenizer, max_text_length=24)
    examples = fmt.format_batch([
        QAExample(id="1", question="The dog barked loudly.", options=("cats", "a book"),
                  label=0, task="mqa"),
        QAExample(id="2", question="We book a room.", answers=("yes",), task="gqa"),
    ])
    tagger = PosTagger(perceptron, tokenizer)
    lists = tagger.tag_examples(examples)
    assert [len(t) for t in lists] == [len(ex.token_ids) - 3 for ex in examples]
    token_ids = np.full((2, 3 + 24), vocab.PAD_ID, np.int32)
    for row, ex in enumerate(examples):
        token_ids[row, :len(ex.token_ids)] = ex.token_ids
    x = add_pos_tags({"token_ids": token_ids}, tagger)
    assert sorted(x) == ["pos_tags", "token_ids"] and x["token_ids"] is token_ids
    assert x["pos_tags"].dtype == np.int32 and x["pos_tags"].shape == (2, 24)
    np.testing.assert_array_equal(x["pos_tags"], pad_pos_tags(lists, 24))
    text = token_ids[:, 3:]
    np.testing.assert_array_equal(x["pos_tags"] == POS_PAD_ID, text == vocab.PAD_ID)
    np.testing.assert_array_equal(x["pos_tags"] == SPECIAL_TOKEN,
                                  (text >= vocab.GPT2_VOCAB_SIZE) & (text != vocab.PAD_ID))


def test_bad_inputs_are_named(tokenizer, perceptron):
    tagger = PosTagger(perceptron, tokenizer)
    with pytest.raises(ValueError, match="token id 60000"):
        tagger.tag_text_ids([464, 60000])
    with pytest.raises(ValueError, match=r"int \[batch, 3 \+ n\]"):
        tagger.tag_batch(np.zeros((5,), np.int32))
    with pytest.raises(KeyError, match="token_ids"):
        add_pos_tags({"ids": np.zeros((1, 5), np.int32)}, tagger)
    with pytest.raises(ValueError, match="example 0: 5 tags"):
        pad_pos_tags([[0] * 5], 4)

    class Dropping:
        def tag(self, words):
            return [(w, "NN") for w in words[:-1]]

    with pytest.raises(ValueError, match="returned 1 tags for 2 words"):
        PosTagger(Dropping(), tokenizer).tag_text_ids(tokenizer.encode("two words"))


def test_the_default_tagger_says_how_to_download_its_data(monkeypatch, tmp_path):
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    with pytest.raises(LookupError, match="python -m nltk.downloader "
                                          "averaged_perceptron_tagger_eng"):
        pos_tags.default_tagger()


def test_a_model_config_picks_its_tagger_from_the_nltk_data(tokenizer, perceptron, tmp_path,
                                                           monkeypatch):
    tiny = NeMoTConfig.preset("tiny")
    assert pos_tagger_for(tiny) is None
    assert pos_tagger_for(tiny.replace(reading_strategies=("aoi",))) is None
    # The default tagger is whatever NLTK finds as its English perceptron: here ours.
    monkeypatch.setattr(nltk.data, "path", [str(install_perceptron(perceptron, tmp_path))])
    ids = tokenizer.encode("<q> We book a table. (1) The book was red. <sep>")
    for words_alone in (False, True):
        cfg = tiny.replace(reading_strategies=("highlighting",),
                           compat_tag_words_alone=words_alone)
        tagger = pos_tagger_for(cfg, tokenizer=tokenizer)
        assert isinstance(tagger.tagger, PerceptronTagger) and tagger.words_alone == words_alone
        assert tagger.tag_text_ids(ids) == \
            PosTagger(perceptron, tokenizer, words_alone=words_alone).tag_text_ids(ids)
