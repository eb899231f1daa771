"""GLUE metrics and the two benchmark averages the paper reports.

GLUE (as the official benchmark and T5): Matthews correlation for CoLA, F1 and
accuracy for MRPC and QQP (F1 of the positive class: equivalent / duplicate),
Pearson and Spearman correlation for STS-B, accuracy elsewhere; MNLI is scored on
its matched and mismatched dev files. A task's score is the mean of its metrics
(×100); MNLI's is the mean of matched and mismatched; the GLUE average is the mean
over the 8 co-trained tasks (WNLI left out, as the paper). SuperGLUE's per-task
metrics are :func:`nemot.ngt.metrics.score_task`'s and its average the mean of the
tasks' scores (:func:`nemot.ngt.metrics.run_score`); this reproduces the paper's
Table 2 averages from its columns (e.g. L²: 75.3). A correlation of constant
predictions is undefined; it counts as 0 here (sklearn's rule for Matthews).

Example:
    >>> score_glue("MRPC", [1, 0, 1], [1, 1, 1])["f1"]
    0.8
"""

import statistics

import numpy as np
from scipy import stats

from nemot.ngt.metrics import run_score

GLUE_METRICS = {"CoLA": ("mcc",), "SST-2": ("acc",), "MRPC": ("f1", "acc"),
                "STS-B": ("pearson", "spearman"), "QQP": ("f1", "acc"), "MNLI": ("acc",),
                "MNLI-mm": ("acc",), "QNLI": ("acc",), "RTE": ("acc",), "WNLI": ("acc",)}


def matthews(predictions, golds):
    """Matthews correlation of binary predictions (0 when a marginal is constant)."""
    p, g = np.asarray(predictions, bool), np.asarray(golds, bool)
    tp, tn = np.sum(p & g), np.sum(~p & ~g)
    fp, fn = np.sum(p & ~g), np.sum(~p & g)
    denominator = np.sqrt(float((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)))
    return 0.0 if denominator == 0 else float((tp * tn - fp * fn) / denominator)


def binary_f1(predictions, golds):
    """F1 of class 1."""
    p, g = np.asarray(predictions, bool), np.asarray(golds, bool)
    tp = np.sum(p & g)
    return 0.0 if tp == 0 else float(2 * tp / (np.sum(p) + np.sum(g)))


def _correlation(function, predictions, golds):
    if np.ptp(predictions) == 0 or np.ptp(golds) == 0:
        return 0.0
    return float(function(predictions, golds)[0])


def score_glue(task, predictions, golds):
    """The task's GLUE metrics (fractions) from predicted and gold labels (floats for STS-B)."""
    if task not in GLUE_METRICS:
        raise ValueError(f"GLUE task {task!r}: expected one of {sorted(GLUE_METRICS)}")
    if len(predictions) != len(golds):
        raise ValueError(f"{task}: {len(predictions)} predictions for {len(golds)} examples")
    p, g = np.asarray(predictions), np.asarray(golds)
    out = {}
    for metric in GLUE_METRICS[task]:
        if metric == "mcc":
            out[metric] = matthews(p, g)
        elif metric == "f1":
            out[metric] = binary_f1(p, g)
        elif metric == "acc":
            out[metric] = float(np.mean(p == g))
        elif metric == "pearson":
            out[metric] = _correlation(stats.pearsonr, p.astype(float), g.astype(float))
        else:
            out[metric] = _correlation(stats.spearmanr, p.astype(float), g.astype(float))
    return out


def glue_average(scores):
    """The GLUE average (×100) of ``{task: {metric: fraction}}``; MNLI counts as the mean
    of ``MNLI`` and ``MNLI-mm`` (when both are there)."""
    tasks = {t: run_score(m) for t, m in scores.items() if t not in ("MNLI-mm", "WNLI")}
    if "MNLI" in tasks and "MNLI-mm" in scores:
        tasks["MNLI"] = (tasks["MNLI"] + run_score(scores["MNLI-mm"])) / 2
    if not tasks:
        raise ValueError("no GLUE task scores to average")
    return statistics.fmean(tasks.values())


def superglue_average(scores):
    """The SuperGLUE average (×100) of ``{task: {metric: fraction}}``."""
    if not scores:
        raise ValueError("no SuperGLUE task scores to average")
    return statistics.fmean(run_score(m) for m in scores.values())
