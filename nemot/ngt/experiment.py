"""NGT's recipe in the experiment protocol (:mod:`nemot.experiments`): a variant on every
task of the config with one seed is one run, reported as each task's score at its best
epoch (×100, the mean of the task's metrics) and their mean over tasks; the report adds
the paper's Table 1 layout (:func:`paper_table`, :mod:`nemot.ngt.metrics`).

A config (``configs/ngt/``)::

    reproduction = "ngt"
    name = "table1"
    output_dir = "runs/ngt/table1"
    seeds = [0, 1, 2]
    [model]    backbone (preset name, directory, or a table of BertBackbone sizes),
               tokenizer (preset/directory, or a vocab.txt), lowercase,
               sequence_length, num_gating_layers, gating_dropout
    [train]    batch_size, learning_rate, weight_decay, beta_1, beta_2, epsilon,
               jit_compile, run_eagerly (no tf.function: for tiny smoke runs),
               save_weights, verbose
    [data]     dir (``<dir>/<Task>/{train,val}.jsonl``; "hub" for the HF hub), source
    [variants.<name>]  gating (a model variant), gate_position
    [tasks.<Task>]     epochs, decay_steps (default: steps per epoch x epochs),
                       aux_tokens (tokens seen only by the gating block)

A run writes one directory per task, ``<output_dir>/<variant>/seed<k>/<Task>/``
(:func:`nemot.ngt.train.train_run`: the trainer's ``results.csv``, the predictions of
every epoch, ``config.toml``); the epoch is selected on the validation split.
"""

import dataclasses
import typing
from pathlib import Path

from nemot.data.benchmarks import superglue
from nemot.evaluation.benchmarks import task_score
from nemot.experiments import protocol
from nemot.experiments.config import keys, settings
from nemot.ngt import metrics
from nemot.ngt.model import VARIANTS
from nemot.ranges import Count, DropoutRate, Fraction, NonNegativeFloat, PositiveFloat, Verbosity

TABLES = ("model", "train", "data", "tasks")

# Paper Table 1 : per task the mean of its metrics, and the Mean column.
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
# Every score is a task's metrics averaged, x100 (nemot.evaluation.benchmarks.task_score).
METRIC_KINDS = {"*": "percent"}
PAPER_NOTES = {"table1": "NGT paper Table 1 (SuperGLUE validation, 3 runs): a multi-metric "
                         "task's number is the mean of its metrics; the paper found no "
                         "difference significant (all p > 0.05)."}


@dataclasses.dataclass(frozen=True)
class Model:
    backbone: object = "bert_large_en"
    tokenizer: str | None = None
    lowercase: bool = False
    sequence_length: Count = 512
    num_gating_layers: Count = 3
    gating_dropout: DropoutRate = 0.1


@dataclasses.dataclass(frozen=True)
class Train:
    """Paper Table 3."""

    batch_size: Count = 8
    learning_rate: PositiveFloat = 1e-5
    weight_decay: NonNegativeFloat = 0.01
    beta_1: Fraction = 0.9
    beta_2: Fraction = 0.999
    epsilon: PositiveFloat = 1e-7
    jit_compile: bool = False
    run_eagerly: bool = False
    save_weights: bool = False
    verbose: Verbosity = 2


@dataclasses.dataclass(frozen=True)
class Data:
    dir: str | None = None
    source: typing.Literal[superglue.SOURCES] = "files"


@dataclasses.dataclass(frozen=True)
class Variant:
    """One column of the paper's tables: a model variant and where its gate sits."""

    gating: typing.Literal[VARIANTS] = "neuromodulated-gating"
    gate_position: Count = 21


@dataclasses.dataclass(frozen=True)
class TaskPlan:
    """How long to train on one task (paper Table 3)."""

    epochs: Count
    decay_steps: Count | None = None
    aux_tokens: tuple = ()


@dataclasses.dataclass(frozen=True)
class Experiment(protocol.Experiment):  # variants: name -> Variant
    tasks: dict  # SuperGLUE task -> TaskPlan
    model: Model = Model()
    train: Train = Train()
    data: Data = Data()


def from_dict(raw, source="<dict>"):
    """An :class:`Experiment` from a TOML-shaped dict; errors name ``source`` and the key."""
    top = protocol.protocol_keys(raw, TABLES, source)
    variant_tables = top.pop("variants")
    keys(raw.get("tasks", {}), superglue.TASKS, f"{source}: [tasks]")
    if not raw.get("tasks"):
        raise ValueError(f"{source}: tasks: expected at least one [tasks.<Task>] table")
    data = settings(Data, raw.get("data", {}), f"{source}: [data]")
    return Experiment(
        **top, variants={name: settings(Variant, table, f"{source}: [variants.{name}]")
                         for name, table in variant_tables.items()},
        tasks={task: settings(TaskPlan, table, f"{source}: [tasks.{task}]")
               for task, table in raw["tasks"].items()},
        model=settings(Model, raw.get("model", {}), f"{source}: [model]"),
        train=settings(Train, raw.get("train", {}), f"{source}: [train]"),
        data=dataclasses.replace(data, dir=None if data.dir == "hub" else data.dir))


def load(path, overrides=()):
    """The :class:`Experiment` of the TOML file at ``path`` with ``KEY=VALUE`` overrides."""
    raw, _ = protocol.read_experiment(path, overrides, "ngt", TABLES)
    return from_dict(raw, source=str(path))


def variants(experiment):
    return list(experiment.variants)


def resolved_toml(experiment, variant, seed):
    """The settings one run uses, as TOML (its ``config.toml``, and each task's)."""
    return protocol.resolved_toml("ngt", experiment.name, variant, seed, {
        **{t: dataclasses.asdict(getattr(experiment, t)) for t in ("model", "train", "data")},
        "variants": {variant: dataclasses.asdict(experiment.variants[variant])},
        "tasks": {t: dataclasses.asdict(p) for t, p in experiment.tasks.items()}})


def run_one(experiment, variant, seed, run_dir):
    """Train ``variant`` on every task of ``experiment`` with ``seed``; returns each task's
    score at its best validation epoch and their ``mean``."""
    from nemot.hosts.bert import model_tokenizer
    from nemot.ngt.train import load_splits, train_run

    model = experiment.model
    tokenizer = model_tokenizer(model.tokenizer, model.backbone, model.lowercase)
    resolved = resolved_toml(experiment, variant, seed)
    scores = {}
    for task in experiment.tasks:
        train_run(experiment, task, variant, seed, *load_splits(experiment, task),
                  Path(run_dir, task), tokenizer, resolved)
        scores[task] = task_score(best_epoch(Path(run_dir, task)))
    scores["mean"] = sum(scores.values()) / len(scores)
    return scores


def best_epoch(task_dir):
    """The task's metrics (fractions) at the run's best validation epoch."""
    selected = protocol.select_epoch(task_dir, "best_metric")
    selected.pop("epoch")
    return selected


def paper_table(output_dir, manifest):
    """The paper's Table 1 layout of the finished runs, with its significance tests
    (:func:`nemot.ngt.metrics.table`)."""
    results = {}
    for variant in manifest["variants"]:
        for done in sorted(Path(output_dir, variant).glob(f"seed*/{protocol.METRICS}")):
            for task in superglue.TASKS:
                if Path(done.parent, task, "results.csv").exists():
                    results.setdefault(variant, {}).setdefault(task, []).append(
                        best_epoch(done.parent / task))
    return metrics.table(results, manifest["variants"])


def parameter_counts(experiment, num_classes=1):
    """``{variant: parameters}`` of the experiment's models, built without loading weights.

    The backbone is built once and shared (the counts do not depend on its weights).
    """
    from nemot.hosts.bert import load_backbone
    from nemot.ngt.train import build_model

    backbone = load_backbone(experiment.model.backbone, load_weights=False)
    return {name: build_model(experiment.model, variant, backbone, num_classes).count_params()
            for name, variant in experiment.variants.items()}
