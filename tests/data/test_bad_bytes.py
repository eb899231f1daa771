"""Bytes a reader cannot take end in one line naming the file: a Latin-1 byte in a BoolQ
line, a C4 shard cut in half or changed, an empty ``train.jsonl``, a crafted CIFAR-10
pickle; and nothing in the package unpickles data any other way."""

import ast
import gzip
import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from data_prep.__main__ import main as data_prep
from nemot import console
from nemot.data import DataError, prepare, shards
from nemot.data.benchmarks import cifar10
from nemot.data.c4 import stream as c4
from tests.data import benchmark_files, fixtures

PACKAGE = Path(__file__).resolve().parents[2] / "nemot"


def _one_line(capsys):
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err, err
    return err


def test_a_latin1_byte_in_a_boolq_line_names_the_encoding_line_and_byte_offset(tmp_path,
                                                                                 capsys):
    fixtures.boolq(tmp_path / "boolq")
    path = tmp_path / "boolq" / "train.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b"grew", b"gr\xe9w")  # "é" as Latin-1 writes it
    path.write_bytes(b"".join(lines))
    offset = len(lines[0]) + lines[1].index(b"\xe9")
    assert data_prep(["qa", "--dataset", "boolq", "--split", "train", "--data-dir",
                      str(tmp_path / "boolq"), "--out", str(tmp_path / "out")]) == 1
    err = _one_line(capsys)
    assert f"{path}: line 2:" in err
    assert f"UTF-8 text; byte 0xe9 at byte offset {offset} is not" in err


def test_an_empty_train_jsonl_is_named(tmp_path, capsys):
    fixtures.boolq(tmp_path / "boolq")
    (tmp_path / "boolq" / "train.jsonl").write_bytes(b"")
    assert data_prep(["qa", "--dataset", "boolq", "--split", "train", "--data-dir",
                      str(tmp_path / "boolq"), "--out", str(tmp_path / "out")]) == 1
    err = _one_line(capsys)
    assert f"{tmp_path / 'boolq' / 'train.jsonl'}: field '(file)': expected at least one " \
           "JSON object, one per line, got 'an empty file'" in err


@pytest.fixture
def c4_shards(tmp_path):
    fixtures.write_c4(tmp_path / "raw", n_train=2)
    prepare.prepare_c4(tmp_path / "raw", tmp_path / "shards", workers=1, progress=False)
    return tmp_path / "shards"


def _stream(directory):
    from nemot.data import Tokenizer

    kind, files = c4.list_files(directory, "train")
    return list(c4.window_stream(kind, files, n=8, repeat=False, tokenizer=Tokenizer()))


def test_a_c4_shard_cut_in_half_is_named_before_the_run_starts(c4_shards, capsys):
    shard = c4_shards / "c4-train.00001-of-01024.npz"
    data = shard.read_bytes()
    shard.write_bytes(data[:len(data) // 2])
    assert console.run(lambda _: c4.list_files(c4_shards, "train"), None) == 1
    err = _one_line(capsys)
    assert f"{shard}: field '(shard)': expected the {len(data)} bytes data_prep wrote" in err
    assert f"got '{len(data) // 2} bytes'" in err


def test_a_changed_shard_is_named_as_it_is_opened(c4_shards, capsys):
    shard = c4_shards / "c4-train.00000-of-01024.npz"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, other bytes
    shard.write_bytes(bytes(data))
    c4.list_files(c4_shards, "train")  # sizes agree
    assert console.run(lambda _: _stream(c4_shards), None) == 1
    err = _one_line(capsys)
    assert f"{shard}: field '(shard)': expected the shard data_prep wrote (SHA-256 " in err
    assert "it was changed or cut short: run data_prep again" in err


def test_a_shard_missing_from_the_index_is_named(c4_shards):
    index = json.loads(shards.index_path(c4_shards).read_text())
    del index["shards"]["c4-train.00001-of-01024.npz"]
    shards.index_path(c4_shards).write_text(json.dumps(index))
    with pytest.raises(DataError, match=r"c4-train.00001-of-01024.npz: field '\(shard\)': "
                                        r"expected a shard that data_prep finished; it is not "
                                        r"listed in .*shards.json"):
        c4.list_files(c4_shards, "train")


def test_a_truncated_raw_c4_file_is_named(tmp_path):
    fixtures.write_c4(tmp_path, n_train=1)
    path = tmp_path / "c4-train.00000-of-01024.json.gz"
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(DataError, match=rf"{path}: line \d+: field '\(gzip\)': expected a "
                                        r"complete gzip file of JSON lines .*EOFError"):
        _stream(tmp_path)
    with gzip.open(path, "wb") as f:
        f.write(b'{"text": "caf\xe9"}\n')
    with pytest.raises(DataError, match=rf"{path}: line 1: .*byte 0xe9 at byte offset 13"):
        _stream(tmp_path)


class _RunsCode:
    """A pickle that calls ``open(marker, "w")`` when loaded: what a crafted file can do."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_a_crafted_cifar10_pickle_is_refused_before_it_runs(tmp_path, capsys):
    directory = tmp_path / "cifar-10-batches-py"
    benchmark_files.cifar10(directory)
    marker = tmp_path / "pwned"
    batch = {b"data": np.zeros((2, 3072), "uint8"), b"labels": [0, 1],
             b"filenames": _RunsCode(marker)}
    (directory / "data_batch_4").write_bytes(pickle.dumps(batch, protocol=2))
    # What plain pickle would do with it:
    pickle.loads((directory / "data_batch_4").read_bytes())
    assert marker.exists()
    marker.unlink()
    assert console.run(lambda _: cifar10.read_cifar10(directory), None) == 1
    err = _one_line(capsys)
    assert f"{directory / 'data_batch_4'}: field '(pickle)': expected a CIFAR-10 batch" in err
    assert "refused: it names io.open" in err
    assert not marker.exists()


# Calls that turn data into code or objects of any class.
_UNSAFE = {("pickle", "load"), ("pickle", "loads"), ("pickle", "Unpickler"),
           ("marshal", "load"), ("marshal", "loads"), ("shelve", "open"), ("dill", "load"),
           ("joblib", "load"), ("torch", "load")}


def test_nothing_else_in_the_package_unpickles_data():
    """Only CIFAR-10's restricted unpickler reads pickles; ``np.load`` never allows pickles;
    ``.keras`` files load in Keras' safe mode."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            where = f"{path.relative_to(PACKAGE.parent)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and (node.value.id, node.attr) in _UNSAFE:
                found.append(f"{where} {node.value.id}.{node.attr}")
            if isinstance(node, ast.ImportFrom) and node.module in {m for m, _ in _UNSAFE}:
                found.append(f"{where} from {node.module} import ...")
            if isinstance(node, ast.keyword) and node.arg in ("allow_pickle", "safe_mode") \
                    and not (isinstance(node.value, ast.Constant)
                             and node.value.value is (node.arg == "safe_mode")):
                found.append(f"{where} {node.arg}={ast.unparse(node.value)}")
    assert len(found) == 1 and found[0].startswith("nemot/data/benchmarks/cifar10.py:") \
        and found[0].endswith(" pickle.Unpickler"), found


def test_config_files_with_bad_bytes_name_the_line_and_byte_offset(tmp_path):
    from nemot.config import NeMoTConfig
    from nemot.errors import ConfigError
    from nemot.evaluation.evaluate import run_defaults
    from nemot.training.run_config import RunConfigError, load_run_config

    text = 'name = "x"\n# caf\xe9\n'.encode("latin-1")  # a comment written as Latin-1
    for name, read, error in (("run.toml", load_run_config, RunConfigError),
                              ("model.toml", NeMoTConfig.from_file, ConfigError),
                              ("run_config.toml", lambda p: run_defaults(p.parent / "m.keras"),
                               ConfigError)):
        path = tmp_path / name
        path.write_bytes(text)
        with pytest.raises(error, match=rf"^{path}: line 2: expected UTF-8 text; byte 0xe9 at "
                                        r"byte offset 16 is not"):
            read(path)
