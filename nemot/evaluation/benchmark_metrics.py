"""Metrics of classification and regression benchmarks on arrays of labels: accuracy,
Pearson's r, and the minBERT average of the PALs report (s.5.2).

A correlation of constant predictions is undefined (scipy returns NaN and warns); it
counts as 0 here, as sklearn's rule for Matthews' coefficient: a model that predicts one
value has found no correlation.

Example:
    >>> accuracy([1, 0, 2], [1, 1, 2])
    0.666...
    >>> pearson([1.0, 1.0, 1.0], [0.5, 2.0, 4.0])       # constant prediction
    0.0
    >>> minbert_score(0.523, 0.779, 0.377)               # the PALs report's Table 2, "Zero" row
    0.6635
"""

import numpy as np
from scipy import stats


def _pair(predicted, labels):
    predicted, labels = np.asarray(predicted, "float64"), np.asarray(labels, "float64")
    if predicted.shape != labels.shape or labels.ndim != 1:
        raise ValueError(f"predictions {predicted.shape} and labels {labels.shape}: expected "
                         "two 1-D arrays of the same length")
    if len(labels) == 0 or np.isnan(labels).any():
        raise ValueError("scoring needs labelled examples (got none, or NaN labels: a test "
                         "file without labels cannot be scored)")
    return predicted, labels


def accuracy(predicted, labels):
    """The fraction of predicted labels equal to the gold ones."""
    predicted, labels = _pair(predicted, labels)
    return float(np.mean(predicted == labels))


def pearson(predicted, labels):
    """Pearson's r of real-valued predictions; 0 when either side is constant."""
    predicted, labels = _pair(predicted, labels)
    if np.ptp(predicted) == 0 or np.ptp(labels) == 0:
        return 0.0
    return float(stats.pearsonr(predicted, labels).statistic)


def minbert_score(sst_accuracy, quora_accuracy, sts_pearson):
    """The PALs report's average over its three tasks, r normalised to [0, 1]:
    ``(SST acc + Quora acc + (r + 1) / 2) / 3``."""
    return (sst_accuracy + quora_accuracy + (sts_pearson + 1) / 2) / 3
