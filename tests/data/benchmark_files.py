"""Tiny made-up files in the layouts CIFAR-10, NAMES and GLUE's SST-2 are distributed in
(never copies of the real data): CIFAR-10's python pickles, the NAMES corpus, SST-2 tsv."""

import pickle

import numpy as np


def cifar10(directory, per_batch=4, seed=0):
    """``data_batch_1..5`` and ``test_batch`` as the CIFAR-10 python version writes them:
    Python 2 pickles (protocol 2) of dicts with byte-string keys, ``data`` uint8
    [N, 3072] (red plane, green plane, blue plane, each row-major), ``labels`` a list."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    written = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        data = rng.integers(0, 256, (per_batch, 3072)).astype("uint8")
        labels = [int(v) for v in rng.integers(0, 10, per_batch)]
        batch = {b"batch_label": f"{name} of 5".encode(), b"labels": labels, b"data": data,
                 b"filenames": [f"img_{i}.png".encode() for i in range(per_batch)]}
        with open(directory / name, "wb") as f:
            pickle.dump(batch, f, protocol=2)
        written[name] = (data, labels)
    return written


NAMES = {"Polish": ["Ślusàrski", "Nowak"], "Czech": ["Dvořák", "Novak", "Černý"],
         "Irish": ["O'Neill"]}


def names(directory):
    """``<Language>.txt``, UTF-8, one name per line, a final newline."""
    directory.mkdir(parents=True, exist_ok=True)
    for language, lines in NAMES.items():
        (directory / f"{language}.txt").write_bytes(("\n".join(lines) + "\n").encode("utf-8"))


SST2_TRAIN = [("hide new secretions from the parental units ", 0),
              ("the greatest musicians ", 1), ("contains no wit , only labored gags ", 0),
              ("that loves its characters ", 1), ("the greatest wit ", 1)]
SST2_DEV = [("it 's a charming and often affecting journey . ", 1),
            ("unflinchingly bleak and desperate ", 0)]


def sst2(directory):
    """GLUE's SST-2: ``train.tsv`` / ``dev.tsv`` with a ``sentence<TAB>label`` header and
    the sentences' trailing space kept; ``test.tsv`` with ``index<TAB>sentence``."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, rows in (("train.tsv", SST2_TRAIN), ("dev.tsv", SST2_DEV)):
        text = "sentence\tlabel\n" + "".join(f"{s}\t{label}\n" for s, label in rows)
        (directory / name).write_bytes(text.encode("utf-8"))
    test = "index\tsentence\n" + "".join(f"{i}\t{s}\n" for i, (s, _) in enumerate(SST2_DEV))
    (directory / "test.tsv").write_bytes(test.encode("utf-8"))
