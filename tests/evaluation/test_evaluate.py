"""``nemot evaluate`` end to end: a tiny saved model on fixture files, through the handler."""

import argparse
import json
import math
from pathlib import Path

import keras
import numpy as np
import pytest

import nemot
from nemot.data import Formatter, Tokenizer
from nemot.data.qa import registry
from nemot.evaluation import choices, evaluate, evaluate_cli, metrics, scoring
from nemot.evaluation.report import format_value
from nemot.evaluation.perplexity import sliding_windows
from nemot.evaluation.report import read_predictions
from tests.data import fixtures


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    keras.utils.set_random_seed(99)
    path = tmp_path_factory.mktemp("ckpt") / "model_best_metric.keras"
    # One layer per set: the evaluation sees the model through its outputs only, and each
    # decoded token here is a forward pass run eagerly.
    config = nemot.NeMoTConfig.preset("tiny").replace(num_vanilla_layers=1, num_nm_layers=1)
    nemot.build_model(config).save(path)
    return path


@pytest.fixture(scope="module")
def model(checkpoint):
    return evaluate.load_checkpoint(checkpoint)


@pytest.fixture(scope="module")
def loaded():
    return {}


@pytest.fixture(autouse=True)
def each_checkpoint_file_loaded_once(monkeypatch, loaded):
    """The command loads each checkpoint file once in this module and reuses that model:
    a load is deterministic, the first command given a file loads it (and the ``model``
    fixture is a load of its own), and a load cost more than most commands' evaluations."""
    load = evaluate.load_checkpoint

    def load_once(path):
        path = Path(path)
        if not path.is_file():
            return load(path)  # its error
        key = (str(path.resolve()), path.stat().st_mtime_ns)
        if key not in loaded:
            loaded[key] = load(path)
        return loaded[key]

    monkeypatch.setattr(evaluate, "load_checkpoint", load_once)


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
    evaluate_cli.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["evaluate", *map(str, argv)])
    return args.func(args)


def read_outputs(out, prefix):
    records = read_predictions(out / f"{prefix}_predictions.jsonl")
    summary = json.loads((out / f"{prefix}_metrics.json").read_text())
    return records, summary, (out / f"{prefix}_report.md").read_text()


def test_race_label_mode(checkpoint, model, raw, tok, tmp_path, capsys):
    run("--checkpoint", checkpoint, "--dataset", "race", "--split", "dev",
        "--data-dir", raw["race"], "--out", tmp_path, "--batch-size", 3)
    records, summary, report = read_outputs(tmp_path, "race_dev")
    # The terminal shows the table: our accuracy in percent beside the thesis' percent,
    # and how many questions were scored; then the scores as one JSON line.
    printed = capsys.readouterr().out
    ours = f"| NeMoT (model_best_metric.keras) | {format_value(100 * summary['scores']['total'])} |"
    assert report in printed and ours in printed
    assert "NeMoT (model_best_metric.keras): 4 questions scored. Accuracy in percent" in printed
    assert json.loads(printed.strip().splitlines()[-1])["num_questions"] == 4
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
    expected = choices.score_options(model, formatter, examples, reduction="sum")
    assert len(records) == 2
    for record, scores in zip(records, expected):
        np.testing.assert_allclose(record["option_scores"], scores, rtol=1e-5)
        assert record["prediction"] == f"({int(np.argmax(scores)) + 1})"
    assert summary["num_questions"] == 2
    assert summary["scores"]["total"] == metrics.accuracy(
        [r["prediction"] for r in records], [r["golds"] for r in records])


@pytest.mark.usefixtures("eager")
def test_squad_generation(checkpoint, model, raw, tok, tmp_path):
    run("--checkpoint", checkpoint, "--dataset", "squad_v2", "--split", "dev",
        "--data-dir", raw["squad_v2"], "--out", tmp_path, "--max-new-tokens", 5)
    records, summary, report = read_outputs(tmp_path, "squad_v2_dev")
    # Not expanded: one record per question with every gold; "" for the unanswerable one.
    assert [r["golds"] for r in records] == [["a bean", "bean"], [""]]
    examples = registry.load_examples("squad_v2", "dev", raw["squad_v2"], expand=False)
    formatter = Formatter(tok, max_text_length=model.config.max_text_length, task_token="gqa")
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
    # Exact match beside the thesis' F1, as SQuAD's own script reports them.
    assert "| Model | F1-score | Exact match |" in report and "0.6729 (ep16)" in report


def test_wikitext_perplexity(checkpoint, model, raw, tok, tmp_path):
    # Articles longer than the model's 32 text positions, so the stride matters.
    data_dir = tmp_path / "wikitext2"
    data_dir.mkdir()
    article = " ".join(f"The bean number {i} grew tall in the sun ." for i in range(8))
    (data_dir / "wiki.test.tokens").write_text(
        f" \n = Bean = \n \n {article} \n \n = = Sub = = \n \n It grew . \n \n = Rose = \n \n"
        " A rose . \n")  # the published layout: headings stand between blank lines
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
    # --collapse-spaces: the tidied text (one space per run), fewer ids to score.
    tidy = tmp_path / "tidy"
    run("--checkpoint", checkpoint, "--dataset", "wikitext2", "--split", "test",
        "--data-dir", data_dir, "--out", tidy, "--window", 32, "--collapse-spaces")
    collapsed = tok.encode_batch(registry.load_examples("wikitext2", "test", data_dir,
                                                        collapse_spaces=True))
    entry, = json.loads((tidy / "lm_perplexity.json").read_text())["results"]
    assert entry["num_scored_tokens"] == sum(len(d) - 1 for d in collapsed) \
        < by_stride[32]["num_scored_tokens"]


def test_bad_arguments_are_named(checkpoint, raw, tmp_path, capsys):
    common = ["--checkpoint", checkpoint, "--split", "dev", "--out", tmp_path]
    with pytest.raises(ValueError, match="--collapse-spaces: dataset race is a mqa dataset"):
        run(*common, "--dataset", "race", "--data-dir", raw["race"], "--collapse-spaces")
    with pytest.raises(ValueError, match="--task lm: dataset race is a mqa dataset"):
        run(*common, "--dataset", "race", "--data-dir", raw["race"], "--task", "lm")
    with pytest.raises(ValueError, match="--task-token 'summarize_rs'.*no output block"):
        run(*common, "--dataset", "race", "--data-dir", raw["race"],
            "--task-token", "summarize_rs")
    with pytest.raises(FileNotFoundError, match="missing.keras: no such file"):
        run("--checkpoint", tmp_path / "missing.keras", "--dataset", "race", "--split", "dev",
            "--out", tmp_path)
    with pytest.raises(SystemExit):
        run(*common, "--dataset", "race", "--batch-size", 0)
    assert "argument --batch-size: '0': expected a whole number >= 1" in capsys.readouterr().err


class Recorder:
    """A model seen through its forward pass only (no cache: decoding recomputes); keeps
    its first input, the prompts exactly as decoding gave them to the model."""

    def __init__(self, model):
        self.model, self.config, self.first_input = model, model.config, None

    def __call__(self, inputs, training=False):
        if self.first_input is None:
            self.first_input = np.array(inputs["token_ids"])
        return self.model(inputs, training=training)


def passage_of(tok, text_tokens):
    """A QAExample whose prompt is exactly ``text_tokens`` tokens long."""
    from nemot.data import QAExample

    def example(words):
        return QAExample(id=f"p{words}", passage=" ".join(["cat"] * words), question="Where?",
                         answers=("mat",), task="gqa", dataset="squad_v2")

    for words in range(1, 60):
        formatter = Formatter(tok, max_text_length=100)
        if len(tok.encode(formatter.prompt_text(example(words)))) == text_tokens:
            return example(words)
    raise AssertionError(f"no passage gives a {text_tokens}-token prompt")


def test_generation_prompts_are_cut_only_when_they_do_not_fit(model, tok, tmp_path):
    n = model.config.max_text_length  # 32; the default answer room is min(32, 32 // 4) = 8
    aux = [nemot.vocab.CLS_ID, nemot.vocab.DEC_ID, nemot.vocab.task_token_id("gqa")]
    for length, kept in ((20, 20), (40, 24)):
        example = passage_of(tok, length)
        full = tok.encode(Formatter(tok, max_text_length=100).prompt_text(example))
        recorder = Recorder(model)
        result = evaluate.evaluate_qa(recorder, [example], "squad_v2", "dev", tmp_path / str(length),
                                      task_token="gqa", metric="f1", tokenizer=tok)
        seen = recorder.first_input[0, 3:]
        assert (seen[kept:] == nemot.vocab.PAD_ID).all()
        prompt = seen[:kept].tolist()
        if length == 20:
            # 20 tokens and 8 of answer room fit the 32-token window: decoded whole (the
            # old rule kept min(max_new_tokens, n // 2) = 16 free and cut it to 16).
            assert prompt == full
        else:
            # 40 do not fit: cut by training's rule (the first token <p1>, then the end).
            assert prompt == full[:1] + full[-23:] and prompt[0] == nemot.vocab.ADDED_TOKEN_IDS["<p1>"]
        # Generation ran to </s> or the end of the window, whichever came first.
        seq = aux + prompt
        while len(seq) - 3 < n:
            token = int(np.argmax(model({"token_ids": np.array([seq], np.int32)})["logits"][0, -1]))
            if token == nemot.vocab.END_ID:
                break
            seq.append(token)
        (record,) = read_predictions(result["predictions"])
        assert record["prediction"] == tok.decode(seq[len(aux) + kept:]).strip()


def test_evaluation_and_validation_decode_through_one_path(model, tok, raw, tmp_path):
    examples = registry.load_examples("squad_v2", "dev", raw["squad_v2"], expand=False)
    formatted = Formatter(tok, max_text_length=model.config.max_text_length,
                          task_token="gqa").format_batch(examples)
    recorder = Recorder(model)
    predictions = scoring.decode_predictions(recorder, formatted, label_mode=False, tokenizer=tok,
                                             max_new_tokens=5)
    result = evaluate.evaluate_qa(recorder, examples, "squad_v2", "dev", tmp_path, task_token="gqa",
                                  metric="f1", tokenizer=tok, max_new_tokens=5)
    assert [r["prediction"] for r in read_predictions(result["predictions"])] == predictions
    assert scoring.score_examples(recorder, formatted, "f1", label_mode=False, tokenizer=tok,
                                  max_new_tokens=5) == result["scores"]["total"]


@pytest.mark.usefixtures("eager")
def test_a_checkpoint_in_a_run_directory_takes_the_runs_settings(model, raw, tok, tmp_path, capsys):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    checkpoint = run_dir / "model_best_metric.keras"
    model.save(checkpoint)
    (run_dir / "run_config.toml").write_text(
        'name = "race"\nkind = "finetune"\n\n[data]\ndataset = "race"\ntask_token = "lm"\n'
        'mode = "dec"\nmqa_mode = "generate"\n')
    common = ("--checkpoint", checkpoint, "--dataset", "race", "--split", "dev",
              "--data-dir", raw["race"], "--limit", 2, "--max-new-tokens", 3)
    run(*common, "--out", tmp_path / "a")
    assert "task_token = lm" in capsys.readouterr().err
    records = read_predictions(tmp_path / "a" / "race_dev_predictions.jsonl")
    examples = registry.load_examples("race", "dev", raw["race"])[:2]
    # mqa_mode = "generate": the gold is the option's text, the answer generated with <lm>.
    assert [r["golds"] for r in records] == [[e.options[e.label]] for e in examples]
    recorder = Recorder(model)
    direct = evaluate.evaluate_qa(recorder, examples, "race", "dev", tmp_path / "b", task_token="lm",
                                  metric="accuracy", tokenizer=tok, max_new_tokens=3,
                                  mc_mode="generate")
    assert (recorder.first_input[:, 2] == nemot.vocab.task_token_id("lm")).all()
    assert records == read_predictions(direct["predictions"])
    # Flags override the run's settings, and only what the run decided is reported.
    run(*common, "--out", tmp_path / "c", "--task-token", "mqa", "--mc-mode", "label")
    err = capsys.readouterr().err
    assert "run_config.toml: mode = dec" in err and "task_token" not in err and "mqa_mode" not in err
    run(*common, "--out", tmp_path / "c", "--task-token", "mqa", "--mc-mode", "label",
        "--mode", "dec")
    assert "defaults from" not in capsys.readouterr().err
    records = read_predictions(tmp_path / "c" / "race_dev_predictions.jsonl")
    assert [r["golds"] for r in records] == [[f"({e.label + 1})"] for e in examples]
    (run_dir / "run_config.toml").write_text('[data]\nmode = "sideways"\n')
    with pytest.raises(ValueError, match=r"run_config.toml: \[data\] mode = 'sideways': expected"):
        run(*common, "--out", tmp_path / "d")


@pytest.mark.usefixtures("eager")
def test_drop_reports_the_official_f1_beside_rouge_l(checkpoint, tmp_path):
    fixtures.WRITERS["drop"](tmp_path / "drop")
    run("--checkpoint", checkpoint, "--dataset", "drop", "--split", "dev",
        "--data-dir", tmp_path / "drop", "--out", tmp_path / "out", "--max-new-tokens", 3)
    records, summary, report = read_outputs(tmp_path / "out", "drop_dev")
    assert summary["metric"] == "rouge_l"
    by_metric = summary["scores_by_metric"]
    assert {"rouge_l", "drop_f1"} <= set(by_metric)
    official = np.mean([metrics.drop_f1(r["prediction"], r["golds"]) for r in records])
    assert by_metric["drop_f1"]["total"] == pytest.approx(official)
