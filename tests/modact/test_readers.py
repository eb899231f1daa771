"""The readers on files written in the distributed layouts, and their named errors."""

import pickle

import numpy as np
import pytest

from nemot.modact import readers
from nemot.modact.readers import DataFormatError
from tests.modact import fixtures


def test_cifar10_pickles_become_channels_last_images(tmp_path):
    written = fixtures.cifar10(tmp_path / "cifar-10-batches-py")
    splits = readers.read_cifar10(tmp_path / "cifar-10-batches-py")
    x, y = splits["train"]
    assert x.shape == (20, 32, 32, 3) and x.dtype == np.uint8 and y.dtype == np.int32
    data, labels = written["data_batch_2"]
    # image 1 of batch 2: pixel (row 5, column 7) of the green plane
    assert x[4 + 1, 5, 7, 1] == data[1, 1024 + 5 * 32 + 7]
    assert list(y[4:8]) == labels
    xt, yt = splits["test"]
    assert xt[3, 31, 0, 2] == written["test_batch"][0][3, 2048 + 31 * 32]
    assert list(yt) == written["test_batch"][1]


def test_cifar10_errors_name_the_file_and_field(tmp_path):
    directory = tmp_path / "cifar"
    fixtures.cifar10(directory)
    (directory / "data_batch_3").unlink()
    with pytest.raises(FileNotFoundError, match="data_batch_3: missing; expected the CIFAR-10"):
        readers.read_cifar10(directory)
    with open(directory / "data_batch_3", "wb") as f:
        pickle.dump({b"data": np.zeros((2, 1024), "uint8"), b"labels": [0, 1]}, f, protocol=2)
    with pytest.raises(DataFormatError, match="data_batch_3: field b'data': expected uint8 "
                                              "\\[N, 3072\\], got uint8 \\[2, 1024\\]"):
        readers.read_cifar10(directory)
    (directory / "data_batch_3").write_bytes(b"not a pickle")
    with pytest.raises(DataFormatError, match="data_batch_3: not a CIFAR-10 pickle"):
        readers.read_cifar10(directory)


def test_names_are_folded_to_ascii_as_the_tutorial_does(tmp_path):
    fixtures.names(tmp_path / "names")
    names, labels, languages = readers.read_names(tmp_path / "names")
    assert languages == ["Czech", "Irish", "Polish"]
    assert names == ["Dvorak", "Novak", "Cerny", "O'Neill", "Slusarski", "Nowak"]
    assert list(labels) == [0, 0, 0, 1, 2, 2]


def test_names_errors_name_the_file_and_line(tmp_path):
    directory = tmp_path / "names"
    fixtures.names(directory)
    (directory / "Greek.txt").write_bytes("Papadopoulos\n\nAlexiou\n".encode())
    with pytest.raises(DataFormatError, match="Greek.txt, line 2: '': expected a name"):
        readers.read_names(directory)
    (directory / "Greek.txt").write_bytes(b"Papadopoulos\nAlex\xffiou\n")
    with pytest.raises(DataFormatError, match="Greek.txt, line 2: not UTF-8"):
        readers.read_names(directory)
    with pytest.raises(FileNotFoundError, match="no <Language>.txt files"):
        readers.read_names(tmp_path / "empty")


def test_sst2_tsv_rows_and_errors(tmp_path):
    fixtures.sst2(tmp_path)
    sentences, labels = readers.read_sst2(tmp_path / "train.tsv")
    assert sentences[0] == "hide new secretions from the parental units"
    assert list(labels) == [label for _, label in fixtures.SST2_TRAIN]
    with pytest.raises(DataFormatError, match="test.tsv, line 1: header \\['index', "
                                              "'sentence'\\].*use dev.tsv as the test set"):
        readers.read_sst2(tmp_path / "test.tsv")
    (tmp_path / "bad.tsv").write_text("sentence\tlabel\ngood film \t1\nbad film \tneg\n")
    with pytest.raises(DataFormatError, match="bad.tsv, line 3: expected 'sentence<TAB>0\\|1'"):
        readers.read_sst2(tmp_path / "bad.tsv")
