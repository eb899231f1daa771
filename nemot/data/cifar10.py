"""CIFAR-10 as distributed ("CIFAR-10 python version") and from TensorFlow Datasets.

Files: ``cifar-10-batches-py/data_batch_1`` .. ``_5`` and ``test_batch``, each a pickle of
``{b"data": uint8 [10000, 3072] (1024 red, 1024 green, 1024 blue values, row-major),
b"labels": [10000 ints 0-9], ...}``. TFDS ``cifar10:3.0.2`` holds the same images;
:func:`read_cifar10_tfds` gives exactly the arrays of the files, in their order.

Every malformed file is a :class:`nemot.data.DataError` naming the file (or the TFDS
dataset and split), the field and what was expected.

Example:
    >>> x, y = read_cifar10("cifar-10-batches-py")["train"]      # doctest: +SKIP
    >>> x.shape, y.shape                                         # doctest: +SKIP
    ((50000, 32, 32, 3), (50000,))
"""

import pickle
from pathlib import Path

import numpy as np

from nemot.data.format import DataError
from nemot.data.tfds_rows import tfds_rows

TRAIN_FILES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_FILE = "test_batch"
# The label order of the pickles (batches.meta) and of TFDS's ClassLabel.
CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
           "truck")
TFDS_NAME = "cifar10:3.0.2"


def _batch(path):
    try:
        with open(path, "rb") as f:
            batch = pickle.load(f, encoding="bytes")
    except FileNotFoundError:
        expected = ", ".join((*TRAIN_FILES, TEST_FILE))
        raise FileNotFoundError(f"{path}: missing; expected the CIFAR-10 python version "
                                f"({expected})") from None
    except (pickle.UnpicklingError, EOFError, ValueError) as error:
        raise DataError(path, None, "(file)", "a CIFAR-10 pickle", got=str(error)) from None
    if not isinstance(batch, dict) or b"data" not in batch or b"labels" not in batch:
        keys = sorted(batch) if isinstance(batch, dict) else type(batch).__name__
        raise DataError(path, None, "(pickle)", "a dict with b'data' and b'labels'", got=keys)
    data, labels = np.asarray(batch[b"data"]), np.asarray(batch[b"labels"])
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
        raise DataError(path, None, "data", "uint8 [N, 3072]",
                        got=f"{data.dtype} {list(data.shape)}")
    if labels.shape != (len(data),) or labels.min(initial=0) < 0 or labels.max(initial=0) > 9:
        raise DataError(path, None, "labels", f"{len(data)} labels in 0-9")
    return data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), labels.astype("int32")


def read_cifar10(directory):
    """``{"train": (x, y), "test": (x, y)}``: x uint8 [N, 32, 32, 3], y int32 [N]."""
    directory = Path(directory)
    train = [_batch(directory / name) for name in TRAIN_FILES]
    return {"train": (np.concatenate([x for x, _ in train]),
                      np.concatenate([y for _, y in train])),
            "test": _batch(directory / TEST_FILE)}


def _tfds_split(data_dir, split):
    features, rows = tfds_rows(TFDS_NAME, data_dir, split)
    source = f"TFDS {TFDS_NAME} [{split}] in {data_dir}"
    missing = [name for name in ("id", "image", "label") if name not in features]
    if missing:
        raise DataError(source, None, missing[0], "the features ['id', 'image', 'label']",
                        got=sorted(features))
    names = list(getattr(features["label"], "names", None) or [])
    if names != list(CLASSES):
        raise DataError(source, None, "label", f"the class names {list(CLASSES)}", got=names)
    if tuple(features["image"].shape) != (32, 32, 3):
        raise DataError(source, None, "image", "shape (32, 32, 3)",
                        got=tuple(features["image"].shape))
    # `id` "train_00042" is the image's place in data_batch_1..5 (test_batch for "test_").
    rows, images = list(rows), {}
    for row in rows:
        prefix, _, number = row["id"].rpartition("_")
        if prefix != split or not number.isdigit():
            raise DataError(source, None, "id", f"'{split}_<number>'", got=row["id"])
        images[int(number)] = row
    if sorted(images) != list(range(len(rows))):
        raise DataError(source, None, "id",
                        f"{split}_00000 .. {split}_{len(rows) - 1:05d}, each once")
    rows = [images[i] for i in range(len(rows))]
    return (np.stack([row["image"] for row in rows]).astype("uint8"),
            np.asarray([row["label"] for row in rows], "int32"))


def read_cifar10_tfds(data_dir):
    """:func:`read_cifar10`'s arrays from TFDS ``cifar10:3.0.2`` prepared in ``data_dir``:
    the same images in the pickles' order (TFDS shuffles them on disk; ``id`` keeps it)."""
    return {split: _tfds_split(data_dir, split) for split in ("train", "test")}
