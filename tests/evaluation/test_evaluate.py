"""``nemot evaluate`` end to end: a tiny saved model on fixture files, through the handler."""

import argparse
import json
import math

import keras
import numpy as np
import pytest

import nemot
from nemot.data import Formatter, Tokenizer, registry
from nemot.evaluation import decoding, evaluate, metrics
from nemot.evaluation.perplexity import sliding_windows
from nemot.evaluation.report import read_predictions
from tests.data import fixtures


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    keras.utils.set_random_seed(99)
    path = tmp_path_factory.mktemp("ckpt") / "model_best_metric.keras"
    nemot.build_model(nemot.NeMoTConfig.preset("tiny")).save(path)
    return path


@pytest.fixture(scope="module")
def model(checkpoint):
    return evaluate.load_checkpoint(checkpoint)


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    root = tmp_path_factory.mktemp("raw")
    return {name: fixtures.WRITERS[name](root / name) or root / name
            for name in ("race", "squad_v2", "wikitext2")}


@pytest.fixture(scope="module")
def tok():
    return Tokenizer()


def run(*argv):
    parser = argparse.ArgumentParser(prog="nemot")
    evaluate.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["evaluate", *map(str, argv)])
    return args.func(args)


def read_outputs(out, prefix):
    records = read_predictions(out / f"{prefix}_predictions.jsonl")
    summary = json.loads((out / f"{prefix}_metrics.json").read_text())
    return records, summary, (out / f"{prefix}_report.md").read_text()


def test_race_label_mode(checkpoint, model, raw, tok, tmp_path):
    run("--checkpoint", checkpoint, "--dataset", "race", "--split", "dev",
        "--data-dir", raw["race"], "--out", tmp_path, "--batch-size", 3)
    records, summary, report = read_outputs(tmp_path, "race_dev")
    examples = registry.load_examples("race", "dev", raw["race"])
    assert [r["id"] for r in records] == [e.id for e in examples] and len(records) == 4
    assert {r["subset"] for r in records} == {"middle", "high"}
    assert all(r["golds"] == [f"({e.label + 1})"] for r, e in zip(records, examples))
    # Each prediction is the argmax at <sep> of the saved model, prompt by prompt.
    formatter = Formatter(tok, max_text_length=model.config.max_text_length, task_token="mqa")
    for record, item in zip(records, formatter.format_batch(examples)):
        logits = model({"token_ids": np.array([item.prompt_ids], np.int32)})["logits"]
        assert item.prompt_ids[-1] == nemot.vocab.SEP_ID
        assert record["prediction"] == tok.decode([int(np.argmax(logits[0, -1]))]).strip()
    # The metrics file is a recomputation of the predictions file.
    for subset in ("middle", "high"):
        chosen = [r for r in records if r["subset"] == subset]
        assert summary["scores"][subset] == metrics.accuracy(
            [r["prediction"] for r in chosen], [r["golds"] for r in chosen])
    assert summary["scores"]["total"] == np.mean([r["score"] for r in records])
    assert summary["metric"] == "accuracy" and summary["model"].endswith("(model_best_metric.keras)")
    # Thesis Table 3.4 numbers for RACE validation beside ours.
    assert "NeMoT♠ (thesis Table 3.4) | 60.02 (ep26) | 64.48 | 58.16" in report


def test_race_score_mode_picks_the_best_scored_option(checkpoint, model, raw, tok, tmp_path):
    run("--checkpoint", checkpoint, "--dataset", "race", "--split", "test",
        "--data-dir", raw["race"], "--out", tmp_path, "--mc-mode", "score", "--limit", 2,
        "--task-token", "lm", "--score-reduction", "sum")
    records, summary, _ = read_outputs(tmp_path, "race_test")
    examples = registry.load_examples("race", "test", raw["race"])[:2]
    formatter = Formatter(tok, max_text_length=model.config.max_text_length, task_token="lm")
    expected = decoding.score_options(model, formatter, examples, reduction="sum")
    assert len(records) == 2
    for record, scores in zip(records, expected):
        np.testing.assert_allclose(record["option_scores"], scores, rtol=1e-5)
        assert record["prediction"] == f"({int(np.argmax(scores)) + 1})"
    assert summary["num_questions"] == 2
    assert summary["scores"]["total"] == metrics.accuracy(
        [r["prediction"] for r in records], [r["golds"] for r in records])


def test_squad_generation(checkpoint, model, raw, tok, tmp_path):
    run("--checkpoint", checkpoint, "--dataset", "squad_v2", "--split", "dev",
        "--data-dir", raw["squad_v2"], "--out", tmp_path, "--max-new-tokens", 5)
    records, summary, report = read_outputs(tmp_path, "squad_v2_dev")
    # Not expanded: one record per question with every gold; "" for the unanswerable one.
    assert [r["golds"] for r in records] == [["a bean", "bean"], [""]]
    examples = registry.load_examples("squad_v2", "dev", raw["squad_v2"], expand=False)
    formatter = Formatter(tok, max_text_length=model.config.max_text_length, task_token="gqa",
                          max_answer_length=5)
    for record, item in zip(records, formatter.format_batch(examples)):
        seq = list(item.prompt_ids)
        for _ in range(5):  # greedy by full recomputation
            logits = model({"token_ids": np.array([seq], np.int32)})["logits"]
            token = int(np.argmax(logits[0, -1]))
            if token == nemot.vocab.END_ID:
                break
            seq.append(token)
        assert record["prediction"] == tok.decode(seq[len(item.prompt_ids):]).strip()
    f1 = np.mean([metrics.f1(r["prediction"], r["golds"]) for r in records])
    assert summary["scores"] == {"total": f1} and summary["metric"] == "f1"
    assert "SQuADv2-dev (F1-score)" in report and "0.6729 (ep16)" in report


def test_wikitext_perplexity(checkpoint, model, raw, tok, tmp_path):
    # Articles longer than the model's 32 text positions, so the stride matters.
    data_dir = tmp_path / "wikitext2"
    data_dir.mkdir()
    article = " ".join(f"The bean number {i} grew tall in the sun ." for i in range(8))
    (data_dir / "wiki.test.tokens").write_text(
        f" = Bean = \n {article} \n = = Sub = = \n It grew . \n = Rose = \n A rose . \n")
    out = tmp_path / "out"
    run("--checkpoint", checkpoint, "--dataset", "wikitext2", "--split", "test",
        "--data-dir", data_dir, "--out", out, "--window", 32, 4)
    result = json.loads((out / "lm_perplexity.json").read_text())
    documents = tok.encode_batch(registry.load_examples("wikitext2", "test", data_dir))
    assert len(documents) == 2 and len(documents[0]) > 64
    by_stride = {entry["stride"]: entry for entry in result["results"]}
    assert set(by_stride) == {32, 4}
    for stride, entry in by_stride.items():
        expected = sum(s.num_scored for i, d in enumerate(documents)
                       for s in sliding_windows(len(d), 32, stride, i))
        assert entry["window"] == 32 and entry["dataset"] == "wikitext2"
        assert entry["num_scored_tokens"] == expected
        assert entry["perplexity"] == pytest.approx(math.exp(entry["total_nll"] / expected))
    # S inputs with S targets (the original's protocol): every id but each document's
    # first is scored, whatever the stride.
    for entry in by_stride.values():
        assert entry["num_scored_tokens"] == sum(len(d) - 1 for d in documents)
    assert by_stride[4]["num_segments"] > by_stride[32]["num_segments"]
    report = (out / "lm_perplexity.md").read_text()
    assert "NeMoT_200 ♣ (w=768) (thesis Table 3.1) | 71.33 | 36.91" in report


def test_bad_arguments_are_named(checkpoint, raw, tmp_path):
    common = ["--checkpoint", checkpoint, "--split", "dev", "--out", tmp_path]
    with pytest.raises(ValueError, match="--task lm: dataset race is a mqa dataset"):
        run(*common, "--dataset", "race", "--data-dir", raw["race"], "--task", "lm")
    with pytest.raises(ValueError, match="--task-token 'summarize_rs'.*no output block"):
        run(*common, "--dataset", "race", "--data-dir", raw["race"],
            "--task-token", "summarize_rs")
    with pytest.raises(FileNotFoundError, match="missing.keras: no such file"):
        run("--checkpoint", tmp_path / "missing.keras", "--dataset", "race", "--split", "dev",
            "--out", tmp_path)
    with pytest.raises(ValueError, match="--batch-size must be a positive int"):
        run(*common, "--dataset", "race", "--batch-size", 0)
