"""Part-of-speech tags for the highlighting reading strategy (thesis §3.4.3).

Every text position gets one of eight category ids (:data:`POS_CATEGORIES`):
noun, verb, adjective, adverb, numeral, foreign word, other, special token.
The tags are computed here, in the data pipeline, from the token ids alone (so
pre-tokenised shards work too), and travel to the model as the extra input
``"pos_tags"`` int [batch, n] with :data:`POS_PAD_ID` at padding.

How a token gets its tag: the text between added tokens (the passage, the
question, each option, the answer) is decoded, split into words
(:func:`split_words`), and the words are tagged with Penn Treebank tags by a
pluggable tagger, in context (default) or each word alone (the original code,
``words_alone=True``). Every BPE token takes the category of the word under
its first non-space character; a word cut into several BPE tokens gives them
all its category; added tokens (``<p1>``, ``<q>``, ``(1)``, ``<sep>``, ...)
are ``special_token``.

The default tagger is NLTK's averaged perceptron; its data are downloaded once::

    python -m nltk.downloader averaged_perceptron_tagger_eng

Example:
    >>> tagger = PosTagger()                                     # doctest: +SKIP
    >>> x = add_pos_tags({"token_ids": token_ids}, tagger)       # doctest: +SKIP
    >>> x["pos_tags"].shape                                      # (batch, n)
"""

import bisect
import re

import numpy as np

from nemot import vocab

from nemot.vocab import NUM_AUX, POS_CATEGORIES, POS_PAD_ID  # noqa: F401  (the shared contract)

NOUN, VERB, ADJECTIVE, ADVERB, NUMERAL, FOREIGN_WORD, OTHER, SPECIAL_TOKEN = range(
    len(POS_CATEGORIES))
NLTK_DOWNLOAD = "python -m nltk.downloader averaged_perceptron_tagger_eng"

# Penn Treebank tag -> category. Modals (MD), wh-adverbs (WRB) and particles (RP)
# are separate Penn classes, not verbs or adverbs, so they fall under "other".
_PENN = {
    **dict.fromkeys(("NN", "NNS", "NNP", "NNPS"), NOUN),
    **dict.fromkeys(("VB", "VBD", "VBG", "VBN", "VBP", "VBZ"), VERB),
    **dict.fromkeys(("JJ", "JJR", "JJS"), ADJECTIVE),
    **dict.fromkeys(("RB", "RBR", "RBS"), ADVERB),
    "CD": NUMERAL,
    "FW": FOREIGN_WORD,
}

# Words as Penn Treebank splits them, roughly: numbers with their separators,
# "n't" and "'s"-style clitics apart, a run of word characters, one punctuation mark.
_WORD = re.compile(r"\d+(?:[.,:]\d+)*|\w+(?=n't\b)|n't\b|'\w+|\w+|[^\w\s]", re.UNICODE)


def category(penn_tag):
    """Category id of a Penn Treebank tag; tags outside the six word classes are ``other``.

    Example:
        >>> [POS_CATEGORIES[category(t)] for t in ("NNS", "VBD", "JJ", "RB", "CD", "FW", "DT")]
        ['noun', 'verb', 'adjective', 'adverb', 'numeral', 'foreign_word', 'other']
    """
    return _PENN.get(penn_tag, OTHER)


def split_words(text):
    """Character spans ``(start, end)`` of the words of ``text`` (see ``_WORD``).

    Example:
        >>> [text[s:e] for s, e in split_words(text := "I don't own 3.5 cats.")]
        ['I', 'do', "n't", 'own', '3.5', 'cats', '.']
    """
    return [match.span() for match in _WORD.finditer(text)]


def default_tagger():
    """NLTK's averaged-perceptron tagger (English, Penn tags); a clear error without its data."""
    from nltk.tag.perceptron import PerceptronTagger

    try:
        return PerceptronTagger()
    except LookupError as error:
        raise LookupError(f"NLTK's averaged_perceptron_tagger_eng data are not installed; "
                          f"download them once with: {NLTK_DOWNLOAD}") from error


class PosTagger:
    """Category ids per BPE token of NeMoT text (module docstring has the rules).

    Args:
        tagger: anything with NLTK's ``tag(words) -> [(word, penn_tag), ...]``;
            default :func:`default_tagger` (needs the NLTK data, see above).
        tokenizer: a :class:`nemot.data.Tokenizer` (default: the offline GPT-2 one).
        words_alone: tag every word on its own, without context, as the original
            code did (``compat_tag_words_alone``).

    Example:
        >>> tagger = PosTagger()                                       # doctest: +SKIP
        >>> tagger.tag_text_ids(Tokenizer().encode("<q> Dogs bark <sep>"))  # doctest: +SKIP
        [7, 0, 1, 7]
    """

    def __init__(self, tagger=None, tokenizer=None, words_alone=False):
        if tokenizer is None:
            from nemot.data.tokenizer import Tokenizer

            tokenizer = Tokenizer()
        self.tagger = default_tagger() if tagger is None else tagger
        self.words_alone = words_alone
        # Bytes of every GPT-2 token id, looked up once per token when tagging.
        self._token_bytes = [tokenizer.token_bytes(i) for i in range(vocab.GPT2_VOCAB_SIZE)]
        self._alone = {}  # word -> category; context-free, so safe to cache

    def _word_categories(self, words):
        if not self.words_alone:
            tagged = self.tagger.tag(words)
            if len(tagged) != len(words):
                raise ValueError(f"tagger {type(self.tagger).__name__} returned {len(tagged)} "
                                 f"tags for {len(words)} words")
            return [category(tag) for _, tag in tagged]
        out = []
        for word in words:
            if word not in self._alone:
                self._alone[word] = category(self.tagger.tag([word])[0][1])
            out.append(self._alone[word])
        return out

    def _tag_run(self, ids):
        """Categories of a run of ordinary GPT-2 token ids (no added tokens)."""
        pieces = [self._token_bytes[i] for i in ids]
        bounds = np.cumsum([0] + [len(p) for p in pieces]).tolist()  # token k: bytes k..k+1
        # surrogateescape keeps one char per undecodable byte (a run cut inside a
        # character), so character and byte offsets stay in step.
        text = b"".join(pieces).decode("utf-8", errors="surrogateescape")
        char_starts = np.cumsum(
            [0] + [len(c.encode("utf-8", "surrogateescape")) for c in text[:-1]]).tolist()
        spans = split_words(text)
        categories = self._word_categories([text[s:e] for s, e in spans]) if spans else []
        word_of_char = [-1] * len(text)
        for w, (s, e) in enumerate(spans):
            word_of_char[s:e] = [w] * (e - s)
        out = []
        for start, end in zip(bounds[:-1], bounds[1:]):
            # Characters overlapping the token's bytes (at least the one it starts in).
            first = bisect.bisect_right(char_starts, start) - 1
            stop = max(bisect.bisect_left(char_starts, end), first + 1)
            c = next((c for c in range(first, stop) if not text[c].isspace()), None)
            # Every non-space character lies in a word; a whitespace token is "other".
            out.append(OTHER if c is None else categories[word_of_char[c]])
        return out

    def tag_text_ids(self, text_ids):
        """Category id of every text token; ``<pad>`` gets :data:`POS_PAD_ID`."""
        out, run = [], []

        def flush():
            if run:
                out.extend(self._tag_run(run))
                run.clear()

        for idx in map(int, text_ids):
            if 0 <= idx < vocab.GPT2_VOCAB_SIZE:
                run.append(idx)
                continue
            flush()
            if idx == vocab.PAD_ID:
                out.append(POS_PAD_ID)
            elif vocab.GPT2_VOCAB_SIZE <= idx < vocab.VOCAB_SIZE:
                out.append(SPECIAL_TOKEN)
            else:
                raise ValueError(f"token id {idx} is outside the vocabulary "
                                 f"0..{vocab.VOCAB_SIZE - 1}")
        flush()
        return out

    def tag_examples(self, examples, num_aux=NUM_AUX):
        """Tags of each :class:`nemot.data.FormattedExample`'s text positions (lists)."""
        return [self.tag_text_ids(ex.token_ids[num_aux:]) for ex in examples]

    def tag_batch(self, token_ids, num_aux=NUM_AUX):
        """int32 [batch, n] tags of a batch ``token_ids`` [batch, num_aux + n]."""
        token_ids = np.asarray(token_ids)
        if token_ids.ndim != 2 or token_ids.shape[1] < num_aux:
            raise ValueError(f"token_ids: expected int [batch, {num_aux} + n], "
                             f"got shape {token_ids.shape}")
        return np.array([self.tag_text_ids(row[num_aux:]) for row in token_ids],
                        np.int32).reshape(len(token_ids), token_ids.shape[1] - num_aux)


def add_pos_tags(x, tagger, num_aux=NUM_AUX):
    """A copy of the batch dict ``x`` with ``"pos_tags"`` int32 [batch, n] added.

    Args:
        x: ``{"token_ids": int [batch, num_aux + n], ...}`` (numpy), as
            ``nemot.data.batching.batches`` yields.
        tagger: a :class:`PosTagger`.
        num_aux: auxiliary tokens before the text.

    Example:
        >>> x = add_pos_tags({"token_ids": ids}, PosTagger(my_nltk_tagger))  # doctest: +SKIP
    """
    if "token_ids" not in x:
        raise KeyError(f"batch has keys {sorted(x)}; expected 'token_ids'")
    return dict(x, pos_tags=tagger.tag_batch(x["token_ids"], num_aux))


def needs_pos_tags(model_config):
    """Whether a model config uses highlighting (then its inputs need ``"pos_tags"``)."""
    return "highlighting" in tuple(getattr(model_config, "reading_strategies", ()))


def pos_tagger_for(model_config, tagger=None, tokenizer=None):
    """The :class:`PosTagger` a model needs, or None when it does not use highlighting.

    Args:
        model_config: a ``NeMoTConfig`` (``reading_strategies``,
            ``compat_tag_words_alone``); configs without the fields give None.
        tagger: the word tagger (default :func:`default_tagger`, NLTK's perceptron).
        tokenizer: default the offline GPT-2 tokenizer.

    Example:
        >>> pos_tagger_for(NeMoTConfig.preset("tiny")) is None
        True
        >>> cfg = NeMoTConfig.preset("tiny").replace(reading_strategies=("highlighting",))
        >>> pos_tagger_for(cfg)                                        # doctest: +SKIP
        <nemot.data.pos_tags.PosTagger object at ...>
    """
    if not needs_pos_tags(model_config):
        return None
    return PosTagger(tagger, tokenizer,
                     words_alone=bool(getattr(model_config, "compat_tag_words_alone", False)))


def pad_pos_tags(tag_lists, max_text_length):
    """int32 [N, max_text_length] from per-example tag lists (:meth:`PosTagger.tag_examples`)."""
    out = np.full((len(tag_lists), max_text_length), POS_PAD_ID, np.int32)
    for i, tags in enumerate(tag_lists):
        if len(tags) > max_text_length:
            raise ValueError(f"example {i}: {len(tags)} tags for at most {max_text_length} "
                             "text positions")
        out[i, :len(tags)] = tags
    return out
