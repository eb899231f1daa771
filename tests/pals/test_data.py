"""Readers of the minBERT project's files and of GLUE's SST-2/QQP/STS-B, as published;
named errors for bad files; pair encoding."""

import numpy as np
import pytest

from nemot.data.benchmarks import glue
from nemot.data.benchmarks.wordpiece import load_tokenizer
from nemot.data.raw import DataError
from nemot.data.synthetic import minbert as synthetic
from nemot.pals.data import Encoder, read_file, read_rows
from nemot.pals.model import build_pal_bert
from tests.pals.helpers import (QUORA, SST, STS, all_texts, write_minbert, write_minbert_dir,
                                write_tsv, write_vocab)


@pytest.fixture(scope="module")
def minbert_dir(tmp_path_factory):
    return write_minbert_dir(tmp_path_factory.mktemp("minbert"))


def test_minbert_files_read_as_published(minbert_dir):
    # The published header starts with an empty column name (pandas' index).
    assert (minbert_dir / "quora-dev.csv").read_text().startswith(
        "\tid\tsentence1\tsentence2\tis_duplicate\n")
    sst = read_rows("sst", minbert_dir, "dev")
    assert sst.text_a == tuple(s.strip() for _, s, _ in SST) and sst.text_b is None
    assert sst.labels.tolist() == [3, 2, 0, 4]
    quora = read_rows("quora", minbert_dir, "train")
    assert quora.text_a[2] == 'What does "turning the ship slowly" mean?'  # ""-escaped in the file
    assert quora.text_b == tuple(r[2] for r in QUORA) and quora.labels.tolist() == [0, 1, 0]
    sts = read_rows("sts", minbert_dir, "dev")
    np.testing.assert_allclose(sts.labels, [float(r[3]) for r in STS])
    assert read_rows("cfimdb", minbert_dir, "dev").labels.tolist() == [1, 0, 0, 0]
    # The student test files have no label column.
    test = read_rows("sts", minbert_dir, "test")
    assert test.path.endswith("sts-test-student.csv") and test.labels is None and len(test) == 3


def write_glue(tmp_path):
    """SST-2, QQP and STS-B dev files (and an STS-B test file) as GLUE publishes them."""
    write_tsv(tmp_path / "SST-2" / "dev.tsv", ["sentence", "label"],
              [["it 's a \"charming\" and often affecting journey . ", 1],
               ["unflinchingly bleak and desperate ", 0]])
    write_tsv(tmp_path / "QQP" / "dev.tsv",
              ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
              [[201359, 303345, 303346, "Why are African-Americans so beautiful?",
                "Why are hispanics so beautiful?", 0]])
    write_tsv(tmp_path / "STS-B" / "dev.tsv",
              ["index", "genre", "filename", "year", "old_index", "source1", "source2",
               "sentence1", "sentence2", "score"],
              [[0, "main-captions", "MSRvid", "2012test", "0000", "none", "none",
                "A man with a hard hat is dancing.", "A man wearing a hard hat is dancing.",
                "5.000"]])
    write_tsv(tmp_path / "STS-B" / "test.tsv",
              ["index", "genre", "filename", "year", "old_index", "source1", "source2",
               "sentence1", "sentence2"],
              [[0, "main-captions", "MSRvid", "2012test", "0024", "none", "none",
                "A girl is styling her hair.", "A girl is brushing her hair."]])
    return tmp_path


def test_glue_files_read_as_published(tmp_path):
    write_glue(tmp_path)
    sst2 = read_rows("sst2", tmp_path, "dev")
    assert sst2.text_a[0] == 'it \'s a "charming" and often affecting journey .'  # no quoting
    assert sst2.labels.tolist() == [1, 0]
    qqp = read_rows("qqp", tmp_path, "dev")
    assert qqp.text_b == ("Why are hispanics so beautiful?",) and qqp.labels.tolist() == [0]
    assert read_rows("stsb", tmp_path, "dev").labels.tolist() == [5.0]
    assert read_rows("stsb", tmp_path, "test").labels is None
    # training and scoring read labelled files (minbert.read with the PALs layouts)
    with pytest.raises(DataError, match=r"STS-B/test.tsv: line 1: field 'score': expected a "
                                        r"'score' column: training and scoring need labels"):
        read_rows("stsb", tmp_path, "test", labelled=True)


def test_glue_tasks_from_tfds_or_the_hub_go_through_the_glue_reader(tmp_path, monkeypatch):
    directory = write_glue(tmp_path)
    files = {task: read_rows(task, directory, "dev") for task in ("sst2", "qqp", "stsb")}
    read_task = glue.read_task
    sources = []

    def from_files(task, data_dir, split, source="files"):  # the hub's rows = the files'
        sources.append(source)
        return read_task(task, data_dir, split)

    monkeypatch.setattr(glue, "read_task", from_files)
    for task, expected in files.items():
        rows = read_rows(task, directory, "dev", source="hub")
        assert (rows.text_a, rows.text_b) == (expected.text_a, expected.text_b)
        np.testing.assert_allclose(rows.labels, expected.labels)
    assert sources == ["hub"] * 3
    with pytest.raises(ValueError, match="task 'sst' from source 'tfds'"):
        read_rows("sst", directory, "dev", source="tfds")


@pytest.mark.parametrize("task,rows,message", [
    ("sst", [("a1", "fine .", 7)], r"ids-sst-dev.csv: line 3: field 'sentiment': expected one "
                                   r"of \[0, 1, 2, 3, 4\], got '7'"),
    ("quora", [("q1", "a?", "b?", "maybe")], r"line 3: field 'is_duplicate': expected one of "
                                             r"\[0, 1\], got 'maybe'"),
    ("sts", [("s1", "a", "b", "5.5")], r"line 3: field 'similarity': expected a number in "
                                       r"\[0.0, 5.0\], got '5.5'"),
])
def test_bad_labels_name_file_line_and_field(tmp_path, task, rows, message):
    name = {"sst": "ids-sst-dev.csv", "quora": "quora-dev.csv", "sts": "sts-dev.csv"}[task]
    good = {"sst": SST, "quora": QUORA, "sts": STS}[task][:1]
    write_minbert(tmp_path / name, task, good + rows)
    with pytest.raises(DataError, match=message):
        read_rows(task, tmp_path, "dev")


def test_bad_layouts_name_the_problem(tmp_path):
    path = write_tsv(tmp_path / "QQP" / "train.tsv", ["id", "question1", "is_duplicate"],
                     [[1, "a?", 0]])
    with pytest.raises(DataError, match=r"train.tsv: line 1: field 'question2': expected a "
                                        r"header with columns \['question1', 'question2'\]"):
        read_file("qqp", path)
    path = write_tsv(tmp_path / "SST-2" / "train.tsv", ["sentence", "label"],
                     [["good", 1], ["a sentence\twith a stray tab", 0]])
    with pytest.raises(DataError, match=r"line 3: field '\(row\)': expected 2 tab-separated "
                                        r"fields as in the header, got 3"):
        read_file("sst2", path)
    with pytest.raises(DataError, match=r"task 'sts', split 'dev': field 'files': expected one "
                                        r"of \['sts-dev.csv'\], got 'none'"):
        read_rows("sts", tmp_path, "dev")


def test_pairs_are_packed_as_one_bert_input(minbert_dir):
    tokenizer = load_tokenizer(write_vocab(minbert_dir / "vocab.txt", all_texts()))
    rows = read_rows("sts", minbert_dir, "dev")
    arrays = Encoder(tokenizer, 16).encode(rows)
    assert arrays["token_ids"].shape == (3, 16)
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    first = arrays["token_ids"][0]
    a, b = (tokenizer(t) for t in (rows.text_a[0], rows.text_b[0]))
    a, b = list(np.asarray(a)), list(np.asarray(b))
    assert list(first[:len(a) + len(b) + 3]) == [cls, *a, sep, *b, sep]
    assert list(arrays["segment_ids"][0][:len(a) + 2]) == [0] * (len(a) + 2)
    assert list(arrays["segment_ids"][0][len(a) + 2:len(a) + len(b) + 3]) == [1] * (len(b) + 1)
    assert arrays["padding_mask"][0].sum() == len(a) + len(b) + 3
    # Too long: both sentences are cut in turn (round robin), the [SEP]s stay.
    short = Encoder(tokenizer, 8).encode(rows)
    assert (short["padding_mask"] == 1).all()
    assert [list(r).count(sep) for r in short["token_ids"]] == [2, 2, 2]
    np.testing.assert_allclose(arrays["labels"], rows.labels)


def test_synthetic_data_follows_its_rules_and_loads(tmp_path):
    data, vocab, bert = synthetic.write_synthetic(
        tmp_path, sizes={"sst": 50, "cfimdb": 20, "quora": 40, "sts": 30}, seed=3)
    sst = read_rows("sst", data, "train")
    for text, label in zip(sst.text_a, sst.labels):
        words = text.split()
        count = sum(w in synthetic.POSITIVE for w in words) - \
            sum(w in synthetic.NEGATIVE for w in words)
        assert label == min(max(2 + count, 0), 4)
    sts = read_rows("sts", data, "dev")
    for a, b, label in zip(sts.text_a, sts.text_b, sts.labels):
        assert label == 1.25 * sum(w in synthetic.SIMILAR for w in (a + " " + b).split())
    assert read_rows("quora", data, "test").labels is None
    tokenizer = load_tokenizer(vocab)
    assert tokenizer.vocabulary_size() == len(synthetic.vocabulary())
    ids = Encoder(tokenizer, 16).encode(sst)["token_ids"]
    assert not (ids == tokenizer.token_to_id("[UNK]")).any()
    model = build_pal_bert(str(bert), tasks=("sst",))
    assert model.sizes["hidden_dim"] == synthetic.TINY_BERT["hidden_size"]
