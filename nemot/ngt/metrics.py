"""The NGT paper's aggregation over runs, and significance tests.

Notes section 3 ("Evaluation"). Scores are SuperGLUE's metrics
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
    per_task = {t: float(stats.ttest_ind(scores_a[t], scores_b[t], equal_var=False).pvalue) for t in tasks}
    if len(tasks) >= 2:
        paired = stats.ttest_rel(
            [statistics.fmean(scores_a[t]) for t in tasks], [statistics.fmean(scores_b[t]) for t in tasks]
        )
        paired_p = float(paired.pvalue)
    else:
        paired_p = math.nan
    return {"per_task": per_task, "paired_over_tasks": paired_p}
