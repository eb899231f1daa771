"""The splits and input pipelines of the paper's experiments (*Context Dependent Modulation of Activation Function*, section 3).

- CIFAR-10: 20% of the 50,000 training images held out for validation, the 10,000
  test images for test; pixels scaled to [0, 1]; training batches shifted (up to 10% of
  the width and height, nearest fill) and mirrored left-right, as the Keras
  ``cifar10_cnn`` example's ``ImageDataGenerator`` did.
- NAMES: about 10% held out for test; characters as ids 1..57 of the tutorial's
  alphabet (0 pads). The readings of what the paper leaves open are switches:
  ``split`` (any row, or whole names so that no test name occurs in training),
  ``deduplicate`` (each name once per language), ``alphabet`` and ``unknown`` (the
  tutorial's character sets and what becomes of a character outside them) and
  ``padding`` (after or before the name; the model's ``mask_padding`` says whether the
  LSTM skips it).
- SST-2, ``layout = "sst5"`` (the default; the paper's split): the paper held out "about
  20% of the data set" for test. SST-2 is SST's sentences without the neutral ones,
  binarised; its sentence-level files here are the minBERT project's SST-5
  ``ids-sst-train.csv`` and ``ids-sst-dev.csv`` (:mod:`nemot.data.benchmarks.minbert`): labels 0, 1
  become negative (0), 3, 4 positive (1), neutral 2 is dropped (6,920 + 872 sentences,
  GLUE SST-2's train and dev sentences), the sentences are lower-cased as GLUE's are,
  both files are pooled and ``test_fraction`` (0.2) of them held out with
  ``split_seed``. ``layout = "glue"``: GLUE's ``train.tsv`` to train (67,349 *phrases*
  of the training sentences, not sentences) and its 872-sentence ``dev.tsv`` as the
  test set, also from TFDS or the hub (GLUE's test labels are not public).
  Either way words (the files are tokenised) are ids of a vocabulary of the training
  split, 1 for unknown words, 0 pads.

The readers are the shared ones (:mod:`nemot.data.benchmarks.cifar10`,
:mod:`nemot.data.benchmarks.names`, :mod:`nemot.data.benchmarks.glue`). Held-out splits are
drawn with ``split_seed`` (the same for every run of an experiment: runs differ in
initialisation and batch order only).
``synthetic = N`` generates N learnable examples of the dataset's shape instead of
reading files (:mod:`nemot.data.synthetic.arrays`), for smoke runs without the data.
"""

import collections
import dataclasses
import functools
import math
import string
from pathlib import Path

import numpy as np

from nemot.data.benchmarks import cifar10, glue, minbert, names
from nemot.data.synthetic import arrays
from nemot.ranges import Fraction, NonNegativeInt

DATASETS = ("cifar10", "names", "sst2")
# Where each dataset can be read from (NAMES is neither in TFDS nor on the hub).
SOURCES = {"cifar10": ("files", "tfds"), "names": ("files",), "sst2": ("files", "tfds", "hub")}
SST2_LAYOUTS = ("sst5", "glue")
# SST-5 labels -> SST-2's (minBERT's ids-sst files: 0 very negative ... 4 very positive).
SST5_TO_SST2 = {0: 0, 1: 0, 3: 1, 4: 1}
# NAMES' character sets: the PyTorch char-RNN tutorial's final notebook (its
# unicodeToAscii keeps these), its data.py (adds the hyphen) and its first version
# (letters only, every other character one-hot at the last letter).
NAMES_ALPHABETS = {"tutorial": names.LETTERS, "tutorial_script": names.LETTERS + "-",
                   "letters": string.ascii_letters}
# A character outside the alphabet after the accents are stripped: dropped (unicodeToAscii),
# the last letter's id (the tutorial's letterToIndex finds -1, which indexes the last
# one-hot column) or an id of its own.
NAMES_UNKNOWN = ("drop", "last", "id")
NAMES_SPLITS = ("rows", "names")
PADDING = ("post", "pre")


@dataclasses.dataclass(frozen=True)
class DataConfig:
    """Where an experiment's data is and how it is split.

    Args:
        dataset: ``"cifar10"``, ``"names"`` or ``"sst2"``.
        dir: the files' directory (``cifar-10-batches-py``, ``names``, ``SST-2``);
            ``"keras"`` loads CIFAR-10 with ``keras.datasets.cifar10`` (downloads); with
            ``source = "tfds"``, the TFDS data directory.
        source: ``"files"``; ``"tfds"``: CIFAR-10 from ``cifar10:3.0.2``, SST-2 from
            ``glue/sst2:2.0.0`` (train, and validation as the test set); ``"hub"``: SST-2
            from ``nyu-mll/glue`` ``sst2`` (no ``dir``). Each gives the files' arrays.
        synthetic: N > 0 generates N training examples instead (see module docstring).
        validation_fraction: of the training split, held out for validation.
        test_fraction: of the corpus, held out for test (NAMES has no test file).
        split_seed: seed of the held-out draws.
        augment: CIFAR-10: shift and mirror the training images.
        max_length: token sequences are cut to this many ids (0: no limit).
        split: NAMES' test rows: ``"rows"`` (any row, so a name the files repeat can be
            on both sides) or ``"names"`` (``test_fraction`` of the distinct names with
            every row of each held out: no test name occurs in training).
        deduplicate: NAMES: keep each (name, language) once (the files repeat 2,057).
        alphabet: NAMES' characters, a key of :data:`NAMES_ALPHABETS`.
        unknown: NAMES, a character outside ``alphabet`` (:data:`NAMES_UNKNOWN`).
        padding: ``"post"`` (ids, then zeros) or ``"pre"`` (zeros, then ids: Keras'
            ``pad_sequences``).
        train_file, test_file: SST-2 file names in ``dir`` (``layout = "glue"``).
        layout: SST-2's files: ``"sst5"`` (minBERT's SST-5 sentences, binarised, pooled
            and ``test_fraction`` held out: the paper's split) or ``"glue"`` (GLUE
            SST-2's ``train_file`` and ``test_file``; the only layout of TFDS and the hub).
    """

    dataset: str = "cifar10"
    dir: str | None = None
    synthetic: NonNegativeInt = 0
    validation_fraction: Fraction = 0.0
    test_fraction: Fraction = 0.0
    split_seed: NonNegativeInt = 0
    augment: bool = False
    max_length: NonNegativeInt = 0
    train_file: str = "train.tsv"
    test_file: str = "dev.tsv"
    source: str = "files"
    layout: str = "sst5"
    split: str = "rows"
    deduplicate: bool = False
    alphabet: str = "tutorial"
    unknown: str = "drop"
    padding: str = "post"

    def __post_init__(self):
        for key, choices in (("split", NAMES_SPLITS), ("alphabet", tuple(NAMES_ALPHABETS)),
                             ("unknown", NAMES_UNKNOWN), ("padding", PADDING)):
            if getattr(self, key) not in choices:
                raise ValueError(f"{key}={getattr(self, key)!r}: expected one of {choices}")
        names_only = {"split": "rows", "deduplicate": False, "alphabet": "tutorial",
                      "unknown": "drop"}
        for key, default in names_only.items():
            if self.dataset != "names" and getattr(self, key) != default:
                raise ValueError(f"{key}={getattr(self, key)!r}: a NAMES setting; "
                                 f"{self.dataset} has no use for it")
        if self.dataset not in DATASETS:
            raise ValueError(f"dataset={self.dataset!r}: expected one of {DATASETS}")
        if self.source not in SOURCES[self.dataset]:
            raise ValueError(f"source={self.source!r}: {self.dataset} is read from one of "
                             f"{SOURCES[self.dataset]}")
        if self.source == "hub" and self.dir:
            raise ValueError(f"dir={self.dir!r}: source = 'hub' reads nyu-mll/glue sst2; "
                             "leave dir unset")
        if self.source != "files" and (self.train_file, self.test_file) != ("train.tsv",
                                                                             "dev.tsv"):
            raise ValueError(f"train_file, test_file: file names, not read with source = "
                             f"{self.source!r} (SST-2's splits are GLUE's train and validation)")
        if self.layout not in SST2_LAYOUTS:
            raise ValueError(f"layout={self.layout!r}: expected one of {SST2_LAYOUTS}")
        if self.dataset == "sst2" and self.source != "files" and self.layout != "glue":
            raise ValueError(f"layout={self.layout!r}: source = {self.source!r} gives GLUE "
                             "SST-2's splits; set layout = \"glue\"")
        if self.dataset == "sst2" and self.layout == "sst5" and not self.synthetic and not (
                0 < self.test_fraction < 1):
            raise ValueError(f"test_fraction={self.test_fraction}: layout = \"sst5\" holds "
                             "out a fraction of the pooled sentences (the paper: about 0.2)")
        if not self.synthetic and not self.dir and self.source != "hub":
            raise ValueError(f"dir: the {self.dataset} files' directory is needed (or "
                             "synthetic = N for generated data)")


@dataclasses.dataclass(frozen=True)
class Splits:
    """Arrays ``(x, y)`` of each split, and what a model needs to know about them."""

    train: tuple
    validation: tuple | None
    test: tuple
    num_classes: int
    vocab_size: int = 0
    input_shape: tuple = ()


def hold_out(x, y, fraction, seed):
    """``(kept, held_out)``: ``ceil(fraction N)`` examples drawn with ``seed``."""
    if not fraction:
        return (x, y), None
    order = np.random.default_rng(seed).permutation(len(y))
    n = math.ceil(fraction * len(y))
    return (x[order[n:]], y[order[n:]]), (x[order[:n]], y[order[:n]])


def pad_ids(sequences, max_length=0, padding="post"):
    """int32 [N, L] padded with 0 after (``"post"``) or before (``"pre"``) the ids (L: the
    longest, or ``max_length``)."""
    if max_length:
        sequences = [s[:max_length] for s in sequences]
    out = np.zeros((len(sequences), max(map(len, sequences))), "int32")
    for row, ids in zip(out, sequences):
        if padding == "post":
            row[:len(ids)] = ids
        elif ids:
            row[-len(ids):] = ids
    return out


def word_vocabulary(sentences):
    """``{word: id}`` of the training sentences, most frequent first (ties
    alphabetical), from id 2 (0 pads, 1 is an unknown word)."""
    counts = collections.Counter(w for s in sentences for w in s.split())
    ranked = sorted(counts, key=lambda w: (-counts[w], w))
    return {w: i for i, w in enumerate(ranked, start=2)}


# ---------------------------------------------------------------- loading

def _cifar10(config):
    if config.synthetic:
        train = arrays.cifar10(config.synthetic, config.split_seed)
        test = arrays.cifar10(max(config.synthetic // 5, 1), config.split_seed + 1)
    elif config.source == "tfds":
        files = cifar10.read_cifar10_tfds(config.dir)
        train, test = files["train"], files["test"]
    elif config.dir == "keras":
        import keras

        (x, y), (xt, yt) = keras.datasets.cifar10.load_data()
        train, test = (x, y[:, 0].astype("int32")), (xt, yt[:, 0].astype("int32"))
    else:
        files = cifar10.read_cifar10(config.dir)
        train, test = files["train"], files["test"]
    train, validation = hold_out(*train, config.validation_fraction, config.split_seed)
    return Splits(train, validation, test, num_classes=10, input_shape=(32, 32, 3))


def name_ids(name, alphabet, unknown):
    """A name's ids: 1 + its characters' places in ``alphabet``; a character outside it
    is dropped, the last letter's id (``"last"``) or ``len(alphabet) + 1`` (``"id"``)."""
    unknown_id = {"drop": None, "last": len(alphabet), "id": len(alphabet) + 1}[unknown]
    ids = [alphabet.find(c) + 1 or unknown_id for c in name]
    return [i for i in ids if i is not None]


def hold_out_names(texts, fraction, seed):
    """A boolean mask of the rows held out: ``ceil(fraction D)`` of the D distinct
    ``texts`` (in order of first appearance) drawn with ``seed``, every row of each."""
    distinct = list(dict.fromkeys(texts))
    order = np.random.default_rng(seed).permutation(len(distinct))
    held = {distinct[i] for i in order[:math.ceil(fraction * len(distinct))]}
    return np.array([t in held for t in texts], bool)


def _names(config):
    alphabet = NAMES_ALPHABETS[config.alphabet]
    fold = alphabet if config.unknown == "drop" else None
    if config.synthetic:
        texts, y, languages = arrays.names(config.synthetic, config.split_seed)
        texts = [names.to_ascii(t, fold) if fold else t for t in texts]
    else:
        texts, y, languages = names.read_names(config.dir, fold)
    if config.deduplicate:
        pairs = list(dict.fromkeys(zip(texts, y.tolist())))
        texts, y = [t for t, _ in pairs], np.asarray([label for _, label in pairs], "int32")
    ids = pad_ids([name_ids(t, alphabet, config.unknown) for t in texts], config.max_length,
                  config.padding)
    if not config.test_fraction:
        raise ValueError("names: test_fraction: the corpus has no test file; hold out a "
                         "fraction (the paper: about 0.1)")
    if config.split == "names":
        held = hold_out_names(texts, config.test_fraction, config.split_seed)
        rest, test = (ids[~held], y[~held]), (ids[held], y[held])
    else:
        rest, test = hold_out(ids, y, config.test_fraction, config.split_seed)
    train, validation = hold_out(*rest, config.validation_fraction, config.split_seed + 1)
    return Splits(train, validation, test, num_classes=len(languages),
                  vocab_size=len(alphabet) + 1 + (config.unknown == "id"))


def sst2(examples):
    """``(sentences, labels)`` of GLUE SST-2 examples: the files' sentences without their
    trailing space, int32 labels."""
    return ([e.fields["sentence"].strip() for e in examples],
            np.asarray([e.label for e in examples], "int32"))


def sst5_sentences(data_dir):
    """``(sentences, labels)``: minBERT's SST-5 train and dev sentences without the
    neutral ones, lower-cased, labels binarised (:data:`SST5_TO_SST2`), in file order."""
    sentences, labels = [], []
    for split in ("train", "dev"):
        rows = minbert.read("sst", data_dir, split, labelled=True)
        for text, label in zip(rows.text_a, rows.labels):
            if int(label) in SST5_TO_SST2:
                sentences.append(text.lower())
                labels.append(SST5_TO_SST2[int(label)])
    return sentences, np.asarray(labels, "int32")


def _sst2(config):
    if config.synthetic:
        train = arrays.sst2(config.synthetic, config.split_seed)
        test = arrays.sst2(max(config.synthetic // 5, 1), config.split_seed + 1)
    elif config.layout == "sst5":
        sentences, labels = sst5_sentences(config.dir)
        train, test = hold_out(np.array(sentences, object), labels, config.test_fraction,
                               config.split_seed)
    elif config.source == "files":
        train = sst2(glue.read_file("SST-2", Path(config.dir) / config.train_file))
        test = sst2(glue.read_file("SST-2", Path(config.dir) / config.test_file))
    else:
        train = sst2(glue.read_task("SST-2", config.dir, "train", source=config.source))
        test = sst2(glue.read_task("SST-2", config.dir, "dev", source=config.source))
    vocabulary = word_vocabulary(train[0])

    def encode(sentences):
        return pad_ids([[vocabulary.get(w, 1) for w in s.split()] or [1] for s in sentences],
                       config.max_length, config.padding)

    train, validation = hold_out(encode(train[0]), train[1], config.validation_fraction,
                                 config.split_seed)
    return Splits(train, validation, (encode(test[0]), test[1]), num_classes=2,
                  vocab_size=len(vocabulary) + 2)


@functools.lru_cache(maxsize=1)
def load_splits(config):
    """The :class:`Splits` of a :class:`DataConfig` (the last one is kept in memory, so
    the runs of an experiment read the files once)."""
    return {"cifar10": _cifar10, "names": _names, "sst2": _sst2}[config.dataset](config)


# ---------------------------------------------------------------- pipelines

def _prepare(x, y, images):
    import tensorflow as tf

    return (tf.cast(x, tf.float32) / 255.0 if images else x), y


def trim_padding(x, y, multiple, padding="post"):
    """A batch of padded ids without the padding columns no row needs: the columns
    after (``"post"``) or before (``"pre"``) the batch's longest sequence, kept to a
    multiple of ``multiple`` (so that an XLA-compiled step sees few shapes).

    Under masking this computes what the whole width does: a masked step carries the
    state and its gradient contributions are zeros.
    """
    import tensorflow as tf

    width = tf.shape(x)[1]
    used = tf.reduce_any(x != 0, axis=0)
    if padding == "pre":
        used = tf.reverse(used, [0])
    length = tf.reduce_max(tf.where(used, tf.range(width) + 1, 0))
    length = tf.minimum(width, tf.maximum(1, -(-length // multiple)) * multiple)
    return (x[:, :length] if padding == "post" else x[:, width - length:]), y


def train_dataset(split, batch_size, seed, start_batch=0, augment=False, images=False,
                  trim=0, padding="post"):
    """An infinite tf.data stream of shuffled training batches, starting at batch
    ``start_batch`` (the order is a function of ``seed`` only, so a resumed run sees the
    batches it would have seen; the augmentation's random draws start afresh).
    ``trim`` > 0: each batch's padding cut to a multiple of ``trim`` columns
    (:func:`trim_padding`)."""
    import keras
    import tensorflow as tf

    x, y = split
    dataset = tf.data.Dataset.from_tensor_slices((x, y))
    dataset = dataset.shuffle(len(y), seed=seed, reshuffle_each_iteration=True).repeat()
    dataset = dataset.batch(batch_size).skip(start_batch)
    if trim:
        dataset = dataset.map(functools.partial(trim_padding, multiple=trim, padding=padding))
    dataset = dataset.map(functools.partial(_prepare, images=images))
    if augment:
        shift = keras.layers.RandomTranslation(0.1, 0.1, fill_mode="nearest", seed=seed)
        flip = keras.layers.RandomFlip("horizontal", seed=seed + 1)
        dataset = dataset.map(lambda a, b: (flip(shift(a, training=True), training=True), b))
    return dataset.prefetch(2)


def eval_dataset(split, batch_size, images=False, trim=0, padding="post"):
    """The split once, in order, in batches (``trim``: as :func:`train_dataset`)."""
    import tensorflow as tf

    dataset = tf.data.Dataset.from_tensor_slices(split).batch(batch_size)
    if trim:
        dataset = dataset.map(functools.partial(trim_padding, multiple=trim, padding=padding))
    return dataset.map(functools.partial(_prepare, images=images)).prefetch(2)
