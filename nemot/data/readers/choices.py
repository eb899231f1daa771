"""AI2-style multiple choice: ARC (Easy, Challenge), OpenBookQA and CommonsenseQA.

JSON lines with ``id``, ``question.stem``, ``question.choices[{label, text}]`` and
``answerKey`` (missing in CommonsenseQA's test file). Format
``<q> stem (1) ... <sep>`` -> ``(k)``.
"""

from nemot.data.readers import common

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
SUBSETS = {"arc_easy": "easy", "arc_challenge": "challenge"}
HUB = {"arc_easy": ("allenai/ai2_arc", "ARC-Easy"), "arc_challenge": ("allenai/ai2_arc", "ARC-Challenge"),
       "obqa": ("allenai/openbookqa", "main"), "commonsenseqa": ("tau/commonsense_qa", None)}


def record_example(record, name, path, where):
    """The example of one AI2-format record."""
    question = common.get(record, "question", path, where, dict, "an object with stem and choices")
    stem = common.get(question, "stem", path, where)
    choices = common.get(question, "choices", path, where, list, "a list of {label, text}")
    labels = [common.get(c, "label", path, f"{where} choice {i}") for i, c in enumerate(choices)]
    texts = [common.get(c, "text", path, f"{where} choice {i}") for i, c in enumerate(choices)]
    key = record.get("answerKey")
    label = None if key in (None, "") else common.letter_label(key, labels, path, where, "answerKey")
    return common.multiple_choice(name, common.get(record, "id", path, where), stem, texts, label,
                                  subset=SUBSETS.get(name))


def read(data_dir, split, name="arc_easy"):
    """Examples of ``name`` (a key of :data:`FILES`) for ``split`` from the raw directory."""
    if split not in FILES[name]:
        raise ValueError(f"{name} has splits {sorted(FILES[name])}, got {split!r}")
    for path in common.find_files(data_dir, FILES[name][split], split):
        for line_no, record in common.iter_jsonl(path):
            yield record_example(record, name, path, line_no)


def read_hub(split, name="arc_easy"):
    """ARC/OBQA/CommonsenseQA from the Hugging Face hub (needs the network, untested offline)."""
    hub_name, config = HUB[name]
    hub_split = {"dev": "validation"}.get(split, split)
    for row in common.hub_rows(hub_name, config, hub_split):
        stem = row["question_stem"] if name == "obqa" else row["question"]
        record = {"id": row["id"], "answerKey": row["answerKey"],
                  "question": {"stem": stem, "choices": [
                      {"label": lab, "text": txt}
                      for lab, txt in zip(row["choices"]["label"], row["choices"]["text"])]}}
        yield record_example(record, name, f"hub:{hub_name}", row["id"])
