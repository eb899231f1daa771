"""`make demo` in its fast mode: C4-format corpus from pydoc_data, pre-training lowers the
validation perplexity, fine-tuning writes the ♣ / ♠ / last models, a results table. That
it learns under another float rounding, JAX's (XLA's kernels round otherwise than
TensorFlow's oneDNN ones), is the committed results/demo/summary_jax_fast.json
(tests/test_readme_results.py checks it is the fast mode's)."""

import contextlib
import csv
import gzip
import io
import json
import shutil
import zipfile

import pytest

from nemot import demo


def saved_config(path):
    """The NeMoT config in a saved ``.keras`` file, without building the model."""
    with zipfile.ZipFile(path) as archive:
        saved = json.loads(archive.read("config.json"))
    return saved["config"]["backbone"]["config"]["config"]


@pytest.fixture(scope="module")
def fast_demo(tmp_path_factory):
    """The fast demo's output directory and what it printed; removed after this file's
    tests (its models and checkpoints take about 1 GB)."""
    out = tmp_path_factory.mktemp("demo") / "demo"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert demo.main(["--out", str(out), "--fast"]) == 0
    yield out, printed.getvalue()
    shutil.rmtree(out.parent)


def test_demo_fast_mode(fast_demo):
    out, printed = fast_demo
    summary = json.loads((out / "summary.json").read_text())
    # Untrained: about the vocabulary size; 30 steps of pre-training cut it many times.
    assert summary["initial_perplexity"] > 10000
    assert summary["final_perplexity"] < summary["initial_perplexity"] / 5
    assert summary["pretrain_steps"] == 30 and summary["finetune_steps"] == 100
    assert summary["test_accuracy"] >= 0.8  # the fast mode learns its task too
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
        assert list((out / run / "train_state").glob("ckpt-*.npz"))
        assert list((out / run / "logs").iterdir())           # TensorBoard events
        # Its model's sizes, read from the saved file (the demo itself loads both models:
        # the pre-trained one to fine-tune, the fine-tuned one to score).
        assert saved_config(out / run / "model_last.keras")["d_model"] == 64
    with open(out / "finetune" / "results.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["epoch"] for r in rows] == ["1", "2", "3", "4"]
    assert all(r["val_loss"] and r["val_metric"] for r in rows)
    assert (out / "finetune" / "model_best_metric.keras").exists()
    with open(out / "pretrain" / "results.csv", newline="") as handle:
        pre_rows = list(csv.DictReader(handle))
    assert abs(float(pre_rows[-1]["val_perplexity"]) / summary["final_perplexity"] - 1) < 1e-6


def test_own_questions_from_the_demo_model_beat_the_majority_class(fast_demo, tmp_path,
                                                                   capsys):
    """docs/own_data.md's path: the ``my_qa`` recipe from the demo's pre-trained model, on
    questions in its layout (the sample's yes/no task), scored on the test split."""
    from data_prep.sample import write_own_questions
    from nemot import cli

    out, _ = fast_demo
    data = tmp_path / "my_qa"
    write_own_questions(data, 256)
    # The sample's questions take 12 or 13 text tokens: 16 positions instead of the recipe's
    # 64. 96 steps, three passes over the questions: validated after each pass (epochs of
    # 32 steps), the accuracy jumped from 41% to 100% after the second with seed 0 and
    # after the third with seed 1 (measured 2026-11-29; at 13 positions, seeds 1-5 after
    # the second, seed 0 after the third; 192 questions, two passes: seed 1 not at all), so
    # two passes would be luck. One epoch of 96 steps trains on the same batches (the
    # stream runs on across passes) and validates and saves once, not three times (8 CPU
    # seconds less); seeds 0 and 1 scored 100% so.
    assert cli.main(["finetune", "--config", "my_qa", "--data-dir", str(data), "--init-from",
                     str(out / "pretrain"), "--out", str(tmp_path / "run"), "--epochs", "1",
                     "--set", "train.steps_per_epoch=96", "--set", "model.max_text_length=16",
                     "--set", "train.verbose=0"]) == 0
    capsys.readouterr()
    assert cli.main(["evaluate", "--checkpoint", str(tmp_path / "run" / "model_best_metric.keras"),
                     "--dataset", "obqa", "--split", "test", "--data-dir", str(data),
                     "--out", str(tmp_path / "eval")]) == 0
    accuracy = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["scores"]["total"]
    answers = [json.loads(line)["answerKey"] for line in (data / "test.jsonl").open()]
    majority = max(answers.count(key) for key in set(answers)) / len(answers)
    print(f"my_qa from the fast demo's model: test accuracy {accuracy:.3f}, majority {majority:.3f}")
    # Learnt, it answered all 32 in every run tried; not learnt, it scored the majority share.
    assert accuracy >= majority + 0.25, (accuracy, majority)


def test_corpus_is_real_english_in_c4_layout(tmp_path):
    texts = demo.corpus_texts()
    assert len(texts) > 50 and sum(len(t) for t in texts) > 100_000
    paths = demo.write_c4_corpus(tmp_path, texts)
    docs = [json.loads(line)["text"] for p in paths for line in gzip.open(p, "rt")]
    assert sorted(docs) == sorted(texts)          # every document once, train or validation
