"""SuperGLUE scores, the NGT paper's aggregation over runs, and significance tests.

Notes section 3 ("Evaluation"). Scores are fractions in [0, 1] per run and
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

import numpy as np
from scipy import stats

from nemot.evaluation.metrics import exact_match, f1
from nemot.ngt.superglue import group_indices

# Metric names per task, in the paper's column order.
TASK_METRICS = {
    "BoolQ": ("acc",),
    "CB": ("f1", "acc"),
    "COPA": ("acc",),
    "MultiRC": ("f1a", "em"),
    "ReCoRD": ("f1", "em"),
    "RTE": ("acc",),
    "WiC": ("acc",),
    "WSC": ("acc",),
}
METRIC_LABELS = {"acc": "Acc", "f1": "F1", "f1a": "F1a", "em": "EM"}


def _check_lengths(rows, probabilities):
    if len(rows) != len(probabilities):
        raise ValueError(f"{len(rows)} rows but {len(probabilities)} predictions: expected one per row")


def macro_f1(predictions, golds, num_classes):
    """Unweighted mean of the per-class F1 scores (SuperGLUE CB); a class never predicted nor gold scores 0."""
    predictions, golds = np.asarray(predictions), np.asarray(golds)
    scores = []
    for c in range(num_classes):
        tp = np.sum((predictions == c) & (golds == c))
        fp = np.sum((predictions == c) & (golds != c))
        fn = np.sum((predictions != c) & (golds == c))
        scores.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return float(np.mean(scores))


def multirc_f1a(predictions, golds):
    """F1 over all answer options pooled (CogComp ``multirc_measures``: an empty denominator counts as 1)."""
    predictions, golds = np.asarray(predictions, bool), np.asarray(golds, bool)
    correct = np.sum(predictions & golds)
    precision = correct / predictions.sum() if predictions.sum() else 1.0
    recall = correct / golds.sum() if golds.sum() else 1.0
    return 0.0 if precision + recall == 0 else float(2 * precision * recall / (precision + recall))


def score_task(task, rows, probabilities):
    """The task's SuperGLUE metrics (fractions) for one pass over its rows.

    Args:
        task: a SuperGLUE task name.
        rows: the ``PairRow``s of the split, in the order they were predicted.
        probabilities: model outputs, [len(rows), units] or [len(rows)].
    """
    _check_lengths(rows, probabilities)
    p = np.asarray(probabilities, np.float64)
    labels = np.array([row.label for row in rows])
    if task == "CB":
        predicted = p.argmax(axis=-1)
        return {"f1": macro_f1(predicted, labels, p.shape[-1]), "acc": float(np.mean(predicted == labels))}
    p = p.reshape(len(rows))
    if task in ("BoolQ", "RTE", "WiC", "WSC"):
        return {"acc": float(np.mean((p > 0.5) == labels.astype(bool)))}
    if task == "MultiRC":
        predicted = p > 0.5
        em = [np.all(predicted[idx] == labels[idx].astype(bool)) for idx in group_indices(rows).values()]
        return {"f1a": multirc_f1a(predicted, labels), "em": float(np.mean(em))}
    # COPA, ReCoRD: the highest-scoring option of each group is the answer.
    best = [idx[int(np.argmax(p[idx]))] for idx in group_indices(rows).values()]
    if task == "COPA":
        return {"acc": float(np.mean([labels[i] == 1 for i in best]))}
    if task == "ReCoRD":
        chosen = [rows[i] for i in best]
        return {
            "f1": float(np.mean([f1(r.option, list(r.answers)) for r in chosen])),
            "em": float(np.mean([exact_match(r.option, list(r.answers)) for r in chosen])),
        }
    raise ValueError(f"task {task!r}: expected one of {', '.join(TASK_METRICS)}")


def best_epoch(epochs):
    """Index of the epoch with the highest mean of its metrics (the first one on ties)."""
    if not epochs:
        raise ValueError("no epochs to choose from")
    return max(range(len(epochs)), key=lambda e: (statistics.fmean(epochs[e].values()), -e))


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


def run_score(metrics):
    """One number per run and task: the mean of the task's metrics (×100)."""
    return 100 * statistics.fmean(metrics.values())


def significance(scores_a, scores_b):
    """Welch's t-test per task and a paired t-test over tasks between two variants.

    Args:
        scores_a, scores_b: ``{task: [run_score, ...]}`` for each variant
            (from :func:`run_score` of each run's best epoch).

    Returns:
        ``{"per_task": {task: p}, "paired_over_tasks": p}``: two-sided p
        values; NaN where the test is undefined (e.g. zero variance in both).
    """
    tasks = [t for t in scores_a if t in scores_b]
    if not tasks:
        raise ValueError("the two variants share no task")
    per_task = {t: float(stats.ttest_ind(scores_a[t], scores_b[t], equal_var=False).pvalue) for t in tasks}
    if len(tasks) >= 2:
        paired = stats.ttest_rel(
            [statistics.fmean(scores_a[t]) for t in tasks], [statistics.fmean(scores_b[t]) for t in tasks]
        )
        paired_p = float(paired.pvalue)
    else:
        paired_p = math.nan
    return {"per_task": per_task, "paired_over_tasks": paired_p}
