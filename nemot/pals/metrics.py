"""The report's scores (s.5.2): accuracy, Pearson r, and the two averages of its tables.

- ``score``: ``mean(SST acc, Quora acc, (r + 1) / 2)`` over the tasks present, the
  "Average" of Tables 2 and 3 (r normalised to [0, 1]).
- ``average_raw_r``: the mean with the raw r, the "Average" of Table 4 (the column the
  seed labels "normalized" holds raw r, and Table 4's averages only reproduce with it).

Example:
    >>> summary({"sst": 0.523, "quora": 0.779, "sts": 0.377})["score"]      # Table 2, Zero
    0.6635
"""

import numpy as np
from scipy import stats

from nemot.pals.tasks import get_task


def task_metric(task, predicted, labels):
    """Accuracy of a classification task, Pearson r of a regression task."""
    predicted, labels = np.asarray(predicted, "float64"), np.asarray(labels, "float64")
    if len(labels) == 0 or np.isnan(labels).any():
        raise ValueError(f"task {task!r}: scoring needs labelled examples (a test file "
                         "without labels cannot be scored here)")
    if get_task(task).metric == "accuracy":
        return float(np.mean(predicted == labels))
    if np.std(predicted) == 0:
        return 0.0  # a constant prediction has no correlation (scipy would give NaN)
    return float(stats.pearsonr(predicted, labels).statistic)


def metric_name(task):
    """``"<column>_acc"`` or ``"<column>_r"``: the key of a task's value in :func:`summary`."""
    spec = get_task(task)
    return f"{spec.column}_{'acc' if spec.metric == 'accuracy' else 'r'}"


def summary(values):
    """Per-task values ``{task: accuracy or r}`` -> ``{<column>_acc/_r: ..., "score": ...,
    "average_raw_r": ...}``."""
    out = {metric_name(task): value for task, value in values.items()}
    normalised = [(v + 1) / 2 if get_task(t).metric == "pearson" else v
                  for t, v in values.items()]
    out["score"] = float(np.mean(normalised))
    out["average_raw_r"] = float(np.mean(list(values.values())))
    return out
