"""NGT's recipe: experiment configs, a fit on a synthetic pair task, and the CLI end to end
on fixtures (through the experiment protocol)."""

import csv
import json
from pathlib import Path

import keras
import numpy as np
import pytest

from nemot.data.benchmarks import superglue
from nemot.data.benchmarks.superglue import PairRow, TaskData
from nemot.experiments.protocol import select_epoch
from nemot.ngt import cli
from nemot.ngt.experiment import Experiment, Model, TaskPlan, Train, Variant, from_dict, load
from nemot.ngt.model import NGTModel
from nemot.ngt.train import compile_model, train_run
from tests.data.superglue_records import make_vocab
from tests.ngt.helpers import tiny_backbone

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "ngt"

# Paper Table 3: (epochs in Table 1, decay_steps).
TABLE3 = {
    "BoolQ": (10, 11790), "CB": (10, 320), "COPA": (10, 1000), "MultiRC": (5, 17030),
    "ReCoRD": (1, 147425), "RTE": (10, 3120), "WiC": (10, 6790), "WSC": (10, 700),
}


def test_table1_config_matches_the_paper():
    exp = load(CONFIGS / "table1.toml")
    assert [(name, v.gating) for name, v in exp.variants.items()] == [
        ("no-gating-block", "no-gating-block"),
        ("neuromodulated-gating", "neuromodulated-gating"),
        ("non-neuromodulated-gating", "non-neuromodulated-gating"),
    ]
    assert exp.variants["neuromodulated-gating"].gate_position == 21
    assert {t: (p.epochs, p.decay_steps) for t, p in exp.tasks.items()} == TABLE3
    train = exp.train
    assert (train.batch_size, train.learning_rate, train.weight_decay, train.beta_1,
            train.beta_2) == (8, 1e-5, 0.01, 0.9, 0.999)
    assert exp.model.sequence_length == 512 and exp.model.num_gating_layers == 3
    assert len(exp.seeds) == 3
    assert all(p.aux_tokens == () for p in exp.tasks.values())  # no auxiliary tokens in the paper


def test_table4_config_stops_early_on_the_full_cosine():
    exp = load(CONFIGS / "table4.toml")
    assert {name: (v.gating, v.gate_position) for name, v in exp.variants.items()} == {
        "gating-start": ("neuromodulated-gating", 3),
        "gating-end": ("neuromodulated-gating", 21),
    }
    assert {t: (p.epochs, p.decay_steps) for t, p in exp.tasks.items()} == {
        t: (1 if t == "ReCoRD" else 3, steps) for t, (_, steps) in TABLE3.items()
    }


@pytest.mark.parametrize(
    "patch, message",
    [
        ({"optimizer": "adam"}, r"unknown key\(s\) \['optimizer'\]; expected some of"),
        ({"train": {"lr": 1e-5}}, r"\[train\]: unknown key\(s\) \['lr'\]; expected some of"),
        ({"variants": {"x": {"gating": "gated"}}},
         r"\[variants.x\]: gating = 'gated': expected one of \['neuromodulated-gating'"),
        ({"tasks": {"RTE": {"decay_steps": 5}}}, r"\[tasks.RTE\]: epochs: required, not given"),
        ({"tasks": {"MNLI": {"epochs": 1}}},
         r"\[tasks\]: unknown key\(s\) \['MNLI'\]; expected some of \['BoolQ'"),
        ({"tasks": {"RTE": {"epochs": "3"}}}, r"\[tasks.RTE\]: epochs = '3': expected an "),
        ({"seeds": "0"}, r"seeds: expected a list of integers"),
        ({"data": {"dir": "d", "source": "bucket"}}, r"\[data\]: source = 'bucket': expected "
                                                     r"one of"),
        ({"data": {"folder": "d"}}, r"\[data\]: unknown key\(s\) \['folder'\]"),
    ],
)
def test_bad_configs_name_the_key(tmp_path, patch, message):
    raw = {
        "name": "x", "output_dir": str(tmp_path), "seeds": [0],
        "variants": {"v": {"gating": "no-gating-block"}}, "tasks": {"RTE": {"epochs": 1}},
    }
    raw.update(patch)
    with pytest.raises(ValueError, match=message) as info:
        from_dict(raw, source="exp.toml")
    assert str(info.value).startswith("exp.toml: ")


@pytest.mark.parametrize("num_classes, loss", [(1, "binary_crossentropy"), (3, "categorical_crossentropy")])
def test_compile_uses_the_papers_optimiser(num_classes, loss):
    exp = load(CONFIGS / "table1.toml")
    model = NGTModel(tiny_backbone(), gate_position=2, num_gating_layers=1, num_classes=num_classes)
    compile_model(model, exp.train, decay_steps=320)
    opt = model.optimizer
    assert isinstance(opt, keras.optimizers.AdamW)
    assert (opt.weight_decay, opt.beta_1, opt.beta_2, opt.epsilon) == (0.01, 0.9, 0.999, 1e-7)
    # No exclude list, as in the original: LayerNorm and bias weights decay too.
    assert all(opt._use_weight_decay(w) for w in model.trainable_weights)
    schedule = opt._learning_rate
    assert [float(schedule(s)) for s in (0, 160, 320, 400)] == pytest.approx([1e-5, 5e-6, 0.0, 0.0], abs=1e-12)
    assert model.loss == loss


def _match_rows(n, seed, colours=("red", "green", "blue")):
    """A pair task: is B's colour the colour in A? (needs both segments)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        a, b = rng.choice(colours, 2)
        rows.append(PairRow((str(a),), (str(b),), int(a == b), str(i)))
    return TaskData("RTE", "synthetic", rows)


def test_fits_a_synthetic_pair_task_to_high_accuracy(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(make_vocab(["red green blue"])) + "\n")
    n_vocab = len(vocab.read_text().split())
    exp = Experiment(
        name="fit", output_dir=str(tmp_path), seeds=(0,),
        variants={"ngt": Variant("neuromodulated-gating", gate_position=1)},
        tasks={"RTE": TaskPlan(epochs=7)},
        model=Model(backbone=dict(vocabulary_size=n_vocab, num_layers=2, num_heads=2,
                                  hidden_dim=32, intermediate_dim=64, max_sequence_length=8),
                    tokenizer=str(vocab), sequence_length=8, num_gating_layers=1),
        train=Train(batch_size=32, learning_rate=2e-3, verbose=0),
    )
    val = _match_rows(128, 1)
    majority = max(np.mean([r.label for r in val.rows]), 1 - np.mean([r.label for r in val.rows]))
    train_run(exp, "RTE", "ngt", 0, _match_rows(1024, 0), val, out_dir=tmp_path / "run")
    assert majority < 0.7
    assert select_epoch(tmp_path / "run")["acc"] >= 0.95
    with open(tmp_path / "run" / "results.csv", newline="") as handle:
        logged = list(csv.DictReader(handle))
    assert [int(line["epoch"]) for line in logged] == list(range(1, 8))
    assert float(logged[-1]["loss"]) < float(logged[0]["loss"])


def write_config(path, tmp_path, superglue_dir, vocab_file, n_vocab, top, tables, name="tiny"):
    """An experiment file of a tiny BERT on the SuperGLUE fixture; ``top`` adds top-level
    keys (seeds), ``tables`` the variants and tasks."""
    path.write_text(f"""{top.strip()}
name = "{name}"
output_dir = "{tmp_path / 'runs'}"
[model]
tokenizer = "{vocab_file}"
sequence_length = 48
num_gating_layers = 1
[model.backbone]
vocabulary_size = {n_vocab}
num_layers = 2
num_heads = 2
hidden_dim = 8
intermediate_dim = 16
max_sequence_length = 48
[train]
batch_size = 8  # one step per epoch: CB's 3 rows, ReCoRD's 6 (an eager AdamW step: ~1 CPU s)
run_eagerly = true  # tracing would dominate these one-step epochs
verbose = 0
[data]
dir = "{superglue_dir}"
{tables}""")
    return path


@pytest.mark.usefixtures("eager")
def test_cli_trains_reports_and_counts_on_superglue_files(tmp_path, superglue_dir, vocab_file, capsys):
    n_vocab = len(vocab_file.read_text().split())
    config = write_config(tmp_path / "tiny.toml", tmp_path, superglue_dir, vocab_file, n_vocab,
                          'reproduction = "ngt"\nseeds = [0, 1]', """
[variants.plain]
gating = "no-gating-block"
[variants.ngt]
gating = "neuromodulated-gating"
gate_position = 1
[tasks.CB]
epochs = 2
[tasks.ReCoRD]
epochs = 1
aux_tokens = ["[unused1]"]
""")
    assert cli.main(["run", "--config", str(config), "--variants", "ngt"]) == 0
    # Only the gating block reads auxiliary tokens: none for the plain model (a nested key).
    assert cli.main(["run", "--config", str(config), "--variants", "plain", "--seed-list", "0",
                     "--set", "tasks.ReCoRD.aux_tokens=[]"]) == 0
    runs = tmp_path / "runs"
    assert sorted(p.relative_to(runs).as_posix() for p in runs.glob("*/seed*/*/results.csv")) == [
        f"{v}/seed{s}/{t}/results.csv" for v, s in (("ngt", 0), ("ngt", 1), ("plain", 0))
        for t in ("CB", "ReCoRD")]
    with open(runs / "ngt" / "seed1" / "CB" / "results.csv", newline="") as handle:
        assert len(list(csv.DictReader(handle))) == 2  # two epochs
    assert set(select_epoch(runs / "ngt" / "seed0" / "ReCoRD")) == {"f1", "em", "epoch"}
    predictions = runs / "ngt" / "seed1" / "CB" / "val_predictions_epoch2.jsonl"
    records = [json.loads(line) for line in predictions.read_text().splitlines()]
    assert [r["idx"] for r in records] == [0, 1, 2]
    assert {r["label"] for r in records} <= {"contradiction", "neutral", "entailment"}

    capsys.readouterr()
    assert cli.main(["report", str(runs)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "| Task | Metric | plain | ngt |" in lines
    assert any(line.startswith("| CB | F1/Acc |") for line in lines)
    assert any(line.startswith("| ReCoRD | F1/EM |") for line in lines)
    assert any(line.startswith("| **Mean** |") for line in lines)
    assert any(line.startswith("| plain vs ngt |") for line in lines)
    report = json.loads((runs / "report.json").read_text())
    assert set(report["paper_table"]["significance"]["plain vs ngt"]["per_task"]) == {
        "CB", "ReCoRD"}
    assert (report["summary"]["ngt"]["CB"]["n"], report["summary"]["plain"]["CB"]["n"]) == (2, 1)

    assert cli.main(["params", "--config", str(config), "--num-classes", "3"]) == 0
    counts = json.loads(capsys.readouterr().out)
    layer = 4 * (8 * 8 + 8) + 2 * 16 + (8 * 16 + 16) + (16 * 8 + 8)  # one BERT layer of width 8
    assert counts["ngt"] - counts["plain"] == layer  # one gating layer


def test_nemot_runs_runs_ngt_configs(tmp_path, superglue_dir, vocab_file):
    from nemot.experiments import protocol, report as reporting
    from nemot.ngt import experiment

    n_vocab = len(vocab_file.read_text().split())
    config = write_config(tmp_path / "table1.toml", tmp_path, superglue_dir, vocab_file, n_vocab, 'reproduction = "ngt"\nseeds = [0]', """
[variants.no-gating-block]
gating = "no-gating-block"
[tasks.CB]
epochs = 1
""", name="table1")
    out = protocol.run_config(config, log=lambda *a: None)
    scores = json.loads((out / "no-gating-block" / "seed0" / protocol.METRICS).read_text())
    with open(out / "no-gating-block" / "seed0" / "CB" / "results.csv", newline="") as handle:
        (epoch,) = csv.DictReader(handle)
    assert scores == {"CB": pytest.approx(100 * np.mean([float(epoch["val_f1"]),
                                                         float(epoch["val_acc"])])),
                      "mean": pytest.approx(scores["CB"])}
    report, _ = reporting.report(out)
    assert "68.27" in report  # the paper's Mean of this variant, beside ours
    assert experiment.load(config).name == "table1"


def test_the_data_source_reaches_the_superglue_reader(tmp_path, monkeypatch):
    from nemot.ngt import train

    raw = {"name": "x", "output_dir": str(tmp_path), "seeds": [0],
           "variants": {"v": {"gating": "no-gating-block"}}, "tasks": {"RTE": {"epochs": 1}},
           "data": {"dir": str(tmp_path), "source": "tfds"}}
    exp = from_dict(raw)
    calls = []
    monkeypatch.setattr(superglue, "load_task", lambda *args: calls.append(args))
    train.load_splits(exp, "RTE")
    assert calls == [("RTE", "train", str(tmp_path), "tfds"), ("RTE", "val", str(tmp_path), "tfds")]
