"""Helpers for the PALs tests: data files in the published layouts, a tiny vocabulary,
and a tiny random BERT written as a Hugging Face checkpoint."""

import re

from nemot.data.synthetic import minbert as synthetic
from nemot.data.synthetic.minbert import COLUMNS, FILES, SPECIAL, write_bert

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


def write_minbert(path, task, rows, with_label=True):
    """A minBERT file of ``task``'s columns (without the label column for a test file)."""
    columns = COLUMNS[task] if with_label else COLUMNS[task][:-1]
    path.parent.mkdir(parents=True, exist_ok=True)
    synthetic.write_minbert(path, columns, [row[:len(columns)] for row in rows])
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
    return list(SPECIAL) + words + letters + [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz0123456789"]


def write_vocab(path, texts):
    path.write_text("\n".join(make_vocab(texts)) + "\n", encoding="utf-8")
    return path


def all_texts():
    return [t for rows in (SST, QUORA, STS) for row in rows for t in row[1:]
            if isinstance(t, str)]


def write_hf_bert(directory, vocab=40, seed=0, **sizes):
    """A tiny random BERT (width 8, 2 layers) in Hugging Face's layout, every tensor random."""
    sizes = {"hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2,
             "intermediate_size": 16, "max_position_embeddings": 32, **sizes}
    return write_bert(directory, vocab, seed=seed, std=0.3, all_random=True, **sizes)
