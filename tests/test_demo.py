"""`make demo` in its fast mode: C4-format corpus from pydoc_data, pre-training lowers the
validation perplexity, fine-tuning writes the ♣ / ♠ / last models, a results table."""

import csv
import gzip
import json

import keras

from nemot import demo


def test_demo_fast_mode(tmp_path, capsys):
    out = tmp_path / "demo"
    assert demo.main(["--out", str(out), "--fast"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    # Untrained: about the vocabulary size; 30 steps of pre-training cut it many times.
    assert summary["initial_perplexity"] > 10000
    assert summary["final_perplexity"] < summary["initial_perplexity"] / 5
    assert summary["pretrain_steps"] == 30 and summary["finetune_steps"] == 20
    printed = capsys.readouterr().out
    assert "validation perplexity, pre-trained" in printed and str(out / "finetune") in printed
    # It says which phase it is in, in order, and how long each took.
    starts = [printed.index(f"[{i}/4] {name}") for i, name in enumerate(demo.Phases.NAMES, 1)]
    assert starts == sorted(starts)
    assert list(summary["seconds"]) == list(demo.Phases.NAMES)
    # Each phase and the total are rounded to 0.1 s: the parts may exceed it by 0.05 each.
    assert sum(summary["seconds"].values()) <= summary["total_seconds"] + 0.05 * len(
        summary["seconds"])
    assert f"total time {summary['total_seconds']:.0f} s" in printed
    assert summary["fast"] is True and summary["machine"]["cpus"] >= 1
    corpus = sorted(p.name for p in (out / "corpus").iterdir())
    assert "c4-validation.00000-of-00008.json.gz" in corpus
    assert sum(name.startswith("c4-train.") for name in corpus) == 4
    for run in ("pretrain", "finetune"):
        assert list((out / run / "train_state").glob("ckpt-*.index"))
        assert list((out / run / "logs").iterdir())           # TensorBoard events
        model = keras.models.load_model(out / run / "model_last.keras")
        assert model.config.d_model == 64
    with open(out / "finetune" / "results.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["epoch"] for r in rows] == ["1", "2"]
    assert all(r["val_loss"] and r["val_metric"] for r in rows)
    assert (out / "finetune" / "model_best_metric.keras").exists()
    with open(out / "pretrain" / "results.csv", newline="") as handle:
        pre_rows = list(csv.DictReader(handle))
    assert abs(float(pre_rows[-1]["val_perplexity"]) / summary["final_perplexity"] - 1) < 1e-6


def test_corpus_is_real_english_in_c4_layout(tmp_path):
    texts = demo.corpus_texts()
    assert len(texts) > 50 and sum(len(t) for t in texts) > 100_000
    paths = demo.write_c4_corpus(tmp_path, texts)
    docs = [json.loads(line)["text"] for p in paths for line in gzip.open(p, "rt")]
    assert sorted(docs) == sorted(texts)          # every document once, train or validation
