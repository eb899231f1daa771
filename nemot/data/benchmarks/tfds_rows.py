"""Rows of a prepared TensorFlow Datasets split: the one place the GLUE, SuperGLUE and
CIFAR-10 readers touch a TFDS data directory (local or ``gs://``), beside
:func:`nemot.data.raw.hub_rows` for the Hugging Face hub.

The dataset is opened from its own files (``tfds.builder_from_directory``): the
features, their names and label classes are what was prepared, whatever the installed
TFDS code would build today, so a renamed feature or a changed label encoding reaches
the reader and is reported there. Nothing is downloaded or prepared here.

``tensorflow-datasets`` is the optional extra ``tfds`` (``pip install 'nemot[tfds]'``).

Example:
    >>> features, rows = tfds_rows("glue/rte:2.0.0", "/data/tfds", "validation")  # doctest: +SKIP
    >>> features["label"].names, next(rows)                                       # doctest: +SKIP
    (['entailment', 'not_entailment'], {'idx': 0, 'label': 1, 'sentence1': 'Dana Reeve ...', ...})
"""

import os

import numpy as np

from nemot.data.raw import DataError

BATCH = 1024  # rows decoded per step: one at a time is ~4x slower through tf.data


def _tfds():
    try:
        import tensorflow_datasets
    except ImportError as err:
        raise ImportError("reading from TensorFlow Datasets (source='tfds') needs the optional "
                          "`tensorflow-datasets` package: pip install 'nemot[tfds]'") from err
    return tensorflow_datasets


def _python(value):
    """A decoded TFDS value as plain Python: text as ``str``, numbers as ``int``/``float``,
    sequences as lists; fixed-shape arrays (images) stay numpy arrays."""
    if isinstance(value, dict):
        return {k: _python(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, list):
        return [_python(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _unbatch(batch, size):
    """The ``size`` rows of a batch (nested dicts of arrays and ragged tensors)."""
    if isinstance(batch, dict):
        columns = {k: _unbatch(v, size) for k, v in batch.items()}
        return [{k: columns[k][i] for k in columns} for i in range(size)]
    if hasattr(batch, "to_list"):  # a ragged sequence feature
        return batch.to_list()
    return list(batch)


def tfds_rows(name, data_dir, split):
    """``(features, rows)`` of ``split`` of TFDS dataset ``name`` (``"glue/rte:2.0.0"``)
    prepared in ``data_dir``: the prepared ``FeaturesDict`` and an iterator of rows as
    plain Python dicts, in the order TFDS wrote them (TFDS shuffles rows when it
    prepares a split: readers restore the published order from an index feature).

    Raises ``ValueError`` without ``data_dir``, ``FileNotFoundError`` when it does not
    exist, and :class:`DataError` naming the folder and what is there when the dataset
    version is not prepared in it or has no such split.
    """
    tfds = _tfds()
    dataset, _, version = name.partition(":")
    if not version:
        raise ValueError(f"TFDS name {name!r}: expected NAME/CONFIG:X.Y.Z")
    if data_dir is None:
        raise ValueError(f"reading TFDS {name} needs data_dir: the TFDS data directory that "
                         "holds it (tfds's own default is ~/tensorflow_datasets)")
    import tensorflow as tf

    data_dir = str(data_dir)
    if "://" not in data_dir:
        data_dir = os.path.abspath(os.path.expanduser(data_dir))
    if not tf.io.gfile.isdir(data_dir):
        raise FileNotFoundError(f"TFDS data directory {data_dir} does not exist")
    parent = f"{data_dir.rstrip('/')}/{dataset}"
    version_dir = f"{parent}/{version}"
    if not tf.io.gfile.exists(f"{version_dir}/dataset_info.json"):
        found = sorted(v.rstrip("/") for v in tf.io.gfile.listdir(parent)) \
            if tf.io.gfile.isdir(parent) else []
        raise DataError(version_dir, None, "dataset_info.json",
                        f"TFDS {name} prepared there (`tfds build {dataset}:{version} "
                        f"--data_dir={data_dir}` on a machine with the network); found "
                        f"{found or 'nothing'} in {parent}", got="not prepared")
    builder = tfds.builder_from_directory(version_dir)
    if split not in builder.info.splits:
        raise DataError(version_dir, None, "splits", f"a {split!r} split",
                        got=sorted(builder.info.splits))
    dataset = builder.as_dataset(split=split, shuffle_files=False,
                                 read_config=tfds.ReadConfig(try_autocache=False))

    def rows():
        for batch in tfds.as_numpy(dataset.ragged_batch(BATCH)):
            size = tf.nest.flatten(batch)[0].shape[0]
            for row in _unbatch(batch, size):
                yield _python(row)

    return builder.info.features, rows()
