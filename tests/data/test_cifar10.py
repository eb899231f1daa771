"""The CIFAR-10 reader on pickles written in the distributed layout, and its named errors
(from TFDS: tests/modact/test_sources.py)."""

import pickle

import numpy as np
import pytest

from nemot.data import DataError
from nemot.data.benchmarks import cifar10
from tests.data import benchmark_files


def test_cifar10_pickles_become_channels_last_images(tmp_path):
    written = benchmark_files.cifar10(tmp_path / "cifar-10-batches-py")
    splits = cifar10.read_cifar10(tmp_path / "cifar-10-batches-py")
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
    benchmark_files.cifar10(directory)
    (directory / "data_batch_3").unlink()
    with pytest.raises(FileNotFoundError, match="data_batch_3: missing; expected the CIFAR-10"):
        cifar10.read_cifar10(directory)
    with open(directory / "data_batch_3", "wb") as f:
        pickle.dump({b"data": np.zeros((2, 1024), "uint8"), b"labels": [0, 1]}, f, protocol=2)
    with pytest.raises(DataError, match=r"data_batch_3: field 'data': expected uint8 "
                                        r"\[N, 3072\], got 'uint8 \[2, 1024\]'"):
        cifar10.read_cifar10(directory)
    (directory / "data_batch_3").write_bytes(b"not a pickle")
    with pytest.raises(DataError, match=r"data_batch_3: field '\(file\)': expected a CIFAR-10 "
                                        r"pickle, got"):
        cifar10.read_cifar10(directory)
