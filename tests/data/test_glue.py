"""GLUE readers on files in the official layouts, and their named errors."""

import pytest

from nemot.data.benchmarks import glue
from nemot.data.raw import DataError
from tests.data import benchmark_files

MNLI_HEADER = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse",
               "sentence2_binary_parse", "sentence1_parse", "sentence2_parse", "sentence1",
               "sentence2", "label1", "label2", "label3", "label4", "label5", "gold_label"]


def write_tsv(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")
    return path


def mnli_row(i, premise, hypothesis, label):
    return [str(i), "31193", "31193n", "government", "( x )", "( y )", "(ROOT x)", "(ROOT y)",
            premise, hypothesis, label, label, label, label, label, label]


@pytest.fixture
def data_dir(tmp_path):
    write_tsv(tmp_path / "CoLA" / "train.tsv", [["gj04", "1", "", "Our friends won't buy this."],
                                                ["gj04", "0", "*", "They drank the pub."]])
    write_tsv(tmp_path / "SST-2" / "dev.tsv", [["sentence", "label"], ["it 's a \"charming\" trip ", "1"]])
    write_tsv(tmp_path / "MRPC" / "dev.tsv", [
        ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
        ["1", "1355540", "1355592", "He said the foodservice pie.", "The foodservice pie said."]])
    write_tsv(tmp_path / "STS-B" / "dev.tsv", [
        ["index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1",
         "sentence2", "score"],
        ["0", "main-captions", "MSRvid", "2012test", "0000", "none", "none", "A man with a hard hat.",
         "A man wearing a hard hat.", "5.000"]])
    write_tsv(tmp_path / "QQP" / "dev.tsv", [
        ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
        ["201359", "303345", "303346", "Why are African-Americans so beautiful?",
         "Why are hispanics so beautiful?", "0"]])
    write_tsv(tmp_path / "MNLI" / "dev_matched.tsv",
              [MNLI_HEADER, mnli_row(0, "The new rights are nice enough", "Everyone really likes "
                                     "the newest benefits", "neutral")])
    write_tsv(tmp_path / "MNLI" / "dev_mismatched.tsv",
              [MNLI_HEADER, mnli_row(0, "Your contribution helped", "Your contributions were of "
                                     "no help", "contradiction")])
    write_tsv(tmp_path / "QNLI" / "dev.tsv", [["index", "question", "sentence", "label"],
                                              ["0", "What came into force?", "The law came.",
                                               "entailment"]])
    write_tsv(tmp_path / "RTE" / "dev.tsv", [["index", "sentence1", "sentence2", "label"],
                                             ["0", "Dana Reeve died.", "Christopher Reeve had an "
                                              "accident.", "not_entailment"]])
    return tmp_path


def test_each_task_reads_its_official_columns(data_dir):
    cola = glue.read_task("CoLA", data_dir, "train")
    assert [(e.fields, e.label) for e in cola] == [
        ({"sentence": "Our friends won't buy this."}, 1), ({"sentence": "They drank the pub."}, 0)]
    sst = glue.read_task("SST-2", data_dir, "dev")[0]
    assert sst.fields == {"sentence": "it 's a \"charming\" trip "} and sst.label == 1  # no quoting
    mrpc = glue.read_task("MRPC", data_dir, "dev")[0]
    assert mrpc.fields == {"sentence1": "He said the foodservice pie.",
                           "sentence2": "The foodservice pie said."} and mrpc.label == 1
    stsb = glue.read_task("STS-B", data_dir, "dev")[0]
    assert stsb.label == 5.0 and stsb.fields["sentence2"] == "A man wearing a hard hat."
    qqp = glue.read_task("QQP", data_dir, "dev")[0]
    assert qqp.fields["question2"] == "Why are hispanics so beautiful?" and qqp.label == 0
    matched = glue.read_task("MNLI", data_dir, "dev")[0]
    assert matched.fields == {"hypothesis": "Everyone really likes the newest benefits",
                              "premise": "The new rights are nice enough"}
    assert matched.label == 1  # neutral, in TFDS's order (entailment, neutral, contradiction)
    assert glue.read_task("MNLI-mm", data_dir, "dev")[0].label == 2
    assert glue.read_task("QNLI", data_dir, "dev")[0].label == 0
    rte = glue.read_task("RTE", data_dir, "dev")[0]
    assert rte.label == 1 and rte.line == 2 and rte.source.endswith("RTE/dev.tsv")


@pytest.mark.parametrize("task,split,rows,message", [
    ("RTE", "dev", [["index", "sentence1", "sentence2", "label"], ["0", "a", "b", "maybe"]],
     r"RTE/dev.tsv: line 2: field 'label': expected one of \['entailment', 'not_entailment'\], "
     r"got 'maybe'"),
    ("RTE", "dev", [["index", "sentence1", "sentence2", "label"], ["0", "a", "entailment"]],
     r"line 2: field '\(row\)': expected 4 tab-separated columns as in the header, got 3"),
    ("QNLI", "dev", [["index", "question", "text", "label"], ["0", "a", "b", "entailment"]],
     r"QNLI/dev.tsv: line 1: field 'sentence': expected a header with columns \['question', "
     r"'sentence', 'label'\]"),
    ("CoLA", "train", [["gj04", "1", "", "fine"], ["gj04", "1", "sentence without a source"]],
     r"CoLA/train.tsv: line 2: field '\(row\)': expected 4 tab-separated columns, got 3"),
    ("STS-B", "dev", [["index", "genre", "filename", "year", "old_index", "source1", "source2",
                       "sentence1", "sentence2", "score"],
                      ["0", "g", "f", "y", "o", "s", "s", "a", "b", "6.5"]],
     r"STS-B/dev.tsv: line 2: field 'score': expected a similarity score in \[0.0, 5.0\], "
     r"got '6.5'"),
    ("SST-2", "dev", [["sentence", "label"], ["  ", "1"]],
     r"SST-2/dev.tsv: line 2: field 'sentence': expected a non-empty text"),
])
def test_bad_files_name_file_line_and_field(tmp_path, task, split, rows, message):
    write_tsv(tmp_path / task / glue.SPECS[task].splits[split], rows)
    with pytest.raises(DataError, match=message):
        glue.read_task(task, tmp_path, split)


def test_missing_files_and_unknown_tasks_are_named(tmp_path):
    with pytest.raises(DataError, match=r"MNLI/dev_mismatched.tsv: field '\(file\)': expected "
                                        r"the MNLI-mm file of the official GLUE data"):
        glue.read_task("MNLI-mm", tmp_path, "dev")
    with pytest.raises(ValueError, match=r"GLUE task 'SST': expected one of"):
        glue.read_task("SST", tmp_path, "dev")
    with pytest.raises(ValueError, match=r"split 'train': expected one of \['dev'\]"):
        glue.read_task("MNLI-mm", tmp_path, "train")


def test_sst2_files_as_distributed_and_a_test_file_named(tmp_path):
    benchmark_files.sst2(tmp_path)
    examples = glue.read_file("SST-2", tmp_path / "train.tsv")
    assert [(e.fields["sentence"], e.label) for e in examples] == benchmark_files.SST2_TRAIN
    with pytest.raises(DataError, match=r"test.tsv: line 1: field 'label': expected a header "
                                        r"with columns \['sentence', 'label'\] \(GLUE's test "
                                        r"files have no labels: use the dev file as the test "
                                        r"set\), got \['index', 'sentence'\]"):
        glue.read_file("SST-2", tmp_path / "test.tsv")
    (tmp_path / "bad.tsv").write_text("sentence\tlabel\ngood film \t1\nbad film \tneg\n")
    with pytest.raises(DataError, match=r"bad.tsv: line 3: field 'label': expected one of "
                                        r"\['0', '1'\], got 'neg'"):
        glue.read_file("SST-2", tmp_path / "bad.tsv")
