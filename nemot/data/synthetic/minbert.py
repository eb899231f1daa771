"""A synthetic stand-in for the PALs seed's data and BERT, for runs without downloads.

:func:`write_synthetic` writes minBERT-format files (``ids-sst-*.csv``, ``quora-*.csv``,
``sts-*.csv``, ``ids-cfimdb-*.csv``; same columns and quoting as the published ones)
whose labels follow simple word rules, a matching ``vocab.txt``, and a random BERT in the
Hugging Face layout (``config.json`` + ``model.safetensors``):

- sentiment: ``clip(2 + #positive words - #negative words, 0, 4)`` (SST), its sign (CFIMDB);
- paraphrase: sentence 2 is sentence 1 reordered with one synonym swapped, or another
  sentence sharing some words;
- similarity: 1.25 x the number of "similarity" words (``same``, ``alike``, ...) in the two
  sentences together (a bag-of-words rule: a random small BERT does not learn word overlap
  across the pair in a few hundred steps, and its large squared error would then stall the
  other tasks).

Example:
    >>> paths = write_synthetic("synthetic", seed=0)                         # doctest: +SKIP
    >>> # nemot pals run --config configs/pals/table2.toml --set data.dir=synthetic/data \\
    >>> #     --set model.backbone=synthetic/bert --set model.tokenizer=synthetic/vocab.txt
"""

import csv
import json
from pathlib import Path

import numpy as np

TINY_BERT = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
             "intermediate_size": 128, "max_position_embeddings": 64}  # a Hugging Face BERT config
SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
POSITIVE = ("good", "great", "lovely", "fine", "warm", "funny", "smart", "bright")
NEGATIVE = ("bad", "dull", "awful", "weak", "cold", "boring", "empty", "grim")
TOPICS = ("film", "movie", "story", "cast", "plot", "song", "city", "dog", "cat", "car",
          "river", "house", "book", "game", "team", "market", "school", "garden")
SYNONYMS = {"film": "movie", "movie": "film", "story": "plot", "plot": "story",
            "dog": "puppy", "car": "auto", "house": "home", "book": "novel"}
SIMILAR = ("same", "alike", "like", "also", "too")
FILLER = ("the", "a", "is", "was", "and", "with", "of", "it", "this", "very", "what", "how",
          "why", "?", ".")
COLUMNS = {"sst": ("id", "sentence", "sentiment"), "cfimdb": ("id", "sentence", "sentiment"),
           "quora": ("id", "sentence1", "sentence2", "is_duplicate"),
           "sts": ("id", "sentence1", "sentence2", "similarity")}
FILES = {"sst": "ids-sst-{}.csv", "cfimdb": "ids-cfimdb-{}.csv", "quora": "quora-{}.csv",
         "sts": "sts-{}.csv"}
# Training examples per task (the report's are 8,544 / 1,701 / 141,498 / 6,040: the same
# imbalance, scaled down); dev sets are a fifth of that, at least 100.
SIZES = {"sst": 800, "cfimdb": 300, "quora": 4000, "sts": 600}


def vocabulary():
    words = set(POSITIVE + NEGATIVE + TOPICS + SIMILAR + FILLER) | set(SYNONYMS.values())
    return list(SPECIAL) + sorted(words)


def _sentence(rng, words):
    return " ".join(words[i] for i in rng.permutation(len(words)))


def _sentiment(rng, classes):
    pos, neg = rng.integers(0, 3), rng.integers(0, 3)
    words = [*rng.choice(POSITIVE, pos), *rng.choice(NEGATIVE, neg),
             *rng.choice(TOPICS, 2), *rng.choice(FILLER, 3)]
    score = int(np.clip(2 + pos - neg, 0, 4))
    label = score if classes == 5 else int(pos > neg)
    return (_sentence(rng, words), label)


def _content(rng, n):
    return list(rng.choice(TOPICS, n, replace=False))


def _paraphrase(rng):
    words = _content(rng, 3) + list(rng.choice(FILLER, 2))
    if rng.random() < 0.5:
        other = [SYNONYMS.get(w, w) if i == 0 else w for i, w in enumerate(words)]
        return (_sentence(rng, words), _sentence(rng, other), "1.0")
    other = words[:1] + _content(rng, 2) + list(rng.choice(FILLER, 2))
    return (_sentence(rng, words), _sentence(rng, other), "0.0")


def _similarity(rng):
    a, b = _content(rng, 3), _content(rng, 3)
    marks = int(rng.integers(0, 5))  # "similar" words spread over the two sentences
    split = int(rng.integers(0, marks + 1))
    a += list(rng.choice(SIMILAR, split))
    b += list(rng.choice(SIMILAR, marks - split))
    return (_sentence(rng, a + ["the"]), _sentence(rng, b + ["a"]), f"{1.25 * marks:.2f}")


def _rows(task, n, rng):
    make = {"sst": lambda: _sentiment(rng, 5), "cfimdb": lambda: _sentiment(rng, 2),
            "quora": lambda: _paraphrase(rng), "sts": lambda: _similarity(rng)}[task]
    return [(f"{task}{i:06d}", *make()) for i in range(n)]


def write_minbert(path, columns, rows):
    """A file as the minBERT project's: tab-separated, Python ``csv`` quoting, an unnamed
    index column, then ``columns``."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, delimiter="\t", lineterminator="\n")
        writer.writerow(["", *columns])
        writer.writerows([i, *row] for i, row in enumerate(rows))


def write_bert(directory, vocab_size, seed=0, std=0.02, all_random=False, **sizes):
    """A random BERT in Hugging Face's ``save_pretrained`` layout (``BertModel`` key names):
    matrices N(0, ``std``), LayerNorms 1 and biases 0 (BERT's initialisation), or every
    tensor N(0, ``std``) with ``all_random`` (so that a test sees each one)."""
    from safetensors.numpy import save_file

    config = {**TINY_BERT, **sizes}
    d, ff = config["hidden_size"], config["intermediate_size"]
    rng = np.random.default_rng(seed)
    tensors = {}

    def put(name, *shape, fill=None):
        tensors[name] = rng.normal(0, std, shape).astype("float32") \
            if fill is None or all_random else np.full(shape, fill, "float32")

    def norm(name):
        put(name + ".weight", d, fill=1.0)
        put(name + ".bias", d, fill=0.0)

    put("embeddings.word_embeddings.weight", vocab_size, d)
    put("embeddings.position_embeddings.weight", config["max_position_embeddings"], d)
    put("embeddings.token_type_embeddings.weight", 2, d)
    norm("embeddings.LayerNorm")
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        for part in ("attention.self.query", "attention.self.key", "attention.self.value",
                     "attention.output.dense"):
            put(p + part + ".weight", d, d)
            put(p + part + ".bias", d, fill=0.0)
        norm(p + "attention.output.LayerNorm")
        norm(p + "output.LayerNorm")
        put(p + "intermediate.dense.weight", ff, d)
        put(p + "intermediate.dense.bias", ff, fill=0.0)
        put(p + "output.dense.weight", d, ff)
        put(p + "output.dense.bias", d, fill=0.0)
    put("pooler.dense.weight", d, d)
    put("pooler.dense.bias", d, fill=0.0)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(directory / "model.safetensors"))
    (directory / "config.json").write_text(json.dumps({
        "model_type": "bert", "architectures": ["BertModel"], "vocab_size": vocab_size,
        "num_hidden_layers": config["num_hidden_layers"], "hidden_size": d,
        "num_attention_heads": config["num_attention_heads"], "intermediate_size": ff,
        "max_position_embeddings": config["max_position_embeddings"], "type_vocab_size": 2,
        "hidden_act": "gelu", "layer_norm_eps": 1e-12}))
    return tensors


def write_synthetic(root, sizes=None, seed=0):
    """``root/data/`` (train, dev and test-student files of every task), ``root/vocab.txt``
    and ``root/bert/``; returns those three paths."""
    root = Path(root)
    data = root / "data"
    data.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for task, n in (sizes or SIZES).items():
        for split, count in (("train", n), ("dev", max(n // 5, 100))):
            write_minbert(data / FILES[task].format(split), COLUMNS[task],
                          _rows(task, count, rng))
        write_minbert(data / FILES[task].format("test-student"), COLUMNS[task][:-1],
                      [row[:-1] for row in _rows(task, max(n // 5, 100), rng)])
    vocab = vocabulary()
    (root / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    write_bert(root / "bert", len(vocab), seed=seed)
    return data, root / "vocab.txt", root / "bert"
