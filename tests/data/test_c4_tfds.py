"""C4 from TFDS (``data.source = "tfds"``) on a dataset the test prepares in TFDS's own
on-disk format: a ``GeneratorBasedBuilder`` named ``c4``, config ``en``, with the five
text features of TFDS's ``c4/en``, written by ``download_and_prepare`` (tfrecord or
array_record shards, ``dataset_info.json``, ``features.json``) and read back through
``tfds.builder``."""

import collections
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from nemot.data import DataError
from nemot.data.c4 import stream as c4
from nemot.data.c4 import tfds as c4_tfds
from nemot.data.c4.pipeline import c4_dataset
from nemot.data.config import DataConfig
from nemot.data.sources import c4_data, finetune_data
from nemot.training.run_config import load_run_config
from tests.data import fixtures
from tests.data.test_c4 import take

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"
FEATURES = ("text", "url", "content-type", "content-length", "timestamp")  # TFDS c4/en 3.1.0
SHARDS = 5  # one TFDS shard per raw file
DOCS = 5  # documents per raw file (and per TFDS shard)
N = 8


def prepare_c4(data_dir, splits, version="3.1.0", num_shards=SHARDS, file_format="tfrecord"):
    """Prepare ``c4/en:<version>`` in ``data_dir`` with ``{split: [texts]}``, in that order."""
    with tfds.core.registered.skip_registration():  # TFDS's own c4 stays registered
        class C4(tfds.core.GeneratorBasedBuilder):
            name = "c4"
            VERSION = tfds.core.Version(version)
            BUILDER_CONFIGS = [tfds.core.BuilderConfig(name="en")]

            def _info(self):
                # disable_shuffling: shard k holds the documents of raw file k, in order.
                return tfds.core.DatasetInfo(
                    builder=self, disable_shuffling=True,
                    features=tfds.features.FeaturesDict(
                        {name: tfds.features.Text() for name in FEATURES}))

            def _split_generators(self, dl_manager):
                return {split: self._generate_examples(texts) for split, texts in splits.items()}

            def _generate_examples(self, texts):
                for i, text in enumerate(texts):
                    yield i, {"text": text, "url": f"https://example.com/{i}",
                              "content-type": "text/plain", "content-length": str(len(text)),
                              "timestamp": "2019-04-25T12:57:54Z"}

    C4(data_dir=str(data_dir), config="en", file_format=file_format).download_and_prepare(
        download_config=tfds.download.DownloadConfig(num_shards=num_shards))


@pytest.fixture(scope="module")
def c4_sources(tmp_path_factory):
    """``(raw, tfds_dir, array_record_dir)``: the same documents as raw ``c4/en`` files, as
    TFDS c4/en in tfrecord files (the default of ``tfds build``) and in array_record files."""
    root = tmp_path_factory.mktemp("c4_tfds")
    written = fixtures.write_c4(root / "raw", n_train=SHARDS, docs_per_file=DOCS)
    train = [t for name in sorted(written) if "train" in name for t in written[name]]
    validation = [t for name in sorted(written) if "validation" in name for t in written[name]]
    prepare_c4(root / "tfds", {"train": train, "validation": validation})
    prepare_c4(root / "array_record", {"train": train}, file_format="array_record")
    return root / "raw", root / "tfds", root / "array_record"


def rows_of(batches):
    return [(x.tolist(), t.tolist()) for x, t, _ in batches]


def test_the_prepared_directory_is_tfds_c4_en_and_each_shard_is_one_file(c4_sources):
    _, tfds_dir, array_record_dir = c4_sources
    version_dir = tfds_dir / "c4" / "en" / "3.1.0"
    assert (version_dir / "dataset_info.json").is_file()
    assert sorted(p.name for p in version_dir.glob("c4-train.tfrecord-*")) == [
        f"c4-train.tfrecord-{k:05d}-of-{SHARDS:05d}" for k in range(SHARDS)]
    kind, shards = c4.list_files(tfds_dir, "train", "tfds", "c4/en:3.1.0")
    assert kind == c4.TFDS
    assert [(s.name, s.start, s.stop) for s in shards] == [
        (f"c4-train.tfrecord-{k:05d}-of-{SHARDS:05d}", k * DOCS, (k + 1) * DOCS)
        for k in range(SHARDS)]
    assert [s.name for s in c4.list_files(array_record_dir, "train", "tfds")[1]] == [
        f"c4-train.array_record-{k:05d}-of-{SHARDS:05d}" for k in range(SHARDS)]
    # "c4/en" without a version reads the one tensorflow-datasets picks: 3.1.0 here.
    assert [s.filename for s in c4.list_files(tfds_dir, "train", "tfds", "c4/en")[1]] == \
        [s.filename for s in shards]


@pytest.mark.parametrize("pack", [False, True])
def test_tfds_gives_the_batches_of_the_same_documents_as_raw_files(c4_sources, tok, pack):
    raw, tfds_dir, array_record_dir = c4_sources
    # n = 16: packing changes the windows (27 an epoch instead of 34).
    kwargs = dict(batch_size=3, max_text_length=16, seed=1, shuffle_buffer=6, cycle_length=2,
                  pack=pack, window_index=None, tokenizer=tok)
    from_raw = take(c4_dataset(raw, **kwargs), 25)  # 75 windows: into the third epoch
    from_tfds = take(c4_dataset(tfds_dir, source="tfds", **kwargs), 25)
    assert rows_of(from_tfds) == rows_of(from_raw)
    from_array_record = take(c4_dataset(array_record_dir, source="tfds", **kwargs), 25)
    assert rows_of(from_array_record) == rows_of(from_raw)
    other_seed = take(c4_dataset(tfds_dir, source="tfds", **dict(kwargs, seed=2)), 5)
    assert rows_of(other_seed) != rows_of(from_tfds[:5])


def test_packing_from_tfds_keeps_the_targets_in_fewer_windows(c4_sources, tok):
    _, tfds_dir, _ = c4_sources
    kind, shards = c4.list_files(tfds_dir, "train", "tfds")
    n = 16

    def epoch(pack):
        rows = list(c4.window_stream(kind, shards, n=n, pack=pack, shuffle_buffer=0, repeat=False,
                                     order="directory", tokenizer=tok))
        pairs = sorted((x[3 + t], y[t]) for x, y in rows for t in range(n) if y[t] != -1)
        return len(rows), pairs

    rows_unpacked, pairs_unpacked = epoch(False)
    rows_packed, pairs_packed = epoch(True)
    assert pairs_packed == pairs_unpacked and rows_packed < rows_unpacked


def test_validation_split_is_the_tfds_validation_split_once_in_order(c4_sources, tok):
    raw, tfds_dir, _ = c4_sources
    kwargs = dict(batch_size=4, max_text_length=N, split="validation", window_index=None,
                  tokenizer=tok)
    from_raw = take(c4_dataset(raw, **kwargs))
    dataset = c4_dataset(tfds_dir, source="tfds", **kwargs)
    assert int(dataset.cardinality()) == len(from_raw)
    assert rows_of(take(dataset)) == rows_of(from_raw)


def test_resume_at_batch_k_is_the_uninterrupted_stream_and_rereads_one_group(
        c4_sources, tmp_path, monkeypatch, tok):
    _, tfds_dir, _ = c4_sources
    index_path = tmp_path / "index.json"
    kwargs = dict(batch_size=1, max_text_length=N, seed=5, shuffle_buffer=4, cycle_length=2,
                  window_index=index_path, source="tfds", tokenizer=tok)
    kind, shards = c4.list_files(tfds_dir, "train", "tfds")
    full = take(c4_dataset(tfds_dir, **kwargs), 130)
    recorded = json.loads(index_path.read_text())
    counts = {key.split("|")[0].rsplit("/", 1)[-1]: count for key, count in recorded.items()}
    assert sorted(counts) == sorted(s.name for s in shards)  # every shard read whole, recorded
    epoch_windows = sum(counts.values())
    for k in (1, 17, epoch_windows - 1, epoch_windows + 3):  # the last two cross epochs
        resumed = take(c4_dataset(tfds_dir, **dict(kwargs, start_batch=k)), 20)
        assert rows_of(resumed) == rows_of(full[k:k + 20])
    # Resuming at the first window of epoch 1's second group reads only that group's shards.
    read = []
    texts = c4_tfds.TfdsShard.texts
    monkeypatch.setattr(c4_tfds.TfdsShard, "texts",
                        lambda shard, n: (read.append(shard.name), texts(shard, n))[1])
    epoch1 = [s.name for s in c4.file_order(shards, 5, 1, "random")]
    k = epoch_windows + counts[epoch1[0]] + counts[epoch1[1]]
    assert k < len(full)
    resumed = take(c4_dataset(tfds_dir, **dict(kwargs, start_batch=k)), 1)
    assert rows_of(resumed) == rows_of(full[k:k + 1])
    assert sorted(read) == sorted(epoch1[2:4])


def test_two_replicas_split_every_global_batch_without_duplicates_or_drops(c4_sources, tok):
    _, tfds_dir, _ = c4_sources
    kwargs = dict(batch_size=4, max_text_length=N, seed=3, shuffle_buffer=5, window_index=None,
                  source="tfds", tokenizer=tok)
    kind, shards = c4.list_files(tfds_dir, "train", "tfds")
    epoch = collections.Counter()  # every window of the shards, read here directly
    for shard in shards:
        for ids, offsets in c4.file_chunks(shard, kind, tok, None):
            token_ids, targets = c4.materialize(ids, offsets, *c4.windows(offsets, N), N)
            epoch.update(bytes(x) + bytes(t) for x, t in zip(token_ids, targets))
    total = sum(epoch.values())
    steps = -(-total // 4) + 1  # into epoch 1
    single = take(c4_dataset(tfds_dir, **kwargs), steps)
    halves = []
    for replica in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=replica,
                                             num_replicas_in_sync=2)
        batches = take(c4_dataset(tfds_dir, input_context=context, **kwargs), steps)
        assert all(b[0].shape == (2, 3 + N) for b in batches)
        halves.append(batches)
    rows = []
    for step in range(steps):
        for k in range(3):
            np.testing.assert_array_equal(
                np.concatenate([halves[0][step][k], halves[1][step][k]]), single[step][k])
        rows += [(x, t) for half in halves for x, t in zip(half[step][0], half[step][1])]
    # The replicas' rows of epoch 0 together are every window once.
    assert collections.Counter(bytes(x) + bytes(t) for x, t in rows[:total]) == epoch


def test_run_config_reads_c4_from_tfds(c4_sources, tmp_path, monkeypatch, tok):
    _, tfds_dir, _ = c4_sources
    monkeypatch.setenv("NEMOT_CACHE", str(tmp_path))
    cfg = load_run_config(CONFIGS / "pretrain.toml", overrides=[
        "data.source=tfds", "data.tfds_name=c4/en:3.1.0", f'data.dir="{tfds_dir}"'])
    assert (cfg.data.source, cfg.data.tfds_name) == ("tfds", "c4/en:3.1.0")
    run = c4_data(cfg.data, N, seed=4)
    expected = c4_dataset(tfds_dir, batch_size=2, max_text_length=N, seed=4, source="tfds",
                          window_index=None, tokenizer=tok)
    assert rows_of(take(run.train(3, 2, None), 2)) == rows_of(take(expected.skip(3), 2))
    validation = take(run.validation(2, None))
    assert rows_of(validation) == rows_of(take(c4_dataset(
        tfds_dir, batch_size=2, max_text_length=N, split="validation", source="tfds",
        window_index=None, tokenizer=tok)))


def test_missing_directory_dataset_version_and_split_are_named(c4_sources, tmp_path, tok):
    _, tfds_dir, _ = c4_sources
    with pytest.raises(FileNotFoundError, match=r"TFDS data directory .*nowhere does not exist"):
        c4_dataset(tmp_path / "nowhere", batch_size=2, source="tfds")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=r"empty/c4/en: field 'dataset_info.json': expected a "
                                        r"prepared TFDS c4/en.*tfds build"):
        c4_dataset(tmp_path / "empty", batch_size=2, source="tfds")
    with pytest.raises(DataError, match=r"c4/en/3\.0\.1: .*found versions \['3\.1\.0'\] "
                                        r"\(name one: data.tfds_name = 'c4/en:3\.1\.0'\)"):
        c4_dataset(tfds_dir, batch_size=2, source="tfds", tfds_name="c4/en:3.0.1")
    with pytest.raises(ValueError, match=r"data.tfds_name = 'c4/en:latest': expected"):
        c4_dataset(tfds_dir, batch_size=2, source="tfds", tfds_name="c4/en:latest")
    # Only 3.0.1 prepared, with no validation split: "c4/en" takes tensorflow-datasets'
    # default version (3.1.0), which is not there.
    old = tmp_path / "old"
    prepare_c4(old, {"train": ["An old document of a few words."] * 2}, "3.0.1", num_shards=1)
    with pytest.raises(DataError, match=r"picks version 3\.1\.0.*found versions \['3\.0\.1'\]"):
        c4_dataset(old, batch_size=2, source="tfds", tfds_name="c4/en")
    with pytest.raises(DataError, match=r"3\.0\.1: field 'splits': expected a 'validation' "
                                        r"split, got \['train'\]"):
        c4_dataset(old, batch_size=2, source="tfds", tfds_name="c4/en:3.0.1", split="validation")
    assert len(take(c4_dataset(old, batch_size=1, max_text_length=N, source="tfds",
                               tfds_name="c4/en:3.0.1", window_index=None, tokenizer=tok),
                    3)) == 3


def test_source_is_checked_and_tfds_is_for_pretraining_only(c4_sources, monkeypatch, tok):
    _, tfds_dir, _ = c4_sources
    with pytest.raises(ValueError, match=r"data.source = 'hub': expected one of \['files', "
                                         r"'tfds'\]"):
        DataConfig(source="hub").check("run.toml")
    with pytest.raises(ValueError, match="source must be one of"):
        c4_dataset(tfds_dir, batch_size=2, source="hub")
    with pytest.raises(ValueError, match="only pre-training reads C4 from TFDS"):
        finetune_data(DataConfig(dir=str(tfds_dir), dataset="race", source="tfds"), N, 0)
    # Without the optional package the error says how to install it.
    monkeypatch.setitem(sys.modules, "tensorflow_datasets", None)
    with pytest.raises(ImportError, match=r"pip install 'nemot\[tfds\]'"):
        c4_dataset(tfds_dir, batch_size=2, source="tfds")
    assert len(take(c4_dataset(c4_sources[0], batch_size=1, max_text_length=N,
                               window_index=None, tokenizer=tok), 1)) == 1  # no TFDS needed


def test_the_c4_stream_imports_its_tfds_source_without_loading_tensorflow():
    """The C4 stream imports its TFDS source at its top (which never imports the stream: no
    cycle); run configs import the stream, and must not load TensorFlow for it."""
    code = "import sys, nemot.data.c4.stream; print('tensorflow' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "False"
