"""CIFAR-10 as distributed ("CIFAR-10 python version") and from TensorFlow Datasets.

Files: ``cifar-10-batches-py/data_batch_1`` .. ``_5`` and ``test_batch``, each a pickle of
``{b"data": uint8 [10000, 3072] (1024 red, 1024 green, 1024 blue values, row-major),
b"labels": [10000 ints 0-9], ...}``. TFDS ``cifar10:3.0.2`` holds the same images;
:func:`read_cifar10_tfds` gives exactly the arrays of the files, in their order.

The pickles are read with :class:`BatchUnpickler`, which builds only what the published
files hold (dicts, lists, bytes, numbers and NumPy arrays): a file that asks for
anything else (a crafted pickle can name any function to call) is refused unread.
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

from nemot.data.benchmarks.tfds_rows import tfds_rows
from nemot.data.raw import DataError

TRAIN_FILES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_FILE = "test_batch"
# The label order of the pickles (batches.meta) and of TFDS's ClassLabel.
CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
           "truck")
TFDS_NAME = "cifar10:3.0.2"


# The callables a NumPy array's pickle names (numpy 1 and numpy 2 module names); nothing
# else may be loaded.
_NUMPY_GLOBALS = {
    (module, name): getattr(np, name) if name in ("ndarray", "dtype") else
    np._core.multiarray._reconstruct
    for module in ("numpy", "numpy.core.multiarray", "numpy._core.multiarray")
    for name in ("ndarray", "dtype", "_reconstruct")}


def _latin1(text, encoding):
    """``_codecs.encode`` as a pickle written by Python 3 (protocol 2) calls it for bytes:
    only from Latin-1."""
    if encoding != "latin1" or not isinstance(text, str):
        raise RefusedPickle(f"it encodes bytes with {encoding!r}; expected 'latin1'")
    return text.encode("latin1")


_GLOBALS = {**_NUMPY_GLOBALS, ("_codecs", "encode"): _latin1}


class RefusedPickle(pickle.UnpicklingError):
    """A pickle names a callable other than NumPy's array constructors."""


class BatchUnpickler(pickle.Unpickler):
    """Unpickles only dicts, lists, tuples, bytes, strings, numbers and NumPy arrays (as
    Python 2 wrote the published files, or Python 3 at protocol 2): any other global a
    pickle names is refused (:class:`RefusedPickle`)."""

    def find_class(self, module, name):
        if (module, name) in _GLOBALS:
            return _GLOBALS[(module, name)]
        raise RefusedPickle(f"it names {module}.{name}, which a CIFAR-10 batch does not "
                            "(only NumPy arrays, dicts, lists, bytes and numbers are read)")


# What a malformed pickle raises while it is read (a wrong opcode, a cut, bad arguments
# to NumPy's constructors, a length too large to allocate).
_PICKLE_ERRORS = (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError,
                  IndexError, AttributeError, OverflowError, MemoryError, RecursionError)


def _batch(path):
    try:
        with open(path, "rb") as f:
            batch = BatchUnpickler(f, encoding="bytes").load()
    except FileNotFoundError:
        expected = ", ".join((*TRAIN_FILES, TEST_FILE))
        raise FileNotFoundError(f"{path}: missing; expected the CIFAR-10 python version "
                                f"({expected})") from None
    except RefusedPickle as error:
        raise DataError(path, None, "(pickle)", "a CIFAR-10 batch (dicts, lists, bytes, "
                        f"numbers, NumPy arrays); refused: {error}") from None
    except _PICKLE_ERRORS as error:
        raise DataError(path, None, "(file)", "a CIFAR-10 pickle",
                        got=f"{type(error).__name__}: {error}") from None
    if not isinstance(batch, dict) or b"data" not in batch or b"labels" not in batch:
        keys = sorted(batch) if isinstance(batch, dict) else type(batch).__name__
        raise DataError(path, None, "(pickle)", "a dict with b'data' and b'labels'", got=keys)
    data, labels = batch[b"data"], batch[b"labels"]
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 \
            or data.shape[1] != 3072:
        got = f"{data.dtype} {list(data.shape)}" if isinstance(data, np.ndarray) else \
            type(data).__name__
        raise DataError(path, None, "data", "uint8 [N, 3072]", got=got)
    if not isinstance(labels, list) or len(labels) != len(data) or not all(
            type(v) is int and 0 <= v <= 9 for v in labels):
        raise DataError(path, None, "labels", f"a list of {len(data)} integers in 0-9")
    labels = np.asarray(labels, "int32")
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
