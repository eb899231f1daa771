"""The NGT paper's aggregation over runs, and significance tests.

The paper's evaluation: Scores are SuperGLUE's metrics
(:func:`nemot.evaluation.benchmarks.score_superglue`), fractions in [0, 1] per run and
epoch; the aggregation multiplies by 100 and rounds to 2 decimals as the paper
did. The best epoch of a run is the one with the highest mean of the task's
metrics; a variant's cell is the mean and sample SD (n - 1) of the runs' best
epochs; the mean column averages each task's metrics to one number, then the
tasks, and its SD is the root mean square of the tasks' SDs (a task's SD being
the mean of its metrics' SDs).

Example:
>>> table = {"RTE": {"acc": (74.13, 0.21)}, "CB": {"f1": (87.86, 1.30), "acc": (87.50, 1.79)}}
>>> mean_column(table)
(80.91, 1.1)
"""

import math
import statistics

from scipy import stats

from nemot.data.benchmarks import superglue
from nemot.evaluation import benchmarks
from nemot.experiments.report import welch


def aggregate(runs):
    """Per metric (mean, sample SD) over runs, ×100 and rounded to 2 decimals.

    Args:
        runs: one metrics dict (fractions) per run, e.g. each run's best epoch.
            With a single run the SD is NaN (undefined), not 0.
    """
    if not runs:
        raise ValueError("no runs to aggregate")
    out = {}
    for metric in runs[0]:
        values = [100 * run[metric] for run in runs]
        sd = statistics.stdev(values) if len(values) > 1 else math.nan
        out[metric] = (round(statistics.fmean(values), 2), round(sd, 2))
    return out


def mean_column(table):
    """The paper's Mean row: (mean, SD) over tasks from ``{task: {metric: (mean, sd)}}``."""
    task_means = [statistics.fmean(m for m, _ in cells.values()) for cells in table.values()]
    task_sds = [statistics.fmean(s for _, s in cells.values()) for cells in table.values()]
    return (
        round(statistics.fmean(task_means), 2),
        round(math.sqrt(statistics.fmean(s * s for s in task_sds)), 2),
    )


def significance(scores_a, scores_b):
    """Welch's t-test per task and a paired t-test over tasks between two variants.

    Args:
        scores_a, scores_b: ``{task: [score, ...]}`` for each variant (each run's best
            epoch's :func:`nemot.evaluation.benchmarks.task_score`).

    Returns:
        ``{"per_task": {task: p}, "paired_over_tasks": p}``: two-sided p
        values; NaN where the test is undefined (e.g. zero variance in both).
    """
    tasks = [t for t in scores_a if t in scores_b]
    if not tasks:
        raise ValueError("the two variants share no task")
    # The runs' own Welch test (NaN, not scipy's precision warning, where both sides hold
    # identical scores).
    per_task = {t: welch(scores_a[t], scores_b[t])[2] for t in tasks}
    means_a = [statistics.fmean(scores_a[t]) for t in tasks]
    means_b = [statistics.fmean(scores_b[t]) for t in tasks]
    if len(tasks) >= 2 and statistics.variance([a - b for a, b in zip(means_a, means_b)]) > 0:
        paired_p = float(stats.ttest_rel(means_a, means_b).pvalue)
    else:
        paired_p = math.nan
    return {"per_task": per_task, "paired_over_tasks": paired_p}


def summarize(results):
    """Per variant the paper's table cells, mean column and per-run scores, from
    ``{variant: {task: [each run's best-epoch metrics]}}``."""
    summary = {}
    for variant, per_task in results.items():
        tasks = [t for t in superglue.TASKS if t in per_task]
        cells = {t: aggregate(per_task[t]) for t in tasks}
        summary[variant] = {"cells": cells, "mean": mean_column(cells), "run_scores": {
            t: [benchmarks.task_score(m) for m in per_task[t]] for t in tasks}}
    return summary


def table(results, variants):
    """The paper's Table 1 layout (markdown) plus significance tests between every pair of
    variants; returns ``(markdown, {"summary": ..., "significance": ...})``."""
    summary = summarize(results)
    variants = [v for v in variants if v in summary]
    tasks = [t for t in superglue.TASKS if any(t in summary[v]["cells"] for v in variants)]
    lines = ["| Task | Metric | " + " | ".join(variants) + " |",
             "|---|---|" + "---|" * len(variants)]
    for task in tasks:
        names = benchmarks.SUPERGLUE_METRICS[task]
        cells = [summary[v]["cells"].get(task) for v in variants]
        shown = [" / ".join(f"{c[m][0]:.2f}±{c[m][1]:.2f}" for m in names) if c else "–"
                 for c in cells]
        label = "/".join(benchmarks.METRIC_LABELS[m] for m in names)
        lines.append(f"| {task} | {label} | " + " | ".join(shown) + " |")
    means = [f"{summary[v]['mean'][0]:.2f}±{summary[v]['mean'][1]:.2f}" for v in variants]
    lines += ["| **Mean** | | " + " | ".join(means) + " |", "",
              "Significance (two-sided p; Welch's t-test per task on each run's mean task "
              "score, paired t-test over tasks on the variants' means):", "",
              "| Variants | " + " | ".join(tasks) + " | paired over tasks |",
              "|---|" + "---|" * (len(tasks) + 1)]
    tests = {}
    for i, a in enumerate(variants):
        for b in variants[i + 1:]:
            test = tests[f"{a} vs {b}"] = significance(summary[a]["run_scores"],
                                                      summary[b]["run_scores"])
            row = [f"{test['per_task'].get(t, math.nan):.3f}" for t in tasks]
            lines.append(f"| {a} vs {b} | " + " | ".join(row)
                         + f" | {test['paired_over_tasks']:.3f} |")
    return "\n".join(lines) + "\n", {"summary": summary, "significance": tests}
