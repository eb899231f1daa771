"""CIFAR-10 from TFDS and SST-2 from TFDS and the hub give the splits of the files.

CIFAR-10: a ``GeneratorBasedBuilder`` named ``cifar10``, version 3.0.2, with TFDS's
features (``id`` text ``train_00042``, ``image`` uint8 32x32x3 stored as PNG, ``label`` a
``ClassLabel`` named airplane .. truck), holding the pickles' images, prepared with
``download_and_prepare`` (which shuffles them on disk). SST-2: TFDS's ``glue/sst2`` and
``nyu-mll/glue`` ``sst2`` as the GLUE source tests build them, with the modact fixture's
rows."""

import dataclasses

import datasets
import numpy as np
import pytest
import tensorflow_datasets as tfds

from nemot.data.benchmarks import cifar10, glue
from nemot.data.benchmarks.tfds_rows import tfds_rows
from nemot.data.raw import DataError
from nemot.modact import data
from nemot.modact.data import DataConfig
from tests.data import benchmark_files as fixtures
from tests.data.test_glue_sources import (hub_table, prepare_glue, prepare_tfds, serve_hub,
                                          tfds_features)

PER_BATCH = 4  # images per pickle: 20 train, 4 test


def prepare_cifar10(data_dir, splits, names=cifar10.CLASSES, image="image",
                    first_id=0):
    """Prepare TFDS ``cifar10:3.0.2`` with ``{split: (images, labels)}`` in ``data_dir``
    (``image``: that feature's name; ``first_id``: the number of the first ``id``)."""
    features = {"id": tfds.features.Text(), image: tfds.features.Image(shape=(32, 32, 3)),
                "label": tfds.features.ClassLabel(names=list(names))}
    rows = {split: [{"id": f"{split}_{i + first_id:05d}", image: pixels, "label": int(label)}
                    for i, (pixels, label) in enumerate(zip(images, labels))]
            for split, (images, labels) in splits.items()}
    prepare_tfds(data_dir, "cifar10", "3.0.2", rows, features)


def _images(written, names):
    """The pickles' images as TFDS stores them: [N, 32, 32, 3], planes interleaved."""
    data = np.concatenate([written[n][0] for n in names])
    labels = [label for n in names for label in written[n][1]]
    return data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), labels


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """``(cifar_files, cifar_tfds, bad_tfds, sst2_files, sst2_tfds)``."""
    root = tmp_path_factory.mktemp("modact_sources")
    written = fixtures.cifar10(root / "cifar-10-batches-py", per_batch=PER_BATCH)
    splits = {"train": _images(written, cifar10.TRAIN_FILES),
              "test": _images(written, [cifar10.TEST_FILE])}
    prepare_cifar10(root / "tfds", splits)
    # Classes that are not CIFAR-10's; the hub's column name `img`; ids from 1.
    prepare_cifar10(root / "bad" / "classes", splits, names=[f"class{i}" for i in range(10)])
    prepare_cifar10(root / "bad" / "img", splits, image="img")
    prepare_cifar10(root / "bad" / "ids", splits, first_id=1)
    fixtures.sst2(root / "SST-2")
    rows = {split: [{"sentence": s, "label": label, "idx": i} for i, (s, label) in
                    enumerate(fixture)] for split, fixture in
            (("train", fixtures.SST2_TRAIN), ("validation", fixtures.SST2_DEV))}
    prepare_glue(root / "tfds", "sst2", rows, tfds_features("SST-2"))
    return root / "cifar-10-batches-py", root / "tfds", root / "bad", root / "SST-2", rows


def test_cifar10_from_tfds_is_the_pickles_images_in_their_order(sources):
    files, tfds_dir, *_ = sources
    raw, from_tfds = cifar10.read_cifar10(files), cifar10.read_cifar10_tfds(tfds_dir)
    for split in ("train", "test"):
        (x, y), (xt, yt) = raw[split], from_tfds[split]
        assert xt.dtype == np.uint8 and yt.dtype == np.int32 and xt.shape == x.shape
        np.testing.assert_array_equal(xt, x)
        np.testing.assert_array_equal(yt, y)
    _, rows = tfds_rows(cifar10.TFDS_NAME, tfds_dir, "train")
    assert [r["id"] for r in rows] != [f"train_{i:05d}" for i in range(5 * PER_BATCH)]


def test_cifar10_splits_from_tfds_equal_those_from_the_files(sources):
    files, tfds_dir, *_ = sources
    config = DataConfig(dataset="cifar10", dir=str(files), validation_fraction=0.2)
    raw, from_tfds = data.load_splits(config), data.load_splits(
        dataclasses.replace(config, dir=str(tfds_dir), source="tfds"))
    for a, b in zip((raw.train, raw.validation, raw.test),
                    (from_tfds.train, from_tfds.validation, from_tfds.test)):
        np.testing.assert_array_equal(b[0], a[0])
        np.testing.assert_array_equal(b[1], a[1])


def test_cifar10_tfds_errors_name_the_dataset_and_feature(sources, tmp_path):
    _, _, bad_dir, _, _ = sources
    with pytest.raises(DataError, match=r"TFDS cifar10:3.0.2 \[train\] in .*classes: field "
                                        r"'label': expected the class names \['airplane', "
                                        r".*got \['class0'"):
        cifar10.read_cifar10_tfds(bad_dir / "classes")
    with pytest.raises(DataError, match=r"img: field 'image': expected the features "
                                        r"\['id', 'image', 'label'\], got \['id', 'img', "
                                        r"'label'\]"):
        cifar10.read_cifar10_tfds(bad_dir / "img")
    with pytest.raises(DataError, match=r"ids: field 'id': expected train_00000 .. "
                                        r"train_00019, each once"):
        cifar10.read_cifar10_tfds(bad_dir / "ids")
    (tmp_path / "cifar10").mkdir()
    with pytest.raises(DataError, match=r"cifar10/3.0.2: field 'dataset_info.json': expected "
                                        r"TFDS cifar10:3.0.2 prepared there"):
        cifar10.read_cifar10_tfds(tmp_path)


def test_sst2_from_tfds_and_the_hub_gives_the_files_splits(sources, monkeypatch):
    _, tfds_dir, _, sst2_files, rows = sources
    serve_hub(monkeypatch, {("sst2", split): hub_table("SST-2", rows[split])
                            for split in ("train", "validation")})
    config = DataConfig(dataset="sst2", dir=str(sst2_files), validation_fraction=0.2,
                        layout="glue")
    raw = data.load_splits(config)
    for other in (dataclasses.replace(config, dir=str(tfds_dir), source="tfds"),
                  dataclasses.replace(config, dir=None, source="hub")):
        split = data.load_splits(other)
        assert split.vocab_size == raw.vocab_size
        for a, b in zip((raw.train, raw.validation, raw.test),
                        (split.train, split.validation, split.test)):
            np.testing.assert_array_equal(b[0], a[0])
            np.testing.assert_array_equal(b[1], a[1])
    # The splits strip the files' trailing space, from every source.
    sentences, labels = data.sst2(glue.read_task("SST-2", tfds_dir, "dev", source="tfds"))
    assert sentences == ["it 's a charming and often affecting journey .",
                         "unflinchingly bleak and desperate"] and list(labels) == [1, 0]


@pytest.mark.parametrize("fields,message", [
    (dict(dataset="names", dir="names", source="tfds"),
     r"source='tfds': names is read from one of \('files',\)"),
    (dict(dataset="cifar10", dir="cifar", source="hub"),
     r"source='hub': cifar10 is read from one of \('files', 'tfds'\)"),
    (dict(dataset="sst2", dir="SST-2", source="hub", layout="glue"),
     r"dir='SST-2': source = 'hub' reads"),
    (dict(dataset="sst2", dir="tfds", source="tfds", test_file="test.tsv", layout="glue"),
     r"train_file, test_file: file names, not read with source = 'tfds'"),
    (dict(dataset="cifar10", source="tfds"), r"dir: the cifar10 files' directory is needed"),
    (dict(dataset="sst2", dir="tfds", source="tfds"),
     r"layout='sst5': source = 'tfds' gives GLUE SST-2's splits; set layout = \"glue\""),
    (dict(dataset="sst2", dir="minbert"), r"test_fraction=0.0: layout = \"sst5\" holds out"),
    (dict(dataset="sst2", dir="minbert", layout="ptb"), r"layout='ptb': expected one of"),
])
def test_data_config_names_what_each_source_reads(fields, message):
    with pytest.raises(ValueError, match=message):
        DataConfig(**fields)


def test_sst2_hub_label_encoding_is_checked(monkeypatch):
    features = datasets.Features({"sentence": datasets.Value("string"),
                                  "label": datasets.Value("int64"),
                                  "idx": datasets.Value("int32")})
    table = datasets.Dataset.from_dict({"sentence": ["good"], "label": [1], "idx": [0]},
                                       features=features)
    serve_hub(monkeypatch, {("sst2", "train"): table})
    with pytest.raises(DataError, match=r"field 'label': expected the class names "
                                        r"\['negative', 'positive'\], got None"):
        data.load_splits(DataConfig(dataset="sst2", source="hub", layout="glue"))
