"""BoolQ (Clark et al., 2019) and its contrast set BoolQ-CS (Gardner et al., 2020).

BoolQ: ``train.jsonl``/``dev.jsonl`` with ``passage``, ``question``, ``answer`` (bool).
BoolQ-CS: ``boolq_perturbed.json``: ``data[].{paragraph, question, answer,
perturbed_questions[].{perturbed_q, answer}}`` with answers ``"TRUE"``/``"FALSE"``;
the contrast set is each original question followed by its perturbations (as the
original code read it, so results compare with thesis Table 3.8).
Format ``<p1> passage <q> question <sep>`` -> ``yes``/``no`` ``</s>``.
"""

import nemot.data.raw as raw
from nemot.data.qa.readers import common
from nemot.data.raw import DataError

SPLITS = ("train", "dev")
_WORDS = {True: "yes", False: "no", "TRUE": "yes", "FALSE": "no"}


def _answer(value, path, where, key="answer"):
    if isinstance(value, bool) or value in ("TRUE", "FALSE"):
        return _WORDS[value]
    raise DataError(path, where, key, "true/false (BoolQ) or \"TRUE\"/\"FALSE\" (BoolQ-CS)",
                    got=value)


def read(data_dir, split):
    """BoolQ examples of ``split`` (``train``/``dev``) from the raw directory."""
    for path in common.find_files(data_dir, [f"{split}.jsonl"], split, ("BoolQ",)):
        for line_no, record in raw.iter_jsonl(path):
            yield common.generative(
                "boolq", f"{split}-{line_no}", raw.get(record, "question", path, line_no),
                [_answer(record.get("answer"), path, line_no)],
                passage=raw.get(record, "passage", path, line_no))


def read_hub(split):
    """BoolQ from the Hugging Face hub (``google/boolq``: ``question``, ``answer`` (bool),
    ``passage``)."""
    for i, row in enumerate(raw.hub_rows("google/boolq", None, raw.hub_split(split))):
        yield common.generative("boolq", f"{split}-{i}", row["question"], [_WORDS[row["answer"]]],
                                passage=row["passage"])


def read_contrast(data_dir, split="test"):
    """BoolQ-CS from ``boolq_perturbed.json`` (only split ``test``): each original
    question (id ``i``), then its perturbations (ids ``i-j``).

    The real file starts with a template entry (answer ``"Gold Answer"``) and has
    blank perturbations left by annotators; both are skipped, anything else malformed raises.
    """
    (path,) = common.find_files(data_dir, ["boolq_perturbed.json"], split, ("BoolQ",))
    data = raw.get(raw.read_json(path), "data", path, "top level", list, "a list")
    for i, entry in enumerate(data):
        where = f"data[{i}]"
        if not isinstance(entry, dict):
            raise DataError(path, where, "(entry)", "an object with paragraph, question and "
                            "answer", got=entry)
        if entry.get("answer") == "Gold Answer":
            continue
        paragraph = raw.get(entry, "paragraph", path, where)
        yield common.generative("boolq_cs", str(i), raw.get(entry, "question", path, where),
                                [_answer(entry.get("answer"), path, where)], passage=paragraph)
        perturbed = raw.get(entry, "perturbed_questions", path, where, list, "a list")
        for j, item in enumerate(perturbed):
            question = raw.get(item, "perturbed_q", path, f"{where}.perturbed_questions[{j}]")
            if not question.strip():
                continue
            answer = _answer(item.get("answer"), path, f"{where}.perturbed_questions[{j}]")
            yield common.generative("boolq_cs", f"{i}-{j}", question, [answer], passage=paragraph)
