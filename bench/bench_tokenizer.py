"""Tokenizer throughput: nemot.Tokenizer (both engines) vs tiktoken's GPT-2 encoding
built from the same files, side by side in one run, on the pages of Python's
``pydoc_data.topics`` (real English with newlines and unicode)."""

import time

import pydoc_data.topics
import tiktoken
from tiktoken.load import data_gym_to_mergeable_bpe_ranks
from tiktoken_ext.openai_public import r50k_pat_str

from nemot.data import Tokenizer
from nemot.data.tokenizer import default_files

REPEATS = 3


def _best_rate(encode_batch, texts):
    best = 0.0
    for _ in range(REPEATS):
        start = time.perf_counter()
        n_tokens = sum(len(ids) for ids in encode_batch(texts))
        best = max(best, n_tokens / (time.perf_counter() - start))
    return n_tokens, best


def run():
    encoder_json, vocab_bpe = default_files()
    reference = tiktoken.Encoding(
        "gpt2-reference", pat_str=r50k_pat_str,
        mergeable_ranks=data_gym_to_mergeable_bpe_ranks(str(vocab_bpe), str(encoder_json)),
        special_tokens={"<|endoftext|>": 50256})
    # ~4 MB of text in documents of a few kB, like C4.
    texts = [t for _, t in sorted(pydoc_data.topics.topics.items())] * 8
    result = {"documents": len(texts), "characters": sum(map(len, texts))}
    n_tokens, rate = _best_rate(reference.encode_ordinary_batch, texts)
    result["tokens"] = n_tokens
    result["tiktoken_gpt2_tokens_per_s"] = round(rate)
    for engine in ("tiktoken", "tokenizers"):
        tok = Tokenizer(engine=engine)
        n, rate_engine = _best_rate(tok.encode_batch, texts)
        result[f"nemot_{engine}_tokens_per_s"] = round(rate_engine)
        result[f"nemot_{engine}_vs_tiktoken"] = round(rate_engine / rate, 3)
        # Counts differ only where the pages contain added-token strings such as "(1)".
        result[f"nemot_{engine}_tokens"] = n
    return result
