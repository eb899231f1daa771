"""C4 from TensorFlow Datasets: the shard files of a prepared ``c4/en`` as the files of
the C4 stream (:mod:`nemot.data.c4.stream`, ``data.source = "tfds"``).

TFDS writes a split as numbered shard files (``c4-train.tfrecord-00000-of-01024`` ...)
and records in ``dataset_info.json`` how many documents each holds. Each shard file is
read on its own, as the examples ``[start, stop)`` of its split (TFDS's absolute read
instruction: ``as_dataset`` for tfrecord, ``as_data_source`` for array_record), in the
order of the file. So a shard plays the part of a raw ``.json.gz`` file and the stream
keeps every promise of the raw files: the seeded file order of each epoch,
interleaving, the shuffle buffer, packing, the slices of each replica, and resuming,
which skips whole groups of shards by their recorded window counts and re-reads only
the group that holds the resumed position (the order of the documents inside a shard
is fixed when TFDS prepares it, so a shard's windows are the same on every read).

``tensorflow-datasets`` is the optional extra ``tfds`` (``pip install 'nemot[tfds]'``).
This module gives texts; :mod:`nemot.data.c4.stream` imports it, tokenises them and cuts
the windows. TensorFlow is imported where a shard is listed or read, so that importing
:mod:`nemot.data.c4.stream` (run configs do) loads no TensorFlow.

Example:
    >>> shards = list_shards("gs://bucket/tfds", "c4/en:3.1.0")                   # doctest: +SKIP
    >>> rows = stream.window_stream(stream.TFDS, shards, n=768,                   # doctest: +SKIP
    ...                             tokenizer=Tokenizer())
"""

import dataclasses
import os
import re

from nemot.data.raw import DataError

_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
PREPARE_HINT = ("prepare it on a machine with the network (docs/data.md: `tfds build c4/en "
                "--data_dir=...`) or point data.dir at the TFDS data directory that holds it")


def _tfds():
    try:
        import tensorflow_datasets
    except ImportError as err:
        raise ImportError("reading C4 from TFDS (data.source = 'tfds') needs the optional "
                          "`tensorflow-datasets` package: pip install 'nemot[tfds]'") from err
    return tensorflow_datasets


@dataclasses.dataclass(frozen=True)
class TfdsShard:
    """One shard file of a prepared TFDS split: the split's examples ``[start, stop)``."""

    builder: object = dataclasses.field(repr=False, compare=False)
    split: str
    start: int
    stop: int
    filename: str

    @property
    def name(self):
        return self.filename.rsplit("/", 1)[-1]

    @property
    def parent(self):
        return self.filename.rsplit("/", 1)[0]

    @property
    def key(self):
        """The window index key: the file and its document count."""
        return f"{self.filename}|{self.stop - self.start}"

    def __str__(self):
        return f"{self.filename} ({self.split}[{self.start}:{self.stop}])"

    def texts(self, chunk_docs):
        """The file's documents in order, as lists of ``chunk_docs`` texts (the last one
        shorter)."""
        for texts in self._texts(chunk_docs):
            yield [text.decode("utf-8") for text in texts]

    def _texts(self, chunk_docs):
        tfds = _tfds()
        instruction = tfds.core.ReadInstruction(self.split, from_=self.start, to=self.stop,
                                                unit="abs")
        if self.builder.info.file_format == tfds.core.FileFormat.ARRAY_RECORD:
            # TFDS reads array_record through a random-access source, not tf.data.
            source = self.builder.as_data_source(split=instruction)
            for s in range(0, len(source), chunk_docs):
                rows = range(s, min(s + chunk_docs, len(source)))
                yield [example["text"] for example in source.__getitems__(rows)]
            return
        # No autocache: each shard is read once an epoch, and C4 shards are large.
        dataset = self.builder.as_dataset(split=instruction, shuffle_files=False,
                                          read_config=tfds.ReadConfig(try_autocache=False))
        for batch in tfds.as_numpy(dataset.batch(chunk_docs)):
            yield batch["text"]


def _versions(dataset_dir):
    """Prepared versions in ``<data_dir>/<name>/<config>``: folders with a dataset_info.json."""
    import tensorflow as tf

    if not tf.io.gfile.isdir(dataset_dir):
        return []
    return sorted((v.rstrip("/") for v in tf.io.gfile.listdir(dataset_dir)
                   if _VERSION.match(v.rstrip("/"))
                   and tf.io.gfile.exists(f"{dataset_dir}/{v.rstrip('/')}/dataset_info.json")),
                  key=lambda v: tuple(int(p) for p in v.split(".")))


def list_shards(data_dir, name, split="train"):
    """The :class:`TfdsShard` s of ``split`` of TFDS dataset ``name``
    (``"c4/en"`` or ``"c4/en:3.1.0"``) prepared in ``data_dir`` (local or ``gs://``), in
    shard order.

    Raises ``FileNotFoundError`` when ``data_dir`` is missing and :class:`DataError`
    naming the folder and the versions found when the dataset or the version is not
    prepared there, or the split is not in it.
    """
    tfds = _tfds()
    import tensorflow as tf

    data_dir = str(data_dir)
    if "://" not in data_dir:
        data_dir = os.path.abspath(data_dir)  # the shard names key the window index
    if not tf.io.gfile.isdir(data_dir):
        raise FileNotFoundError(f"TFDS data directory {data_dir} does not exist")
    dataset, _, version = name.partition(":")
    if version and not _VERSION.match(version):
        raise ValueError(f"data.tfds_name = {name!r}: expected NAME/CONFIG or "
                         "NAME/CONFIG:X.Y.Z, e.g. 'c4/en:3.1.0'")
    dataset_dir = f"{data_dir.rstrip('/')}/{dataset}"
    versions = _versions(dataset_dir)
    if not versions:
        raise DataError(dataset_dir, None, "dataset_info.json",
                        f"a prepared TFDS {dataset} (<version>/dataset_info.json); "
                        + PREPARE_HINT, got="no prepared version")
    if version and version not in versions:
        raise DataError(f"{dataset_dir}/{version}", None, "dataset_info.json",
                        f"TFDS {name} prepared there; found versions {versions} "
                        f"(name one: data.tfds_name = '{dataset}:{versions[-1]}')",
                        got="no such version")
    builder = tfds.builder(name, data_dir=data_dir)
    if str(builder.version) not in versions:
        raise DataError(f"{dataset_dir}/{builder.version}", None, "dataset_info.json",
                        f"TFDS {name} prepared there (tensorflow-datasets picks version "
                        f"{builder.version} for it); found versions {versions} (name one: "
                        f"data.tfds_name = '{dataset}:{versions[-1]}')", got="no such version")
    splits = builder.info.splits
    if split not in splits:
        raise DataError(builder.data_dir, None, "splits", f"a {split!r} split",
                        got=sorted(splits))
    shards, start = [], 0
    for instruction in splits[split].file_instructions:
        shards.append(TfdsShard(builder, split, start, start + instruction.take,
                                os.fspath(instruction.filename)))
        start += instruction.take
    return shards
