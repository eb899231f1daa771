"""The minBERT reader (nemot.data.benchmarks.minbert): the published layout and quoting, the
rows the project itself drops (an empty label), named errors, and the seeded split of a dev
file."""

import numpy as np
import pytest

from nemot.data.benchmarks import minbert
from nemot.data.raw import DataError
from nemot.data.synthetic.minbert import write_minbert

QUORA = ("id", "sentence1", "sentence2", "is_duplicate")
STS = ("id", "sentence1", "sentence2", "similarity")


def test_a_published_file_reads_as_the_project_reads_it(tmp_path):
    write_minbert(tmp_path / "quora-dev.csv", QUORA, [
        ("a1", 'What does "turning the ship" mean?', "Why?", "0.0"),
        ("a2", "How do I learn?", "How can I learn?", "1.0")])
    text = (tmp_path / "quora-dev.csv").read_text()
    assert text.startswith("\tid\tsentence1\tsentence2\tis_duplicate\n")  # pandas' index
    assert '"What does ""turning the ship"" mean?"' in text  # csv quoting, as published
    rows = minbert.read("quora", tmp_path, "dev")
    assert rows.text_a == ('What does "turning the ship" mean?', "How do I learn?")
    assert rows.text_b == ("Why?", "How can I learn?") and rows.labels.tolist() == [0, 1]
    assert rows.skipped == ()


def test_a_row_with_an_empty_label_is_skipped_and_listed(tmp_path):
    # quora-dev.csv lines 2577 and 14222: an opening quote swallowed the rest of the row,
    # which leaves the label empty; the project's loader drops such rows (20,212 of 20,214).
    path = tmp_path / "quora-dev.csv"
    path.write_text('\tid\tsentence1\tsentence2\tis_duplicate\n'
                    '0\ta1\tGood?\tFine?\t1.0\n'
                    '1\ta2\tAny idea?\t"""Where can I find a dress?"\t\n'
                    '2\ta3\tWhy?\tHow?\t0.0\n')
    rows = minbert.read("quora", tmp_path, "dev")
    assert rows.text_a == ("Good?", "Why?") and rows.labels.tolist() == [1, 0]
    assert rows.skipped == (3,)


@pytest.mark.parametrize("label,message", [
    ("7", r"sts-dev.csv: line 2: field 'similarity': expected a number in \[0.0, 5.0\], "
          r"got '7'"),
    ("high", r"line 2: field 'similarity': expected a number in \[0.0, 5.0\], got 'high'"),
])
def test_a_bad_label_names_file_line_and_field(tmp_path, label, message):
    write_minbert(tmp_path / "sts-dev.csv", STS, [("s1", "a", "b", label)])
    with pytest.raises(DataError, match=message):
        minbert.read("sts", tmp_path, "dev")


def test_bad_layouts_and_missing_files_name_the_problem(tmp_path):
    (tmp_path / "sts-train.csv").write_text("\tid\tsentence1\tsimilarity\n0\ta\tb\t1.0\n")
    with pytest.raises(DataError, match=r"sts-train.csv: line 1: field 'sentence2': "
                                        r"expected a header with columns"):
        minbert.read("sts", tmp_path, "train")
    (tmp_path / "sts-dev.csv").write_text("\tid\tsentence1\tsentence2\tsimilarity\n"
                                          "0\ta\tb\tc\t1.0\textra\n")
    with pytest.raises(DataError, match=r"line 2: field '\(row\)': expected 5 tab-separated "
                                        r"fields as in the header, got 6"):
        minbert.read("sts", tmp_path, "dev")
    with pytest.raises(DataError, match=r"task 'quora', split 'train': field 'files': "
                                        r"expected one of \['quora-train.csv'\], got 'none'"):
        minbert.read("quora", tmp_path, "train")
    write_minbert(tmp_path / "sts-test-student.csv", STS[:-1], [("s1", "a", "b")])
    assert minbert.read("sts", tmp_path, "test").labels is None
    with pytest.raises(DataError, match=r"sts-test-student.csv: line 1: field 'similarity': "
                                        r"expected a 'similarity' column"):
        minbert.read("sts", tmp_path, "test", labelled=True)
    with pytest.raises(ValueError, match=r"task 'mnli': expected one of"):
        minbert.read("mnli", tmp_path, "dev")


def test_a_dev_file_splits_with_a_fixed_seed(tmp_path):
    write_minbert(tmp_path / "quora-dev.csv", QUORA,
                  [(f"q{i}", f"question {i}?", f"other {i}?", f"{i % 2}.0") for i in range(50)])
    rows = minbert.read("quora", tmp_path, "dev")
    train, test = minbert.split_rows(rows, 0.2, seed=0)
    assert (len(train), len(test)) == (40, 10)
    assert set(train.text_a).isdisjoint(test.text_a)
    assert set(train.text_a) | set(test.text_a) == set(rows.text_a)
    for part in (train, test):  # each row keeps its own label
        assert all(label == int(text.split()[1][:-1]) % 2
                   for text, label in zip(part.text_a, part.labels))
    again = minbert.split_rows(rows, 0.2, seed=0)[1]
    assert again.text_a == test.text_a and "split seed 0" in test.path
    assert minbert.split_rows(rows, 0.2, seed=1)[1].text_a != test.text_a
    with pytest.raises(ValueError, match="split fraction 1.5: expected a number in"):
        minbert.split_rows(rows, 1.5, seed=0)
    assert isinstance(train.labels, np.ndarray)
