"""The readers on the files as their authors publish them: where each
download puts its answers, labels and folders, multi-part answers, WikiText's headings."""

import json
import shutil

import pytest

import data_prep.__main__ as data_prep_cli
from nemot.data import DataError, Formatter
from nemot.data.qa import registry
from nemot.data.qa.pool import pool_dataset
from nemot.evaluation import metrics
from tests.data import fixtures

N = 32


def test_mctest_test_answers_come_from_mctest_answers(raw_dirs, tmp_path):
    test = registry.load_examples("mctest", "test", raw_dirs["mctest"])
    assert [e.label for e in test] == [0, 2, 3, 1] * 2
    # data_dir inside MCTest/: the answers sit in the sibling MCTestAnswers/.
    inside = registry.load_examples("mctest", "test", raw_dirs["mctest"] / "MCTest")
    assert [e.label for e in inside] == [e.label for e in test]


def test_piqa_ai2_layout_and_dev_alias(tmp_path, raw_dirs):
    fixtures.piqa_ai2(tmp_path)
    for data_dir in (tmp_path, tmp_path / "physicaliqa-train-dev"):
        for split in ("dev", "valid"):
            examples = registry.load_examples("piqa", split, data_dir)
            assert [(e.question, e.label) for e in examples] == [("Plant a bean.", 0),
                                                                 ("Water a bean.", 1)]
    assert len(registry.load_examples("piqa", "train", tmp_path)) == 2
    # The authors' own layout under the same alias.
    assert len(registry.load_examples("piqa", "dev", raw_dirs["piqa"])) == 2


def test_quoref_answer_parts_stay_one_answer(raw_dirs, tok):
    dev = registry.load_examples("quoref", "dev", raw_dirs["quoref"])
    assert dev[0].answers == (("Traci", "Gibson"),)
    # Training: one example with the parts joined, not one per part.
    train = registry.load_examples("quoref", "train", raw_dirs["quoref"])
    assert [e.target_answer for e in train] == ["Traci, Gibson", "Ren\u00e9e"]
    assert registry.get("quoref").metric == "drop_f1"
    golds = [Formatter(tok, max_text_length=N).format(e).golds for e in dev]
    # A partial answer is half right (the official bag matching), not right.
    assert metrics.score("drop_f1", ["Traci", "Ren\u00e9e"], golds) == pytest.approx(0.75)
    assert metrics.score("drop_f1", ["Traci, Gibson", "Ren\u00e9e"], golds) == 1.0
    assert metrics.f1("Traci", golds[0]) < 1.0


def test_drop_spans_dates_and_alternatives(raw_dirs, tok):
    dev = registry.load_examples("drop", "dev", raw_dirs["drop"])
    assert [e.answers for e in dev] == [("1", "one"), ("June 2020",), ("1615",),
                                        (("bean", "rose"), "the bean")]
    fmt = Formatter(tok, max_text_length=64)
    assert fmt.format(dev[3]).text.endswith("<sep> bean, rose </s>")
    golds = [fmt.format(e).golds for e in dev]
    # One of two spans scores 0.5 against the two-span answer; the other alternative
    # ("the bean", one span) is kept as an alternative.
    assert metrics.drop_f1("rose", golds[3]) == 0.5
    assert metrics.drop_f1("bean", golds[3]) == 1.0
    assert metrics.score("drop_f1", ["1", "June 2020", "1615", "bean, rose"], golds) == 1.0
    # Golds survive a JSON round trip (QA shards, prediction files): parts become lists.
    assert metrics.drop_f1("bean, rose", json.loads(json.dumps(golds[3]))) == 1.0
    assert metrics.drop_answer_strings(
        {"number": "", "date": {"day": "", "month": "", "year": "1615"}, "spans": []}) == ("1615",)
    assert metrics.rouge_l("bean rose", golds[3]) == 1.0


def test_boolq_cs_yields_each_original_question_then_its_perturbations(raw_dirs):
    examples = registry.load_examples("boolq_cs", "test", raw_dirs["boolq_cs"])
    assert [(e.id, e.question, e.answers) for e in examples] == [
        ("1", "did the bean grow", ("yes",)), ("1-0", "did the bean shrink", ("no",))]


def test_wikitext_headings_are_lines_between_blank_lines(raw_dirs):
    documents = registry.load_examples("wikitext2", "test", raw_dirs["wikitext2"])
    assert len(documents) == fixtures.WIKITEXT_ARTICLES == 3
    constant_k = documents[1]
    assert " = 1  / s and a nominal  k = " in constant_k and " = 1  and  C = " in constant_k
    assert constant_k.endswith(" where L is the inductance . ")
    assert "Terminology" not in constant_k and "=" not in constant_k.split("The image")[0]
    assert constant_k.startswith(" Constant k filters are")  # the title line is left out


ARCHIVE_TOPS = {"race": "RACE", "arc_easy": "ARC-V1-Feb2018-2", "obqa": "OpenBookQA-V1-Sep2018",
                "quoref": "quoref-train-dev-v0.1", "ropes": "ropes-train-dev-v1.0",
                "wikitext2": "wikitext-2", "ptb": "simple-examples/data", "siqa": "socialiqa-train-dev",
                "winogrande": "winogrande_1.1", "drop": "drop_dataset", "mctest": "MCTest",
                "narrativeqa": "narrativeqa-master", "boolq_cs": "BoolQ",
                "quoref_contrast": "quoref", "ropes_contrast": "ropes", "drop_contrast": "DROP",
                "lambada": "lambada"}


@pytest.mark.parametrize("name", sorted(ARCHIVE_TOPS))
def test_data_dir_at_either_level_of_the_archive_folder(name, raw_dirs):
    split = registry.get(name).splits[-1]
    outside = registry.load_examples(name, split, raw_dirs[name])
    inside = registry.load_examples(name, split, raw_dirs[name] / ARCHIVE_TOPS[name])
    assert outside and inside == outside


def test_ptb_data_dir_at_simple_examples(raw_dirs):
    assert registry.load_examples("ptb", "test", raw_dirs["ptb"] / "simple-examples") == \
        registry.load_examples("ptb", "test", raw_dirs["ptb"])


def test_validation_split_resolves_per_dataset(raw_dirs, tok):
    assert registry.resolve_split("narrativeqa", "dev") == "valid"
    assert registry.resolve_split("race", "validation") == "dev"
    assert registry.resolve_split("piqa", "dev") == "valid"
    with pytest.raises(ValueError, match="boolq_cs has splits"):
        registry.resolve_split("boolq_cs", "dev")
    ds = pool_dataset(["narrativeqa", "race"], data_dir=raw_dirs, split="dev", batch_size=2,
                      max_text_length=N, tokenizer=tok)
    x, _ = next(iter(ds))
    assert x["token_ids"].shape == (2, 3 + N)


def test_winogrande_training_size(raw_dirs, tmp_path, capsys):
    for size, count in fixtures.WINOGRANDE_TRAIN_SIZES.items():
        assert len(registry.load_examples("winogrande", f"train_{size}",
                                          raw_dirs["winogrande"])) == count
    assert len(registry.load_examples("winogrande", "train", raw_dirs["winogrande"])) == 5
    # The size reaches the command line as a split name (data.train_split=train_s in a run).
    data_prep_cli.main(["qa", "--dataset", "winogrande", "--split", "train_s", "--data-dir",
                        str(raw_dirs["winogrande"]), "--out", str(tmp_path), "--max-text-length",
                        str(N)])
    assert json.loads(capsys.readouterr().out)["shards"][0].endswith(
        "winogrande-train_s-00000-of-00001.npz")


def test_data_prep_prints_one_line_for_a_data_error(tmp_path, capsys):
    (tmp_path / "dev.jsonl").write_text('{"question": "q", "answer": "maybe", "passage": "p"}\n')
    assert data_prep_cli.main(["qa", "--dataset", "boolq", "--split", "dev", "--data-dir",
                               str(tmp_path), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "dev.jsonl: line 1: field 'answer': expected true/false" in err


def test_commonsenseqa_official_and_hub_export_layouts(raw_dirs, tmp_path):
    official = registry.load_examples("commonsenseqa", "dev", raw_dirs["commonsenseqa"])
    export = {"id": "c2", "question": "Where is a bean kept?", "question_concept": "bean",
              "choices": {"label": list("ABCDE"), "text": ["jar", "sky", "sea", "sun", "moon"]},
              "answerKey": "A"}
    (tmp_path / "dev_rand_split.jsonl").write_text(json.dumps(export) + "\n")
    assert registry.load_examples("commonsenseqa", "dev", tmp_path) == official
    (tmp_path / "dev_rand_split.jsonl").write_text(json.dumps({"id": "c", "text": "?"}) + "\n")
    with pytest.raises(DataError, match=r"line 1: field 'question': expected the official layout "
                                        r"\(question\.stem.*or the hub export.*got \"fields"):
        registry.load_examples("commonsenseqa", "dev", tmp_path)


def test_copied_folder_without_its_labels_names_the_labels_file(raw_dirs, tmp_path):
    shutil.copy(raw_dirs["siqa"] / "socialiqa-train-dev" / "dev.jsonl", tmp_path)
    with pytest.raises(DataError, match=r"dev-labels\.lst: field 'labels'.*missing file"):
        registry.load_examples("siqa", "dev", tmp_path)
