"""NGT experiments in the protocol of ``nemot runs`` (:mod:`nemot.runs`): a variant on
every task of the config with one seed is one run, reported as each task's score at its
best epoch (×100, the mean of the task's metrics) and their mean over tasks.

The configs are those of ``nemot ngt`` (``configs/ngt/*.toml``) with
``reproduction = "ngt"``; ``nemot ngt report`` keeps the paper's own aggregation
(:mod:`nemot.ngt.metrics`), ``nemot runs report`` adds confidence intervals and Welch's
t-test per score.
"""

from nemot import runs
from nemot.evaluation.benchmarks import task_score
from nemot.ngt.metrics import best_epoch
from nemot.ngt.train import Experiment, load_splits, load_tokenizer, train_run

# Paper Table 1 (notes section 4): per task the mean of its metrics, and the Mean column.
_TABLE1 = {
    "no-gating-block": {"BoolQ": 76.60, "CB": (87.86 + 87.50) / 2, "COPA": 73.67,
                        "MultiRC": (64.25 + 13.26) / 2, "ReCoRD": (55.96 + 55.24) / 2,
                        "RTE": 74.13, "WiC": 74.03, "WSC": 65.70, "mean": 68.27},
    "neuromodulated-gating": {"BoolQ": 78.36, "CB": (82.44 + 85.12) / 2, "COPA": 74.67,
                              "MultiRC": (70.22 + 23.22) / 2, "ReCoRD": (54.93 + 54.24) / 2,
                              "RTE": 72.32, "WiC": 73.62, "WSC": 65.06, "mean": 68.64},
    "non-neuromodulated-gating": {"BoolQ": 72.11, "CB": (85.81 + 85.12) / 2, "COPA": 74.00,
                                  "MultiRC": (70.68 + 24.45) / 2,
                                  "ReCoRD": (36.85 + 36.12) / 2, "RTE": 74.37, "WiC": 73.77,
                                  "WSC": 64.74, "mean": 66.06},
}
PAPER = {f"table1/{variant}": row for variant, row in _TABLE1.items()}
PAPER_NOTES = {"table1": "NGT paper Table 1 (SuperGLUE validation, 3 runs): a multi-metric "
                         "task's number is the mean of its metrics; the paper found no "
                         "difference significant (all p > 0.05)."}


def load(path, overrides=()):
    raw = runs.apply_overrides(runs.read_config(path), overrides, ("model", "train", "data"),
                               source=str(path))
    if raw.pop("reproduction", "ngt") != "ngt":
        raise ValueError(f"{path}: reproduction: expected 'ngt'")
    return Experiment.from_dict(raw, source=str(path))


def variants(experiment):
    return [v.name for v in experiment.variants]


def run_one(experiment, variant, seed, run_dir):
    tokenizer = load_tokenizer(experiment)
    scores = {}
    for task in experiment.tasks:
        train_data, val_data = load_splits(experiment, task)
        epochs = train_run(experiment, task, experiment.variant(variant), seed, train_data,
                           val_data, run_dir / task, tokenizer)
        scores[task] = task_score(epochs[best_epoch(epochs)])
    scores["mean"] = sum(scores.values()) / len(scores)
    return scores
