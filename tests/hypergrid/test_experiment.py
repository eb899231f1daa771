"""Experiment files, one run through the shared trainer on the synthetic benchmark, the
paper's layout of a report, and the command line."""

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from nemot.data.synthetic import glue as synthetic
from nemot.hypergrid import cli, experiment

CONFIGS = sorted(Path(__file__).parents[2].joinpath("configs", "hypergrid").glob("*.toml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_every_config_parses_and_its_variants_are_rows_of_the_paper(path):
    exp = experiment.load(path)
    assert experiment.variants(exp)
    for name in experiment.variants(exp):
        settings = exp.settings(name)
        assert settings["train"]["steps"] % settings["train"]["steps_per_epoch"] == 0
        if exp.name != "tiny":
            assert experiment.PAPER.get(f"{exp.table}/{name}"), (path.name, name)


def test_table_settings_follow_the_paper():
    t4 = experiment.load(CONFIGS[[p.stem for p in CONFIGS].index("table4")])
    assert t4.train["learning_rate"] == 1e-3 and t4.train["batch_size"] == 128
    assert t4.train["steps"] == 100_000 and t4.train["freeze"] == ["backbone.token_embedding"]
    assert t4.settings("baseline")["hypergrid"] is None
    assert t4.settings("OG16")["hypergrid"] == {"mode": "OG", "gates": 16,
                                                "conditioning": "self_attention"}  # no grid
    for path in CONFIGS:  # T′ from the layers' own self-attention: no new attention weights
        assert experiment.load(path).hypergrid["conditioning"] == "self_attention", path.name
    t3 = experiment.load(CONFIGS[[p.stem for p in CONFIGS].index("table3")])
    large = t3.settings("large_hgt")
    assert large["train"]["steps"] == 200_000 and large["train"]["select"] == "best_glue"
    assert large["backbone"] == "t5_large_multi" and large["hypergrid"]["mode"] == "LG"


BASE = {"reproduction": "hypergrid", "name": "t", "output_dir": "out", "seeds": [0],
        "model": {"backbone": "t5_base"}, "train": {"steps": 10, "steps_per_epoch": 5},
        "variants": {"LG": {"mode": "LG"}}}


@pytest.mark.parametrize("change,message", [
    ({"trian": {}}, r"t.toml: unknown key\(s\) \['trian'\]; expected some of"),
    ({"train": {"steps": 10, "steps_per_epoch": 3}}, r"t.toml: \[train\]: steps = 10: expected "
                                                     r"a multiple of steps_per_epoch \(3\)"),
    ({"train": {"steps": "10"}}, r"t.toml: \[train\]: steps = '10': expected an integer"),
    ({"variants": {"LG": {"mode": "LG", "grids": [1, 2]}}},
     r"t.toml: \[variants.LG\]: unknown key\(s\) \['grids'\]"),
    ({"data": {"tasks": ["glue/WNLI"]}}, r"t.toml: \[data\]: tasks = \['glue/WNLI'\]: "
                                         r"expected task keys"),
    ({"train": {"steps": 10, "steps_per_epoch": 5, "select": "best"}},
     r"t.toml: \[train\]: select = 'best': expected one of \['last', 'best_glue'\]"),
])
def test_bad_experiment_files_name_the_key(change, message):
    with pytest.raises(ValueError, match=message):
        experiment.from_dict({**BASE, **change}, source="t.toml")


def test_overrides_and_variant_settings():
    exp = experiment.from_dict(BASE, overrides=["train.steps=20", "hypergrid.grid=[4, 8]",
                                                "model.backbone=t5_small"])
    assert exp.train["steps"] == 20
    assert exp.settings("LG") == {"backbone": "t5_small", "tokenizer": "t5_small",
                                  "train": exp.train, "per_task": False,
                                  "hypergrid": {"grid": [4, 8], "mode": "LG"}}
    bad = {**BASE, "variants": {"b": {"hypergrid": False, "mode": "LG"}}}
    with pytest.raises(ValueError, match=r"variant 'b' has hypergrid = false but HyperGrid "
                                         r"options \['mode'\]"):
        experiment.from_dict(bad).settings("b")
    bad = {**BASE, "variants": {"b": {"per_task": True, "mode": "LG"}}}
    with pytest.raises(ValueError, match=r"variant 'b': per_task = True: expected true with "
                                         r"hypergrid = false"):
        experiment.from_dict(bad).settings("b")


def test_multi_model_baseline_fine_tunes_one_t5_per_task(tmp_path):
    """Table 1's Multi-Model (T5 PTFT) builds from its config and trains: a plain T5 per
    task in its own run directory, scored at its best dev epoch (one task here, 1 step;
    the averages over tasks are the next test's)."""
    data = synthetic.write_benchmark(tmp_path / "data", train_size=8, dev_size=4)
    exp = experiment.load(Path(__file__).parents[2] / "configs" / "hypergrid" / "table1.toml", [
        "model.backbone={ vocabulary_size = 128, num_layers = 2, num_heads = 2, hidden_dim = 32, "
        "intermediate_dim = 64 }", f"model.tokenizer='{data}'", "model.dropout=0.0",
        f"data.glue_dir='{data / 'glue'}'", f"output_dir='{tmp_path / 'runs'}'",
        "data.tasks=['glue/RTE']", "data.max_input_length=40", "train.steps=1",
        "train.steps_per_epoch=1", "train.batch_size=4", "train.run_eagerly=true",
        "train.mixed_precision=false", "train.verbose=0"])
    settings = exp.settings("multi_model")
    assert settings["per_task"] is True and settings["hypergrid"] is None
    run_dir = tmp_path / "runs" / "multi_model" / "seed0"
    scores = experiment.run_one(exp, "multi_model", 0, run_dir)
    rte = json.loads((run_dir / "glue_RTE" / "metrics.json").read_text())
    assert set(rte) == {"avg", "glue", "glue/RTE", "epoch"}  # a model of RTE alone
    assert (run_dir / "glue_RTE" / "model_last.keras").is_file()
    assert scores == {"glue": rte["glue"], "avg": rte["glue"], "glue/RTE": rte["glue/RTE"]}
    assert json.loads((run_dir / "metrics.json").read_text()) == scores


def test_per_task_runs_combine_by_the_benchmarks_rules():
    rows = {"glue/MNLI": {"glue": 80.0, "avg": 80.0, "glue/MNLI": 79.0, "glue/MNLI-mm": 81.0},
            "glue/RTE": {"glue": 60.0, "avg": 60.0, "glue/RTE": 60.0},
            "superglue/CB": {"superglue": 50.0, "avg": 50.0, "superglue/CB": 50.0}}
    assert experiment.combine_task_runs(rows) == {
        "glue": 70.0, "superglue": 50.0, "avg": 60.0, "glue/MNLI": 79.0, "glue/MNLI-mm": 81.0,
        "glue/RTE": 60.0, "superglue/CB": 50.0}


def test_run_one_trains_through_the_shared_trainer_and_scores_the_dev_sets(tmp_path):
    data = synthetic.write_benchmark(tmp_path / "data", train_size=32, dev_size=8)
    config = Path(__file__).parents[2] / "configs" / "hypergrid" / "tiny.toml"
    exp = experiment.load(config, [
        f"data.glue_dir='{data / 'glue'}'", f"data.superglue_dir='{data / 'superglue'}'",
        f"model.tokenizer='{data}'", f"output_dir='{tmp_path / 'runs'}'",
        "data.tasks=['glue/RTE', 'superglue/CB']", "data.max_input_length=40",
        "train.steps=2", "train.steps_per_epoch=2", "train.run_eagerly=true"])
    run_dir = tmp_path / "runs" / "LG" / "seed0"
    scores = experiment.run_one(exp, "LG", 0, run_dir)
    assert set(scores) == {"avg", "glue", "superglue", "glue/RTE", "superglue/CB", "epoch"}
    assert scores["epoch"] == 1 and 0 <= scores["superglue/CB"] <= 100
    assert scores["avg"] == pytest.approx((scores["glue"] + scores["superglue"]) / 2)
    assert json.loads((run_dir / "metrics.json").read_text()) == scores
    assert (run_dir / "model_last.keras").is_file()
    rows = (run_dir / "results.csv").read_text().splitlines()
    assert len(rows) == 2 and "val_superglue/CB" in rows[0]
    assert 'variant = "LG"' in (run_dir / "config.toml").read_text()


def write_runs(directory, variant, metrics):
    for seed, values in enumerate(metrics):
        run = directory / variant / f"seed{seed}"
        run.mkdir(parents=True)
        (run / "metrics.json").write_text(json.dumps(values))


def test_paper_table_puts_ours_beside_the_paper(tmp_path):
    manifest = {"name": "t", "table": "table4", "variants": ["baseline", "LG"]}
    write_runs(tmp_path, "LG", [{"glue": 60.0, "superglue": 40.0, "avg": avg}
                                for avg in (50.0, 52.0)])
    text, data = experiment.paper_table(tmp_path, manifest)
    lines = text.splitlines()
    best = next(line for line in lines if line.startswith("| baseline (max) | avg"))
    assert "| 79.40 |" in best
    lg_avg = next(line for line in lines if line.startswith("| LG | avg |"))
    assert f"51.00 ± {np.std([50.0, 52.0], ddof=1):.2f} (n=2)" in lg_avg and "80.10" in lg_avg
    baseline = next(line for line in lines if line.startswith("| baseline | avg |"))
    assert "79.40 ± 0.091" in baseline and "| – |" in baseline  # no runs yet
    assert "compare them only with the paper's averages" in text
    assert "QNLI 81.2 / RTE 84.2 look garbled" in text
    assert data["LG"]["avg"] == {"values": [50.0, 52.0], "paper": 80.10, "paper_sd": None}
    # Table 4's Base (Max): the baseline run with the best avg
    write_runs(tmp_path, "baseline", [{"glue": glue, "superglue": 70.0, "avg": (glue + 70.0) / 2}
                                      for glue in (85.0, 86.0, 84.0)])
    best = [line for line in experiment.paper_table(tmp_path, manifest)[0].splitlines()
            if line.startswith("| baseline (max)")]
    assert "86.00 (n=1)" in best[0] and "85.11" in best[0] and "78.00 (n=1)" in best[-1]
    # runs on generated data: no paper numbers, nor notes on them
    text, _ = experiment.paper_table(tmp_path, {**manifest, "synthetic": True})
    assert "80.10" not in text and "79.40" not in text and "garbled" not in text


def test_command_line(tmp_path, capsys):
    parser = argparse.ArgumentParser(prog="nemot")
    cli.add_parser(parser.add_subparsers(dest="command", required=True))
    config = tmp_path / "exp.toml"
    config.write_text('reproduction = "hypergrid"\nname = "t"\noutput_dir = "%s"\ntable = "table4"\n'
                      '[model]\nbackbone = { vocabulary_size = 32, num_layers = 1, num_heads = 2, '
                      'hidden_dim = 8, intermediate_dim = 16 }\n[hypergrid]\ngrid = [4, 4]\n'
                      '[variants.baseline]\nhypergrid = false\n[variants.LG]\n'
                      'mode = "LG"\n' % tmp_path)
    args = parser.parse_args(["hypergrid", "params", "--config", str(config)])
    assert args.func(args) == 0
    counts = json.loads(capsys.readouterr().out)
    d, tasks = 8, 16
    assert counts["baseline"]["added"] == 0
    assert counts["LG"]["added"] == 2 * (d * 4 + 4 + tasks * d)  # the layer's own attention
    assert counts["LG"]["paper"] == 2 * (d * 4 + 4) == counts["LG"]["grids"]
    # `report DIR`: the protocol's report, with the paper's layout of config's table
    manifest = {"reproduction": "hypergrid", "name": "t", "table": "table4",
                "config": str(config), "overrides": [], "variants": ["baseline", "LG"],
                "seeds": [0], "synthetic": False}
    (tmp_path / "runs.json").write_text(json.dumps(manifest))
    write_runs(tmp_path, "LG", [{"glue": 60.0, "superglue": 40.0, "avg": 50.0}])
    args = parser.parse_args(["hypergrid", "report", str(tmp_path)])
    assert args.func(args) == 0
    printed = capsys.readouterr().out
    assert "## The paper's layout" in printed and "| LG | avg | 50.00 (n=1) | 80.10 |" in printed
    assert (tmp_path / "report.json").is_file()


def test_params_of_a_table_runs_offline_beside_the_papers_formula(capsys):
    """``nemot hypergrid params`` on a preset's sizes, with no download (none is possible
    here): T5-base is 222.9M; LG 32×128 on FFN2 adds 24 × (d_m·d_r + d_c) grid weights and
    24 task embeddings of 16 tasks; the Multi-Model serves 16 T5s (the paper's θ = 3.2B)."""
    parser = argparse.ArgumentParser(prog="nemot")
    cli.add_parser(parser.add_subparsers(dest="command", required=True))
    table4 = Path(__file__).parents[2] / "configs" / "hypergrid" / "table4.toml"
    args = parser.parse_args(["hypergrid", "params", "--config", str(table4), "--variants",
                              "baseline", "LG", "L2"])
    assert args.func(args) == 0
    counts = json.loads(capsys.readouterr().out)
    t5_base = 222_903_552
    assert counts["baseline"] == {"total": t5_base, "models": 1, "added": 0, "grids": 0,
                                  "task_embeddings": 0, "attention": 0, "hypergrids": 0}
    lg = counts["LG"]
    assert lg["paper_formula"] == "24 × (d_m·d_r + d_c)"
    assert lg["grids"] == lg["paper"] == 24 * (768 * 32 + 128)
    assert lg["added"] == lg["paper"] + 24 * 16 * 768 and lg["total"] == t5_base + lg["added"]
    l2 = counts["L2"]
    assert l2["grids"] == l2["paper"] == 24 * (768 * 32 + 768 * 128)
    assert l2["paper_as_printed"] == 24 * (768 * 32 + 3072 * 128)  # d_f·d_c as printed
    table1 = Path(__file__).parents[2] / "configs" / "hypergrid" / "table1.toml"
    args = parser.parse_args(["hypergrid", "params", "--config", str(table1), "--variants",
                              "multi_model"])
    assert args.func(args) == 0
    assert json.loads(capsys.readouterr().out)["multi_model"]["total"] == 16 * t5_base


def test_data_sources_are_checked_and_reach_the_readers(tmp_path, monkeypatch):
    from nemot.data.benchmarks import mixture as data
    from nemot.hypergrid import experiment as hg

    config = next(Path(__file__).resolve().parents[2].glob("configs/hypergrid/tiny.toml"))
    with pytest.raises(ValueError, match=r"\[data\]: glue_source = 'bucket'"):
        hg.load(config, ['data.glue_source="bucket"'])
    seen = []
    monkeypatch.setattr(data.glue, "read_task",
                        lambda task, d, split, source: seen.append((task, source)) or [])
    monkeypatch.setattr(data.superglue, "load_task",
                        lambda task, split, d, source: seen.append((task, source)) or None)
    monkeypatch.setattr(data.text_to_text, "superglue_examples", lambda data: [])
    tokenizer = type("Tokenizer", (), {"token_to_id": lambda self, token: 1})()
    data.load_task("glue/RTE", tokenizer, glue_dir=None, glue_source="hub", dev=False,
                   max_input_length=8)
    data.load_task("superglue/CB", tokenizer, superglue_dir=str(tmp_path), superglue_source="tfds",
                   dev=False, max_input_length=8)
    assert seen == [("RTE", "hub"), ("CB", "tfds")]


def test_the_synthetic_smoke_config_is_marked_so_its_reports_show_no_paper_numbers():
    from nemot.experiments import protocol

    tiny = CONFIGS[0].parent / "tiny.toml"
    module, experiment = protocol.load(tiny)
    assert protocol.is_synthetic(module, experiment, tiny)
    table4 = CONFIGS[0].parent / "table4.toml"
    assert not protocol.is_synthetic(*protocol.load(table4), table4)
