"""Small sample data in real layouts, written from what ships with Python and nemot, so
every command can be tried offline (``python -m data_prep sample --out DIR``).

- ``DIR/c4/``: the Hugging Face ``c4/en`` layout (``c4-train.*.json.gz`` and a
  ``c4-validation`` file) holding English text: the documentation topics of
  ``pydoc_data.topics`` (:func:`nemot.demo.write_c4_corpus`);
- ``DIR/RACE/``: the RACE layout (``{train,dev,test}/{middle,high}/<n>.txt``) holding
  the synthetic multiple-choice task of :mod:`nemot.data.synthetic.qa` (the answer is
  the option that occurs in the passage), four options per question, as RACE has.
"""

import json
from pathlib import Path

from nemot.data.synthetic.qa import choice_examples
from nemot.demo import corpus_texts, write_c4_corpus

LETTERS = "ABCD"


def write_race(directory, questions, seed=0):
    """RACE-layout files of synthetic questions: ``questions`` in train, an eighth of that
    in dev and in test (at least 8), one question per article, alternately middle and
    high. Returns ``{split: number of questions}``."""
    sizes = {"train": questions, "dev": max(8, questions // 8), "test": max(8, questions // 8)}
    for k, (split, count) in enumerate(sizes.items()):
        for i, example in enumerate(choice_examples(count, seed=seed + k, num_options=4)):
            subset = ("middle", "high")[i % 2]
            path = Path(directory) / split / subset / f"{i}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            article = {"id": f"{i}.txt", "article": example.passage,
                       "questions": [example.question], "options": [list(example.options)],
                       "answers": [LETTERS[example.label]]}
            path.write_text(json.dumps(article), encoding="utf-8")
    return sizes


def write_sample(out, questions=64, seed=0):
    """Write ``out/c4`` and ``out/RACE``; returns a summary (paths and sizes)."""
    out = Path(out)
    c4_files = write_c4_corpus(out / "c4", corpus_texts())
    race = write_race(out / "RACE", questions, seed)
    return {"c4": str(out / "c4"), "c4_files": len(c4_files), "race": str(out / "RACE"),
            "race_questions": race}
