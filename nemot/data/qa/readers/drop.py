"""DROP (Dua et al., 2019) and its contrast set: ``drop_dataset_{train,dev}.json`` and
``drop_contrast_sets_test.json``, ``{passage_id: {passage, qa_pairs[{query_id,
question, answer, validated_answers}]}}``.

An answer is a number, else a date written "day month year" (empty parts left
out: a year-only date is ``"1615"``), else its spans; several spans are one answer
made of all of them (a tuple of parts, trained on joined by ``", "`` and scored
with the official multi-span rule, :func:`nemot.evaluation.metrics.drop_f1`).
Golds are the main answer plus the validated answers, as alternatives. (The
original code kept only the validated answers when present and made every span
a separate alternative; we keep both answers and each answer's spans together.)
Format ``<p1> passage <q> question <sep>`` -> ``answer </s>``.
"""

import nemot.data.raw as raw
from nemot.data.qa.readers import common
from nemot.data.raw import DataError

FILES = {"drop": {"train": ["drop_dataset_train.json"], "dev": ["drop_dataset_dev.json"]},
         "drop_contrast": {"test": ["drop_contrast_sets_test.json"]}}
TOPS = {"drop": ("drop_dataset",), "drop_contrast": ("DROP",)}


def answer_parts(answer, path, where):
    """One DROP answer object as a gold answer: a string, or a tuple of its spans."""
    if not isinstance(answer, dict):
        raise DataError(path, where, "answer", "an object with number, date and spans", got=answer)
    number = str(answer.get("number", "") or "")
    if number:
        return number
    date = answer.get("date") or {}
    if not isinstance(date, dict):
        raise DataError(path, where, "answer.date", "an object with day, month and year",
                        got=date)
    parts = [str(date.get(k, "") or "").strip() for k in ("day", "month", "year")]
    if any(parts):
        return " ".join(p for p in parts if p)
    spans = answer.get("spans") or []
    if isinstance(spans, list) and spans and all(isinstance(s, str) for s in spans):
        return common.parts_answer(spans)
    raise DataError(path, where, "answer", "a number, a date or a list of spans", got=answer)


def read(data_dir, split, name="drop"):
    """DROP (``name="drop"``, train/dev) or its contrast set (``"drop_contrast"``, test)."""
    if split not in FILES[name]:
        raise ValueError(f"{name} has splits {sorted(FILES[name])}, got {split!r}")
    (path,) = common.find_files(data_dir, FILES[name][split], split, TOPS[name])
    document = raw.read_json(path)
    if not isinstance(document, dict):
        raise DataError(path, "top level", "(document)", "an object keyed by passage id",
                        got=type(document).__name__)
    for passage_id, entry in document.items():
        passage = raw.get(entry, "passage", path, f"key {passage_id!r}")
        pairs = raw.get(entry, "qa_pairs", path, f"key {passage_id!r}", list, "a list")
        for i, qa in enumerate(pairs):
            where = f"key {passage_id!r}.qa_pairs[{i}]"
            if not isinstance(qa, dict):
                raise DataError(path, where, "(question)", "an object with question and answer",
                                got=qa)
            golds = [answer_parts(qa.get("answer"), path, where)]
            validated_answers = qa.get("validated_answers") or []
            if not isinstance(validated_answers, list):
                raise DataError(path, where, "validated_answers", "a list of answers",
                                got=validated_answers)
            for k, validated in enumerate(validated_answers):
                golds.append(answer_parts(validated, path, f"{where}.validated_answers[{k}]"))
            yield common.generative(name, qa.get("query_id", f"{passage_id}#{i}"),
                                    raw.get(qa, "question", path, where), golds, passage=passage)


def read_hub(split, name="drop"):
    """DROP from the Hugging Face hub (``ucinlp/drop``: the main answer only, its
    ``answers_spans.spans`` one answer; no validated answers, no contrast set)."""
    if name != "drop":
        raise ValueError("the DROP contrast set is not on the hub; pass data_dir=")
    for row in raw.hub_rows("ucinlp/drop", None, raw.hub_split(split)):
        spans = row["answers_spans"]["spans"]
        if not spans:
            raise DataError("hub:ucinlp/drop", row["query_id"], "answers_spans.spans",
                            "at least one span", got=[])
        yield common.generative("drop", row["query_id"], row["question"],
                                [common.parts_answer(spans)], passage=row["passage"])
