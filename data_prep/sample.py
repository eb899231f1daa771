"""Small sample data in real layouts, written from what ships with Python and nemot, so
every command can be tried offline (``python -m data_prep sample --out DIR``).

- ``DIR/c4/``: the Hugging Face ``c4/en`` layout (``c4-train.*.json.gz`` and a
  ``c4-validation`` file) holding English text: the documentation topics of
  ``pydoc_data.topics`` (:func:`nemot.demo.write_c4_corpus`);
- ``DIR/RACE/``: the RACE layout (``{train,dev,test}/{middle,high}/<n>.txt``) holding
  the synthetic multiple-choice task of :mod:`nemot.data.synthetic.qa` (the answer is
  the option that occurs in the passage), four options per question, as RACE has.
- ``DIR/my_qa/``: the layout of the ``my_qa`` recipe (your own questions;
  ``{train,dev,test}.jsonl`` in the OpenBookQA / ARC layout) holding the demo's yes/no
  task (does the word name an animal?).
"""

import json
from pathlib import Path

from nemot.data.synthetic.qa import category_examples, choice_examples
from nemot.demo import corpus_texts, write_c4_corpus

LETTERS = "ABCD"


def write_race(directory, questions, seed=0):
    """RACE-layout files of synthetic questions: ``questions`` in train, an eighth of that
    in dev and in test (at least 8), one question per article, alternately middle and
    high. Returns ``{split: number of questions}``."""
    sizes = _sizes(questions)
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


def _sizes(questions):
    return {"train": questions, "dev": max(8, questions // 8), "test": max(8, questions // 8)}


def write_own_questions(directory, questions, seed=0):
    """The ``my_qa`` recipe's files, ``{train,dev,test}.jsonl``, of the demo's yes/no task,
    in the OpenBookQA / ARC layout: ``questions`` in train, an eighth of that in dev and in
    test (at least 8). Returns ``{split: number of questions}``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    sizes = _sizes(questions)
    for k, (split, count) in enumerate(sizes.items()):
        lines = []
        for i, example in enumerate(category_examples(count, seed=seed + k)):
            choices = [{"label": LETTERS[j], "text": text}
                       for j, text in enumerate(example.options)]
            lines.append(json.dumps({"id": f"{split}-{i}", "answerKey": LETTERS[example.label],
                                     "question": {"stem": f"{example.passage}: "
                                                          f"{example.question}",
                                                  "choices": choices}}))
        (directory / f"{split}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return sizes


def write_sample(out, questions=64, seed=0):
    """Write ``out/c4``, ``out/RACE`` and ``out/my_qa``; returns a summary (paths and
    sizes)."""
    out = Path(out)
    c4_files = write_c4_corpus(out / "c4", corpus_texts())
    race = write_race(out / "RACE", questions, seed)
    own = write_own_questions(out / "my_qa", questions, seed)
    return {"c4": str(out / "c4"), "c4_files": len(c4_files), "race": str(out / "RACE"),
            "race_questions": race, "my_qa": str(out / "my_qa"), "my_qa_questions": own}
