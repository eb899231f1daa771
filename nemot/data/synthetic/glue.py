"""A synthetic GLUE + SuperGLUE in the official file layouts, with a SentencePiece
model: HyperGrid's whole pipeline (readers, text-to-text, mixing, training, scoring)
runs on it without the real data (tests, smoke runs; ``nemot hypergrid synthetic``).

Sentences are drawn from a few dozen words; each task labels them by a simple rule
(e.g. CoLA: acceptable iff the sentence has "good"; RTE: entailment iff the
hypothesis's first word is in the premise), so a small model can learn them. The
numbers it gives say that the code trains, nothing about the paper's.

Example:
    >>> write_benchmark("synthetic", train_size=64, dev_size=16)             # doctest: +SKIP
    >>> # synthetic/glue/<Task>/{train,dev}.tsv, synthetic/superglue/<Task>/{train,val}.jsonl,
    >>> # synthetic/spiece.model
"""

import io
import json
from pathlib import Path

import numpy as np

WORDS = ("cat", "dog", "red", "blue", "sun", "moon", "tree", "fish", "bird", "car", "book",
         "king", "queen", "apple", "river", "stone", "good", "bad", "happy", "sad", "not",
         "runs", "sleeps", "sees", "big", "small")


def _sentence(rng, length=5):
    return " ".join(rng.choice(WORDS, size=length)) + "."


def _words(sentence):
    return sentence.rstrip(".").split()


def _glue_rows(task, rng, n):
    """Header and rows of one GLUE task's tsv (CoLA: no header)."""
    rows = []
    for i in range(n):
        a, b = _sentence(rng), _sentence(rng)
        if rng.random() < 0.5:  # share the first word half of the time
            b = " ".join([_words(a)[0]] + _words(b)[1:]) + "."
        same = _words(a)[0] == _words(b)[0]
        if task == "CoLA":
            rows.append(["src", str(int("good" in _words(a))), "", a])
        elif task == "SST-2":
            rows.append([a, str(int("happy" in _words(a)))])
        elif task == "MRPC":
            rows.append([str(int(same)), str(i), str(i + n), a, b])
        elif task == "QQP":
            rows.append([str(i), str(2 * i), str(2 * i + 1), a, b, str(int(same))])
        elif task == "STS-B":
            shared = len(set(_words(a)) & set(_words(b))) / 5
            rows.append([str(i), "g", "f", "y", "o", "s1", "s2", a, b, f"{5 * shared:.3f}"])
        elif task in ("MNLI", "MNLI-mm"):
            label = "contradiction" if "not" in _words(b) else (
                "entailment" if same else "neutral")
            rows.append([str(i), "p", "q", "g", "", "", "", "", a, b, label, label])
        else:  # QNLI, RTE
            label = "entailment" if _words(b)[0] in _words(a) else "not_entailment"
            rows.append([str(i), a, b, label])
    return rows


GLUE_HEADERS = {
    "SST-2": ["sentence", "label"],
    "MRPC": ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
    "QQP": ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
    "STS-B": ["index", "genre", "filename", "year", "old_index", "source1", "source2",
              "sentence1", "sentence2", "score"],
    "MNLI": ["index", "promptID", "pairID", "genre", "sentence1_binary_parse",
             "sentence2_binary_parse", "sentence1_parse", "sentence2_parse", "sentence1",
             "sentence2", "label1", "gold_label"],
    "QNLI": ["index", "question", "sentence", "label"],
    "RTE": ["index", "sentence1", "sentence2", "label"],
}
GLUE_FILES = {"CoLA": ("train.tsv", "dev.tsv"), "SST-2": ("train.tsv", "dev.tsv"),
              "MRPC": ("train.tsv", "dev.tsv"), "QQP": ("train.tsv", "dev.tsv"),
              "STS-B": ("train.tsv", "dev.tsv"), "QNLI": ("train.tsv", "dev.tsv"),
              "RTE": ("train.tsv", "dev.tsv"),
              "MNLI": ("train.tsv", "dev_matched.tsv", "dev_mismatched.tsv")}


def _superglue_record(task, rng, i):
    a, b = _sentence(rng), _sentence(rng)
    first = _words(b)[0]
    if task == "BoolQ":
        return {"question": b, "passage": a, "idx": i, "label": first in _words(a)}
    if task == "CB":
        label = "contradiction" if "not" in _words(b) else (
            "entailment" if first in _words(a) else "neutral")
        return {"premise": a, "hypothesis": b, "label": label, "idx": i}
    if task == "RTE":
        label = "entailment" if first in _words(a) else "not_entailment"
        return {"premise": a, "hypothesis": b, "label": label, "idx": i}
    if task == "COPA":
        c1, c2 = _sentence(rng), _sentence(rng)
        label = int(rng.integers(2))
        right = " ".join([_words(a)[0]] + _words((c1, c2)[label])[1:]) + "."
        c1, c2 = (right, c2) if label == 0 else (c1, right)
        return {"premise": a, "choice1": c1, "choice2": c2,
                "question": ("cause", "effect")[i % 2], "idx": i, "label": label}
    if task == "WiC":
        word = _words(a)[0]
        return {"word": word, "sentence1": a, "sentence2": b, "idx": i,
                "label": word in _words(b), "start1": 0, "end1": len(word), "start2": 0,
                "end2": 1, "version": 1.1}
    if task == "WSC":
        return {"text": a, "target": {"span1_text": _words(a)[0], "span1_index": 0,
                                      "span2_text": first, "span2_index": 1},
                "idx": i, "label": first == _words(a)[1]}
    if task == "MultiRC":
        answers = [{"text": w, "idx": 3 * i + k, "label": int(w in _words(a))}
                   for k, w in enumerate(rng.choice(WORDS, size=3, replace=False))]
        questions = [{"question": b, "idx": i, "answers": answers}]
        return {"idx": i, "version": 1.1,
                "passage": {"text": f"<b>Sent 1: </b>{a}<br>", "questions": questions}}
    # ReCoRD: the answer is the entity right after "by" in the passage.
    ents = list(rng.choice(WORDS[:16], size=3, replace=False))
    text = f"{ents[0]} and {ents[1]} by {ents[2]}.\n@highlight\n{a}"
    entities = [{"start": text.index(e), "end": text.index(e) + len(e) - 1} for e in ents]
    return {"idx": i, "passage": {"text": text, "entities": entities},
            "qas": [{"query": f"@placeholder was {b}", "idx": i,
                     "answers": [{"start": entities[2]["start"], "end": entities[2]["end"],
                                  "text": ents[2]}]}]}


SUPERGLUE = ("BoolQ", "CB", "COPA", "MultiRC", "ReCoRD", "RTE", "WiC", "WSC")


def write_benchmark(out_dir, train_size=64, dev_size=16, seed=0, vocab_size=128):
    """Write ``glue/``, ``superglue/`` and ``spiece.model`` under ``out_dir``.

    Args:
        train_size, dev_size: examples per task and split.
        seed: the draws' seed.
        vocab_size: of the SentencePiece model (trained on the written texts).
    """
    out = Path(out_dir)
    rng = np.random.default_rng(seed)
    texts = []
    for task, files in GLUE_FILES.items():
        for k, name in enumerate(files):
            source = "MNLI-mm" if name == "dev_mismatched.tsv" else task
            rows = _glue_rows(source, rng, train_size if k == 0 else dev_size)
            header = [] if task == "CoLA" else [GLUE_HEADERS[task]]
            path = out / "glue" / task / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join("\t".join(r) + "\n" for r in header + rows), encoding="utf-8")
            texts += [c for r in rows for c in r]
    for task in SUPERGLUE:
        for split, n in (("train", train_size), ("val", dev_size)):
            records = [_superglue_record(task, rng, i) for i in range(n)]
            path = out / "superglue" / task / f"{split}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
            texts += [json.dumps(r) for r in records]
    write_sentencepiece(out / "spiece.model", texts, vocab_size)
    return out


def write_sentencepiece(path, texts, vocab_size):
    """A SentencePiece model with T5's special ids (pad 0, ``</s>`` 1, unk 2, no bos)."""
    import sentencepiece

    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(texts), model_writer=model, vocab_size=vocab_size,
        model_type="unigram", pad_id=0, eos_id=1, unk_id=2, bos_id=-1, pad_piece="<pad>",
        eos_piece="</s>", unk_piece="<unk>", hard_vocab_limit=False, character_coverage=1.0,
        minloglevel=2)
    Path(path).write_bytes(model.getvalue())
    return path
