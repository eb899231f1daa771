"""The multi-seed runner (nemot.runs): its statistics against scipy and hand formulas,
and `nemot runs` end to end over two seeds, in this process and in separate processes.

This module is also the experiment module of the tiny reproduction the end-to-end tests
run (``reproduction = "tests.test_runs"``): its runs return made-up metrics at once."""

import json
import math
import statistics
import tomllib
import types
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from nemot import runs, runs_cli

A = [0.7790, 0.7712, 0.7845, 0.7801, 0.7766, 0.7838, 0.7759]
B = [0.7749, 0.7601, 0.7812, 0.7688, 0.7702, 0.7655]

# ------------------------------------------------------ the tiny reproduction

PAPER = {"tiny/modulated": {"accuracy": 0.779}, "plain": {"accuracy": 0.775}}
PAPER_NOTES = {"tiny": "made-up numbers"}
BASELINE = "plain"
BASE = {"modulated": 0.80, "plain": 0.70, "other": 0.75}


def load(path, overrides=()):
    raw = tomllib.loads(Path(path).read_text())
    for text in overrides:
        key, value = text.split("=", 1)
        raw[key] = value
    table = {"table": raw["table"]} if "table" in raw else {}
    return types.SimpleNamespace(name=raw["name"], output_dir=raw["output_dir"],
                                 seeds=tuple(raw["seeds"]), variants=raw["variants"], **table)


def variants(experiment):
    return list(experiment.variants)


def run_one(experiment, variant, seed, run_dir):
    (Path(run_dir) / "trained.txt").write_text(f"{variant} {seed}")
    return {"accuracy": BASE[variant] + 0.01 * seed + 0.003 * seed ** 2, "loss": 1.0 + seed}


def tiny_config(tmp_path, seeds=(0, 1, 2), head="", variants=("modulated", "plain")):
    path = tmp_path / "tiny.toml"
    path.write_text(f'{head}reproduction = "tests.test_runs"\nname = "tiny"\n'
                    f'output_dir = "{tmp_path / "out"}"\nseeds = {list(seeds)}\n'
                    + "".join(f"[variants.{v}]\n" for v in variants))
    return path


# ---------------------------------------------------------------- statistics

def test_summary_is_mean_sd_and_the_t_interval():
    s = runs.summarize(A)
    assert s.n == len(A)
    assert s.mean == pytest.approx(np.mean(A), abs=1e-12)
    assert s.sd == pytest.approx(np.std(A, ddof=1), abs=1e-12)
    low, high = stats.t.interval(0.95, len(A) - 1, loc=np.mean(A), scale=stats.sem(A))
    assert (s.ci_low, s.ci_high) == pytest.approx((low, high), abs=1e-12)
    one = runs.summarize([0.5])
    assert one.mean == 0.5 and math.isnan(one.sd) and math.isnan(one.ci_low)


def test_welch_matches_the_welch_satterthwaite_formulas_and_scipy():
    va, vb = np.var(A, ddof=1) / len(A), np.var(B, ddof=1) / len(B)
    t = (np.mean(A) - np.mean(B)) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(A) - 1) + vb ** 2 / (len(B) - 1))
    p = 2 * stats.t.sf(abs(t), df)
    assert runs.welch(A, B) == pytest.approx((t, df, p), rel=1e-10)
    assert runs.welch(A, B)[2] == pytest.approx(
        stats.ttest_ind(A, B, equal_var=False).pvalue, rel=1e-12)
    assert all(math.isnan(v) for v in runs.welch(A, [0.7]))


def test_hedges_g_by_hand():
    # means 2.5 and 3.5, both variances 5/3: d = -1 / sqrt(5/3), J = 1 - 3 / 23
    assert runs.hedges_g([1, 2, 3, 4], [2, 3, 4, 5]) == pytest.approx(
        -1 / math.sqrt(5 / 3) * (1 - 3 / 23), rel=1e-12)
    assert math.isnan(runs.hedges_g([1, 1], [1, 1]))


# ------------------------------------------------------------- end to end

def read_metrics(out):
    return {(p.parent.parent.name, p.parent.name): json.loads(p.read_text())
            for p in sorted(out.glob("*/seed*/metrics.json"))}


def test_runs_over_two_seeds_then_reports_beside_the_paper(tmp_path, capsys):
    config = tiny_config(tmp_path)
    assert runs_cli.main(["--config", str(config), "--seeds", "2"]) == 0
    out = tmp_path / "out"
    metrics = read_metrics(out)
    assert sorted(metrics) == [("modulated", "seed0"), ("modulated", "seed1"),
                               ("plain", "seed0"), ("plain", "seed1")]
    assert metrics[("plain", "seed1")] == {"accuracy": pytest.approx(0.713), "loss": 2.0}
    assert (out / "plain" / "seed1" / "trained.txt").read_text() == "plain 1"
    printed = capsys.readouterr().out

    modulated, plain = [0.80, 0.813], [0.70, 0.713]
    s = runs.summarize(modulated)
    assert f"| modulated | 2 | {s.mean:.4f} ± {s.sd:.4f} | [{s.ci_low:.4f}, {s.ci_high:.4f}] " \
           "| 0.7790 |" in printed
    assert "| plain | 2 | 0.7065 ± 0.0092 |" in printed and "| 0.7750 |" in printed
    p = stats.ttest_ind(modulated, plain, equal_var=False).pvalue
    assert "| modulated vs plain | 0.1000 |" in printed and f"| {p:.4f} |" in printed
    assert "Paper: made-up numbers" in printed

    # report DIR reads the same files; a second run finds nothing to do
    assert runs_cli.main(["report", str(out)]) == 0
    assert printed.endswith(capsys.readouterr().out)
    data = json.loads((out / "report.json").read_text())
    assert data["tests"]["accuracy"]["modulated vs plain"]["p"] == pytest.approx(p)
    log = []
    runs.run_config(config, seeds=[0, 1], log=log.append)
    assert log[0].startswith("tiny: 0 run(s) to do of 4")
    # runs go seed by seed, so an interrupted experiment has every variant
    log = []
    runs.run_config(config, seeds=[2, 3], log=log.append)
    assert [line.split(":")[0].strip() for line in log[1:5]] == [
        "modulated seed 2", "plain seed 2", "modulated seed 3", "plain seed 3"]


def test_runs_on_generated_data_report_no_paper_numbers(tmp_path):
    config = tiny_config(tmp_path, seeds=[0, 1], head="synthetic = true\n")
    out = runs.run_config(config, log=lambda line: None)
    text, data = runs.report(out)
    assert "**Synthetic data**" in text and "Paper: made-up" not in text
    assert "| 0.7790 |" not in text and "| modulated | 2 |" in text and "| – |" in text
    assert data["summary"]["modulated"]["accuracy"]["paper"] is None
    assert data["manifest"]["synthetic"] is True
    # the same directory cannot collect runs on real data, nor the other way round
    real = tiny_config(tmp_path, seeds=[2])
    with pytest.raises(ValueError, match="out: its runs read generated data; this config "
                                         "reads real data: give it another output_dir"):
        runs.run_config(real, log=lambda line: None)
    # `--set synthetic=true` marks runs of a real config too
    assert runs.is_synthetic(types.SimpleNamespace(), None, real, ["synthetic=true"])
    assert not runs.is_synthetic(types.SimpleNamespace(), None, real, ["seeds=[1]"])


def test_an_experiment_compares_with_the_paper_table_it_names(tmp_path):
    """An Experiment's ``table`` (HyperGrid's have one) picks the paper's numbers and notes
    in place of its name: an ablation named otherwise still compares with table "tiny"."""
    config = tiny_config(tmp_path, seeds=[0])
    config.write_text(config.read_text().replace('name = "tiny"',
                                                 'name = "ablation"\ntable = "tiny"'))
    text, data = runs.report(runs.run_config(config, log=lambda line: None))
    assert data["manifest"]["table"] == "tiny" and data["manifest"]["name"] == "ablation"
    assert "| 0.7790 |" in text and "Paper: made-up numbers" in text


def test_separate_processes_write_the_same_runs(tmp_path):
    config = tiny_config(tmp_path, seeds=[3, 4])
    runs.run_config(config, jobs=2, variants=["plain"], log=lambda line: None)
    metrics = read_metrics(tmp_path / "out")
    assert sorted(metrics) == [("plain", "seed3"), ("plain", "seed4")]
    assert metrics[("plain", "seed4")]["accuracy"] == pytest.approx(0.70 + 0.04 + 0.048)
    manifest = json.loads((tmp_path / "out" / "runs.json").read_text())
    assert manifest["seeds"] == [3, 4] and manifest["variants"] == ["modulated", "plain"]


def test_each_run_process_gets_its_share_of_the_cores_as_tensorflow_threads():
    from nemot.experiments.protocol import run_environment

    env = run_environment(2, {"PATH": "/bin"}, cpus=2)
    assert env["TF_NUM_INTRAOP_THREADS"] == env["TF_NUM_INTEROP_THREADS"] == "1"
    assert env["PATH"] == "/bin"
    assert run_environment(3, {}, cpus=16)["TF_NUM_INTRAOP_THREADS"] == "5"
    assert run_environment(4, {}, cpus=2)["TF_NUM_INTRAOP_THREADS"] == "1"   # at least one
    assert run_environment(2, {}, cpus=None)["TF_NUM_INTRAOP_THREADS"] == "1"
    # what the user set wins
    assert run_environment(2, {"TF_NUM_INTRAOP_THREADS": "4"}, cpus=2)[
        "TF_NUM_INTRAOP_THREADS"] == "4"


def test_every_variant_is_tested_against_the_baseline_as_variant_minus_baseline(tmp_path):
    # The baseline comes first in the config; its pairs still read "X vs plain", X - plain.
    config = tiny_config(tmp_path, seeds=[0, 1], variants=("plain", "modulated", "other"))
    _, data = runs.report(runs.run_config(config, log=lambda line: None))
    tests = data["tests"]["accuracy"]
    assert list(tests) == ["modulated vs plain", "other vs plain", "modulated vs other"]
    assert tests["modulated vs plain"]["difference"] == pytest.approx(0.10)
    assert tests["other vs plain"]["t"] > 0 and tests["other vs plain"]["hedges_g"] > 0


def test_the_report_is_valid_json_and_draws_the_figure(tmp_path):
    out = runs.run_config(tiny_config(tmp_path, seeds=[0]), log=lambda line: None)
    text = runs.write_report(out)

    def refuse(constant):
        raise ValueError(f"{constant} in report.json")

    data = json.loads((out / "report.json").read_text(), parse_constant=refuse)
    one = data["summary"]["plain"]["accuracy"]
    assert one["n"] == 1 and one["sd"] is None and one["ci_low"] is None  # NaN -> null
    assert data["tests"]["accuracy"]["modulated vs plain"]["p"] is None
    assert runs.json_safe({"a": [math.inf, 1.0], "b": math.nan}) == {"a": [None, 1.0],
                                                                     "b": None}
    figure = out / runs.FIGURE
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and runs.FIGURE in text


def test_the_figure_shows_every_metric_and_score_against_cost(tmp_path):
    from matplotlib.image import imread

    summary = {v: {m: {"n": 3, "mean": mean, "sd": 0.01, "ci_low": mean - 0.02,
                       "ci_high": mean + 0.02} for m, mean in metrics.items()}
               for v, metrics in {"none": {"score": 0.5, "added_parameters": 0.0},
                                  "pals": {"score": 0.55, "added_parameters": 5000.0}}.items()}
    data = {"manifest": {"name": "x"}, "summary": summary}
    two = imread(runs.plot_report(data, tmp_path / "two.png", baseline="none"))
    summary_without_cost = {v: {"score": m["score"]} for v, m in summary.items()}
    one = imread(runs.plot_report({"manifest": {"name": "x"}, "summary": summary_without_cost},
                                  tmp_path / "one.png"))
    # two metrics and the score-against-cost panel: three panels side by side; one without
    assert two.shape[1] > 2.5 * one.shape[1]


def test_the_report_draws_each_variants_distribution_over_seeds(tmp_path):
    from matplotlib.image import imread

    from nemot.experiments import report

    out = runs.run_config(tiny_config(tmp_path, variants=("modulated", "plain", "other")),
                          log=lambda line: None)
    text = runs.write_report(out)
    # no DISTRIBUTION_METRIC in this recipe: the first metric reported, one panel a variant
    assert "![accuracy over seeds, per variant](distributions.png)" in text
    three = imread(out / report.DISTRIBUTIONS)

    def data(values):
        return {"manifest": {"name": "x"},
                "summary": {v: {"accuracy": {"values": x}, "loss": {"values": [1.0]}}
                            for v, x in values.items()}}

    # a diverged run (NaN) is left out, not an error; a variant with nothing finite is not
    # drawn; the recipe's metric is drawn where it names one
    path = tmp_path / "d.png"
    assert report.plot_distributions(data({"a": [0.7, math.nan, 0.8], "b": [math.nan]}),
                                     path, "accuracy") == "accuracy"
    assert imread(path).shape[0] < 0.6 * three.shape[0]
    assert report.plot_distributions(data({"a": [math.nan]}), tmp_path / "e.png") is None
    assert not (tmp_path / "e.png").exists()
    assert report.plot_distributions(data({"a": [0.7]}), tmp_path / "f.png", "loss") == "loss"


def test_bad_configs_and_directories_are_named(tmp_path):
    config = tiny_config(tmp_path)
    with pytest.raises(ValueError, match="variants \\['other'\\]: expected some of"):
        runs.run_config(config, variants=["other"])
    no_key = tmp_path / "no_key.toml"
    no_key.write_text('name = "x"\n')
    with pytest.raises(ValueError, match="no_key.toml: reproduction: expected a top-level key"):
        runs.load(no_key)
    unknown = tmp_path / "unknown.toml"
    unknown.write_text('reproduction = "nope"\n')
    with pytest.raises(ValueError, match="reproduction 'nope': expected one of \\[.*'modact'"):
        runs.load(unknown)
    with pytest.raises(ValueError, match="cfg: unknown key\\(s\\) \\['trian'\\]; expected some of"):
        runs.protocol_keys({"name": "x", "output_dir": "o", "trian": {}}, ("train",), "cfg")
    with pytest.raises(ValueError, match="cfg: seeds: expected a list of integers, got 3"):
        runs.protocol_keys({"name": "x", "output_dir": "o", "seeds": 3}, (), "cfg")
    with pytest.raises(ValueError, match="cfg: override 'loss.x=1': expected a top-level key"):
        runs.apply_overrides({}, ["loss.x=1"], ("train",), "cfg")
    assert runs.apply_overrides({"train": {"a": 1}}, ["train.b=[1, 2]", "seeds=[4]"],
                                ("train",)) == {"train": {"a": 1, "b": [1, 2]}, "seeds": [4]}
    raw = {"variants": {"pals": {"hidden_size": 204}}}
    assert runs.apply_overrides(raw, ["variants.pals.hidden_size=6"], ()) == {
        "variants": {"pals": {"hidden_size": 6}}}
    assert raw["variants"]["pals"]["hidden_size"] == 204  # the config itself is untouched
    with pytest.raises(ValueError, match="cfg: override 'variants.x.y=1': no "
                                         "\\[variants.x\\]; expected one of \\['pals'\\]"):
        runs.apply_overrides(raw, ["variants.x.y=1"], (), "cfg")
    with pytest.raises(FileNotFoundError, match="no runs.json"):
        runs.report(tmp_path)
    out = tmp_path / "out"
    runs.run_config(config, seeds=[0], variants=["plain"], log=lambda line: None)
    (out / "plain" / "seed0" / "metrics.json").write_text("{not json")
    with pytest.raises(ValueError, match="seed0/metrics.json: not valid JSON"):
        runs.report(out)
