"""Generated files in the minBERT project's layout, as data/minbert has them:
SST-5 and STS-B train and dev files, Quora's dev file only."""

import numpy as np

from nemot.data.synthetic.minbert import write_minbert

WORDS = ("the film is a good bad dull bright story of river cat dog what how why can you "
         "get make one people city house book game team long short warm cold").split()
COLUMNS = {"sst": ("id", "sentence", "sentiment"),
           "quora": ("id", "sentence1", "sentence2", "is_duplicate"),
           "sts": ("id", "sentence1", "sentence2", "similarity")}
FILES = {("sst", "train"): "ids-sst-train.csv", ("sst", "dev"): "ids-sst-dev.csv",
         ("quora", "dev"): "quora-dev.csv", ("sts", "train"): "sts-train.csv",
         ("sts", "dev"): "sts-dev.csv"}


def sentence(rng):
    return " ".join(rng.choice(WORDS, int(rng.integers(3, 9))))


def rows(task, count, rng):
    out = []
    for i in range(count):
        if task == "sst":
            label = int(rng.integers(0, 5))
        elif task == "quora":
            label = f"{float(rng.integers(0, 2)):.1f}"
        else:
            label = f"{rng.uniform(0, 5):.3f}"
        texts = (sentence(rng),) if task == "sst" else (sentence(rng), sentence(rng))
        out.append((f"{task}{i:05d}", *texts, label))
    return out


def write_minbert_layout(root, count=40, seed=0):
    """The five files under ``root`` (``count`` rows each); returns ``root``."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    for (task, _), name in FILES.items():
        write_minbert(root / name, COLUMNS[task], rows(task, count, rng))
    return root
