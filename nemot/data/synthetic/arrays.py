"""Learnable stand-ins for CIFAR-10, NAMES and SST-2, as the arrays and lists their readers
give (:mod:`nemot.data.benchmarks.cifar10`, :mod:`nemot.data.benchmarks.names`,
:mod:`nemot.data.benchmarks.glue`): smoke runs of the modulated-activation experiments without the data (``synthetic = N``).

Example:
    >>> x, y = cifar10(8, seed=0)
    >>> x.shape, x.dtype, y.shape
    ((8, 32, 32, 3), dtype('uint8'), (8,))
"""

import numpy as np

from nemot.data.benchmarks.names import LETTERS


def cifar10(n, seed):
    """``(x, y)``: noise images with a class-coloured 8x8 patch at a class-dependent place."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, n).astype("int32")
    x = rng.integers(0, 160, (n, 32, 32, 3)).astype("uint8")
    for i, label in enumerate(y):
        r, c = 4 + 12 * (label % 3), 4 + 8 * (label // 3)
        x[i, r:r + 8, c:c + 8, label % 3] = 255
    return x, y


def names(n, seed, languages=18):
    """``(names, labels, languages)``: names whose letters come mostly from their
    language's own six letters."""
    rng = np.random.default_rng(seed)
    letters = np.array(list(LETTERS[:52]))
    own = [rng.choice(letters, 6, replace=False) for _ in range(languages)]
    y = rng.integers(0, languages, n).astype("int32")
    names = ["".join(rng.choice(own[label]) if rng.random() < 0.7 else rng.choice(letters)
                     for _ in range(rng.integers(3, 9))).capitalize() for label in y]
    return names, y, [f"Language{i:02d}" for i in range(languages)]


def sst2(n, seed):
    """``(sentences, labels)``: sentences of neutral words with a majority of positive or
    negative ones."""
    rng = np.random.default_rng(seed)
    words = {"pos": [f"good{i}" for i in range(10)], "neg": [f"bad{i}" for i in range(10)],
             "neutral": [f"word{i}" for i in range(80)]}
    sentences, labels = [], []
    for _ in range(n):
        label = int(rng.integers(0, 2))
        sentiment = words["pos" if label else "neg"]
        tokens = list(rng.choice(words["neutral"], rng.integers(3, 10)))
        tokens += list(rng.choice(sentiment, 2)) + list(rng.choice(words["pos"] + words["neg"], 1))
        rng.shuffle(tokens)
        sentences.append(" ".join(tokens))
        labels.append(label)
    return sentences, np.asarray(labels, "int32")
