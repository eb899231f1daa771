"""RACE (Lai et al., 2017): ``RACE/{train,dev,test}/{middle,high}/*.txt``, one JSON
article per file with ``article``, ``questions``, ``options`` and ``answers`` (A-D).

Format: ``<p1> article <q> question (1) ... (4) <sep>`` -> ``(k)``; subset middle/high.
"""

from pathlib import Path

import nemot.data.raw as raw
from nemot.data.qa.readers import common
from nemot.data.raw import DataError

SPLITS = ("train", "dev", "test")
SUBSETS = ("middle", "high")
LETTERS = ("A", "B", "C", "D")


def article_examples(record, path, subset):
    """The questions of one RACE article record."""
    where = "top level"
    article = raw.get(record, "article", path, where)
    questions = raw.get(record, "questions", path, where, list, "a list of questions")
    options = raw.get(record, "options", path, where, list, "a list of option lists")
    answers = raw.get(record, "answers", path, where, list, "a list of answer letters")
    if not len(questions) == len(options) == len(answers):
        raise DataError(path, where, "options/answers",
                        f"one option list and one answer per question ({len(questions)})",
                        got=(len(options), len(answers)))
    article_id = record.get("id", Path(path).name)
    for i, (question, opts, letter) in enumerate(zip(questions, options, answers)):
        if not isinstance(question, str):
            raise DataError(path, f"question {i}", "questions", "a string", got=question)
        if not isinstance(opts, list) or not opts or not all(isinstance(o, str) for o in opts):
            raise DataError(path, f"question {i}", "options", "a list of option strings",
                            got=opts)
        label = common.letter_label(letter, LETTERS[:len(opts)], path, f"question {i}", "answers")
        yield common.multiple_choice("race", f"{subset}/{article_id}#{i}", question, opts, label,
                                     passage=article, subset=subset)


def read(data_dir, split, subsets=SUBSETS):
    """RACE examples of ``split`` from ``RACE/`` (``RACE.tar.gz``) or the folder holding it."""
    for subset in subsets:
        for path in common.find_files(data_dir, [f"{split}/{subset}/*.txt",
                                                 f"{split}/{subset}/*.json"], f"{split}/{subset}",
                                      ("RACE",)):
            yield from article_examples(raw.read_json(path), path, subset)


def read_hub(split, subsets=SUBSETS):
    """RACE from the Hugging Face hub (``ehovy/race``, configs ``middle``/``high``:
    ``example_id``, ``article``, ``question``, ``options``, ``answer``)."""
    for subset in subsets:
        for row in raw.hub_rows("ehovy/race", subset, raw.hub_split(split)):
            record = {"article": row["article"], "questions": [row["question"]],
                      "options": [row["options"]], "answers": [row["answer"]],
                      "id": row["example_id"]}
            yield from article_examples(record, f"hub:ehovy/race/{subset}", subset)
