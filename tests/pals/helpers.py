"""Helpers for the PALs tests: data files in the published layouts, a tiny vocabulary,
and a tiny random BERT written as a Hugging Face checkpoint."""

import csv
import json
import re

import numpy as np
from safetensors.numpy import save_file

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

# A few rows as in the minBERT project's files (quoting included: Python's csv doubles
# quotes inside a quoted field, as the published files do).
SST = [("a7d575c9ed86ea9633660c67e", " It 's a lovely film with lovely performances .", 3),
       ("33cfa32975091f471e3a19656", " No one goes unindicted here .", 2),
       ("99014b32adee847d0dd85001a", " Here 's yet another horror franchise mucking up .", 0),
       ("3f0a8e5ed9860b29c72e4f90a", " A fast , funny , highly enjoyable movie .", 4)]
QUORA = [("fbfddc56315fb8a39e7608fa0", "What can you get as a customer?",
          "What are some ways to register?", "0.0"),
         ("b229a7f7a7b661a8a92f970cf", "What makes one angry?",
          "What is the one thing that makes you most angry?", "1.0"),
         ("98d19d73b11d52679505fde94", 'What does "turning the ship slowly" mean?',
          "Everybody knows that.", "0.0")]
STS = [("876d0172eef5db7776e39c5de", "UN chief welcomes elections in Guinea",
        "UN chief condemns attack in Mali", "1.0"),
       ("e8336dc096adaf2de4e8e9425", "Two black dogs are playing on the grass.",
        "Two black dogs are playing in a grassy plain.", "4.6"),
       ("646f2c8bb40c70f538c3263cc", "A boy whacks a man with a sword.",
        "A boy spanks a man with a plastic sword.", "3.333")]
COLUMNS = {"sst": ("id", "sentence", "sentiment"), "cfimdb": ("id", "sentence", "sentiment"),
           "quora": ("id", "sentence1", "sentence2", "is_duplicate"),
           "sts": ("id", "sentence1", "sentence2", "similarity")}
FILES = {"sst": "ids-sst-{}.csv", "cfimdb": "ids-cfimdb-{}.csv", "quora": "quora-{}.csv",
         "sts": "sts-{}.csv"}


def write_minbert(path, task, rows, with_label=True):
    """A minBERT file: an unnamed index column, then the task's columns (tab, csv quoting)."""
    columns = COLUMNS[task] if with_label else COLUMNS[task][:-1]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, delimiter="\t", lineterminator="\n")
        writer.writerow(["", *columns])
        for i, row in enumerate(rows):
            writer.writerow([i * 7, *row[:len(columns)]])
    return path


def write_minbert_dir(root, data=None, splits=("train", "dev")):
    """Every task's files under ``root`` (the same rows in each split) plus a student test."""
    data = data or {"sst": SST, "cfimdb": [(i, s, label % 2) for i, s, label in SST],
                    "quora": QUORA, "sts": STS}
    for task, rows in data.items():
        for split in splits:
            write_minbert(root / FILES[task].format(split), task, rows)
        write_minbert(root / FILES[task].format("test-student"), task, rows, with_label=False)
    return root


def write_tsv(path, header, rows):
    """A GLUE file: tab-separated, no quoting."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join("\t".join(map(str, r)) for r in [header, *rows]) + "\n",
                    encoding="utf-8")
    return path


def make_vocab(texts):
    """Special tokens, every lower-cased word and punctuation mark of ``texts``, letters."""
    words = sorted({w for t in texts for w in re.findall(r"\w+|[^\w\s]", t.lower())})
    letters = [c for c in "abcdefghijklmnopqrstuvwxyz0123456789" if c not in words]
    return SPECIAL + words + letters + [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz0123456789"]


def write_vocab(path, texts):
    path.write_text("\n".join(make_vocab(texts)) + "\n", encoding="utf-8")
    return path


def all_texts():
    return [t for rows in (SST, QUORA, STS) for row in rows for t in row[1:]
            if isinstance(t, str)]


def write_hf_bert(directory, vocab=40, d=8, heads=2, ff=16, positions=32, layers=2, seed=0):
    """A random BERT in Hugging Face's ``save_pretrained`` layout (config.json +
    model.safetensors, key names of ``BertModel``)."""
    rng = np.random.default_rng(seed)
    tensors = {}

    def put(name, *shape):
        tensors[name] = rng.normal(0, 0.3, shape).astype("float32")

    put("embeddings.word_embeddings.weight", vocab, d)
    put("embeddings.position_embeddings.weight", positions, d)
    put("embeddings.token_type_embeddings.weight", 2, d)
    put("embeddings.LayerNorm.weight", d)
    put("embeddings.LayerNorm.bias", d)
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for part in ("attention.self.query", "attention.self.key", "attention.self.value",
                     "attention.output.dense"):
            put(p + part + ".weight", d, d)
            put(p + part + ".bias", d)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            put(p + norm + ".weight", d)
            put(p + norm + ".bias", d)
        put(p + "intermediate.dense.weight", ff, d)
        put(p + "intermediate.dense.bias", ff)
        put(p + "output.dense.weight", d, ff)
        put(p + "output.dense.bias", d)
    put("pooler.dense.weight", d, d)
    put("pooler.dense.bias", d)
    directory.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(directory / "model.safetensors"))
    config = {"model_type": "bert", "architectures": ["BertModel"], "vocab_size": vocab,
              "hidden_size": d, "num_hidden_layers": layers, "num_attention_heads": heads,
              "intermediate_size": ff, "max_position_embeddings": positions,
              "type_vocab_size": 2, "hidden_act": "gelu", "layer_norm_eps": 1e-12}
    (directory / "config.json").write_text(json.dumps(config))
    return tensors
