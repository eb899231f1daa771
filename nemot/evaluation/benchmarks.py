"""GLUE and SuperGLUE metrics, as the benchmarks define them, and their averages.

GLUE (the official benchmark, as T5 reports it): Matthews correlation for CoLA, F1 (of
the positive class: equivalent / duplicate) and accuracy for MRPC and QQP, Pearson and
Spearman correlation for STS-B, accuracy elsewhere; MNLI is scored on its matched and
mismatched dev files. SuperGLUE: accuracy; CB macro-F1 and accuracy; MultiRC F1a over
all answer options and exact match per question; ReCoRD token F1 and exact match of each
question's best candidate.

A task's score is the mean of its metrics (×100, :func:`task_score`); the GLUE average is
the mean over :data:`nemot.data.benchmarks.glue.TASKS` (MNLI: the mean of matched and mismatched;
WNLI left out, as T5), the SuperGLUE average the mean over its tasks. A correlation of
constant predictions (or golds) is undefined; it counts as 0 here (sklearn's rule for
Matthews), where scipy would give NaN.

Example:
    >>> score_glue("MRPC", [1, 0, 1], [1, 1, 1])["f1"]
    0.8
    >>> task_score({"f1": 0.9, "acc": 0.8})
    85.0
"""

import statistics

import numpy as np
from scipy import stats

from nemot.data.benchmarks.superglue import group_indices
from nemot.evaluation.metrics import exact_match, f1

GLUE_METRICS = {"CoLA": ("mcc",), "SST-2": ("acc",), "MRPC": ("f1", "acc"),
                "STS-B": ("pearson", "spearman"), "QQP": ("f1", "acc"), "MNLI": ("acc",),
                "MNLI-mm": ("acc",), "QNLI": ("acc",), "RTE": ("acc",), "WNLI": ("acc",)}
# SuperGLUE's metrics per task, in the order of its leaderboard's columns.
SUPERGLUE_METRICS = {"BoolQ": ("acc",), "CB": ("f1", "acc"), "COPA": ("acc",),
                     "MultiRC": ("f1a", "em"), "ReCoRD": ("f1", "em"), "RTE": ("acc",),
                     "WiC": ("acc",), "WSC": ("acc",)}
METRIC_LABELS = {"acc": "Acc", "f1": "F1", "f1a": "F1a", "em": "EM"}


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


def macro_f1(predictions, golds, num_classes):
    """Unweighted mean of the per-class F1 scores (SuperGLUE CB); a class never predicted
    nor gold scores 0."""
    predictions, golds = np.asarray(predictions), np.asarray(golds)
    scores = []
    for c in range(num_classes):
        tp = np.sum((predictions == c) & (golds == c))
        fp = np.sum((predictions == c) & (golds != c))
        fn = np.sum((predictions != c) & (golds == c))
        scores.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return float(np.mean(scores))


def multirc_f1a(predictions, golds):
    """F1 over all answer options pooled (CogComp ``multirc_measures``: an empty
    denominator counts as 1)."""
    predictions, golds = np.asarray(predictions, bool), np.asarray(golds, bool)
    correct = np.sum(predictions & golds)
    precision = correct / predictions.sum() if predictions.sum() else 1.0
    recall = correct / golds.sum() if golds.sum() else 1.0
    return 0.0 if precision + recall == 0 else float(2 * precision * recall / (precision + recall))


def _correlation(function, predictions, golds):
    predictions = np.asarray(predictions, np.float64)
    golds = np.asarray(golds, np.float64)
    if np.ptp(predictions) == 0 or np.ptp(golds) == 0:
        return 0.0
    return float(function(predictions, golds)[0])


def pearson(predictions, golds):
    """Pearson's r; 0 for constant predictions or golds."""
    return _correlation(stats.pearsonr, predictions, golds)


def spearman(predictions, golds):
    """Spearman's rank correlation; 0 for constant predictions or golds."""
    return _correlation(stats.spearmanr, predictions, golds)


_GLUE_SCORERS = {"mcc": matthews, "f1": binary_f1, "pearson": pearson, "spearman": spearman,
                 "acc": lambda p, g: float(np.mean(p == g))}


def score_glue(task, predictions, golds):
    """The task's GLUE metrics (fractions) from predicted and gold labels (floats for
    STS-B)."""
    if task not in GLUE_METRICS:
        raise ValueError(f"GLUE task {task!r}: expected one of {sorted(GLUE_METRICS)}")
    if len(predictions) != len(golds):
        raise ValueError(f"{task}: {len(predictions)} predictions for {len(golds)} examples")
    p, g = np.asarray(predictions), np.asarray(golds)
    return {metric: _GLUE_SCORERS[metric](p, g) for metric in GLUE_METRICS[task]}


def score_superglue(task, rows, probabilities):
    """The task's SuperGLUE metrics (fractions) for one pass over its rows.

    Args:
        task: a SuperGLUE task name.
        rows: the :class:`nemot.data.benchmarks.superglue.PairRow` s of the split, in the order
            they were predicted.
        probabilities: model outputs, [len(rows), units] or [len(rows)].
    """
    if task not in SUPERGLUE_METRICS:
        raise ValueError(f"task {task!r}: expected one of {', '.join(SUPERGLUE_METRICS)}")
    if len(rows) != len(probabilities):
        raise ValueError(f"{len(rows)} rows but {len(probabilities)} predictions: expected "
                         "one per row")
    p = np.asarray(probabilities, np.float64)
    labels = np.array([row.label for row in rows])
    if task == "CB":
        predicted = p.argmax(axis=-1)
        return {"f1": macro_f1(predicted, labels, p.shape[-1]),
                "acc": float(np.mean(predicted == labels))}
    p = p.reshape(len(rows))
    if task in ("BoolQ", "RTE", "WiC", "WSC"):
        return {"acc": float(np.mean((p > 0.5) == labels.astype(bool)))}
    groups = group_indices(rows).values()
    if task == "MultiRC":
        predicted = p > 0.5
        em = [np.all(predicted[idx] == labels[idx].astype(bool)) for idx in groups]
        return {"f1a": multirc_f1a(predicted, labels), "em": float(np.mean(em))}
    # COPA, ReCoRD: the highest-scoring option of each group is the answer.
    best = [idx[int(np.argmax(p[idx]))] for idx in groups]
    if task == "COPA":
        return {"acc": float(np.mean([labels[i] == 1 for i in best]))}
    chosen = [rows[i] for i in best]
    return {"f1": float(np.mean([f1(r.option, list(r.answers)) for r in chosen])),
            "em": float(np.mean([exact_match(r.option, list(r.answers)) for r in chosen]))}


def task_score(metrics):
    """One number per task: the mean of its metrics ``{name: fraction}``, ×100."""
    return 100 * statistics.fmean(metrics.values())


def glue_average(scores):
    """The GLUE average (×100) of ``{task: {metric: fraction}}``; MNLI counts as the mean
    of ``MNLI`` and ``MNLI-mm`` (when both are there); WNLI is left out."""
    tasks = {t: task_score(m) for t, m in scores.items() if t not in ("MNLI-mm", "WNLI")}
    if "MNLI" in tasks and "MNLI-mm" in scores:
        tasks["MNLI"] = (tasks["MNLI"] + task_score(scores["MNLI-mm"])) / 2
    if not tasks:
        raise ValueError("no GLUE task scores to average")
    return statistics.fmean(tasks.values())


def superglue_average(scores):
    """The SuperGLUE average (×100) of ``{task: {metric: fraction}}``."""
    if not scores:
        raise ValueError("no SuperGLUE task scores to average")
    return statistics.fmean(task_score(m) for m in scores.values())
