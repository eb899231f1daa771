"""PALs experiments: the configs of Tables 1-4 against the paper's rows, config errors,
the scores, and one tiny run through the shared trainer (the epoch is selected on dev and
its checkpoint scored on test; pretrain mode keeps BERT fixed)."""

import csv
import json
from pathlib import Path

import keras
import numpy as np
import pytest

from nemot.data.synthetic.minbert import FILES
from nemot.modulation.pals import pal_parameters
from nemot.pals import cli, experiment
from nemot.pals.metrics import summary, task_metric
from tests.pals.helpers import (QUORA, SST, STS, all_texts, write_hf_bert, write_minbert,
                                write_minbert_dir, write_vocab)

CONFIGS = sorted(Path(__file__).parents[2].joinpath("configs", "pals").glob("table*.toml"))


def test_the_configs_hold_every_row_of_tables_1_to_4():
    assert [c.name for c in CONFIGS] == [f"table{i}.toml" for i in (1, 2, 3, 4)]
    names = []
    for path in CONFIGS:
        loaded = experiment.load(path)
        names += experiment.variants(loaded)
        for settings in loaded.variants.values():
            assert settings.head_dropout == 0.3
            if loaded.name == "table1":
                assert settings.batch_size == 8 and len(settings.tasks) == 1
                assert settings.learning_rate == (1e-3 if settings.mode == "pretrain" else 1e-5)
            else:
                assert (settings.batch_size, settings.learning_rate, settings.epochs,
                        settings.sampling, settings.mode) == (16, 1e-5, 10, "annealed", "finetune")
    assert sorted(names) == sorted(experiment.PAPER)
    table4 = experiment.load(CONFIGS[3])
    assert table4.variants["half_sst_sts"].tasks == ("sst", "sts")
    assert table4.variants["half_sst_sts"].pal_options() == {"hidden_size": 276,
                                                            "layers": "top_half"}
    # Only Table 3 scores the test split; every config selects its epoch on dev.
    for path in CONFIGS + [CONFIGS[0].parent / "synthetic.toml"]:
        for name, settings in experiment.load(path).variants.items():
            assert settings.score_test == (name == "zero_test"), (path.name, name)
    # The synthetic demo keeps the paper's equal PAL budgets at width 64 in 2 layers.
    demo = experiment.load(CONFIGS[0].parent / "synthetic.toml").variants
    half, full = (demo[v].pal_options() for v in ("half_tiny", "full_tiny"))
    budgets = [pal_parameters(64, p["hidden_size"], 1 if p["layers"] == "top_half" else 2)
               for p in (half, full)]
    assert abs(budgets[0] - budgets[1]) < 0.01 * budgets[1]


def test_the_papers_averages_follow_its_two_rules():
    # Tables 2/3 normalise r to (r + 1) / 2; Table 4 averages the raw r.
    for row, prefix in [("zero", ""), ("half", ""), ("full", ""), ("zero_test", ""),
                        ("zero_test", "test_")]:
        paper = {k[len(prefix):]: v for k, v in experiment.PAPER[row].items()
                 if k.startswith(prefix) and (prefix or not k.startswith("test_"))}
        values = {"sst": paper["sst_acc"], "quora": paper["quora_acc"], "sts": paper["sts_r"]}
        assert summary(values)["score"] == pytest.approx(paper["score"], abs=6e-4)
    # Table 3's model is Table 2's zero model: its dev values are that row.
    assert {k: v for k, v in experiment.PAPER["zero_test"].items()
            if not k.startswith("test_")} == experiment.PAPER["zero"]
    for row, paper in experiment.PAPER.items():
        if "average_raw_r" in paper:
            values = [v for k, v in paper.items() if k != "average_raw_r"]
            assert np.mean(values) == pytest.approx(paper["average_raw_r"], abs=6e-4), row


def test_parameter_table():
    params = cli.parameter_table()
    assert "| half | 276 | 6 | 1,801,116 | 5,403,348 |" in params
    assert "| full | 204 | 12 | 1,819,836 | 5,459,508 |" in params


def test_task_metrics():
    assert task_metric("sst", [1, 2, 3, 4], [1, 2, 0, 4]) == 0.75
    labels = np.array([0.0, 1.5, 2.0, 4.5, 5.0])
    assert task_metric("sts", 2 * labels + 1, labels) == pytest.approx(1.0)
    assert task_metric("sts", -labels, labels) == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="needs labelled examples"):
        task_metric("quora", [1.0], [np.nan])


def test_config_errors_name_the_file_and_key(tmp_path):
    path = tmp_path / "bad.toml"
    base = 'reproduction = "pals"\nname = "x"\noutput_dir = "o"\n'
    for body, message in [
        ('[train]\nlr = 1', r"bad.toml: \[train\]: unknown key\(s\) \['lr'\]; expected some of"),
        ('[variants.a]\npals = "double"', r"\[variants.a\]: pals = 'double': expected one of"),
        ('[data]\ntasks = ["sst", "mnli"]', "task 'mnli': expected one of"),
        ('[train]\nsampling = "temperature"', "sampling = 'temperature'"),
        ('[variants.a]\nheads = 2', r"\[variants.a\]: unknown key\(s\) \['heads'\]"),
        ('[train]\nepochs = "2"', r"bad.toml: epochs = '2': expected an integer"),
        ('[modell]\nx = 1', r"unknown key\(s\) \['modell'\]"),
        ('[train]\nscore_test = "yes"', r"score_test = 'yes': expected true or false"),
        ('[train]\neval_split = "test"', r"\[train\]: 'eval_split' was removed: the epoch is "
                                         "always selected on dev"),
        ('[variants.a]\neval_split = "dev"', r"\[variants.a\]: 'eval_split' was removed"),
    ]:
        path.write_text(base + body + ("" if "[variants.a]" in body else "\n[variants.a]\n"))
        with pytest.raises(ValueError, match=message):
            experiment.load(path)
    path.write_text(base + "[variants.a]\n[variants.b]\nepochs = 3\n")
    loaded = experiment.load(path, ["train.epochs=2", 'model.pals="full"'])
    assert loaded.variants["a"].epochs == 2 and loaded.variants["b"].epochs == 3
    assert loaded.variants["a"].pals == loaded.variants["b"].pals == "full"


@pytest.fixture(scope="module")
def tiny_setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("pals_run")
    write_minbert_dir(root / "data")
    # Labelled test files: dev's rows with SST's labels shifted, Quora's flipped, STS's
    # mirrored (5 - y).
    for task, rows in {"sst": [(i, t, (y + 2) % 5) for i, t, y in SST],
                       "quora": [(i, a, b, 1 - float(y)) for i, a, b, y in QUORA],
                       "sts": [(i, a, b, 5 - float(y)) for i, a, b, y in STS]}.items():
        write_minbert(root / "data" / FILES[task].format("test"), task, rows)
    write_hf_bert(root / "bert", vocab=160)
    vocab = write_vocab(root / "vocab.txt", all_texts())
    assert len(vocab.read_text().split()) <= 160
    config = root / "tiny.toml"
    config.write_text(f'''reproduction = "pals"
name = "tiny"
output_dir = "{root / 'runs'}"
seeds = [0]
[model]
backbone = "{root / 'bert'}"
tokenizer = "{vocab}"
sequence_length = 24
[train]
batch_size = 2
epochs = 2
steps_per_epoch = 1  # an eager step is ~0.6 CPU s; what is checked is the epochs'
learning_rate = 1e-3
verbose = 0
[data]
dir = "{root / 'data'}"
tasks = ["sst", "quora", "sts"]
[variants.full]
pals = {{hidden_size = 4, num_heads = 2}}
score_test = true
[variants.frozen]
tasks = ["sst"]
mode = "pretrain"
''')
    return root, experiment.load(config), config


@pytest.mark.usefixtures("eager")
def test_a_tiny_run_trains_through_the_shared_trainer_and_resumes(tiny_setup):
    root, loaded, _ = tiny_setup
    run_dir = root / "runs" / "full" / "seed0"
    metrics = experiment.run_one(loaded, "full", 0, run_dir)
    keys = {"sst_acc", "quora_acc", "sts_r", "score", "average_raw_r"}
    assert set(metrics) == keys | {f"test_{k}" for k in keys}
    assert metrics["score"] == pytest.approx(np.mean(
        [metrics["sst_acc"], metrics["quora_acc"], (metrics["sts_r"] + 1) / 2]))
    for name in ("results.csv", "best.json", "model_last.keras", "config.toml"):
        assert (run_dir / name).exists(), name
    # The epoch is selected on dev: the reported values are the best epoch's row of
    # results.csv. The test files flip Quora's labels and mirror STS's, so one model's
    # test accuracy is 1 - its dev accuracy and its test r minus its dev r: the test
    # values are the selected checkpoint's, and the rows were scored on dev, not test.
    with open(run_dir / "results.csv", newline="") as handle:
        dev_scores = [float(row["val_score"]) for row in csv.DictReader(handle)]
    epoch = json.loads((run_dir / "best.json").read_text())["metric_epoch"]
    assert len(dev_scores) == 2 and epoch == 1 + int(np.argmax(dev_scores))
    assert metrics["score"] == pytest.approx(dev_scores[epoch - 1])
    assert metrics["test_quora_acc"] == pytest.approx(1 - metrics["quora_acc"])
    assert metrics["test_sts_r"] == pytest.approx(-metrics["sts_r"], abs=1e-6)
    assert metrics["sts_r"] != 0
    model = keras.models.load_model(run_dir / "model_last.keras")
    assert model.pals == {"hidden_size": 4, "num_heads": 2}
    # A finished run resumes at its end: nothing more is trained, the result is the same.
    # Through the command line (the multi-seed runner): metrics.json and the report with
    # the paper's number beside ours.
    _, _, config = tiny_setup
    assert cli.main(["run", "--config", str(config), "--variants", "full"]) == 0
    assert json.loads((run_dir / "metrics.json").read_text()) == pytest.approx(metrics)
    report = (root / "runs" / "report.md").read_text()
    assert f"| full | 1 | {metrics['score']:.4f} | – | – | 0.6570 |" in report


def test_pretrain_mode_keeps_bert_fixed(tiny_setup):
    root, loaded, _ = tiny_setup
    run_dir = root / "runs" / "frozen" / "seed0"
    experiment.run_one(loaded, "frozen", 0, run_dir)
    trained = keras.models.load_model(run_dir / "model_last.keras", compile=False)
    start = experiment.build_pal_bert(str(root / "bert"), tasks=("sst",))
    for ours, theirs in zip(trained.weights, start.weights):
        same = np.array_equal(np.asarray(ours), np.asarray(theirs))
        assert same != ("head_sst" in ours.path), ours.path


def test_a_test_split_without_labels_is_refused_before_training(tiny_setup, tmp_path):
    _, loaded, _ = tiny_setup
    settings = loaded.variants["frozen"]
    student_only = write_minbert_dir(tmp_path / "data")  # the test split as minBERT ships it
    bad = experiment.Experiment("x", str(tmp_path), (0,), {
        "v": experiment.dataclasses.replace(settings, score_test=True, dir=str(student_only))})
    with pytest.raises(ValueError, match="ids-sst-test-student.csv: line 1: field 'sentiment'"):
        experiment.run_one(bad, "v", 0, tmp_path / "run")


def test_only_the_synthetic_config_is_marked_synthetic_so_its_reports_show_no_paper_numbers():
    from nemot.experiments import protocol

    root = CONFIGS[0].parent
    for path in [*CONFIGS, root / "synthetic.toml"]:
        module, experiment = protocol.load(path)
        assert protocol.is_synthetic(module, experiment, path) == (path.stem == "synthetic")
