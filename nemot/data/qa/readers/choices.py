"""AI2-style multiple choice: ARC (Easy, Challenge), OpenBookQA and CommonsenseQA.

The official files are JSON lines with ``id``, ``question.stem``,
``question.choices[{label, text}]`` and ``answerKey`` (missing in CommonsenseQA's
test file). The hub export of the same data is flat: ``question`` (a string; OBQA:
``question_stem``) and ``choices = {label: [...], text: [...]}``; both layouts are
read. Format ``<q> stem (1) ... <sep>`` -> ``(k)``.
"""

import nemot.data.raw as raw
from nemot.data.qa.readers import common
from nemot.data.raw import DataError

# Raw file patterns per registry name and split (first pattern that matches wins).
FILES = {
    "arc_easy": {s: [f"ARC-Easy/ARC-Easy-{s.title()}.jsonl", f"ARC-Easy-{s.title()}.jsonl"]
                 for s in ("train", "dev", "test")},
    "arc_challenge": {s: [f"ARC-Challenge/ARC-Challenge-{s.title()}.jsonl",
                          f"ARC-Challenge-{s.title()}.jsonl"] for s in ("train", "dev", "test")},
    "obqa": {s: [f"Data/Main/{s}.jsonl", f"{s}.jsonl"] for s in ("train", "dev", "test")},
    "commonsenseqa": {"train": ["train_rand_split.jsonl"], "dev": ["dev_rand_split.jsonl"],
                      "test": ["test_rand_split_no_answers.jsonl"]},
}
# The folder each download unpacks to (data_dir may point at it or at its parent).
TOPS = {"arc_easy": ("ARC-V1-Feb2018-2",), "arc_challenge": ("ARC-V1-Feb2018-2",),
        "obqa": ("OpenBookQA-V1-Sep2018",), "commonsenseqa": ()}
SUBSETS = {"arc_easy": "easy", "arc_challenge": "challenge"}
ARC_PARTS = ("arc_easy", "arc_challenge")
HUB = {"arc_easy": ("allenai/ai2_arc", "ARC-Easy"), "arc_challenge": ("allenai/ai2_arc", "ARC-Challenge"),
       "obqa": ("allenai/openbookqa", "main"), "commonsenseqa": ("tau/commonsense_qa", None)}
_LAYOUTS = ("the official layout (question.stem, question.choices[{label, text}]) or the hub "
            "export (question or question_stem, choices.label[], choices.text[])")


def _stem_and_choices(record, path, where):
    """``(stem, labels, texts)`` of a record in either layout."""
    question = record.get("question")
    if isinstance(question, dict):  # official
        stem = raw.get(question, "stem", path, where)
        choices = raw.get(question, "choices", path, where, list, "a list of {label, text}")
        labels = [raw.get(c, "label", path, f"{where} choice {i}") for i, c in enumerate(choices)]
        texts = [raw.get(c, "text", path, f"{where} choice {i}") for i, c in enumerate(choices)]
        return stem, labels, texts
    choices = record.get("choices")
    stem = question if isinstance(question, str) else record.get("question_stem")
    if isinstance(stem, str) and isinstance(choices, dict):  # hub export
        labels = raw.get(choices, "label", path, where, list, "a list of option labels")
        texts = raw.get(choices, "text", path, where, list, "a list of option texts")
        if len(labels) != len(texts):
            raise DataError(path, where, "choices", "as many labels as texts",
                            got=(len(labels), len(texts)))
        return stem, labels, texts
    raise DataError(path, where, "question", _LAYOUTS, got=f"fields {sorted(record)}")


def record_example(record, name, path, where):
    """The example of one record (official or hub layout)."""
    stem, labels, texts = _stem_and_choices(record, path, where)
    key = record.get("answerKey")
    label = None if key in (None, "") else common.letter_label(key, labels, path, where, "answerKey")
    return common.multiple_choice(name, raw.get(record, "id", path, where), stem, texts, label,
                                  subset=SUBSETS.get(name))


def read(data_dir, split, name="arc_easy"):
    """Examples of ``name`` (a key of :data:`FILES`) for ``split`` from the raw directory."""
    if split not in FILES[name]:
        raise ValueError(f"{name} has splits {sorted(FILES[name])}, got {split!r}")
    for path in common.find_files(data_dir, FILES[name][split], split, TOPS[name]):
        for line_no, record in raw.iter_jsonl(path):
            yield record_example(record, name, path, line_no)


def read_hub(split, name="arc_easy"):
    """ARC/OBQA/CommonsenseQA from the Hugging Face hub (the hub layout above)."""
    hub_name, config = HUB[name]
    for i, row in enumerate(raw.hub_rows(hub_name, config, raw.hub_split(split))):
        yield record_example(dict(row), name, f"hub:{hub_name}", i)


def read_parts(data_dir, split, names=ARC_PARTS):
    """The examples of several of :data:`FILES`' datasets in turn (ARC: Easy, then Challenge)."""
    for name in names:
        yield from read(data_dir, split, name)


def read_hub_parts(split, names=ARC_PARTS):
    for name in names:
        yield from read_hub(split, name)
