import json

import pytest

from nemot.data import DataError, Formatter, raw
from nemot.data.qa import registry
from nemot.vocab import ADDED_TOKEN_IDS as ADDED, IGNORE_ID

STORY = "Mia planted a bean. It grew tall by June."
AI2 = "<q> What do plants need? (1) sand (2) light (3) salt (4) ice <sep>"
QUOREF = "Traci and Gibson drive to Las Vegas. Ren\u00e9e stays home."

# name: (split, number of examples, index, formatted text, golds); hand-written from fixtures.py.
EXPECTED = {
    "race": ("dev", 4, 1, f"<p1> {STORY} <q> When was it tall? (1) May (2) June (3) July (4) April "
                          "<sep> (2)", ("(2)",)),
    "squad_v2": ("dev", 2, 0, f"<p1> {STORY} <q> What grew tall? <sep> a bean </s>", ("a bean", "bean")),
    "narrativeqa": ("valid", 1, 0, "<p1> A bean, grown. <q> What grew? <sep> a bean </s>",
                    ("a bean", "the bean")),
    "boolq": ("dev", 2, 1, f"<p1> {STORY} <q> is the bean a rose <sep> no </s>", ("no",)),
    "boolq_cs": ("test", 2, 1, f"<p1> {STORY} <q> did the bean shrink <sep> no </s>", ("no",)),
    "arc_easy": ("test", 2, 1, f"{AI2} (3)", ("(3)",)),
    "arc_challenge": ("dev", 2, 0, f"{AI2} (2)", ("(2)",)),
    "obqa": ("train", 1, 0, f"{AI2} (2)", ("(2)",)),
    "commonsenseqa": ("dev", 1, 0, "<q> Where is a bean kept? (1) jar (2) sky (3) sea (4) sun (5) moon "
                                   "<sep> (1)", ("(1)",)),
    "mctest": ("dev", 8, 1, "<p1> Mia had a bean. It grew. <q> Question 2? (1) red (2) blue (3) green "
                            "(4) gold <sep> (3)", ("(3)",)),
    "piqa": ("valid", 2, 1, "<q> Water a bean. (1) Use sand. (2) Use a can. <sep> (2)", ("(2)",)),
    "siqa": ("dev", 1, 0, "<p1> Mia watered the bean. <q> Why did Mia do this? (1) to help it grow "
                          "(2) to sleep (3) to swim <sep> (1)", ("(1)",)),
    "winogrande": ("dev", 1, 0, "<q> The bean beat the rose because _ grew faster. (1) the bean "
                                "(2) the rose <sep> (2)", ("(2)",)),
    "quoref": ("dev", 2, 0, f"<p1> {QUOREF} <q> Who drives to Las Vegas? <sep> Traci, Gibson </s>",
               (("Traci", "Gibson"),)),
    "quoref_contrast": ("test", 2, 1, f"<p1> {QUOREF} <q> Who stays home? <sep> Ren\u00e9e </s>",
                        ("Ren\u00e9e",)),
    "ropes": ("dev", 2, 0, "<p1> Beans grow in sun. Mia's bean is in sun. <q> What grew tall? <sep> "
                           "a bean </s>", ("a bean", "bean")),
    "ropes_contrast": ("test", 2, 0, "<p1> Beans grow in sun. Mia's bean is in sun. <q> What grew "
                                     "tall? <sep> a bean </s>", ("a bean", "bean")),
    "drop": ("dev", 4, 0, f"<p1> {STORY} <q> How many beans? <sep> 1 </s>", ("1", "one")),
    "drop_contrast": ("test", 4, 1, f"<p1> {STORY} <q> When was it tall? <sep> June 2020 </s>",
                      ("June 2020",)),
}


@pytest.fixture(scope="module")
def fmt(tok):
    return Formatter(tok, max_text_length=64)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_reader_formats_fixture_as_expected(name, raw_dirs, fmt, tok):
    split, count, index, text, golds = EXPECTED[name]
    info = registry.get(name)
    examples = registry.load_examples(name, split, raw_dirs[name])
    assert len(examples) == count
    f = fmt.format(examples[index])
    assert f.text == text
    assert f.golds == golds
    aux = [ADDED["<cls>"], ADDED["<dec>"], ADDED[f"<{info.task}>"]]
    assert f.token_ids == aux + tok.encode(text)
    answer = text.split("<sep>")[1]
    targets = [t for t in f.task_targets if t != IGNORE_ID]
    assert targets == tok.encode("<sep>" + answer)[1:]  # (k) alone, or answer ids + </s>
    assert f.task_targets[f.token_ids.index(ADDED["<sep>"]) - 3] == targets[0]
    assert all(e.dataset == name for e in examples)


def test_training_split_expands_one_example_per_answer(raw_dirs):
    train = registry.load_examples("squad_v2", "train", raw_dirs["squad_v2"])
    assert [(e.target_answer, e.answers) for e in train] == [
        ("a bean", ("a bean", "bean")), ("bean", ("a bean", "bean")), ("", ())]
    narrative = registry.load_examples("narrativeqa", "train", raw_dirs["narrativeqa"])
    assert [e.target_answer for e in narrative] == ["Mia", "Mia did"]


def test_subsets_and_unlabelled_test_files(raw_dirs):
    race = registry.load_examples("race", "test", raw_dirs["race"])
    assert [e.subset for e in race] == ["middle", "middle", "high", "high"]
    assert {e.subset for e in registry.load_examples("arc_challenge", "dev", raw_dirs["arc_challenge"])} \
        == {"challenge"}
    assert {e.subset for e in registry.load_examples("mctest", "dev", raw_dirs["mctest"])} == \
        {"mc160", "mc500"}
    for name in ("commonsenseqa", "winogrande", "piqa"):
        (test,) = registry.load_examples(name, "test", raw_dirs[name])[:1]
        assert test.label is None


def test_language_modelling_clean_ups_keep_the_original_spacing(raw_dirs):
    # The original code's text, space for space: lines concatenated without their
    # newlines, blank lines skipped, a sub-heading line leaving its two outer spaces.
    wiki = registry.load_examples("wikitext2", "test", raw_dirs["wikitext2"])
    assert wiki[0] == " The bean is a  seed .    It grows in sun . "
    assert wiki[2] == " A rose is red . "
    # PTB: " ".join of the lines, then newline -> space (the original's join-lines).
    assert registry.load_examples("ptb", "valid", raw_dirs["ptb"]) == [
        " the bean grew    a rose fell  "]
    assert registry.load_examples("lambada", "test", raw_dirs["lambada"]) == [
        "she said  it isnt mine  to him", "the end"]


def test_language_modelling_collapse_spaces_switch(raw_dirs):
    load = lambda name, split: registry.load_examples(  # noqa: E731
        name, split, raw_dirs[name], collapse_spaces=True)
    assert load("wikitext2", "test")[0] == "The bean is a seed . It grows in sun ."
    assert load("ptb", "valid") == ["the bean grew a rose fell"]
    assert load("lambada", "test") == ["she said it isnt mine to him", "the end"]
    for name, split in (("wikitext2", "test"), ("ptb", "test"), ("lambada", "test")):
        assert all("  " not in doc and doc == doc.strip() for doc in load(name, split))


def test_registry_names_and_seed_datasets():
    assert set(registry.SEED_DATASETS) == {"race", "squad_v2", "narrativeqa", "boolq", "arc",
                                           "obqa", "mctest"}
    assert registry.get("squad_v2").metric == "f1" and registry.get("narrativeqa").metric == "rouge_l"
    assert registry.get("race").task == "mqa" and registry.get("boolq").task == "gqa"
    with pytest.raises(KeyError, match="known: arc, arc_challenge"):
        registry.get("squad")
    with pytest.raises(ValueError, match="splits"):
        registry.load_examples("race", "training", "/nonexistent")


def test_arc_is_one_dataset_of_both_parts(raw_dirs):
    both = registry.load_examples("arc", "dev", raw_dirs["arc"])
    easy = registry.load_examples("arc_easy", "dev", raw_dirs["arc"])
    challenge = registry.load_examples("arc_challenge", "dev", raw_dirs["arc"])
    assert both == easy + challenge and len(easy) and len(challenge)
    assert {ex.subset for ex in both} == set(registry.get("arc").pool_parts) == {"easy",
                                                                                 "challenge"}
    assert registry.get("race").pool_parts == ("middle", "high")


# ---- bad input: each error names the file, the line or key, the field and what was expected.

def test_malformed_json_line(tmp_path):
    (tmp_path / "dev.jsonl").write_text('{"question": "q", "answer": true, "passage": "p"}\n{oops\n')
    with pytest.raises(DataError, match=r"dev\.jsonl: line 2: field '\(line\)': expected one JSON"):
        registry.load_examples("boolq", "dev", tmp_path)


def test_malformed_json_document(tmp_path):
    (tmp_path / "dev-v2.0.json").write_text('{"data": [\n  {"paragraphs": }\n]}')
    with pytest.raises(DataError, match=r"dev-v2\.0\.json: line 2: .*expected valid JSON"):
        registry.load_examples("squad_v2", "dev", tmp_path)


def test_missing_field(tmp_path):
    (tmp_path / "dev.jsonl").write_text(json.dumps({"question": "q", "answer": True}) + "\n")
    with pytest.raises(DataError, match=r"dev\.jsonl: line 1: field 'passage': expected a str, got 'missing'"):
        registry.load_examples("boolq", "dev", tmp_path)


def test_wrong_answer_type(tmp_path):
    (tmp_path / "dev.jsonl").write_text(json.dumps({"question": "q", "answer": "yes", "passage": "p"}))
    with pytest.raises(DataError, match=r"line 1: field 'answer': expected true/false"):
        registry.load_examples("boolq", "dev", tmp_path)


def test_label_outside_options(tmp_path, raw_dirs):
    path = tmp_path / "dev" / "high" / "9.txt"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"article": "a", "questions": ["q"], "options": [["x", "y", "z", "w"]],
                                "answers": ["E"]}))
    (tmp_path / "dev" / "middle").mkdir()
    (tmp_path / "dev" / "middle" / "1.txt").write_text(
        (raw_dirs["race"] / "RACE/dev/middle/1.txt").read_text())
    with pytest.raises(DataError, match=r"9\.txt: question 0: field 'answers': expected one of the "
                                        r"option labels \['A', 'B', 'C', 'D'\], got 'E'"):
        registry.load_examples("race", "dev", tmp_path)
    (tmp_path / "dev-labels.lst").write_text("4\n")
    (tmp_path / "dev.jsonl").write_text(json.dumps({"context": "c", "question": "q", "answerA": "a",
                                                    "answerB": "b", "answerC": "c"}) + "\n")
    with pytest.raises(DataError, match=r"dev-labels\.lst: line 1: field 'label': expected an integer in 1\.\.3"):
        registry.load_examples("siqa", "dev", tmp_path)


def test_missing_labels_file(tmp_path, raw_dirs):
    (tmp_path / "valid.jsonl").write_text((raw_dirs["piqa"] / "valid.jsonl").read_text())
    with pytest.raises(DataError, match=r"valid-labels\.lst: field 'labels': expected a labels file "
                                        r"with 2 lines, got 'missing file'"):
        registry.load_examples("piqa", "valid", tmp_path)
    (tmp_path / "mc160.dev.tsv").write_text((raw_dirs["mctest"] / "MCTest/mc160.dev.tsv").read_text())
    with pytest.raises(DataError, match=r"mc160\.dev\.ans: field 'answers'.*MCTestAnswers.*missing file"):
        list(registry.get("mctest").read(tmp_path, "dev", subsets=("mc160",)))


def test_labels_file_with_wrong_count(tmp_path, raw_dirs):
    (tmp_path / "valid.jsonl").write_text((raw_dirs["piqa"] / "valid.jsonl").read_text())
    (tmp_path / "valid-labels.lst").write_text("1\n")
    with pytest.raises(DataError, match=r"expected 2 labels, one per example of .*valid.jsonl, got 1"):
        registry.load_examples("piqa", "valid", tmp_path)


def test_split_with_no_files(tmp_path):
    (tmp_path / "train.jsonl").write_text("")
    with pytest.raises(DataError, match=r"split 'dev': field 'files': expected at least one file "
                                        r"matching dev\.jsonl \(in it or in BoolQ/\), got 'none'"):
        registry.load_examples("boolq", "dev", tmp_path)
    with pytest.raises(DataError, match="expected an existing directory"):
        registry.load_examples("race", "dev", tmp_path / "missing")


def test_drop_answer_without_content(tmp_path):
    doc = {"p1": {"passage": "x", "qa_pairs": [{"question": "q", "answer": {
        "number": "", "date": {"day": "", "month": "", "year": ""}, "spans": []}}]}}
    (tmp_path / "drop_dataset_dev.json").write_text(json.dumps(doc))
    with pytest.raises(DataError, match=r"key 'p1'\.qa_pairs\[0\]: field 'answer': expected a number, "
                                        r"a date or a list of spans"):
        registry.load_examples("drop", "dev", tmp_path)


def test_narrativeqa_question_without_summary(tmp_path, raw_dirs):
    (tmp_path / "third_party/wikipedia").mkdir(parents=True)
    (tmp_path / "third_party/wikipedia/summaries.csv").write_text("document_id,set,summary\n")
    (tmp_path / "qaps.csv").write_text(
        (raw_dirs["narrativeqa"] / "narrativeqa-master/qaps.csv").read_text())
    with pytest.raises(DataError, match=r"qaps\.csv: line 2: field 'document_id': expected a document "
                                        r"with a summary"):
        registry.load_examples("narrativeqa", "train", tmp_path)


def test_get_checks_type():
    with pytest.raises(DataError, match=r"f\.json: line 7: field 'n': expected a list, got 3"):
        raw.get({"n": 3}, "n", "f.json", 7, list)
