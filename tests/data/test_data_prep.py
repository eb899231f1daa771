import json
import os

import numpy as np
import pytest

from nemot.data import prepare
from data_prep.__main__ import main
from nemot.data import DataError, Formatter, shards
from nemot.data.c4 import stream as c4
from nemot.data.qa import registry
from tests.data import fixtures


def test_c4_shards_hold_every_document_and_skip_validation(tmp_path, tok):
    written = fixtures.write_c4(tmp_path / "c4")
    summary = prepare.prepare_c4(tmp_path / "c4", tmp_path / "out", workers=1, progress=False)
    assert summary == {"files": 3, "skipped": 0, "documents": 9,
                       "tokens": sum(len(tok.encode(t)) for name, texts in written.items()
                                     if "train" in name for t in texts)}
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == [f"c4-train.{i:05d}-of-01024.npz" for i in range(3)] + ["shards.json"]
    for name, texts in written.items():
        if "validation" in name:
            continue
        ids, offsets = shards.read_c4_shard(tmp_path / "out" / name.replace(".json.gz", ".npz"))
        assert ids.dtype == np.uint16 and offsets[-1] == len(ids)
        docs = shards.unflatten(ids, offsets)
        assert [d.tolist() for d in docs] == tok.encode_batch(texts)
        assert [tok.decode(d) for d in docs] == texts


def test_c4_resume_skips_complete_shards_and_redoes_partial_ones(tmp_path, capsys):
    fixtures.write_c4(tmp_path / "c4")
    out = tmp_path / "out"
    prepare.prepare_c4(tmp_path / "c4", out, workers=1, progress=False)
    done = out / "c4-train.00001-of-01024.npz"
    stamp = done.stat().st_mtime_ns
    os.utime(done, ns=(1, 1))
    before = {k: shards.read_c4_shard(out / f"c4-train.{k:05d}-of-01024.npz")[0] for k in (0, 2)}
    for k in (0, 2):
        (out / f"c4-train.{k:05d}-of-01024.npz").unlink()
    # An interrupted run's temporary file.
    (out / ".c4-train.00002-of-01024.npz.99999.tmp.npz").write_bytes(b"partial write")
    # Two shards left: two worker processes.
    main(["c4", "--c4-dir", str(tmp_path / "c4"), "--out", str(out), "--workers", "2",
          "--no-progress"])
    assert '"skipped": 1' in capsys.readouterr().out
    assert done.stat().st_mtime_ns == 1 != stamp  # untouched
    for k in (0, 2):
        ids, offsets = shards.read_c4_shard(out / f"c4-train.{k:05d}-of-01024.npz")
        assert len(offsets) == 4 and ids.tolist() == before[k].tolist()


def test_c4_errors(tmp_path):
    (tmp_path / "c4").mkdir()
    with pytest.raises(DataError, match="split .train.: field .files.: expected C4 \*.json.gz"):
        prepare.prepare_c4(tmp_path / "c4", tmp_path / "out", workers=1, progress=False)
    import gzip
    with gzip.open(tmp_path / "c4" / "c4-train.00000-of-01024.json.gz", "wt") as f:
        f.write('{"text": "fine"}\n{"url": "no text"}\n')
    with pytest.raises(DataError, match=r"line 2: field 'text'"):
        prepare.prepare_c4(tmp_path / "c4", tmp_path / "out", workers=1, progress=False)
    assert not list((tmp_path / "out").glob("*.npz"))


def test_qa_shards_round_trip_the_formatter(tmp_path, raw_dirs, tok):
    paths = prepare.prepare_qa("squad_v2", "train", raw_dirs["squad_v2"], tmp_path, tokenizer=tok,
                                 shard_size=2, max_text_length=32)
    assert [p.name for p in paths] == ["squad_v2-train-00000-of-00002.npz",
                                       "squad_v2-train-00001-of-00002.npz"]
    stored = [ex for p in paths for ex in shards.read_qa_shard(p)]
    expected = Formatter(tok, max_text_length=32).format_batch(
        registry.load_examples("squad_v2", "train", raw_dirs["squad_v2"]))
    assert len(stored) == len(expected) == 3
    for s, e in zip(stored, expected):
        assert s["id"] == e.id and s["golds"] == e.golds and s["label"] is None
        for key in ("token_ids", "task_targets", "lm_targets", "prompt_ids"):
            assert s[key].tolist() == getattr(e, key)


def test_qa_command_with_options(tmp_path, raw_dirs, capsys):
    main(["qa", "--dataset", "race", "--split", "dev", "--data-dir", str(raw_dirs["race"]),
          "--out", str(tmp_path), "--max-text-length", "16", "--task-token", "lm"])
    assert "race-dev-00000-of-00001.npz" in capsys.readouterr().out
    (shard,) = tmp_path.glob("*.npz")
    examples = shards.read_qa_shard(shard)
    assert [e["label"] for e in examples] == [0, 1, 0, 1]
    for e in examples:
        assert e["token_ids"][2] == 50282  # <lm>
        assert len(e["token_ids"]) == 3 + 16 == 3 + len(e["task_targets"])
    with pytest.raises(ValueError, match="language-modelling"):
        prepare.prepare_qa("ptb", "test", raw_dirs["ptb"], tmp_path)


def test_c4_command_shards_the_validation_split_too(tmp_path, capsys):
    written = fixtures.write_c4(tmp_path / "c4")
    assert main(["c4", "--c4-dir", str(tmp_path / "c4"), "--out", str(tmp_path / "out"),
                 "--workers", "1", "--no-progress"]) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [p["split"] for p in printed] == ["train", "validation"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(
        [name.replace(".json.gz", ".npz") for name in written] + ["shards.json"])
    # Pre-training on the shards finds its validation split there.
    kind, files = c4.list_files(tmp_path / "out", "validation")
    assert kind == c4.SHARDS and [f.name for f in files] == [
        "c4-validation.00000-of-00008.npz"]


def test_c4_command_without_validation_files_says_so(tmp_path, capsys):
    fixtures.write_c4(tmp_path / "c4")
    (tmp_path / "c4" / "c4-validation.00000-of-00008.json.gz").unlink()
    assert main(["c4", "--c4-dir", str(tmp_path / "c4"), "--out", str(tmp_path / "out"),
                 "--workers", "1", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert [json.loads(line)["split"] for line in captured.out.splitlines()] == ["train"]
    assert "no C4 validation files" in captured.err and 'validation_split = ""' in captured.err


def test_sample_data_is_read_by_the_readers(tmp_path, capsys):
    assert main(["sample", "--out", str(tmp_path), "--questions", "16"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["race_questions"] == {"train": 16, "dev": 8, "test": 8}
    for split, count in summary["race_questions"].items():
        examples = registry.load_examples("race", split, summary["race"])
        assert len(examples) == count
        # The synthetic task: the answer is the option that is the passage.
        assert all(e.options[e.label] == e.passage for e in examples)
        assert {e.subset for e in examples} == {"middle", "high"}
    for split, count in summary["my_qa_questions"].items():  # the my_qa recipe's reader
        examples = registry.load_examples("obqa", split, summary["my_qa"])
        assert len(examples) == count and {e.options for e in examples} == {("yes", "no")}
        assert {e.label for e in examples} == {0, 1}
    for split in ("train", "validation"):
        kind, files = c4.list_files(summary["c4"], split)
        assert kind == c4.RAW and files
