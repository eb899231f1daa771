"""The multi-seed runner (nemot.experiments): its statistics against scipy and hand formulas,
and `nemot runs` end to end over two seeds, in this process and in separate processes.

This module is also the experiment module of the tiny reproduction the end-to-end tests
run (``reproduction = "tests.test_runs"``): its runs return made-up metrics at once."""

import json
import math
import re
import statistics
import tomllib
import types
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from nemot.experiments import cli as runs_cli
from nemot.experiments import protocol, report

A = [0.7790, 0.7712, 0.7845, 0.7801, 0.7766, 0.7838, 0.7759]
B = [0.7749, 0.7601, 0.7812, 0.7688, 0.7702, 0.7655]

# ------------------------------------------------------ the tiny reproduction

PAPER = {"tiny/modulated": {"accuracy": 0.779}, "plain": {"accuracy": 0.775}}
PAPER_NOTES = {"tiny": "made-up numbers"}
BASELINE = "plain"
BASE = {"modulated": 0.80, "plain": 0.70, "other": 0.75}


def load(path, overrides=()):
    raw = protocol.apply_overrides(tomllib.loads(Path(path).read_text()), overrides, ("train",))
    table = {"table": raw["table"]} if "table" in raw else {}
    return types.SimpleNamespace(name=raw["name"], output_dir=raw["output_dir"],
                                 seeds=tuple(raw["seeds"]), variants=raw["variants"],
                                 train=raw.get("train", {}), **table)


def variants(experiment):
    return list(experiment.variants)


def resolved_toml(experiment, variant, seed):
    return protocol.resolved_toml("tests.test_runs", experiment.name, variant, seed,
                              {"train": experiment.train})


def run_one(experiment, variant, seed, run_dir):
    (Path(run_dir) / "trained.txt").write_text(f"{variant} {seed}")
    return {"accuracy": BASE[variant] + 0.01 * seed + 0.003 * seed ** 2
            + 0.05 * experiment.train.get("epochs", 0), "loss": 1.0 + seed}


def tiny_config(tmp_path, seeds=(0, 1, 2), head="", variants=("modulated", "plain")):
    path = tmp_path / "tiny.toml"
    path.write_text(f'{head}reproduction = "tests.test_runs"\nname = "tiny"\n'
                    f'output_dir = "{tmp_path / "out"}"\nseeds = {list(seeds)}\n'
                    + "".join(f"[variants.{v}]\n" for v in variants))
    return path


# ---------------------------------------------------------------- statistics

def test_summary_is_mean_sd_and_the_t_interval():
    s = report.summarize(A)
    assert s.n == len(A)
    assert s.mean == pytest.approx(np.mean(A), abs=1e-12)
    assert s.sd == pytest.approx(np.std(A, ddof=1), abs=1e-12)
    low, high = stats.t.interval(0.95, len(A) - 1, loc=np.mean(A), scale=stats.sem(A))
    assert (s.ci_low, s.ci_high) == pytest.approx((low, high), abs=1e-12)
    one = report.summarize([0.5])
    assert one.mean == 0.5 and math.isnan(one.sd) and math.isnan(one.ci_low)


def test_welch_matches_the_welch_satterthwaite_formulas_and_scipy():
    va, vb = np.var(A, ddof=1) / len(A), np.var(B, ddof=1) / len(B)
    t = (np.mean(A) - np.mean(B)) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(A) - 1) + vb ** 2 / (len(B) - 1))
    p = 2 * stats.t.sf(abs(t), df)
    assert report.welch(A, B) == pytest.approx((t, df, p), rel=1e-10)
    assert report.welch(A, B)[2] == pytest.approx(
        stats.ttest_ind(A, B, equal_var=False).pvalue, rel=1e-12)
    assert all(math.isnan(v) for v in report.welch(A, [0.7]))


def test_hedges_g_by_hand():
    # means 2.5 and 3.5, both variances 5/3: d = -1 / sqrt(5/3), J = 1 - 3 / 23
    assert report.hedges_g([1, 2, 3, 4], [2, 3, 4, 5]) == pytest.approx(
        -1 / math.sqrt(5 / 3) * (1 - 3 / 23), rel=1e-12)
    assert math.isnan(report.hedges_g([1, 1], [1, 1]))


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
    s = report.summarize(modulated, kind="proportion")  # an accuracy: a logit interval
    assert f"| modulated | 2 | {s.mean:.4f} | {s.sd:.4f} | [{s.ci_low:.4f}, {s.ci_high:.4f}] " \
           "| 0.7790 |" in printed
    assert "| plain | 2 | 0.7065 | 0.0092 |" in printed and "| 0.7750 |" in printed
    p = stats.ttest_ind(modulated, plain, equal_var=False).pvalue
    assert "| modulated vs plain | 0.1000 |" in printed and f"| {p:.4f} |" in printed
    assert "Paper: made-up numbers" in printed

    # report DIR reads the same files; a second run finds nothing to do
    assert runs_cli.main(["report", str(out)]) == 0
    assert printed.endswith(capsys.readouterr().out)
    data = json.loads((out / "report.json").read_text())
    assert data["tests"]["accuracy"]["modulated vs plain"]["p"] == pytest.approx(p)
    log = []
    protocol.run_config(config, seeds=[0, 1], log=log.append)
    assert log[0].startswith("tiny: 0 run(s) to do of 4")
    # runs go seed by seed, so an interrupted experiment has every variant
    log = []
    protocol.run_config(config, seeds=[2, 3], log=log.append)
    assert [line.split(":")[0].strip() for line in log[1:5]] == [
        "modulated seed 2", "plain seed 2", "modulated seed 3", "plain seed 3"]


def test_runs_on_generated_data_report_no_paper_numbers(tmp_path):
    config = tiny_config(tmp_path, seeds=[0, 1], head="synthetic = true\n")
    out = protocol.run_config(config, log=lambda line: None)
    text, data = report.report(out)
    assert "**Synthetic data**" in text and "Paper: made-up" not in text
    assert "| 0.7790 |" not in text and "| modulated | 2 |" in text and "| – |" in text
    assert data["summary"]["modulated"]["accuracy"]["paper"] is None
    assert data["manifest"]["synthetic"] is True
    # the same directory cannot collect runs on real data, nor the other way round
    real = tiny_config(tmp_path, seeds=[2])
    with pytest.raises(ValueError, match="out: its runs read generated data; this config "
                                         "reads real data: give it another output_dir"):
        protocol.run_config(real, log=lambda line: None)
    # `--set synthetic=true` marks runs of a real config too
    assert protocol.is_synthetic(types.SimpleNamespace(), None, real, ["synthetic=true"])
    assert not protocol.is_synthetic(types.SimpleNamespace(), None, real, ["seeds=[1]"])


def test_an_experiment_compares_with_the_paper_table_it_names(tmp_path):
    """An Experiment's ``table`` (HyperGrid's have one) picks the paper's numbers and notes
    in place of its name: an ablation named otherwise still compares with table "tiny"."""
    config = tiny_config(tmp_path, seeds=[0])
    config.write_text(config.read_text().replace('name = "tiny"',
                                                 'name = "ablation"\ntable = "tiny"'))
    text, data = report.report(protocol.run_config(config, log=lambda line: None))
    assert data["manifest"]["table"] == "tiny" and data["manifest"]["name"] == "ablation"
    assert "| 0.7790 |" in text and "Paper: made-up numbers" in text


def test_separate_processes_write_the_same_runs(tmp_path):
    config = tiny_config(tmp_path, seeds=[3, 4])
    protocol.run_config(config, jobs=2, variants=["plain"], log=lambda line: None)
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
    _, data = report.report(protocol.run_config(config, log=lambda line: None))
    tests = data["tests"]["accuracy"]
    assert list(tests) == ["modulated vs plain", "other vs plain", "modulated vs other"]
    assert tests["modulated vs plain"]["difference"] == pytest.approx(0.10)
    assert tests["other vs plain"]["t"] > 0 and tests["other vs plain"]["hedges_g"] > 0


def test_the_report_is_valid_json_and_draws_the_figure(tmp_path):
    out = protocol.run_config(tiny_config(tmp_path, seeds=[0]), log=lambda line: None)
    text = report.write_report(out)

    def refuse(constant):
        raise ValueError(f"{constant} in report.json")

    data = json.loads((out / "report.json").read_text(), parse_constant=refuse)
    one = data["summary"]["plain"]["accuracy"]
    assert one["n"] == 1 and one["sd"] is None and one["ci_low"] is None  # NaN -> null
    assert data["tests"]["accuracy"]["modulated vs plain"]["p"] is None
    assert "No test (–) where a row has one run." in text
    assert report.json_safe({"a": [math.inf, 1.0], "b": math.nan}) == {"a": [None, 1.0],
                                                                     "b": None}
    figure = out / report.FIGURE
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and report.FIGURE in text


def test_the_figure_shows_every_metric_and_score_against_cost(tmp_path):
    from matplotlib.image import imread

    summary = {v: {m: {"n": 3, "mean": mean, "sd": 0.01, "ci_low": mean - 0.02,
                       "ci_high": mean + 0.02} for m, mean in metrics.items()}
               for v, metrics in {"none": {"score": 0.5, "added_parameters": 0.0},
                                  "pals": {"score": 0.55, "added_parameters": 5000.0}}.items()}
    data = {"manifest": {"name": "x"}, "summary": summary}
    two = imread(report.plot_report(data, tmp_path / "two.png", baseline="none"))
    summary_without_cost = {v: {"score": m["score"]} for v, m in summary.items()}
    one = imread(report.plot_report({"manifest": {"name": "x"}, "summary": summary_without_cost},
                                  tmp_path / "one.png"))
    # two metrics and the score-against-cost panel: three panels side by side; one without
    assert two.shape[1] > 2.5 * one.shape[1]


def test_the_report_draws_each_variants_distribution_over_seeds(tmp_path):
    from matplotlib.image import imread

    from nemot.experiments import report

    out = protocol.run_config(tiny_config(tmp_path, variants=("modulated", "plain", "other")),
                          log=lambda line: None)
    text = report.write_report(out)
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
        protocol.run_config(config, variants=["other"])
    no_key = tmp_path / "no_key.toml"
    no_key.write_text('name = "x"\n')
    with pytest.raises(ValueError, match="no_key.toml: reproduction: expected a top-level key"):
        protocol.load(no_key)
    unknown = tmp_path / "unknown.toml"
    unknown.write_text('reproduction = "nope"\n')
    with pytest.raises(ValueError, match="reproduction 'nope': expected one of \\[.*'modact'"):
        protocol.load(unknown)
    with pytest.raises(ValueError, match="cfg: unknown key\\(s\\) \\['trian'\\]; expected some of"):
        protocol.protocol_keys({"name": "x", "output_dir": "o", "trian": {}}, ("train",), "cfg")
    with pytest.raises(ValueError, match="cfg: seeds: expected a list of integers, got 3"):
        protocol.protocol_keys({"name": "x", "output_dir": "o", "seeds": 3}, (), "cfg")
    with pytest.raises(ValueError, match="cfg: override 'loss.x=1': expected a top-level key"):
        protocol.apply_overrides({}, ["loss.x=1"], ("train",), "cfg")
    assert protocol.apply_overrides({"train": {"a": 1}}, ["train.b=[1, 2]", "seeds=[4]"],
                                ("train",)) == {"train": {"a": 1, "b": [1, 2]}, "seeds": [4]}
    raw = {"variants": {"pals": {"hidden_size": 204}}}
    assert protocol.apply_overrides(raw, ["variants.pals.hidden_size=6"], ()) == {
        "variants": {"pals": {"hidden_size": 6}}}
    assert raw["variants"]["pals"]["hidden_size"] == 204  # the config itself is untouched
    with pytest.raises(ValueError, match="cfg: override 'variants.x.y=1': no "
                                         "\\[variants.x\\]; expected one of \\['pals'\\]"):
        protocol.apply_overrides(raw, ["variants.x.y=1"], (), "cfg")
    with pytest.raises(FileNotFoundError, match="no runs.json"):
        report.report(tmp_path)
    out = tmp_path / "out"
    protocol.run_config(config, seeds=[0], variants=["plain"], log=lambda line: None)
    (out / "plain" / "seed0" / "metrics.json").write_text("{not json")
    with pytest.raises(ValueError, match="seed0/metrics.json: not valid JSON"):
        report.report(out)


# ------------------------------------------------ finished runs are reused only alike

def test_a_changed_override_is_refused_and_the_report_never_pools_settings(tmp_path, capsys):
    config = tiny_config(tmp_path, seeds=[0, 1])
    out = tmp_path / "out"
    quiet = {"log": lambda line: None}
    protocol.run_config(config, overrides=["train.epochs=2"], **quiet)
    assert tomllib.loads((out / "plain" / "seed0" / "config.toml").read_text())[
        "train"] == {"epochs": 2}
    before = read_metrics(out)
    capsys.readouterr()
    # The same folder, another value: a one-line refusal naming the key and the run.
    assert runs_cli.main(["--config", str(config), "--set", "train.epochs=1"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith(f"error: {out / 'modulated' / 'seed0'}")
    assert "differing in train.epochs" in error and "train.epochs = 2 (recorded), 1 (now)" in error
    assert "--force" in error and "--keep-stale" in error
    assert read_metrics(out) == before  # nothing ran, nothing was rewritten
    assert json.loads((out / "runs.json").read_text())["overrides"] == ["train.epochs=2"]

    # Kept knowingly: the new seed runs with epochs = 1, and no mean pools the two settings.
    protocol.run_config(config, seeds=[0, 1, 2], overrides=["train.epochs=1"], keep_stale=True,
                    **quiet)
    text, data = report.report(out)
    rows = data["summary"]
    assert rows["plain (train.epochs = 2)"]["accuracy"]["n"] == 2
    assert rows["plain (train.epochs = 1)"]["accuracy"]["values"] == [pytest.approx(0.782)]
    assert "plain" not in rows
    assert "| train.epochs | `2` | `1` | `2` | `1` |" in text  # the header, from the runs
    assert "never pooled" in text

    # --force reruns every finished run from the start: one setting again, one row each.
    protocol.run_config(config, seeds=[0, 1, 2], overrides=["train.epochs=1"], force=True,
                    **quiet)
    text, data = report.report(out)
    assert list(data["summary"]) == ["modulated", "plain"]
    assert data["summary"]["plain"]["accuracy"]["n"] == 3
    assert data["settings"]["train.epochs"] == 1 and "| train.epochs | `1` |" in text
    assert "train.epochs=2" not in text  # the header is the runs', not an old command's


def test_runs_of_older_code_or_without_a_record_are_not_reused(tmp_path, monkeypatch):
    import sys

    config = tiny_config(tmp_path, seeds=[0])
    out = protocol.run_config(config, log=lambda line: None)
    assert json.loads((out / "plain" / "seed0" / "version.json").read_text()) == {
        "code_version": 1}
    monkeypatch.setattr(sys.modules[__name__], "CODE_VERSION", 2, raising=False)
    with pytest.raises(protocol.StaleRuns, match="code_version = 1 \\(recorded\\), 2 \\(now\\)"):
        protocol.run_config(config, log=lambda line: None)
    monkeypatch.undo()
    (out / "plain" / "seed0" / "config.toml").unlink()
    with pytest.raises(protocol.StaleRuns, match="plain/seed0: finished with other settings"):
        protocol.run_config(config, log=lambda line: None)
    # what only says how a run reports its progress is not compared
    assert not protocol.differences({"train.verbose": 0, "a": 1}, {"train.verbose": 2, "a": 1})
    assert protocol.differences({"a": 1, "m.vocab": 5}, {"a": 1}, derived=("m.vocab",)) == []
    assert protocol.differences({"a": 1, "m.vocab": 5}, {"a": 1}) == [("m.vocab", 5, None)]


# ------------------------------------------------ intervals that respect their metric

def _by_hand(values, transform, inverse):
    z = [transform(v) for v in values]
    half = stats.t.ppf(0.975, len(z) - 1) * np.std(z, ddof=1) / math.sqrt(len(z))
    return inverse(np.mean(z) - half), inverse(np.mean(z) + half)


def logit(p):
    return math.log(p / (1 - p))


def expit(z):
    return 1 / (1 + math.exp(-z))


@pytest.mark.parametrize("n", [2, 30])
def test_accuracy_and_correlation_intervals_stay_inside_their_range(n):
    rng = np.random.default_rng(n)
    accuracies = [0.5, 0.95] if n == 2 else list(rng.uniform(0.90, 0.999, n))
    s = report.summarize(accuracies, kind="proportion")
    assert (s.ci_low, s.ci_high) == pytest.approx(_by_hand(accuracies, logit, expit), rel=1e-9)
    assert 0 < s.ci_low < s.ci_high < 1 and s.mean == pytest.approx(np.mean(accuracies))
    # the t interval of the raw values leaves [0, 1] at n = 2 (t = 12.7)
    assert n == 30 or report.summarize(accuracies).ci_high > 1
    correlations = [0.2, 0.99] if n == 2 else list(rng.uniform(0.95, 0.999, n))
    r = report.summarize(correlations, kind="correlation")
    assert (r.ci_low, r.ci_high) == pytest.approx(                     # Fisher's z
        _by_hand(correlations, math.atanh, math.tanh), rel=1e-9)
    assert -1 < r.ci_low < r.ci_high < 1
    percent = report.summarize([100 * a for a in accuracies], kind="percent")
    assert (percent.ci_low, percent.ci_high) == pytest.approx((100 * s.ci_low, 100 * s.ci_high))
    with pytest.raises(ValueError, match="expected values in \\[0, 1\\]"):
        report.summarize([0.5, 1.2], kind="proportion")


def test_one_run_has_no_interval_and_identical_values_no_test(tmp_path):
    one = report.summarize([0.7], kind="proportion")
    assert one.n == 1 and math.isnan(one.sd) and math.isnan(one.ci_low)
    same = report.summarize([19470.0] * 3, kind="count")
    assert (same.sd, same.ci_low, same.ci_high) == (0.0, 19470.0, 19470.0)
    assert all(math.isnan(x) for x in report.welch([1.0, 1.0], [2.0, 2.0]))
    assert report.metric_kind("sts_pearson") == "correlation"
    assert report.metric_kind("quora_acc") == "proportion"
    assert report.metric_kind("added_parameters") == "count"
    assert report.metric_kind("loss") == "mean"
    assert report.metric_kind("avg", types.SimpleNamespace(METRIC_KINDS={"*": "percent"})) \
        == "percent"


def test_reports_print_no_interval_for_one_run_and_counts_as_integers(tmp_path, monkeypatch):
    import sys
    import warnings

    module = sys.modules[__name__]
    monkeypatch.setattr(module, "run_one", lambda experiment, variant, seed, run_dir: {
        "accuracy": 0.5 + 0.1 * seed, "added_parameters": 19470.0 if variant == "plain" else 0.0,
        "score_r": 0.3 + 0.2 * seed})
    out = protocol.run_config(tiny_config(tmp_path, seeds=[0]), log=lambda line: None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no precision warning from identical values
        text = report.write_report(out)
    assert "| plain | 1 | 19,470 | – | – |" in text and "±" not in text
    assert "A row of one run has no SD and no interval." in text
    assert "(n = 1: no interval)" in _titles(report.report(out)[1])
    protocol.run_config(tiny_config(tmp_path, seeds=[0, 1]), log=lambda line: None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text, data = report.report(out)
    assert "| plain | 2 | 19,470 | 0 | – |" in text
    assert "`added_parameters` does not vary" in text
    tested = data["tests"]["added_parameters"]["modulated vs plain"]
    assert tested["difference"] == -19470 and math.isnan(tested["p"])
    low, high = data["summary"]["plain"]["accuracy"]["ci_low"], data["summary"]["plain"][
        "accuracy"]["ci_high"]
    assert 0 < low < 0.5 and 0.6 < high < 1  # two seeds: wide, but inside [0, 1]
    assert -1 < data["summary"]["plain"]["score_r"]["ci_low"]
    assert data["summary"]["plain"]["score_r"]["ci_high"] < 1
    assert "Fisher's z" in text


def _titles(data):
    figure = report.report_figure(data)
    return " ".join([figure.get_suptitle()] + [ax.get_title() for ax in figure.axes])


# ------------------------------------------------------------ figures a reader can read

def test_each_row_keeps_its_colour_the_legend_stays_off_the_panels_and_ticks_apart():
    from matplotlib.colors import to_hex

    variants = ["none", "nemot_gate", "ngt_block", "pals"]
    summary = {v: {"sst_accuracy": {"n": 5, "mean": 0.30 + 0.02 * i, "sd": 0.01,
                                    "ci_low": 0.29 + 0.02 * i, "ci_high": 0.31 + 0.02 * i,
                                    "paper": 0.52},
                   "score": {"n": 5, "mean": 0.55 + 0.01 * i, "sd": 0.01,
                             "ci_low": 0.54 + 0.01 * i, "ci_high": 0.56 + 0.01 * i},
                   "added_parameters": {"n": 5, "mean": cost, "sd": 0.0, "ci_low": cost,
                                        "ci_high": cost}}
               for i, (v, cost) in enumerate(zip(variants, [0, 350464, 150144, 19470]))}
    data = {"manifest": {"name": "x"}, "summary": summary,
            "kinds": {"sst_accuracy": "proportion", "score": "proportion",
                      "added_parameters": "count"}}
    figure = report.report_figure(data, baseline="none")
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    colours = {}
    for ax in figure.axes[:3]:                    # the interval panels: rows by y position
        names = [t.get_text() for t in ax.get_yticklabels()]
        for line in ax.lines:
            if line.get_marker() == "o":
                colours.setdefault(names[int(line.get_ydata()[0])], set()).add(
                    to_hex(line.get_color()))
    scatter = figure.axes[3]                      # score against cost: rows by x position
    for line in scatter.lines:
        if line.get_marker() == "o":
            row = variants[[summary[v]["added_parameters"]["mean"] for v in variants].index(
                line.get_xdata()[0])]
            colours[row].add(to_hex(line.get_color()))
    assert all(len(found) == 1 for found in colours.values()), colours
    assert len({next(iter(c)) for c in colours.values()}) == len(variants)
    legend = figure.legends[0].get_window_extent(renderer)
    assert not any(legend.overlaps(ax.get_window_extent(renderer)) for ax in figure.axes
                   if ax.get_visible())
    for ax in figure.axes:
        if not ax.get_visible():
            continue
        boxes = [t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_text()]
        assert not any(a.overlaps(b) for a, b in zip(boxes, boxes[1:])), ax.get_title()
    labels = [t.get_text() for t in figure.axes[2].get_xticklabels()]
    assert labels and all(re.fullmatch(r"−?\d+k?", label) for label in labels), labels
    # a 0.02 spread of accuracies is drawn on at least 0.05 of the axis, with the paper's
    low, high = figure.axes[0].get_xlim()
    assert high - low >= 0.05 and low < 0.29 and high > 0.52
