"""Readers for the paper's data, as distributed (seed 003, section 3).

- CIFAR-10, "CIFAR-10 python version": ``cifar-10-batches-py/data_batch_1`` .. ``_5`` and
  ``test_batch``, each a pickle of ``{b"data": uint8 [10000, 3072] (1024 red, 1024 green,
  1024 blue values, row-major), b"labels": [10000 ints 0-9], ...}``.
- NAMES (the PyTorch char-RNN tutorial's ``data/names``): ``<Language>.txt``, UTF-8,
  one name per line; names are folded to ASCII as the tutorial does (NFD, combining
  marks dropped, only letters and `` .,;'`` kept).
- SST-2 (GLUE): ``train.tsv`` / ``dev.tsv`` with the header ``sentence<TAB>label`` and
  one ``sentence<TAB>0|1`` row per line (``test.tsv`` has no labels).

CIFAR-10 and SST-2 also come from TensorFlow Datasets (``cifar10:3.0.2``,
``glue/sst2:2.0.0``) and SST-2 from the Hugging Face hub (``nyu-mll/glue`` ``sst2``), as
exactly the arrays and lists the files give (:func:`read_cifar10_tfds`,
:func:`read_sst2_source`); NAMES is in neither.

Every error names the file (or the TFDS dataset), the line where there is one, and what
was expected.
"""

import pickle
import string
import unicodedata
from pathlib import Path

import numpy as np

from nemot.data.tfds_rows import tfds_rows
from nemot.errors import UserError
from nemot.hypergrid import glue

CIFAR10_TRAIN_FILES = tuple(f"data_batch_{i}" for i in range(1, 6))
CIFAR10_TEST_FILE = "test_batch"
# The label order of the pickles (batches.meta) and of TFDS's ClassLabel.
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse",
                   "ship", "truck")
CIFAR10_TFDS = "cifar10:3.0.2"
NAME_LETTERS = string.ascii_letters + " .,;'"


class DataFormatError(UserError, ValueError):
    """A data file is not in the expected layout; the message names file, line and field."""


def _cifar10_batch(path):
    try:
        with open(path, "rb") as f:
            batch = pickle.load(f, encoding="bytes")
    except FileNotFoundError:
        expected = ", ".join((*CIFAR10_TRAIN_FILES, CIFAR10_TEST_FILE))
        raise FileNotFoundError(f"{path}: missing; expected the CIFAR-10 python version "
                                f"({expected})") from None
    except (pickle.UnpicklingError, EOFError, ValueError) as error:
        raise DataFormatError(f"{path}: not a CIFAR-10 pickle ({error})") from None
    if not isinstance(batch, dict) or b"data" not in batch or b"labels" not in batch:
        keys = sorted(batch) if isinstance(batch, dict) else type(batch).__name__
        raise DataFormatError(f"{path}: expected a dict with b'data' and b'labels', got {keys}")
    data, labels = np.asarray(batch[b"data"]), np.asarray(batch[b"labels"])
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
        raise DataFormatError(f"{path}: field b'data': expected uint8 [N, 3072], got "
                              f"{data.dtype} {list(data.shape)}")
    if labels.shape != (len(data),) or labels.min(initial=0) < 0 or labels.max(initial=0) > 9:
        raise DataFormatError(f"{path}: field b'labels': expected {len(data)} labels in 0-9")
    return data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), labels.astype("int32")


def read_cifar10(directory):
    """``{"train": (x, y), "test": (x, y)}``: x uint8 [N, 32, 32, 3], y int32 [N]."""
    directory = Path(directory)
    train = [_cifar10_batch(directory / name) for name in CIFAR10_TRAIN_FILES]
    return {"train": (np.concatenate([x for x, _ in train]),
                      np.concatenate([y for _, y in train])),
            "test": _cifar10_batch(directory / CIFAR10_TEST_FILE)}


def _cifar10_tfds_split(data_dir, split):
    features, rows = tfds_rows(CIFAR10_TFDS, data_dir, split)
    source = f"TFDS {CIFAR10_TFDS} [{split}] in {data_dir}"
    missing = [name for name in ("id", "image", "label") if name not in features]
    if missing:
        raise DataFormatError(f"{source}: feature {missing[0]!r}: expected the features "
                              f"['id', 'image', 'label'], got {sorted(features)}")
    names = list(getattr(features["label"], "names", None) or [])
    if names != list(CIFAR10_CLASSES):
        raise DataFormatError(f"{source}: feature 'label': expected the class names "
                              f"{list(CIFAR10_CLASSES)}, got {names}")
    if tuple(features["image"].shape) != (32, 32, 3):
        raise DataFormatError(f"{source}: feature 'image': expected shape (32, 32, 3), got "
                              f"{tuple(features['image'].shape)}")
    # `id` "train_00042" is the image's place in data_batch_1..5 (test_batch for "test_").
    rows, images = list(rows), {}
    for row in rows:
        prefix, _, number = row["id"].rpartition("_")
        if prefix != split or not number.isdigit():
            raise DataFormatError(f"{source}: feature 'id': expected '{split}_<number>', got "
                                  f"{row['id']!r}")
        images[int(number)] = row
    if sorted(images) != list(range(len(rows))):
        raise DataFormatError(f"{source}: feature 'id': expected {split}_00000 .. "
                              f"{split}_{len(rows) - 1:05d}, each once")
    rows = [images[i] for i in range(len(rows))]
    return (np.stack([row["image"] for row in rows]).astype("uint8"),
            np.asarray([row["label"] for row in rows], "int32"))


def read_cifar10_tfds(data_dir):
    """:func:`read_cifar10`'s arrays from TFDS ``cifar10:3.0.2`` prepared in ``data_dir``:
    the same images in the pickles' order (TFDS shuffles them on disk; ``id`` keeps it)."""
    return {split: _cifar10_tfds_split(data_dir, split) for split in ("train", "test")}


def to_ascii(name):
    """The tutorial's ``unicodeToAscii``: ``"Ślusàrski" -> "Slusarski"``."""
    return "".join(c for c in unicodedata.normalize("NFD", name)
                   if unicodedata.category(c) != "Mn" and c in NAME_LETTERS)


def read_names(directory):
    """``(names, labels, languages)``: every name (ASCII-folded) and its language index
    into ``languages``, the sorted file stems."""
    directory = Path(directory)
    files = sorted(directory.glob("*.txt"))
    if not files:
        raise FileNotFoundError(f"{directory}: no <Language>.txt files; expected the NAMES "
                                "corpus (data/names of the PyTorch char-RNN tutorial)")
    names, labels = [], []
    for label, path in enumerate(files):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            line = path.read_bytes()[:error.start].count(b"\n") + 1
            raise DataFormatError(f"{path}, line {line}: not UTF-8 ({error.reason})") from None
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()  # the final newline
        for number, line in enumerate(lines, start=1):
            name = to_ascii(line.strip())
            if not name:
                raise DataFormatError(f"{path}, line {number}: {line!r}: expected a name "
                                      f"(letters or {NAME_LETTERS[52:]!r})")
            names.append(name)
            labels.append(label)
    return names, np.asarray(labels, "int32"), [p.stem for p in files]


def read_sst2(path):
    """``(sentences, labels)`` of a GLUE SST-2 tsv (``train.tsv`` or ``dev.tsv``)."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: missing; expected GLUE SST-2 train.tsv / "
                                "dev.tsv") from None
    if lines[-1] == "":
        lines.pop()
    header = lines[0].split("\t") if lines else []
    if header != ["sentence", "label"]:
        hint = " (GLUE's test.tsv has no labels: use dev.tsv as the test set)" \
            if header == ["index", "sentence"] else ""
        raise DataFormatError(f"{path}, line 1: header {header}: expected ['sentence', "
                              f"'label']{hint}")
    sentences, labels = [], []
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        if len(fields) != 2 or fields[1] not in ("0", "1"):
            raise DataFormatError(f"{path}, line {number}: expected 'sentence<TAB>0|1', "
                                  f"got {line!r}")
        sentences.append(fields[0].strip())
        labels.append(int(fields[1]))
    if not sentences:
        raise DataFormatError(f"{path}: no rows after the header")
    return sentences, np.asarray(labels, "int32")


def read_sst2_source(source, data_dir, split):
    """:func:`read_sst2`'s ``(sentences, labels)`` of GLUE SST-2's ``train`` or ``dev`` split
    from ``source`` ``"tfds"`` (``data_dir``: the TFDS directory) or ``"hub"``, through
    :func:`nemot.hypergrid.glue.read_task`."""
    examples = glue.read_task("SST-2", data_dir, split, source=source)
    return ([e.fields["sentence"].strip() for e in examples],
            np.asarray([e.label for e in examples], "int32"))
