"""NGT experiments: fine-tune each variant on each SuperGLUE task with several seeds, then report.

Notes section 3 (paper Table 3): AdamW (beta 0.9/0.999, weight decay 0.01 on
every weight, epsilon 1e-7), cosine decay of 1e-5 to 0 over the task's
``decay_steps`` with no warm-up, batch 8, 512 tokens, binary cross-entropy on
the sigmoid (categorical on the softmax for CB). After every epoch the
validation split is scored; the report takes each run's best epoch and
aggregates as the paper did (:mod:`nemot.ngt.metrics`).

An experiment is one TOML file (``configs/ngt/``)::

    name = "table1"
    output_dir = "runs/ngt/table1"
    seeds = [0, 1, 2]
    [model]    backbone (preset name, directory, or a table of BertBackbone sizes),
               tokenizer (preset/directory, or a vocab.txt), lowercase,
               sequence_length, num_gating_layers, gating_dropout
    [train]    batch_size, learning_rate, weight_decay, beta_1, beta_2, epsilon,
               jit_compile, run_eagerly (no tf.function: for tiny smoke runs), save_weights
    [data]     dir (``<dir>/<Task>/{train,val}.jsonl``; "hub" for the HF hub)
    [variants.<name>]  gating (a model variant), gate_position
    [tasks.<Task>]     epochs, decay_steps (default: steps per epoch x epochs),
                       aux_tokens (tokens seen only by the gating block)

Runs are written to ``<output_dir>/<variant>/<task>/seed<seed>/``: ``metrics.jsonl``
(one line per epoch), ``val_predictions_epoch<N>.jsonl`` (official label layout)
and ``training_setup.json``; :func:`collect` and :func:`report` read them back.
"""

import dataclasses
import itertools
import json
import math
import tempfile
import tomllib
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from nemot.data import superglue
from nemot.evaluation import benchmarks
from nemot.models import bert
from nemot.models.bert import load_backbone
from nemot.ngt import metrics as ngt_metrics
from nemot.ngt.model import VARIANTS, NGTModel
from nemot.training import loop
from nemot.training.loop import DataSource, TrainConfig
from nemot.training.schedules import build_schedule

MODEL_KEYS = {"backbone", "tokenizer", "lowercase", "sequence_length", "num_gating_layers", "gating_dropout"}
TRAIN_KEYS = {
    "batch_size", "learning_rate", "weight_decay", "beta_1", "beta_2", "epsilon", "jit_compile", "run_eagerly",
    "save_weights",
}


@dataclasses.dataclass(frozen=True)
class Variant:
    """One column of the paper's tables: a model variant and where its gate sits."""

    name: str
    gating: str = "neuromodulated-gating"
    gate_position: int = 21


@dataclasses.dataclass(frozen=True)
class TaskPlan:
    """How long to train on one task (paper Table 3)."""

    epochs: int
    decay_steps: int | None = None
    aux_tokens: tuple = ()


@dataclasses.dataclass(frozen=True)
class Experiment:
    """Everything one NGT experiment needs; :meth:`from_toml` reads it from a config file."""

    name: str
    output_dir: str
    seeds: tuple
    variants: tuple
    tasks: dict
    data_dir: str | None
    data_source: str = "files"
    backbone: object = "bert_large_en"
    tokenizer: str | None = None
    lowercase: bool = False
    sequence_length: int = 512
    num_gating_layers: int = 3
    gating_dropout: float = 0.1
    batch_size: int = 8
    learning_rate: float = 1e-5
    weight_decay: float = 0.01
    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-7
    jit_compile: bool = False
    run_eagerly: bool = False
    save_weights: bool = False

    replace = dataclasses.replace

    @classmethod
    def from_toml(cls, path):
        """Parse an experiment file; unknown or mistyped keys raise naming the file and key."""
        path = Path(path)
        with open(path, "rb") as f:
            try:
                raw = tomllib.load(f)
            except tomllib.TOMLDecodeError as e:
                raise ValueError(f"{path}: not valid TOML ({e})") from None
        return cls.from_dict(raw, source=str(path))

    @classmethod
    def from_dict(cls, raw, source="<dict>"):
        def fail(key, expected, value):
            return ValueError(f"{source}, key {key!r}: expected {expected}, got {value!r}")

        known = {"reproduction", "name", "output_dir", "seeds", "model", "train", "data", "variants",
                 "tasks"}
        for key in raw:
            if key not in known:
                raise fail(key, f"one of {sorted(known)}", "an unknown key")
        kwargs = {}
        for section, keys in (("model", MODEL_KEYS), ("train", TRAIN_KEYS)):
            for key, value in raw.get(section, {}).items():
                if key not in keys:
                    raise fail(f"{section}.{key}", f"one of {sorted(keys)}", "an unknown key")
                kwargs[key] = value
        data = raw.get("data", {})
        if set(data) - {"dir", "source"}:
            raise fail("data", "keys 'dir' and 'source'", sorted(data))
        data_dir = data.get("dir")
        data_source = data.get("source", "files")
        if data_source not in superglue.SOURCES:
            raise fail("data.source", f"one of {superglue.SOURCES}", data_source)
        variants = []
        for name, spec in raw.get("variants", {}).items():
            extra = set(spec) - {"gating", "gate_position"}
            if extra:
                raise fail(f"variants.{name}", "keys gating, gate_position", sorted(extra))
            variant = Variant(name, **spec)
            if variant.gating not in VARIANTS:
                raise fail(f"variants.{name}.gating", f"one of {VARIANTS}", variant.gating)
            variants.append(variant)
        tasks = {}
        for task, spec in raw.get("tasks", {}).items():
            if task not in superglue.TASKS:
                raise fail(f"tasks.{task}", f"a SuperGLUE task {superglue.TASKS}", task)
            extra = set(spec) - {"epochs", "decay_steps", "aux_tokens"}
            if extra or "epochs" not in spec:
                raise fail(f"tasks.{task}", "keys epochs (required), decay_steps, aux_tokens", sorted(spec))
            tasks[task] = TaskPlan(spec["epochs"], spec.get("decay_steps"), tuple(spec.get("aux_tokens", ())))
        for key in ("name", "output_dir", "seeds"):
            if key not in raw:
                raise fail(key, "a value", "<missing>")
        if not variants or not tasks:
            raise fail("variants/tasks", "at least one [variants.<name>] and one [tasks.<Task>]", "none")
        seeds = raw["seeds"]
        if not isinstance(seeds, list) or not all(isinstance(s, int) for s in seeds):
            raise fail("seeds", "a list of integers", seeds)
        return cls(
            name=raw["name"],
            output_dir=raw["output_dir"],
            seeds=tuple(seeds),
            variants=tuple(variants),
            tasks=tasks,
            data_dir=None if data_dir == "hub" else data_dir,
            data_source=data_source,
            **kwargs,
        )

    def variant(self, name):
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(f"variant {name!r}: expected one of {[v.name for v in self.variants]}")


def load_tokenizer(experiment):
    """The BERT word-piece tokenizer: a vocab.txt file, or the preset/directory (default: the backbone's)."""
    spec = experiment.tokenizer or experiment.backbone
    if not isinstance(spec, str):
        raise ValueError("model.tokenizer is required when model.backbone is a table of sizes")
    return bert.load_tokenizer(spec, experiment.lowercase)


def _targets(rows, num_classes):
    labels = np.array([row.label for row in rows])
    if num_classes == 1:
        return labels.astype("float32")[:, None]
    return np.eye(num_classes, dtype="float32")[labels]


def build_model(experiment, variant, backbone, num_classes, num_aux_tokens=0):
    """The :class:`NGTModel` of one variant of the experiment on ``backbone``."""
    return NGTModel(
        backbone,
        variant=variant.gating,
        gate_position=variant.gate_position,
        num_gating_layers=experiment.num_gating_layers,
        num_classes=num_classes,
        num_aux_tokens=num_aux_tokens,
        gating_dropout=experiment.gating_dropout,
    )


def make_dataset(rows, encoder, batch_size, num_classes, seed=None, start_batch=0):
    """A tf.data pipeline of (inputs, targets) batches, encoded on the fly (ReCoRD has ~1.2M rows).

    With ``seed``: an infinite training stream from global batch ``start_batch``; epoch
    ``e`` visits the rows in ``default_rng([seed, e]).permutation`` order (so a resumed run
    continues exactly). Without it: one pass in file order (for prediction).
    """
    encoder.prepare(rows)  # tokenize every distinct string once, up front
    targets = _targets(rows, num_classes)
    steps = math.ceil(len(rows) / batch_size)

    def batches():
        if seed is None:
            for start in range(0, len(rows), batch_size):
                index = np.arange(start, min(start + batch_size, len(rows)))
                yield encoder.encode([rows[i] for i in index]), targets[index]
            return
        for step in itertools.count(start_batch):
            epoch, k = divmod(step, steps)
            order = np.random.default_rng([seed, epoch]).permutation(len(rows))
            index = order[k * batch_size:(k + 1) * batch_size]
            yield encoder.encode([rows[i] for i in index]), targets[index]

    length = encoder.sequence_length
    spec = tf.TensorSpec((None, length), tf.int32)
    signature = (
        {"token_ids": spec, "segment_ids": spec, "padding_mask": spec},
        tf.TensorSpec((None, num_classes), tf.float32),
    )
    dataset = tf.data.Dataset.from_generator(batches, output_signature=signature)
    if seed is None:
        dataset = dataset.apply(tf.data.experimental.assert_cardinality(steps))
    return dataset.prefetch(2)


def compile_model(model, experiment, decay_steps):
    """Compile with the paper's optimiser (Table 3): AdamW on every weight, cosine decay to 0, no warm-up.

    Binary cross-entropy for a 1-unit head, categorical for a softmax head
    (CB), both on probabilities as in the original.
    """
    model.compile(
        optimizer=keras.optimizers.AdamW(
            # Keras CosineDecay to 0 via the project's schedule factory.
            learning_rate=build_schedule(
                {"type": "cosine", "rate": experiment.learning_rate, "decay_steps": decay_steps}
            ),
            weight_decay=experiment.weight_decay,
            beta_1=experiment.beta_1,
            beta_2=experiment.beta_2,
            epsilon=experiment.epsilon,
        ),
        loss="binary_crossentropy" if model.num_classes == 1 else "categorical_crossentropy",
        jit_compile=experiment.jit_compile,
        run_eagerly=experiment.run_eagerly,
    )


class EpochRecords(keras.callbacks.Callback):
    """After each epoch: a ``metrics.jsonl`` line (loss and the task's metrics), the
    validation predictions in the official label layout, and optionally the weights.

    The scores come from the run's validation metric (:func:`train_run`), computed once
    per epoch; a resumed run first drops the lines of the epochs it will redo.
    """

    def __init__(self, out_dir, task, val_rows, scores, steps_per_epoch, save_weights):
        super().__init__()
        self.out_dir, self.task, self.val_rows = Path(out_dir), task, val_rows
        self.scores, self.steps_per_epoch, self.save_weights = scores, steps_per_epoch, save_weights

    def on_train_begin(self, logs=None):
        done = int(self.model.optimizer.iterations.numpy()) // self.steps_per_epoch
        lines = read_metrics(self.out_dir / "metrics.jsonl")[:done]
        (self.out_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))

    def on_epoch_end(self, epoch, logs=None):
        scores, probabilities = self.scores["last"]
        line = {"epoch": epoch + 1, "loss": float(logs["loss"]), **scores}
        with open(self.out_dir / "metrics.jsonl", "a") as f:
            f.write(json.dumps(line) + "\n")
        records = superglue.prediction_records(self.task, self.val_rows, probabilities)
        (self.out_dir / f"val_predictions_epoch{epoch + 1}.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in records))
        if self.save_weights:
            self.model.save_weights(self.out_dir / f"epoch{epoch + 1}.weights.h5")


def read_metrics(path):
    """The lines of a run's ``metrics.jsonl`` (none when it does not exist)."""
    path = Path(path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def train_run(experiment, task, variant, seed, train_data, val_data, out_dir=None, tokenizer=None, verbose=0):
    """Fine-tune one variant on one task with one seed; returns the validation metrics per epoch.

    Trains through the package's trainer (:func:`nemot.training.loop.run`): checkpoints
    in ``out_dir/train_state`` (an interrupted run resumes), the best-metric model (♠,
    the mean task score) beside the last one, and this package's files: ``metrics.jsonl``,
    ``val_predictions_epoch<N>.jsonl``, ``training_setup.json`` (:class:`EpochRecords`).

    Args:
        experiment: an :class:`Experiment`.
        task: the SuperGLUE task name (a key of ``experiment.tasks``).
        variant: a :class:`Variant`.
        seed: the run's seed (weights of the new layers, dropout, shuffling).
        train_data, val_data: ``superglue.TaskData`` of the two splits.
        out_dir: the run directory (default: a temporary one, removed afterwards).
        tokenizer: reuse a tokenizer across runs (default: :func:`load_tokenizer`).
    """
    if out_dir is None:
        with tempfile.TemporaryDirectory() as scratch:
            return train_run(experiment, task, variant, seed, train_data, val_data, scratch,
                             tokenizer, verbose)
    plan = experiment.tasks[task]
    tokenizer = tokenizer or load_tokenizer(experiment)
    aux_ids = [_token_id(tokenizer, t, task) for t in plan.aux_tokens]
    encoder = superglue.PairEncoder(tokenizer, experiment.sequence_length, aux_ids)
    num_classes = len(superglue.CB_LABELS) if task == "CB" else 1
    steps = math.ceil(len(train_data.rows) / experiment.batch_size)
    decay_steps = plan.decay_steps or steps * plan.epochs
    val_ds = make_dataset(val_data.rows, encoder, experiment.batch_size, num_classes)
    scores = {}

    def metric(model):
        probabilities = model.predict(val_ds, verbose=0)
        task_scores = benchmarks.score_superglue(task, val_data.rows, probabilities)
        scores["last"] = (task_scores, probabilities)
        return {"metric": benchmarks.task_score(task_scores), **task_scores}

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    setup = {"task": task, "variant": dataclasses.asdict(variant), "seed": seed, "decay_steps": decay_steps}
    (out_dir / "training_setup.json").write_text(json.dumps(setup, indent=2))
    source = DataSource(
        train=lambda start_batch, batch_size, input_context: make_dataset(
            train_data.rows, encoder, batch_size, num_classes, seed=seed, start_batch=start_batch),
        steps_per_epoch=steps, metric=metric)
    train = TrainConfig(batch_size=experiment.batch_size, epochs=plan.epochs, steps_per_epoch=steps,
                        keep_checkpoints=1, jit_compile=experiment.jit_compile, verbose=verbose)
    records = EpochRecords(out_dir, task, val_data.rows, scores, steps, experiment.save_weights)
    loop.run(lambda: build_model(experiment, variant, load_backbone(experiment.backbone), num_classes,
                                 len(aux_ids)),
             source, train, out_dir, compile_model=lambda model: compile_model(model, experiment, decay_steps),
             seed=seed, callbacks=[records])
    return [{k: v for k, v in line.items() if k not in ("epoch", "loss")}
            for line in read_metrics(out_dir / "metrics.jsonl")]


def load_splits(experiment, task):
    """``(train, val)`` :class:`superglue.TaskData` of ``task`` from the experiment's data."""
    return tuple(superglue.load_task(task, split, experiment.data_dir, experiment.data_source)
                 for split in ("train", "val"))


def _token_id(tokenizer, token, task):
    try:
        return tokenizer.token_to_id(token)
    except ValueError:
        raise ValueError(f"tasks.{task}.aux_tokens: {token!r} is not in the tokenizer's vocabulary") from None


def run_dir(experiment, variant, task, seed):
    return Path(experiment.output_dir) / variant / task / f"seed{seed}"


def run_experiment(experiment, tasks=None, variants=None, seeds=None, verbose=0):
    """Train every (variant, task, seed) run of the experiment (or the chosen subset)."""
    tasks = tasks or list(experiment.tasks)
    variants = [experiment.variant(v) for v in variants] if variants else list(experiment.variants)
    seeds = seeds or experiment.seeds
    tokenizer = load_tokenizer(experiment)
    for task in tasks:
        if task not in experiment.tasks:
            raise KeyError(f"task {task!r}: expected one of {list(experiment.tasks)}")
        train_data, val_data = load_splits(experiment, task)
        for variant in variants:
            for seed in seeds:
                out = run_dir(experiment, variant.name, task, seed)
                train_run(experiment, task, variant, seed, train_data, val_data, out, tokenizer, verbose)


def collect(output_dir):
    """``{variant: {task: [epoch metrics per run]}}`` from the ``metrics.jsonl`` files under ``output_dir``."""
    results = {}
    for path in sorted(Path(output_dir).glob("*/*/seed*/metrics.jsonl")):
        variant, task = path.parent.parent.parent.name, path.parent.parent.name
        metric_names = benchmarks.SUPERGLUE_METRICS[task]
        epochs = []
        for line_no, line in enumerate(path.read_text().splitlines(), start=1):
            record = json.loads(line)
            missing = [m for m in metric_names if m not in record]
            if missing:
                raise ValueError(f"{path}, line {line_no}: missing metric(s) {missing} for {task}")
            epochs.append({m: record[m] for m in metric_names})
        if epochs:
            results.setdefault(variant, {}).setdefault(task, []).append(epochs)
    if not results:
        raise FileNotFoundError(f"{output_dir}: no <variant>/<task>/seed*/metrics.jsonl files")
    return results


def summarize(results):
    """Aggregate collected runs: per variant the paper's table cells, mean column and per-run scores."""
    summary = {}
    for variant, per_task in results.items():
        cells, run_scores = {}, {}
        for task in superglue.TASKS:
            if task not in per_task:
                continue
            best = [epochs[ngt_metrics.best_epoch(epochs)] for epochs in per_task[task]]
            cells[task] = ngt_metrics.aggregate(best)
            run_scores[task] = [benchmarks.task_score(m) for m in best]
        summary[variant] = {"cells": cells, "mean": ngt_metrics.mean_column(cells), "run_scores": run_scores}
    return summary


def report(results, variants=None):
    """The paper's Table 1 layout (markdown) plus significance tests between every pair of variants.

    Returns:
        (markdown text, dict with the summary and the p values).
    """
    summary = summarize(results)
    variants = [v for v in variants if v in summary] if variants else list(summary)
    tasks = [t for t in superglue.TASKS if any(t in summary[v]["cells"] for v in variants)]
    lines = ["| Task | Metric | " + " | ".join(variants) + " |", "|---|---|" + "---|" * len(variants)]
    for task in tasks:
        metrics = benchmarks.SUPERGLUE_METRICS[task]
        label = "/".join(benchmarks.METRIC_LABELS[m] for m in metrics)
        cells = []
        for v in variants:
            cell = summary[v]["cells"].get(task)
            cells.append(" / ".join(f"{cell[m][0]:.2f}±{cell[m][1]:.2f}" for m in metrics) if cell else "–")
        lines.append(f"| {task} | {label} | " + " | ".join(cells) + " |")
    means = [f"{summary[v]['mean'][0]:.2f}±{summary[v]['mean'][1]:.2f}" for v in variants]
    lines.append("| **Mean** | | " + " | ".join(means) + " |")
    tests = {}
    lines += ["", "Significance (two-sided p; Welch's t-test per task on each run's mean task score, "
              "paired t-test over tasks on the variants' means):", ""]
    lines += ["| Variants | " + " | ".join(tasks) + " | paired over tasks |", "|---|" + "---|" * (len(tasks) + 1)]
    for i, a in enumerate(variants):
        for b in variants[i + 1 :]:
            test = ngt_metrics.significance(summary[a]["run_scores"], summary[b]["run_scores"])
            tests[f"{a} vs {b}"] = test
            row = [f"{test['per_task'].get(t, math.nan):.3f}" for t in tasks]
            lines.append(f"| {a} vs {b} | " + " | ".join(row) + f" | {test['paired_over_tasks']:.3f} |")
    return "\n".join(lines) + "\n", {"summary": summary, "significance": tests}


def write_report(output_dir, variants=None):
    """Write ``report.md`` and ``report.json`` under ``output_dir``; returns the markdown."""
    text, data = report(collect(output_dir), variants)
    Path(output_dir, "report.md").write_text(text)
    Path(output_dir, "report.json").write_text(json.dumps(data, indent=2, default=list))
    return text


def parameter_counts(experiment, num_classes=1):
    """``{variant: parameters}`` of the experiment's models, built without loading weights.

    The backbone is built once and shared (the counts do not depend on its weights).
    """
    backbone = load_backbone(experiment.backbone, load_weights=False)
    return {v.name: build_model(experiment, v, backbone, num_classes).count_params() for v in experiment.variants}
