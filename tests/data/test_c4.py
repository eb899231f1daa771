import gzip
import itertools
import json
import logging

from pathlib import Path

import numpy as np
import pytest

from nemot import vocab
from nemot.data import DataError, prepare, sources
from nemot.data.c4 import stream as c4
from nemot.data.c4.pipeline import c4_dataset
from nemot.data.config import DataConfig
from nemot.data.tf_errors import python_errors
from tests.data import fixtures

PAD, IGN = vocab.PAD_ID, vocab.IGNORE_ID
AUX = [vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id("lm")]


def take(ds, count=None):
    return [(x["token_ids"].numpy(), y["task_targets"].numpy(), y["lm_targets"].numpy())
            for x, y in itertools.islice(ds, count)]


def write_texts(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("".join(line if isinstance(line, str) else json.dumps(line) + "\n"
                        for line in lines))


@pytest.fixture(scope="module")
def c4_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("c4")
    fixtures.write_c4(root / "raw", n_train=5, docs_per_file=4)
    prepare.prepare_c4(root / "raw", root / "shards", workers=1, progress=False)
    return root / "raw", root / "shards"


def test_windows_cut_documents_into_shifted_non_overlapping_windows():
    # Documents of 10, 5, 1 and 0 tokens, n = 4.
    ids = np.array(list(range(100, 110)) + list(range(200, 205)) + [300], np.int32)
    offsets = np.array([0, 10, 15, 16, 16])
    starts, lengths = c4.windows(offsets, 4)
    token_ids, targets = c4.materialize(ids, offsets, starts, lengths, 4)
    assert token_ids[:, :3].tolist() == [AUX] * 4
    assert token_ids[:, 3:].tolist() == [[100, 101, 102, 103], [104, 105, 106, 107],
                                         [108, 109, PAD, PAD], [200, 201, 202, 203]]
    assert targets.tolist() == [[101, 102, 103, 104], [105, 106, 107, 108],
                                [109, IGN, IGN, IGN], [201, 202, 203, 204]]


def test_packing_concatenates_documents_and_ignores_cross_document_targets():
    ids = np.array([10, 11, 12, 20, 21, 30, 40, 41, 42, 43], np.int32)
    offsets = np.array([0, 3, 5, 6, 10])
    starts, lengths = c4.windows(offsets, 4, pack=True)
    token_ids, targets = c4.materialize(ids, offsets, starts, lengths, 4)
    assert token_ids[:, 3:].tolist() == [[10, 11, 12, 20], [21, 30, 40, 41], [42, 43, PAD, PAD]]
    assert targets.tolist() == [[11, 12, IGN, 21], [IGN, IGN, 41, 42], [43, IGN, IGN, IGN]]
    # A window whose every target is ignored (one-token documents) is dropped.
    one_token_docs = np.array([0, 4, 5, 6])
    assert c4.windows(one_token_docs, 4, pack=True)[0].tolist() == [0]
    assert c4.windows(one_token_docs, 4, pack=False)[0].tolist() == [0]


def test_dataset_windows_match_the_tokenised_document(tmp_path, tok):
    text = "The bean grew tall in the garden, and by June it was taller than Mia herself."
    write_texts(tmp_path / "c4-train.00000-of-01024.json.gz", [{"text": text}])
    ids = tok.encode(text)
    n = 8
    ds = c4_dataset(tmp_path, batch_size=1, max_text_length=n, shuffle_buffer=0,
                    window_index=None)
    rows = [tuple(a[0] for a in batch) for batch in take(ds, -(-(len(ids) - 1) // n))]
    for w, (token_ids, task, lm) in enumerate(rows):
        inputs, following = ids[w * n:(w + 1) * n], ids[w * n + 1:(w + 1) * n + 1]
        assert token_ids.tolist() == AUX + inputs + [PAD] * (n - len(inputs))
        assert task.tolist() == following + [IGN] * (n - len(following))
        assert lm.tolist() == [IGN] * n
    assert len(rows) * n >= len(ids) - 1 > (len(rows) - 1) * n


def _window_multiset(rows):
    return sorted(bytes(np.concatenate([x, t])) for x, t in rows)


def test_each_epoch_visits_every_training_window_once_in_a_seeded_order(c4_dirs, tok):
    raw, _ = c4_dirs
    kind, files = c4.list_files(raw, "train")
    assert kind == c4.RAW and len(files) == 5 and not any("validation" in f.name for f in files)
    everything = []
    for f in files:
        texts = [json.loads(line)["text"] for line in gzip.open(f, "rt")]
        flat, offsets = c4._flat(tok.encode_batch(texts))
        everything += list(zip(*c4.materialize(flat, offsets, *c4.windows(offsets, 8), 8)))
    total = len(everything)

    def epochs(seed, order="random"):
        rows = list(itertools.islice(c4.window_stream(kind, files, n=8, seed=seed, order=order,
                                                      cycle_length=2, shuffle_buffer=5,
                                                      tokenizer=tok), 2 * total))
        return rows[:total], rows[total:]

    first, second = epochs(seed=3)
    assert _window_multiset(first) == _window_multiset(second) == _window_multiset(everything)
    assert [bytes(x) for x, _ in first] != [bytes(x) for x, _ in second]  # new order each epoch
    again, _ = epochs(seed=3)
    other, _ = epochs(seed=4)
    assert [bytes(x) for x, _ in again] == [bytes(x) for x, _ in first]
    assert [bytes(x) for x, _ in other] != [bytes(x) for x, _ in first]
    assert c4.file_order(files, 3, 0, "directory") == files
    assert sorted(c4.file_order(files, 3, 0, "random")) == files
    assert c4.file_order(files, 3, 0, "random") != c4.file_order(files, 3, 1, "random")


def test_same_seed_same_batches_and_shards_equal_raw_files(c4_dirs):
    raw, shards = c4_dirs
    kwargs = dict(batch_size=3, max_text_length=8, seed=1, shuffle_buffer=6, cycle_length=2,
                  window_index=None)
    from_raw = take(c4_dataset(raw, **kwargs), 12)
    from_shards = take(c4_dataset(shards, **kwargs), 12)
    for a, b in zip(from_raw, from_shards):
        for u, v in zip(a, b):
            np.testing.assert_array_equal(u, v)
    assert [a[0].tolist() for a in take(c4_dataset(raw, **kwargs), 12)] == \
        [a[0].tolist() for a in from_raw]
    assert [a[0].tolist() for a in take(c4_dataset(raw, **dict(kwargs, seed=2)), 12)] != \
        [a[0].tolist() for a in from_raw]


@pytest.mark.parametrize("source,pack", [("raw", False), ("shards", True)])
def test_resume_yields_the_uninterrupted_batches_and_skips_whole_groups_unread(
        c4_dirs, tmp_path, monkeypatch, source, pack):
    data = dict(zip(("raw", "shards"), c4_dirs))[source]
    index_path = tmp_path / "index.json"
    kwargs = dict(batch_size=1, max_text_length=8, seed=5, shuffle_buffer=4, cycle_length=2,
                  pack=pack, window_index=index_path)
    kind, files = c4.list_files(data)
    full = take(c4_dataset(data, **kwargs), 60)
    recorded = json.loads(index_path.read_text())
    assert len(recorded) == 5  # every file of epoch 0 was read whole and recorded
    counts = {Path(key.split("|")[0]).name: count for key, count in recorded.items()}
    epoch_windows = sum(counts.values())
    assert epoch_windows < 60  # the batches above cross into epoch 1
    for k in (1, 17, epoch_windows - 1, epoch_windows + 3):
        resumed = take(c4_dataset(data, **dict(kwargs, start_batch=k)), 60 - k)
        for a, b in zip(resumed, full[k:], strict=True):
            assert a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist()
    # Resuming at the first window of epoch 1's second group opens only that group's files.
    read = []
    chunk_reader = c4.raw_chunks if source == "raw" else c4.shard_chunks
    monkeypatch.setattr(c4, chunk_reader.__name__,
                        lambda path, *a: (read.append(path.name), chunk_reader(path, *a))[1])
    epoch1 = [f.name for f in c4.file_order(files, 5, 1, "random")]
    k = epoch_windows + counts[epoch1[0]] + counts[epoch1[1]]
    resumed = take(c4_dataset(data, **dict(kwargs, start_batch=k)), 1)
    assert resumed[0][0].tolist() == full[k][0].tolist()
    assert sorted(read) == sorted(epoch1[2:4])


def test_resume_without_an_index_counts_the_files_first(c4_dirs):
    raw, _ = c4_dirs
    kwargs = dict(batch_size=2, max_text_length=8, seed=5, shuffle_buffer=4, window_index=None)
    full = take(c4_dataset(raw, **kwargs), 30)
    resumed = take(c4_dataset(raw, **dict(kwargs, start_batch=25)), 5)
    assert [r[0].tolist() for r in resumed] == [f[0].tolist() for f in full[25:]]


def test_packing_keeps_every_counted_target_and_saves_padding(c4_dirs):
    _, shards = c4_dirs
    kind, files = c4.list_files(shards)
    n = 16  # longer than the fixture's documents: one padded window each without packing

    def epoch(pack):
        rows = list(c4.window_stream(kind, files, n=n, pack=pack, shuffle_buffer=0,
                                     repeat=False, order="directory"))
        pairs = sorted((x[3 + t], y[t]) for x, y in rows for t in range(n) if y[t] != IGN)
        return len(rows), sum(int((x[3:] == PAD).sum()) for x, _ in rows), pairs

    rows_unpacked, pad_unpacked, pairs_unpacked = epoch(False)
    rows_packed, pad_packed, pairs_packed = epoch(True)
    assert pairs_packed == pairs_unpacked  # the same next-token targets, none across documents
    assert rows_packed < rows_unpacked and pad_packed < pad_unpacked


def test_validation_split_is_finite_in_order_and_padded(c4_dirs, tok):
    raw, _ = c4_dirs
    (validation,) = c4.list_files(raw, "validation")[1]
    texts = [json.loads(line)["text"] for line in gzip.open(validation, "rt")]
    flat, offsets = c4._flat(tok.encode_batch(texts))
    expected, _ = c4.materialize(flat, offsets, *c4.windows(offsets, 8), 8)
    batches = take(c4_dataset(raw, batch_size=5, max_text_length=8, split="validation",
                              window_index=None))
    rows = np.concatenate([b[0] for b in batches])
    targets = np.concatenate([b[1] for b in batches])
    assert len(rows) == 5 * -(-len(expected) // 5) > len(expected)
    np.testing.assert_array_equal(rows[:len(expected)], expected)
    assert (rows[len(expected):, 3:] == PAD).all() and (targets[len(expected):] == IGN).all()
    dataset = c4_dataset(raw, batch_size=5, max_text_length=8, split="validation",
                         window_index=None)
    assert int(dataset.cardinality()) == len(batches)


BAD_LINES = ["{not json\n", {"url": "no text"}, {"text": 7}]


def test_malformed_lines_are_logged_as_they_come_and_counted_at_epoch_end(tmp_path, caplog,
                                                                          tok):
    # The first file's bad lines are logged before the second file is read.
    write_texts(tmp_path / "c4-train.00000-of-01024.json.gz",
                [{"text": "A fine first document here."}] + BAD_LINES * 3)
    write_texts(tmp_path / "c4-train.00001-of-01024.json.gz",
                [{"text": "A fine last document."}])
    kind, files = c4.list_files(tmp_path)
    with caplog.at_level(logging.WARNING, logger="nemot.data.c4.stream"):
        rows = c4.window_stream(kind, files, n=4, repeat=False, tokenizer=tok,
                                order="directory", cycle_length=1, shuffle_buffer=0)
        next(rows)
        at_once = [r.getMessage() for r in caplog.records]
        assert len(at_once) == c4.SHOWN_AT_ONCE == 5
        for k, line in enumerate((2, 3, 4, 5, 6)):
            assert f"malformed line {k + 1} of this pass" in at_once[k]
            assert f"c4-train.00000-of-01024.json.gz: line {line}: field 'text'" in at_once[k]
        assert "more are only counted" in at_once[-1]
        assert list(rows)
    (end,) = [r.getMessage() for r in caplog.records[5:]]
    assert "C4 epoch 0: skipped 9 malformed line(s)" in end


def test_more_malformed_lines_than_data_max_bad_lines_stop_the_run(tmp_path, tok):
    write_texts(tmp_path / "c4-train.00000-of-01024.json.gz",
                [{"text": "A fine first document here."}] + BAD_LINES)
    kind, files = c4.list_files(tmp_path)
    assert list(c4.window_stream(kind, files, n=4, repeat=False, tokenizer=tok,
                                 max_bad_lines=3))
    with pytest.raises(DataError, match=r"json.gz: line 4: field 'text': .*malformed line 3 of "
                                        r"this pass over the data, more than max_bad_lines = 2"):
        list(c4.window_stream(kind, files, n=4, tokenizer=tok, max_bad_lines=2))
    with pytest.raises(DataError, match=r"c4-train.00000-of-01024.json.gz: line 2: field 'text'"):
        list(c4.window_stream(kind, files, n=4, tokenizer=tok, max_bad_lines=0))
    # A run's data.max_bad_lines reaches the stream; through tf.data (python_errors) the
    # DataError arrives as itself.
    data = sources.c4_data(DataConfig(dir=str(tmp_path), max_bad_lines=1, validation_split=""),
                           4, seed=0)
    with pytest.raises(DataError, match="line 3: field 'text'.*data.max_bad_lines"):
        with python_errors():
            take(data.train(start_batch=0, batch_size=1, input_context=None), 20)
    with pytest.raises(ValueError, match=r"data.max_bad_lines = -1: expected >= 0"):
        DataConfig(max_bad_lines=-1).check()


def test_directory_errors(tmp_path, c4_dirs, tok):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        c4_dataset(tmp_path / "nowhere", batch_size=2)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=r"empty.*json.gz"):
        c4_dataset(tmp_path / "empty", batch_size=2)
    raw, shards = c4_dirs
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    for f in (next(raw.glob("*train*")), next(shards.glob("*.npz"))):
        (mixed / f.name).write_bytes(f.read_bytes())
    with pytest.raises(DataError, match="not both"):
        c4_dataset(mixed, batch_size=2)
    write_texts(tmp_path / "short" / "c4-train.00000-of-01024.json.gz", [{"text": "Hi"}])
    with pytest.raises(DataError, match="two or more tokens"):
        next(c4.window_stream(*c4.list_files(tmp_path / "short"), n=4, tokenizer=tok))
