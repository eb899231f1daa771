"""MCTest (Richardson et al., 2013): ``MCTest/mc160/mc500.{train,dev,test}.tsv`` with answers
in the ``.ans`` file of the same name (one line per story, four letters). The authors
ship the test answers separately, in ``MCTestAnswers/`` (``MCTestAnswers.zip``): an
``.ans`` file is looked for beside its ``.tsv``, then in ``MCTestAnswers/`` inside
``data_dir`` or beside the ``MCTest/`` folder.

TSV columns: id, properties, story, then four times (question, A, B, C, D).
The story's ``\\newline``/``\\tab`` markers become spaces and the question's
``one:``/``multiple:`` prefix is stripped. Format
``<p1> story <q> question (1) ... (4) <sep>`` -> ``(k)``; subset mc160/mc500.
"""

import re
from pathlib import Path

import nemot.data.raw as raw
from nemot.data.qa.readers import common
from nemot.data.raw import DataError

SPLITS = ("train", "dev", "test")
SUBSETS = ("mc160", "mc500")
COLUMNS = ("id", "properties", "story") + tuple(
    f"q{i}_{part}" for i in range(1, 5) for part in ("question", "A", "B", "C", "D"))
LETTERS = ("A", "B", "C", "D")
_PREFIX = re.compile(r"^(one|multiple):\s*")


def clean_story(story):
    """Replace MCTest's escaped layout markers with spaces."""
    return re.sub(r"\s+", " ", story.replace("\\newline", " ").replace("\\tab", " ")).strip()


def answer_file(data_dir, tsv):
    """The ``.ans`` file of ``tsv``: beside it, else in an ``MCTestAnswers/`` folder."""
    name = tsv.with_suffix(".ans").name
    places = [tsv.parent, Path(data_dir) / "MCTestAnswers", tsv.parent.parent / "MCTestAnswers"]
    for place in places:
        if (place / name).is_file():
            return place / name
    raise DataError(tsv.with_suffix(".ans"), None, "answers",
                    f"an answer file {name} next to {tsv.name} or in MCTestAnswers/ "
                    f"(looked in {', '.join(str(p) for p in dict.fromkeys(places))})",
                    got="missing file")


def read(data_dir, split, subsets=SUBSETS):
    """MCTest examples of ``split`` from the raw directory (both subsets by default)."""
    for subset in subsets:
        (path,) = common.find_files(data_dir, [f"{subset}.{split}.tsv"], f"{subset}.{split}",
                                    ("MCTest",))
        ans_path = answer_file(data_dir, path)
        rows = list(raw.iter_tsv(path, COLUMNS))
        answers = list(raw.iter_tsv(ans_path))
        if len(rows) != len(answers):
            raise DataError(ans_path, None, "answers",
                            f"one line per story of {path.name} ({len(rows)})", got=len(answers))
        for (_, row), (ans_line, letters) in zip(rows, answers):
            if len(letters) != 4:
                raise DataError(ans_path, ans_line, "answers", "four tab-separated letters",
                                got=letters)
            story = clean_story(row["story"])
            for i in range(1, 5):
                options = [row[f"q{i}_{letter}"] for letter in LETTERS]
                label = common.letter_label(letters[i - 1], LETTERS, ans_path, ans_line,
                                            f"answer {i}")
                question = _PREFIX.sub("", row[f"q{i}_question"])
                yield common.multiple_choice("mctest", f"{row['id']}#{i}", question, options, label,
                                             passage=story, subset=subset)


def read_hub(split, subsets=SUBSETS):
    """MCTest from the Hugging Face hub (``sagnikrayc/mctest``, configs ``mc160``/``mc500``:
    ``idx.{story, question}``, ``question``, ``story``, ``answer_options.{A..D}``, ``answer``)."""
    for subset in subsets:
        for row in raw.hub_rows("sagnikrayc/mctest", subset, raw.hub_split(split)):
            options = [row["answer_options"][letter] for letter in LETTERS]
            idx = row["idx"]
            yield common.multiple_choice("mctest", f"{idx['story']}#{idx['question']}",
                                         _PREFIX.sub("", row["question"]),
                                         options, LETTERS.index(row["answer"]),
                                         passage=clean_story(row["story"]), subset=subset)
