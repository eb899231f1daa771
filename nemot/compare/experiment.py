"""The comparison: every modulation mechanism on one backbone and the same
multi-task data, in the protocol of ``nemot runs`` (:mod:`nemot.experiments.protocol`).

Each paper compared itself with a plain baseline on its own data, backbone and budget;
here NeMoT's gate, NGT's gating block, PALs, HyperGrid and modulated activations each
condition the same encoder (:mod:`nemot.compare.model`) on the task, with the same
optimiser, schedule, steps, annealed task sampling, heads and seeds. Design and every
choice: ``docs/compare.md``.

A config (``configs/compare/minbert.toml``)::

    reproduction = "compare"
    name = "minbert"
    output_dir = "runs/compare/minbert"
    seeds = [0, 1, 2, 3, 4]
    [data]    dir, tasks, split, test_fraction, split_seed, sequence_length, vocabulary
    [model]   d_model, num_heads, d_ff, num_layers, dropout, head_dropout
    [train]   batch_size, epochs, steps_per_epoch, learning_rate, warmup_fraction,
              floor_fraction, clipnorm, sampling, timing_steps, timing_rounds, jit_compile,
              run_eagerly, verbose
    [variants.<name>]  mechanism (default: the variant's name) and its options

The data are the PALs report's three tasks in the minBERT files
(:mod:`nemot.data.benchmarks.minbert`): SST-5 trains on ``ids-sst-train.csv`` and is scored on ``ids-sst-dev.csv``, STS-B on
``sts-train.csv`` / ``sts-dev.csv``; a task named in ``data.split`` (Quora: only
``quora-dev.csv`` is available) has its dev file split with ``data.split_seed`` into
train and a held-out ``data.test_fraction``. The encoder is trained from scratch for a
fixed number of steps and the last model is scored (no epoch is selected on the scored
files).

``run_one`` returns ``sst_accuracy``, ``quora_accuracy``, ``sts_pearson``, ``score``
(the PALs report's average, :func:`nemot.evaluation.benchmark_metrics.minbert_score`),
``added_parameters`` (the variant's parameters minus a ``none`` model's of the same sizes)
and ``step_time_ratio``: in the same process, after training, the variant and a ``none``
model (one per process: :func:`timing_baseline`) each run ``timing_steps`` training steps
on the same batches, alternating for ``timing_rounds`` rounds; the ratio is the median
over rounds of (variant time / ``none`` time), so both see the same machine load. The
runs of one process also share the read and encoded data (:func:`prepare`).

Example:
    >>> experiment = load("configs/compare/minbert.toml",
    ...                   ["data.dir=data/minbert"])          # doctest: +SKIP
    >>> run_one(experiment, "pals", 0, "runs/compare/minbert/pals/seed0")  # doctest: +SKIP
    {'sst_accuracy': ..., 'quora_accuracy': ..., 'sts_pearson': ..., 'score': ..., ...}
"""

import collections
import dataclasses
import functools
import json
import time
import typing
from pathlib import Path

import numpy as np

from nemot.compare import pool
from nemot.compare.timing import step_time_ratio
from nemot.experiments import config, protocol
from nemot.compare.model import (HEADS, CompareModel, Settings, mechanism_of, predict_tasks,
                                 variant_tables)
from nemot.data.benchmarks import minbert
from nemot.data.sampling import MODES, TaskSampler, sampled_batches, shuffled_batches
from nemot.errors import UserError
from nemot.evaluation.benchmark_metrics import accuracy, minbert_score, pearson
from nemot.ranges import (Count, Fraction, NonNegativeFloat, NonNegativeInt, PositiveFloat,
                          Probability, Range, Verbosity)
from nemot.training.run_config import dump_toml

TABLES = ("data", "model", "train")
# The metric of each task's column (the comparison's names).
METRICS = {"sst": "sst_accuracy", "quora": "quora_accuracy", "sts": "sts_pearson",
           "cfimdb": "cfimdb_accuracy"}
# Compact vocabulary: these ids, then the training sentences' GPT-2 BPE tokens.
PAD, UNK, CLS, SEP = range(4)
VOCABULARIES = ("train", "gpt2")
# `nemot runs report` writes every mechanism's tests against this variant.
BASELINE = "none"
# The minBERT score averages SST and Quora accuracies and STS's (r + 1) / 2: in [0, 1].
METRIC_KINDS = {"score": "proportion", "val_metric": "proportion"}
PAPER_NOTES = {
    "minbert": "no paper ran this comparison: each reported its mechanism against its own "
               "plain baseline (NeMoT thesis, NGT, PALs = Rotzal's report, HyperGrid, modulated "
               "activations). The PALs report's BERT-base numbers (Table 2, dev) are far above a "
               "small encoder trained from scratch: SST .523, Quora .779, STS r .377.",
}


def cost_table(output_dir, manifest):
    """What the finished runs cost ("say in the report what it cost"): per variant
    the runs and their mean wall-clock seconds by phase, from each run's ``details.json``;
    then the sum over all runs. Returns ``(markdown, data)``. A run resumed after an
    interruption counts its last process only."""
    rows, data = [], {}
    phases = ("data", "train", "score", "timing")
    for variant in manifest["variants"]:
        walls = [json.loads(p.read_text())["wall_seconds"]
                 for p in sorted(Path(output_dir, variant).glob("seed*/details.json"))
                 if Path(p.parent, protocol.METRICS).exists()]
        if not walls:
            continue
        means = {k: float(np.mean([w[k] for w in walls])) for k in phases}
        total = float(sum(sum(w[k] for k in phases) for w in walls))
        data[variant] = {"runs": len(walls), "mean_seconds": means, "total_seconds": total}
        rows.append(f"| {variant} | {len(walls)} | " + " | ".join(
            f"{means[k]:.0f}" for k in phases) + f" | {sum(means.values()):.0f} | {total:.0f} |")
    everything = sum(v["total_seconds"] for v in data.values())
    lines = ["Wall-clock seconds of each run's process (`details.json`), mean per run by "
             "phase; a run resumed after an interruption counts its last process only.", "",
             "| variant | runs | data | train | score | timing | per run | all runs |",
             "|---|---|---|---|---|---|---|---|", *rows, "",
             f"All runs: {everything:,.0f} s of process time ({everything / 3600:.2f} h); "
             "with `--jobs N` the machine ran N at a time."]
    return "\n".join(lines), {"variants": data, "total_seconds": everything}


@dataclasses.dataclass(frozen=True)
class DataSettings:
    """Which files, how they are split and tokenised.

    Args:
        dir: the minBERT ``data/`` directory.
        tasks: task names (:data:`nemot.compare.model.HEADS`), in head order.
        split: tasks trained on a seeded part of their dev file and scored on the rest.
        test_fraction: the held-out part of a split dev file.
        split_seed: the seed of that split (the same for every run and variant).
        sequence_length: ids per example, ``[CLS] a [SEP] b [SEP]`` cut longest-first.
        vocabulary: ``"train"``: GPT-2 BPE (:class:`nemot.data.Tokenizer`, offline), the
            tokens of the training sentences only (the rest are ``[UNK]``); ``"gpt2"``:
            all 50,313 ids of NeMoT's vocabulary.
    """

    dir: str = "data/minbert"
    tasks: tuple = ("sst", "quora", "sts")
    split: tuple = ("quora",)
    test_fraction: Fraction = 0.2
    split_seed: NonNegativeInt = 0
    sequence_length: typing.Annotated[int, Range(8)] = 64
    vocabulary: str = "train"

    def __post_init__(self):
        object.__setattr__(self, "tasks", tuple(self.tasks))
        object.__setattr__(self, "split", tuple(self.split))
        unknown = [t for t in self.tasks + self.split if t not in HEADS]
        if unknown or not self.tasks:
            raise ValueError(f"tasks {list(self.tasks)}, split {list(self.split)}: expected "
                             f"task names among {sorted(HEADS)}")
        if self.vocabulary not in VOCABULARIES:
            raise ValueError(f"vocabulary={self.vocabulary!r}: expected one of {VOCABULARIES}")


# The [model] keys: the backbone of every variant (nemot.compare.model.Settings fields).
MODEL_KEYS = ("d_model", "num_heads", "d_ff", "num_layers", "dropout", "head_dropout")


@dataclasses.dataclass(frozen=True)
class TrainSettings:
    """How every variant trains and is timed.

    Args:
        batch_size: examples per step (one task per batch).
        epochs, steps_per_epoch: training length; an epoch is the annealing unit of
            ``sampling`` (the PALs report, s.4.4).
        learning_rate: Adam's peak rate (epsilon 1e-6, as minBERT's AdamW).
        warmup_fraction: linear warm-up from 0 over this part of the steps, then cosine
            decay (:class:`nemot.training.schedules.WarmupCosine`) to ``floor_fraction`` x peak.
        clipnorm: global gradient-norm clipping (0: none).
        sampling: :class:`nemot.data.sampling.TaskSampler` mode.
        timing_steps, timing_rounds: the step-time measurement (module docstring).
        jit_compile: XLA-compile the train step.
        run_eagerly: run every step op by op, with no ``tf.function`` (for tiny smoke runs,
            where tracing a step costs more than the few steps run; the test suite's
            whole comparison); the real comparison leaves it off.
        verbose: Keras fit verbosity.
    """

    batch_size: Count = 32
    epochs: Count = 4
    steps_per_epoch: Count = 250
    learning_rate: PositiveFloat = 5e-4
    warmup_fraction: Probability = 0.1
    floor_fraction: Probability = 0.1
    clipnorm: NonNegativeFloat = 1.0
    sampling: str = "annealed"
    timing_steps: Count = 10
    timing_rounds: Count = 5
    jit_compile: bool = False
    run_eagerly: bool = False
    verbose: Verbosity = 0

    def __post_init__(self):
        if self.sampling not in MODES:
            raise ValueError(f"sampling={self.sampling!r}: expected one of {MODES}")
        for key in ("batch_size", "epochs", "steps_per_epoch", "timing_steps",
                    "timing_rounds"):
            if not (isinstance(getattr(self, key), int) and getattr(self, key) > 0):
                raise ValueError(f"{key}={getattr(self, key)!r}: expected a positive integer")

    @property
    def total_steps(self):
        return self.epochs * self.steps_per_epoch

    def optimizer(self):
        import keras

        from nemot.training.schedules import WarmupCosine

        warmup = int(round(self.warmup_fraction * self.total_steps))
        schedule = WarmupCosine(start=0.0, peak=self.learning_rate,
                                floor=self.floor_fraction * self.learning_rate,
                                warmup_steps=warmup,
                                decay_steps=max(self.total_steps - warmup, 1))
        return keras.optimizers.Adam(schedule, epsilon=1e-6,
                                     global_clipnorm=self.clipnorm or None)


@dataclasses.dataclass(frozen=True)
class Experiment:
    """A parsed config (see the module docstring)."""

    name: str
    output_dir: str
    seeds: tuple
    variants: dict  # name -> (mechanism, options)
    data: DataSettings
    model: dict  # MODEL_KEYS
    train: TrainSettings
    source: str = "<dict>"


def from_dict(raw, source="<dict>"):
    """An :class:`Experiment` from a TOML-shaped dict; errors name ``source`` and the key."""
    if raw.get("reproduction", "compare") != "compare":
        raise ValueError(f"{source}: reproduction = {raw['reproduction']!r}: expected "
                         "'compare'")
    keys = protocol.protocol_keys(raw, TABLES, source)
    model = dict(raw.get("model", {}))
    unknown = sorted(set(model) - set(MODEL_KEYS))
    if unknown:
        raise ValueError(f"{source}: [model]: unknown key(s) {unknown}; expected some of "
                         f"{list(MODEL_KEYS)}")
    experiment = Experiment(
        keys["name"], keys["output_dir"], keys["seeds"],
        variant_tables(keys["variants"]),
        config.settings(DataSettings, raw.get("data", {}), f"{source}: [data]"), model,
        config.settings(TrainSettings, raw.get("train", {}), f"{source}: [train]"), source)
    for name in experiment.variants:
        settings(experiment, name, vocab_size=8)  # every variant must make a valid model
    return experiment


def load(path, overrides=()):
    """Read a config and apply ``KEY=VALUE`` overrides (``"data.dir=..."``,
    ``"train.epochs=1"``, ``"seeds=[0]"``, ``"variants.pals.hidden_size=6"``). A config
    with a ``run_config`` key compares on a thesis run (:mod:`nemot.compare.pool`)."""
    raw = protocol.read_config(path)
    if "run_config" in raw:
        return pool.from_dict(protocol.apply_overrides(raw, overrides, pool.TABLES,
                                                   source=str(path)), path)
    raw = protocol.apply_overrides(raw, overrides, TABLES, source=str(path))
    return from_dict(raw, source=str(path))


def variants(experiment):
    """The variant names, in the config's order."""
    return list(experiment.variants)


def settings(experiment, variant, vocab_size, mechanism=None):
    """The :class:`nemot.compare.model.Settings` of ``variant`` (or of ``mechanism`` with
    no options, e.g. the ``none`` model it is timed against)."""
    where = f"{experiment.source}: [variants.{variant}]"
    name, options = mechanism_of(experiment.variants, variant, mechanism, where)
    values = dict(experiment.model, vocab_size=vocab_size,
                  sequence_length=experiment.data.sequence_length, pad_id=PAD,
                  tasks=experiment.data.tasks, mechanism=name, options=options)
    try:
        model_settings = Settings(**values)
        model_settings.modulation_specs()
    except (TypeError, ValueError) as error:
        raise ValueError(f"{where}: {error}") from None
    return model_settings


# ---- data ----------------------------------------------------------------------------


def read_splits(data):
    """``({task: train Rows}, {task: test Rows})`` of the minBERT files (module docstring)."""
    train, test = {}, {}
    for task in data.tasks:
        if task in data.split:
            train[task], test[task] = minbert.split_rows(
                minbert.read(task, data.dir, "dev", labelled=True), data.test_fraction,
                data.split_seed)
        else:
            train[task] = minbert.read(task, data.dir, "train", labelled=True)
            test[task] = minbert.read(task, data.dir, "dev", labelled=True)
    return train, test


@dataclasses.dataclass(frozen=True)
class Prepared:
    """The data of every run with the same :class:`DataSettings`: the rows, the
    :class:`Encoder` and the encoded ids (``{task: int32 [N, sequence_length]}``)."""

    train_rows: dict
    test_rows: dict
    encoder: "Encoder"
    train_ids: dict
    test_ids: dict


def prepare(data):
    """The :class:`Prepared` data of ``data``, read, tokenised and encoded once per process
    while the files are unchanged (the runs of ``nemot runs --jobs 1`` share it)."""
    stamps = []
    for task in data.tasks:
        layout = minbert.layout_of(task)
        for split in ("dev",) if task in data.split else ("train", "dev"):
            stat = minbert.split_file(layout, data.dir, split, task).stat()
            stamps.append((task, split, stat.st_mtime_ns, stat.st_size))
    return _prepare(data, tuple(stamps))


@functools.lru_cache(maxsize=1)
def _prepare(data, stamps):
    train_rows, test_rows = read_splits(data)
    encoder = Encoder(train_rows.values(), data.sequence_length, data.vocabulary)
    return Prepared(train_rows, test_rows, encoder,
                    {t: encoder.encode(rows) for t, rows in train_rows.items()},
                    {t: encoder.encode(rows) for t, rows in test_rows.items()})


class Encoder:
    """Texts -> fixed-length ids ``[CLS] a [SEP] (b [SEP])``, right-padded.

    GPT-2 byte-level BPE (:class:`nemot.data.Tokenizer`, offline); with ``vocabulary =
    "train"`` the ids are renumbered to the tokens that occur in ``train_rows`` (most
    frequent first, after ``[PAD]``, ``[UNK]``, ``[CLS]``, ``[SEP]``), so a small model has
    a small embedding; ``"gpt2"`` keeps NeMoT's 50,313 ids (``<pad>``, ``<cls>``, ``<sep>``).
    A pair longer than the sequence is cut longest-first, one token at a time.
    """

    def __init__(self, train_rows, sequence_length, vocabulary="train"):
        from nemot import vocab
        from nemot.data.tokenizer import Tokenizer

        self.tokenizer = Tokenizer()
        self.sequence_length = int(sequence_length)
        if vocabulary == "gpt2":
            self.table = None
            self.pad, self.cls, self.sep = vocab.PAD_ID, vocab.CLS_ID, vocab.SEP_ID
            self.vocab_size = vocab.VOCAB_SIZE
            return
        counts = collections.Counter()
        for rows in train_rows:
            for texts in (rows.text_a, rows.text_b or ()):
                for ids in self.tokenizer.encode_batch(list(texts)):
                    counts.update(ids)
        order = sorted(counts, key=lambda i: (-counts[i], i))
        self.table = {bpe: n for n, bpe in enumerate(order, start=SEP + 1)}
        self.pad, self.cls, self.sep = PAD, CLS, SEP
        self.vocab_size = SEP + 1 + len(order)

    def _ids(self, texts):
        lists = self.tokenizer.encode_batch(list(texts))
        if self.table is None:
            return lists
        return [[self.table.get(i, UNK) for i in ids] for ids in lists]

    def encode(self, rows):
        """int32 [N, sequence_length] ids of ``rows`` (a
        :class:`nemot.data.benchmarks.minbert.Rows`)."""
        a = self._ids(rows.text_a)
        b = self._ids(rows.text_b) if rows.text_b is not None else [None] * len(a)
        out = np.full((len(a), self.sequence_length), self.pad, "int32")
        for n, (first, second) in enumerate(zip(a, b)):
            ids = self.pack(first, second)
            out[n, :len(ids)] = ids
        return out

    def pack(self, first, second=None):
        """``[CLS] first [SEP] (second [SEP])`` in ``sequence_length`` ids at most."""
        pair = second is not None
        room = self.sequence_length - (3 if pair else 2)
        first, second = list(first), list(second or [])
        while len(first) + len(second) > room:
            (first if len(first) >= len(second) else second).pop()
        ids = [self.cls, *first, self.sep]
        return ids + [*second, self.sep] if pair else ids


def batches(ids, labels, sampler, batch_size, seed, start_step=0):
    """The training stream: step ``s``'s batch is from the task ``sampler`` draws for ``s``
    (annealed sampling, the PALs report, s.4.4), at that task's own position in its shuffled
    stream; a resumed run continues exactly. Yields ``(inputs, targets)``."""
    tasks = list(ids)

    def make_iterator(task, start_batch):
        index = tasks.index(task)
        for rows in shuffled_batches(len(ids[task]), batch_size, [seed, index], start_batch):
            inputs = {"token_ids": ids[task][rows],
                      "task_index": np.full((len(rows),), index, "int32")}
            yield inputs, np.stack([inputs["task_index"].astype("float32"),
                                    labels[task][rows]], axis=1)

    for _, item in sampled_batches(make_iterator, sampler, start_step):
        yield item


def as_dataset(make_batches, length):
    """A ``tf.data.Dataset`` of the ``(inputs, targets)`` that ``make_batches()`` yields
    (ids of ``length``); every dataset of a run has this signature, so Keras traces one
    training step for the run and the timing."""
    import tensorflow as tf

    from nemot.data.memory import keep_freed_memory

    def batches():
        keep_freed_memory()  # after TensorFlow's allocator patch (the function's docstring)
        yield from make_batches()

    signature = ({"token_ids": tf.TensorSpec((None, length), tf.int32),
                  "task_index": tf.TensorSpec((None,), tf.int32)},
                 tf.TensorSpec((None, 2), tf.float32))
    return tf.data.Dataset.from_generator(batches, output_signature=signature)


def train_source(ids, labels, sampler, train, seed):
    """The :class:`nemot.training.loop.DataSource` of one run (no validation: the last
    model is scored)."""
    from nemot.training import loop

    length = next(iter(ids.values())).shape[1]

    def train_fn(start_batch, batch_size, input_context):
        if input_context is not None and input_context.num_input_pipelines > 1:
            raise ValueError("compare runs read one input pipeline; multi-worker training "
                             "is not supported")
        return as_dataset(lambda: batches(ids, labels, sampler, batch_size, seed, start_batch),
                          length).prefetch(2)

    return loop.DataSource(train=train_fn, steps_per_epoch=train.steps_per_epoch)


# ---- one run -------------------------------------------------------------------------


def compile_model(model, train):
    from nemot.hosts.losses import TaskHeadsLoss

    model.compile(train.optimizer(),
                  loss=TaskHeadsLoss([HEADS[t] for t in model.settings.tasks]),
                  jit_compile=train.jit_compile, run_eagerly=train.run_eagerly)


def resolved_toml(experiment, variant, seed):
    """The settings one run uses, as TOML (its ``config.toml``)."""
    if isinstance(experiment, pool.Experiment):
        return pool.resolved_toml(experiment, variant, seed)
    mechanism, options = mechanism_of(experiment.variants, variant,
                                      where=f"{experiment.source}: [variants.{variant}]")
    return dump_toml({"reproduction": "compare", "name": experiment.name, "variant": variant,
                      "seed": seed, "mechanism": mechanism, "model": dict(experiment.model),
                      "options": _plain(dict(options)),
                      "data": _plain(dataclasses.asdict(experiment.data)),
                      "train": _plain(dataclasses.asdict(experiment.train))})


def run_one(experiment, variant, seed, run_dir):
    """Train ``variant`` with ``seed`` into ``run_dir``, score it on the held-out files and
    time it against ``none``; returns the metrics (module docstring)."""
    if isinstance(experiment, pool.Experiment):
        return pool.run_one(experiment, variant, seed, run_dir)

    from nemot.training import loop

    data, train = experiment.data, experiment.train
    started = time.time()
    prepared = prepare(data)
    train_rows, test_rows, encoder = prepared.train_rows, prepared.test_rows, prepared.encoder
    ids = prepared.train_ids
    labels = {t: rows.labels for t, rows in train_rows.items()}
    sampler = TaskSampler({t: len(rows) for t, rows in train_rows.items()},
                          mode=train.sampling, epochs=train.epochs,
                          steps_per_epoch=train.steps_per_epoch, seed=seed)
    model_settings = settings(experiment, variant, encoder.vocab_size)
    data_ready = time.time()
    result = loop.run(
        lambda: _built(model_settings), train_source(ids, labels, sampler, train, seed),
        loop.TrainConfig(batch_size=train.batch_size, epochs=train.epochs,
                         steps_per_epoch=train.steps_per_epoch, keep_checkpoints=1,
                         jit_compile=train.jit_compile, verbose=train.verbose),
        run_dir, compile_model=lambda model: compile_model(model, train), seed=seed,
        config_toml=resolved_toml(experiment, variant, seed))
    trained = time.time()
    model = result.model
    metrics = {}
    predicted = predict_tasks(model, prepared.test_ids)
    for task, rows in test_rows.items():
        score = pearson if HEADS[task][0] == "regression" else accuracy
        metrics[METRICS[task]] = score(predicted[task], rows.labels)
    if {"sst", "quora", "sts"} <= set(data.tasks):
        metrics["score"] = minbert_score(metrics["sst_accuracy"], metrics["quora_accuracy"],
                                         metrics["sts_pearson"])
    scored = time.time()

    ratio, seconds, baseline = time_against_none(experiment, variant, seed, model, prepared)
    metrics["added_parameters"] = model.count_params() - baseline.count_params()
    metrics["step_time_ratio"] = ratio
    details = {
        "metrics": metrics, "parameters": model.count_params(),
        "none_parameters": baseline.count_params(), "vocab_size": encoder.vocab_size,
        "examples": {t: {"train": len(train_rows[t]), "test": len(test_rows[t]),
                         "train_file": train_rows[t].path, "test_file": test_rows[t].path}
                     for t in data.tasks},
        "timing_seconds": {"variant_none_per_round": seconds, "clock": TIMING_CLOCK},
        "wall_seconds": {"data": data_ready - started, "train": trained - data_ready,
                         "score": scored - trained, "timing": time.time() - scored}}
    Path(run_dir, "details.json").write_text(json.dumps(details, indent=2) + "\n")
    return metrics


# What step_time_ratio's seconds count (nemot.compare.timing).
TIMING_CLOCK = "process_time"


def time_against_none(experiment, variant, seed, model, prepared):
    """``(step_time_ratio, seconds per round, the none model)`` of ``model`` (compiled)
    against :func:`timing_baseline`, on the run's first ``timing_steps`` batches."""
    data, train = experiment.data, experiment.train
    baseline = timing_baseline(settings(experiment, variant, prepared.encoder.vocab_size,
                                        mechanism="none"), train, seed)
    labels = {t: rows.labels for t, rows in prepared.train_rows.items()}
    sampler = TaskSampler({t: len(rows) for t, rows in prepared.train_rows.items()},
                          mode=train.sampling, epochs=train.epochs,
                          steps_per_epoch=train.steps_per_epoch, seed=seed)
    stream = batches(prepared.train_ids, labels, sampler, train.batch_size, seed)
    timing = [next(stream) for _ in range(train.timing_steps)]
    ratio, seconds = step_time_ratio(
        model, baseline, as_dataset(lambda: iter(timing), data.sequence_length),
        train.timing_steps, train.timing_rounds)
    return ratio, seconds, baseline


def retime(output_dir, manifest, variants=None, log=print):
    """Measure ``step_time_ratio`` again for every finished run in ``output_dir`` (of
    ``variants``, default all), one run after the other in this process, and write it into
    the run's ``metrics.json`` and ``details.json`` (``timing_seconds``, with the clock and
    the date). For runs timed under other conditions (another clock, a machine shared
    with other work): a step's time does not depend on the trained weights, so the
    variant is built anew with the run's seed and timed against ``none`` as
    :func:`run_one` does. Returns ``{run dir: ratio}``."""
    import keras

    experiment = load(manifest["config"], tuple(manifest["overrides"]))
    if isinstance(experiment, pool.Experiment):
        raise UserError(f"{output_dir}: retiming is for the minBERT comparison; the thesis "
                        "pool's runs are timed as they train (rerun them with --force)")
    prepared = prepare(experiment.data)
    done = {}
    for variant in variants or manifest["variants"]:
        if variant not in experiment.variants:
            raise UserError(f"--variants {variant!r}: not a variant of {manifest['config']}; "
                             f"expected some of {list(experiment.variants)}")
        for metrics_path in sorted(Path(output_dir, variant).glob(f"seed*/{protocol.METRICS}")):
            run_dir = metrics_path.parent
            seed = int(run_dir.name.removeprefix("seed"))
            keras.utils.set_random_seed(seed)
            model = _built(settings(experiment, variant, prepared.encoder.vocab_size))
            compile_model(model, experiment.train)
            ratio, seconds, _ = time_against_none(experiment, variant, seed, model, prepared)
            metrics = json.loads(metrics_path.read_text())
            metrics["step_time_ratio"] = ratio
            metrics_path.write_text(json.dumps(metrics, indent=2) + "\n")
            details_path = run_dir / "details.json"
            details = json.loads(details_path.read_text()) if details_path.exists() else {}
            details.setdefault("metrics", {})["step_time_ratio"] = ratio
            details["timing_seconds"] = {"variant_none_per_round": seconds,
                                         "clock": TIMING_CLOCK,
                                         "retimed": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
            details_path.write_text(json.dumps(details, indent=2) + "\n")
            log(f"  {variant} {run_dir.name}: step_time_ratio {ratio:.4f}")
            done[str(run_dir)] = ratio
    return done


def timing_baseline(none_settings, train, seed):
    """The compiled ``none`` model (of ``none_settings``) that every run of the process is
    timed against while the sizes and ``train`` stay the same: its weights do not change
    a step's time, and its step is traced once per process, not once per run. Built with
    the first run's ``seed``. Its optimizer is built before its first step, so Keras
    traces that step once, not twice (a first trace that creates variables is traced
    again)."""
    import keras

    key = (json.dumps(none_settings.to_dict(), sort_keys=True), train)
    if key not in _BASELINE:
        _BASELINE.clear()
        keras.utils.set_random_seed(seed)
        baseline = _built(none_settings)
        compile_model(baseline, train)
        baseline.optimizer.build(baseline.trainable_variables)
        _BASELINE[key] = baseline
    return _BASELINE[key]


# The timing baseline of this process: {(none settings, train settings): model}.
_BASELINE = {}


def _built(model_settings):
    model = CompareModel(model_settings)
    model.build()
    return model


def _plain(values):
    """A table :func:`nemot.training.run_config.dump_toml` can write (lists for tuples)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}
