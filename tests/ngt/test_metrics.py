"""The paper's aggregation (checked against Tables 1 and 4) and significance tests (the
SuperGLUE metrics: tests/evaluation/test_benchmarks.py)."""

import math
import statistics
import warnings

import pytest

from nemot.ngt import metrics

# Paper Table 1: {task: {metric: (mean, sd)}} per variant.
TABLE1 = {
    "no-gating-block": {
        "BoolQ": {"acc": (76.60, 2.6)}, "CB": {"f1": (87.86, 1.30), "acc": (87.50, 1.79)},
        "COPA": {"acc": (73.67, 1.15)}, "MultiRC": {"f1a": (64.25, 5.68), "em": (13.26, 12.38)},
        "ReCoRD": {"f1": (55.96, 33.19), "em": (55.24, 33.17)}, "RTE": {"acc": (74.13, 0.21)},
        "WiC": {"acc": (74.03, 0.39)}, "WSC": {"acc": (65.70, 2.22)},
    },
    "neuromodulated-gating": {
        "BoolQ": {"acc": (78.36, 0.14)}, "CB": {"f1": (82.44, 5.41), "acc": (85.12, 4.49)},
        "COPA": {"acc": (74.67, 2.31)}, "MultiRC": {"f1a": (70.22, 0.41), "em": (23.22, 1.07)},
        "ReCoRD": {"f1": (54.93, 33.51), "em": (54.24, 33.34)}, "RTE": {"acc": (72.32, 0.84)},
        "WiC": {"acc": (73.62, 0.55)}, "WSC": {"acc": (65.06, 0.55)},
    },
    "non-neuromodulated-gating": {
        "BoolQ": {"acc": (72.11, 8.64)}, "CB": {"f1": (85.81, 4.07), "acc": (85.12, 1.03)},
        "COPA": {"acc": (74.00, 5.00)}, "MultiRC": {"f1a": (70.68, 0.29), "em": (24.45, 1.21)},
        "ReCoRD": {"f1": (36.85, 32.92), "em": (36.12, 32.88)}, "RTE": {"acc": (74.37, 2.73)},
        "WiC": {"acc": (73.77, 0.77)}, "WSC": {"acc": (64.74, 1.11)},
    },
}
TABLE1_MEAN = {
    "no-gating-block": (68.27, 12.24),
    "neuromodulated-gating": (68.64, 11.98),
    "non-neuromodulated-gating": (66.06, 12.24),
}


@pytest.mark.parametrize("variant", TABLE1)
def test_mean_column_reproduces_table1(variant):
    assert metrics.mean_column(TABLE1[variant]) == TABLE1_MEAN[variant]


TABLE4 = {
    "gating-start": {
        "BoolQ": {"acc": (65.73, 6.16)}, "CB": {"f1": (47.35, 2.16), "acc": (67.86, 3.09)},
        "COPA": {"acc": (57.33, 2.31)}, "MultiRC": {"f1a": (45.44, 39.37), "em": (14.41, 12.38)},
        "ReCoRD": {"f1": (35.26, 33.81), "em": (34.56, 33.8)}, "RTE": {"acc": (62.21, 5.51)},
        "WiC": {"acc": (62.59, 10.95)}, "WSC": {"acc": (62.5, 2.54)},
    },
    "gating-end": {
        "BoolQ": {"acc": (75.77, 0.51)}, "CB": {"f1": (77.96, 5.38), "acc": (82.14, 3.57)},
        "COPA": {"acc": (72.67, 1.53)}, "MultiRC": {"f1a": (70.19, 0.18), "em": (22.91, 2.12)},
        "ReCoRD": {"f1": (54.93, 33.51), "em": (54.24, 33.34)}, "RTE": {"acc": (72.20, 1.25)},
        "WiC": {"acc": (73.35, 1.24)}, "WSC": {"acc": (63.46, 0.00)},
    },
}


@pytest.mark.parametrize("variant, mean", [("gating-start", 54.10), ("gating-end", 67.33)])
def test_mean_column_of_table4(variant, mean):
    # Table 4 prints no mean; these are the notes' (derived) values with the same rule.
    assert metrics.mean_column(TABLE4[variant])[0] == mean


def test_aggregate_uses_percent_and_the_sample_sd():
    # The collapsed-ReCoRD pattern of notes s.4: two good runs and one failure.
    runs = [{"f1": 0.751, "em": 0.745}, {"f1": 0.751, "em": 0.745}, {"f1": 0.176, "em": 0.170}]
    out = metrics.aggregate(runs)
    assert out["f1"][0] == pytest.approx(55.93, abs=1e-9)
    assert out["f1"][1] == round(statistics.stdev([75.1, 75.1, 17.6]), 2) == 33.2  # n - 1, not n
    single = metrics.aggregate(runs[:1])
    assert single["em"][0] == 74.5 and math.isnan(single["em"][1])


def test_best_epoch_uses_the_mean_of_the_task_metrics(tmp_path):
    """A run's val_metric is the task score (train_run); its best epoch is NGT's."""
    from nemot.evaluation.benchmarks import task_score
    from nemot.ngt.experiment import best_epoch

    epochs = [{"f1": 0.9, "acc": 0.5}, {"f1": 0.7, "acc": 0.8}, {"f1": 0.75, "acc": 0.75}]
    lines = ["epoch,loss,val_loss,val_metric,val_f1,val_acc"] + [
        f"{i + 1},0.5,,{task_score(m)},{m['f1']},{m['acc']}" for i, m in enumerate(epochs)]
    (tmp_path / "results.csv").write_text("\n".join(lines) + "\n")
    assert best_epoch(tmp_path) == epochs[1]  # 0.75 > 0.70; the first of the tied 0.75s


def test_the_table_leaves_a_task_a_variant_did_not_run_empty():
    best = {"CB": [{"f1": 0.8, "acc": 0.9}, {"f1": 0.7, "acc": 0.8}],
            "ReCoRD": [{"f1": 0.5, "em": 0.4}, {"f1": 0.6, "em": 0.5}]}
    text, data = metrics.table({"plain": {"CB": best["CB"]}, "ngt": best}, ["plain", "ngt"])
    lines = text.splitlines()
    assert lines[0] == "| Task | Metric | plain | ngt |"
    assert "| CB | F1/Acc | 75.00±7.07 / 85.00±7.07 | 75.00±7.07 / 85.00±7.07 |" in lines
    assert "| ReCoRD | F1/EM | – | 55.00±7.07 / 45.00±7.07 |" in lines
    assert set(data["significance"]["plain vs ngt"]["per_task"]) == {"CB"}


def test_significance_is_welch_per_task_and_paired_over_tasks():
    a = {"RTE": [70.0, 72.0, 71.0], "CB": [80.0, 85.0, 90.0], "WSC": [63.0, 64.0, 65.0]}
    b = {"RTE": [60.0, 61.0, 62.5], "CB": [81.0, 84.0, 88.0], "WSC": [63.5, 64.5, 65.5]}
    out = metrics.significance(a, b)
    # Welch's statistic and Welch-Satterthwaite degrees of freedom, by hand.
    x, y = a["CB"], b["CB"]
    va, vb = statistics.variance(x) / 3, statistics.variance(y) / 3
    t = (statistics.fmean(x) - statistics.fmean(y)) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / 2 + vb**2 / 2)
    from scipy import stats

    assert out["per_task"]["CB"] == pytest.approx(2 * stats.t.sf(abs(t), df))
    assert out["per_task"]["RTE"] < 0.05 < out["per_task"]["CB"]
    diffs = [statistics.fmean(a[t]) - statistics.fmean(b[t]) for t in a]
    t_paired = statistics.fmean(diffs) / (statistics.stdev(diffs) / math.sqrt(3))
    assert out["paired_over_tasks"] == pytest.approx(2 * stats.t.sf(abs(t_paired), 2))


def test_significance_is_nan_without_a_warning_where_the_scores_do_not_vary():
    """Identical scores on both sides (tiny runs that all converge alike): nothing to test,
    so NaN, not scipy's "Precision loss ... catastrophic cancellation" warning."""
    a = {"RTE": [0.1, 0.1, 0.1], "CB": [0.3, 0.3, 0.3]}
    b = {"RTE": [0.1, 0.1, 0.1], "CB": [0.5, 0.5, 0.5]}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = metrics.significance(a, b)
    assert math.isnan(out["per_task"]["RTE"]) and math.isnan(out["per_task"]["CB"])
    assert math.isnan(metrics.significance(a, a)["paired_over_tasks"])
