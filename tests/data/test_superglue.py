"""SuperGLUE readers on files in the official layout, their errors, and the pair encoder."""

import json

import numpy as np
import pytest

from nemot.data import DataError
from nemot.data.benchmarks import superglue
from nemot.data.benchmarks.superglue import PairEncoder, PairRow, read_task
from tests.data.superglue_records import RECORDS, write_jsonl


def _read(superglue_dir, task):
    return read_task(task, superglue.task_path(superglue_dir, task, "val")).rows


def test_boolq_rte_wic_wsc_give_one_binary_row_each(superglue_dir):
    boolq = _read(superglue_dir, "BoolQ")
    assert [(r.text_a, r.text_b, r.label) for r in boolq] == [
        (("The sky is blue on a clear day.",), ("is the sky blue",), 1),
        (("Grass is green.",), ("is grass red",), 0),
    ]
    assert [r.label for r in _read(superglue_dir, "RTE")] == [1, 0]  # 1 = entailment
    wic = _read(superglue_dir, "WiC")
    assert wic[0].text_a == ("He sat on the bank.", "The bank lent money.") and wic[0].text_b == ("bank",)
    assert [r.label for r in wic] == [0, 1]
    wsc = _read(superglue_dir, "WSC")
    assert wsc[1].text_a == ("Anna hugged Mia because she was sad.",)
    assert wsc[1].text_b == ("Mia", "she") and [r.label for r in wsc] == [0, 1]


def test_cb_labels_use_the_original_one_hot_order(superglue_dir):
    rows = _read(superglue_dir, "CB")
    # [contradiction, neutral, entailment]
    assert [r.label for r in rows] == [2, 0, 1]
    assert rows[0].text_a == ("It rained all day.",) and rows[0].text_b == ("It was wet.",)


def test_copa_gives_two_rows_per_example_marking_the_correct_choice(superglue_dir):
    rows = _read(superglue_dir, "COPA")
    assert len(rows) == 4
    assert rows[0].text_b == ("cause", "He dropped a hammer on his foot.") and rows[0].label == 1
    assert rows[1].text_b == ("cause", "He got a hole in his sock.") and rows[1].label == 0
    assert [r.label for r in rows[2:]] == [0, 1]
    assert [r.group for r in rows] == ["0", "0", "1", "1"] and [r.option for r in rows] == ["0", "1", "0", "1"]


def test_multirc_gives_one_row_per_answer_option_grouped_by_question(superglue_dir):
    rows = _read(superglue_dir, "MultiRC")
    assert len(rows) == 5
    passage = RECORDS["MultiRC"][0]["passage"]["text"]
    assert all(r.text_a == (passage,) for r in rows)  # markup kept, as in the original
    assert rows[2].text_b == ("What does Tom have?", "An old dog")
    assert [r.label for r in rows] == [1, 0, 1, 1, 0]
    assert [r.group for r in rows] == ["0-0"] * 3 + ["0-1"] * 2
    assert [r.option for r in rows] == ["0", "1", "2", "3", "4"]


def test_record_keeps_unique_candidate_strings_and_gold_answers(superglue_dir):
    rows = _read(superglue_dir, "ReCoRD")
    # Candidates: text[start:end+1] of every entity, duplicates ("Paris" twice) once.
    assert [r.option for r in rows] == ["Paris", "France", "U.S."] * 2
    assert rows[0].text_b == ("@placeholder is a city", "Paris")
    assert "@highlight" in rows[0].text_a[0]
    assert [r.label for r in rows] == [1, 0, 0, 0, 0, 1]
    assert rows[0].answers == ("Paris", "Paris") and rows[5].answers == ("U.S.",)
    assert [r.group for r in rows] == ["7"] * 3 + ["8"] * 3


BAD = [
    ("BoolQ", {"question": "q", "passage": "p", "idx": 0, "label": "yes"}, "field 'label': expected a bool"),
    ("BoolQ", {"question": "q", "idx": 0, "label": True}, "field 'passage': expected a str, got '<missing>'"),
    ("CB", {"premise": "p", "hypothesis": "h", "idx": 0, "label": "maybe"},
     r"field 'label': expected one of \['contradiction', 'neutral', 'entailment'\]"),
    ("COPA", {"premise": "p", "choice1": "a", "choice2": "b", "question": "why", "idx": 0, "label": 0},
     r"field 'question': expected one of \['cause', 'effect'\]"),
    ("RTE", {"premise": "p", "hypothesis": "h", "idx": "0", "label": "entailment"}, "field 'idx': expected a int"),
    ("WSC", {"text": "t", "target": {"span1_text": "a"}, "idx": 0, "label": True},
     "field 'target.span2_text': expected a str"),
    ("MultiRC", {"idx": 0, "passage": {"text": "t", "questions": [
        {"question": "q", "idx": 0, "answers": [{"text": "a", "idx": 0, "label": 2}]}]}},
     r"field 'passage.questions\[0\].answers\[0\].label': expected one of \[0, 1\]"),
    ("ReCoRD", {"idx": 0, "passage": {"text": "short", "entities": [{"start": 2, "end": 9}]}, "qas": []},
     r"field 'passage.entities\[0\]': expected 0 <= start <= end < 5"),
    ("ReCoRD", {"idx": 0, "passage": {"text": "short", "entities": [{"start": 0, "end": 1}]},
                "qas": [{"query": "q", "idx": 1, "answers": []}]},
     r"field 'qas\[0\].answers': expected at least one gold answer"),
]


@pytest.mark.parametrize("task, record, message", BAD)
def test_bad_records_name_file_line_and_field(tmp_path, task, record, message):
    path = write_jsonl(tmp_path / task / "val.jsonl", [RECORDS[task][0], record])
    with pytest.raises(DataError, match=message) as info:
        read_task(task, path)
    assert f"{path}: line 2: " in str(info.value)


def test_invalid_json_and_empty_files_are_named(tmp_path):
    path = tmp_path / "val.jsonl"
    path.write_text(json.dumps(RECORDS["RTE"][0]) + "\n\n{not json\n")
    with pytest.raises(DataError, match=r"val.jsonl: line 3: field '\(line\)': expected one "
                                        r"JSON object per line \(Expecting property name"):
        read_task("RTE", path)
    path.write_text("[1, 2]\n")
    with pytest.raises(DataError, match=r"line 1: field '\(line\)': expected a JSON object, "
                                        r"got 'list'"):
        read_task("RTE", path)
    path.write_text("\n")
    with pytest.raises(DataError, match=r"val.jsonl: field '\(file\)': expected at least one "
                                        r"JSON object, one per line, got 'blank lines'"):
        read_task("RTE", path)
    with pytest.raises(ValueError, match="task 'MNLI'"):
        read_task("MNLI", path)


def _row(a, b, label=0):
    return PairRow(tuple(a), tuple(b), label, "0")


def test_pair_encoder_layout_segments_and_padding(tokenizer):
    encoder = PairEncoder(tokenizer, sequence_length=16)
    out = encoder.encode([_row(["the cat"], ["is the sky blue"]), _row(["Dogs bark.", "Cats sleep."], ["run"])])
    cls, sep, pad = (tokenizer.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]"))
    ids = lambda text: tokenizer([text])[0]  # noqa: E731
    expected = [cls, *ids("the cat"), sep, *ids("is the sky blue"), sep]
    assert out["token_ids"][0, : len(expected)].tolist() == expected
    assert np.all(out["token_ids"][0, len(expected) :] == pad)
    assert out["padding_mask"][0].tolist() == [1] * len(expected) + [0] * (16 - len(expected))
    # Segment 1 starts after the first [SEP] and ends with the last one.
    n_a = len(ids("the cat")) + 2
    assert out["segment_ids"][0].tolist() == [0] * n_a + [1] * (len(expected) - n_a) + [0] * (16 - len(expected))
    # A tuple of pieces is joined with the real [SEP] id, inside segment A.
    second = [cls, *ids("Dogs bark."), sep, *ids("Cats sleep."), sep, *ids("run"), sep]
    assert out["token_ids"][1, : len(second)].tolist() == second
    assert out["segment_ids"][1, : len(second) - 2].sum() == 0


def test_pair_encoder_truncates_only_the_end_of_segment_a(tokenizer):
    encoder = PairEncoder(tokenizer, sequence_length=10)
    long_a = "red green blue gold red green blue gold"
    out = encoder.encode([_row([long_a], ["blue gold"])])
    ids = tokenizer([long_a])[0]
    b = tokenizer(["blue gold"])[0]
    keep = 10 - 3 - len(b)
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    assert out["token_ids"][0].tolist() == [cls, *ids[:keep], sep, *b, sep]
    with pytest.raises(ValueError, match=r"segment B has 8 word pieces, more than the 7"):
        encoder.encode([_row(["red"], [long_a])])


def test_pair_encoder_puts_aux_tokens_first(tokenizer):
    aux = [tokenizer.token_to_id("[unused1]"), tokenizer.token_to_id("[unused2]")]
    out = PairEncoder(tokenizer, sequence_length=12, aux_token_ids=aux).encode([_row(["red"], ["blue"])])
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    red, blue = tokenizer(["red"])[0], tokenizer(["blue"])[0]
    assert out["token_ids"][0, :7].tolist() == [*aux, cls, *red, sep, *blue, sep]
    assert out["segment_ids"][0, :7].tolist() == [0, 0, 0, 0, 0, 1, 1]


def _hub_rows(task):
    """The fixtures as the Hugging Face ``super_glue`` dataset stores them (flat rows, integer labels)."""
    records = RECORDS[task]
    if task == "MultiRC":
        return [
            {"paragraph": r["passage"]["text"], "question": q["question"], "answer": a["text"], "label": a["label"],
             "idx": {"paragraph": r["idx"], "question": q["idx"], "answer": a["idx"]}}
            for r in records for q in r["passage"]["questions"] for a in q["answers"]
        ]
    if task == "ReCoRD":
        rows = []
        for r in records:
            text = r["passage"]["text"]
            spans = sorted(r["passage"]["entities"], key=lambda e: e["start"])
            entity_spans = {"text": [text[e["start"] : e["end"] + 1] for e in spans],
                            "start": [e["start"] for e in spans], "end": [e["end"] + 1 for e in spans]}
            for qa in r["qas"]:
                rows.append({"passage": text, "query": qa["query"], "entity_spans": entity_spans,
                             "entities": sorted(set(entity_spans["text"])),
                             "answers": sorted({a["text"] for a in qa["answers"]}),
                             "idx": {"passage": r["idx"], "query": qa["idx"]}})
        return rows
    if task == "WSC":
        return [{"text": r["text"], "span1_index": r["target"]["span1_index"], "span2_index": r["target"]["span2_index"],
                 "span1_text": r["target"]["span1_text"], "span2_text": r["target"]["span2_text"],
                 "idx": r["idx"], "label": int(r["label"])} for r in records]
    hub_labels = {"CB": ["entailment", "contradiction", "neutral"], "RTE": ["entailment", "not_entailment"]}
    if task in hub_labels:
        return [{**r, "label": hub_labels[task].index(r["label"])} for r in records]
    return [{**r, "label": int(r["label"])} for r in records]


@pytest.mark.parametrize("task", superglue.TASKS)
def test_hub_rows_read_like_the_official_files(superglue_dir, task):
    official = _read(superglue_dir, task)
    hub = superglue.records_to_rows(task, superglue.hub_to_official(task, _hub_rows(task)), "hub").rows
    if task == "ReCoRD":  # the hub keeps each gold answer once
        official = [PairRow(r.text_a, r.text_b, r.label, r.group, r.option, tuple(sorted(set(r.answers))))
                    for r in official]
    assert hub == official


def _official_labels(task):
    """The label fields of the fixtures, as prediction_records should write them for perfect predictions."""
    if task == "MultiRC":
        return [{"idx": r["idx"], "passage": {"questions": [
            {"idx": q["idx"], "answers": [{"idx": a["idx"], "label": a["label"]} for a in q["answers"]]}
            for q in r["passage"]["questions"]]}} for r in RECORDS[task]]
    if task == "ReCoRD":
        return [{"idx": qa["idx"], "label": qa["answers"][0]["text"]} for r in RECORDS[task] for qa in r["qas"]]
    return [{"idx": r["idx"], "label": r["label"]} for r in RECORDS[task]]


@pytest.mark.parametrize("task", superglue.TASKS)
def test_prediction_records_of_perfect_scores_give_the_official_labels(superglue_dir, task):
    rows = _read(superglue_dir, task)
    labels = np.array([r.label for r in rows])
    probabilities = np.eye(3)[labels] if task == "CB" else labels[:, None] * 0.8 + 0.1
    assert superglue.prediction_records(task, rows, probabilities) == _official_labels(task)
    flipped = superglue.prediction_records(task, rows, 1 - probabilities)
    assert flipped != _official_labels(task)
