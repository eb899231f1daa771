"""PALs experiments: every row of the report's Tables 1-4 as a variant of a TOML config
(``configs/pals/``), trained through :func:`nemot.training.loop.run`.

This module is the reproduction's side of the multi-seed runner's protocol (``nemot
runs``): :func:`load`, :func:`variants`, :func:`run_one` and :data:`PAPER`.

A config::

    reproduction = "pals"
    name = "table2"
    output_dir = "runs/pals/table2"
    seeds = [0, 1, 2]
    [model]   backbone (KerasHub preset name, KerasHub/Hugging Face directory, or a table
              of BertBackbone sizes), tokenizer (vocab.txt or preset; default: the
              backbone), lowercase, sequence_length, head_dropout, activation, pals
    [train]   mode ("finetune" | "pretrain": BERT frozen), learning_rate, batch_size,
              epochs, steps_per_epoch (0: one pass over all tasks' training examples),
              sampling ("annealed" | "proportional" | "sqrt" | "round_robin" | "uniform"),
              score_test (true: also score the selected checkpoint on the test split),
              jit_compile, verbose
    [data]    dir, tasks
    [variants.<name>]  any of the keys above (flat), e.g. pals = "half", tasks = [...]

``pals`` is ``"zero"``, ``"half"`` (d_s 276, top 6 layers), ``"full"`` (204, all 12) or a
table of :data:`nemot.pals.model.PAL_OPTIONS`.

Training (Rotzal s.5.3): Adam (minBERT's AdamW with its default weight decay 0, epsilon
1e-6) at a fixed learning rate; one task per batch drawn by
:class:`nemot.data.sampling.TaskSampler`.

Model selection (Rotzal s.5.4: the model was chosen on dev, then scored on test): after every
epoch the **dev** split is scored and the epoch with the best dev ``score`` is selected
(its checkpoint is the trainer's ``model_best_metric.keras``; minBERT keeps the model
with the best dev result). A run reports that epoch's dev values (unprefixed keys) and,
with ``score_test = true``, that same checkpoint's values on the test split
(``test_``-prefixed keys). The test split never chooses anything.

Example:
    >>> experiment = load("configs/pals/table2.toml", ["train.epochs=1"])  # doctest: +SKIP
    >>> run_one(experiment, "half", 0, "runs/pals/table2/half/seed0")      # doctest: +SKIP
    {'sst_acc': ..., 'quora_acc': ..., 'sts_r': ..., 'score': ..., 'average_raw_r': ...}
"""

import dataclasses
import math
import typing
from pathlib import Path

import keras
import numpy as np

from nemot.data.sampling import MODES, TaskSampler
from nemot.experiments import config, protocol
from nemot.experiments.protocol import Experiment
from nemot.hosts.bert import model_tokenizer
from nemot.pals import data as pals_data
from nemot.pals.metrics import summary, task_metric
from nemot.pals.model import PAL_OPTIONS, PAL_PRESETS, PALsLoss, build_pal_bert, predictions
from nemot.pals.tasks import get_task
from nemot.ranges import Count, DropoutRate, NonNegativeInt, PositiveFloat, Verbosity
from nemot.training.callbacks import MODEL_FILES

MODES_OF_TRAINING = ("finetune", "pretrain")
SECTIONS = {
    "model": ("backbone", "tokenizer", "lowercase", "sequence_length", "head_dropout",
              "activation", "pals"),
    "train": ("mode", "learning_rate", "batch_size", "epochs", "steps_per_epoch", "sampling",
              "score_test", "jit_compile", "verbose"),
    "data": ("dir", "tasks", "source"),
}
# Keys of earlier versions, refused with what replaced them.
REMOVED = {"eval_split": "the epoch is always selected on dev now; score_test = true also "
                        "scores the selected checkpoint on the test split"}

# "score" is in [0, 1]; "average_raw_r", a mean of accuracies and r, in [-1, 1] (its name
# makes it a correlation's kind).
METRIC_KINDS = {"score": "proportion", "test_score": "proportion"}

# The report's numbers. Keys: metrics.summary's names, dev unless prefixed "test_";
# "score" = mean with (r + 1) / 2 (Tables 2, 3), "average_raw_r" = mean with raw r (Table 4).
PAPER = {
    # Table 1: part 1, one task, batch 8.
    "sst_pretrain": {"sst_acc": 0.390},
    "sst_finetune": {"sst_acc": 0.520},
    "cfimdb_pretrain": {"cfimdb_acc": 0.780},
    "cfimdb_finetune": {"cfimdb_acc": 0.963},
    # Table 2: three tasks, dev.
    "zero": {"sst_acc": 0.523, "quora_acc": 0.779, "sts_r": 0.377, "score": 0.664},
    "half": {"sst_acc": 0.520, "quora_acc": 0.772, "sts_r": 0.375, "score": 0.660},
    "full": {"sst_acc": 0.505, "quora_acc": 0.784, "sts_r": 0.366, "score": 0.657},
    # Table 3: the zero-PALs model on the test split; the same model's dev values are
    # Table 2's zero row (it was chosen on them).
    "zero_test": {"sst_acc": 0.523, "quora_acc": 0.779, "sts_r": 0.377, "score": 0.664,
                  "test_sst_acc": 0.530, "test_quora_acc": 0.785, "test_sts_r": 0.331,
                  "test_score": 0.660},
    # Table 4: single tasks and pairs, dev.
    "sst_only": {"sst_acc": 0.521, "average_raw_r": 0.521},
    "quora_only": {"quora_acc": 0.784, "average_raw_r": 0.784},
    "sts_only": {"sts_r": 0.361, "average_raw_r": 0.361},
    "zero_sst_quora": {"sst_acc": 0.531, "quora_acc": 0.768, "average_raw_r": 0.650},
    "zero_sst_sts": {"sst_acc": 0.517, "sts_r": 0.384, "average_raw_r": 0.451},
    "zero_quora_sts": {"quora_acc": 0.776, "sts_r": 0.366, "average_raw_r": 0.571},
    "half_sst_quora": {"sst_acc": 0.514, "quora_acc": 0.778, "average_raw_r": 0.646},
    "half_sst_sts": {"sst_acc": 0.513, "sts_r": 0.379, "average_raw_r": 0.446},
    "half_quora_sts": {"quora_acc": 0.781, "sts_r": 0.364, "average_raw_r": 0.573},
    "full_sst_quora": {"sst_acc": 0.509, "quora_acc": 0.781, "average_raw_r": 0.645},
    "full_sst_sts": {"sst_acc": 0.521, "sts_r": 0.349, "average_raw_r": 0.435},
    "full_quora_sts": {"quora_acc": 0.780, "sts_r": 0.347, "average_raw_r": 0.564},
}


@dataclasses.dataclass(frozen=True)
class Settings:
    """One variant's resolved settings (see the module docstring for each key)."""

    backbone: object = "bert_base_en_uncased"
    tokenizer: str | None = None
    lowercase: bool = True
    sequence_length: Count = 128
    head_dropout: DropoutRate = 0.3
    activation: str = "gelu"
    pals: object = "zero"
    mode: typing.Literal[MODES_OF_TRAINING] = "finetune"
    learning_rate: PositiveFloat = 1e-5
    batch_size: Count = 16
    epochs: Count = 10
    steps_per_epoch: NonNegativeInt = 0
    sampling: typing.Literal[MODES] = "annealed"
    score_test: bool = False
    jit_compile: bool = False
    verbose: Verbosity = 2
    dir: str = "data"
    tasks: tuple = ("sst", "quora", "sts")
    source: str = "files"

    def __post_init__(self):
        if isinstance(self.pals, str) and self.pals not in PAL_PRESETS or isinstance(
                self.pals, dict) and set(self.pals) - set(PAL_OPTIONS):
            raise ValueError(f"pals = {self.pals!r}: expected one of {sorted(PAL_PRESETS)} or "
                             f"a table with keys among {list(PAL_OPTIONS)}")
        if not self.tasks:
            raise ValueError("tasks = []: expected a non-empty list of task names")
        for task in self.tasks:
            get_task(task, where="tasks")

    def pal_options(self):
        """The PALs of this variant as :class:`nemot.pals.model.PALBert`'s ``pals``."""
        return PAL_PRESETS[self.pals] if isinstance(self.pals, str) else dict(self.pals)


def _refuse_removed(table, where):
    removed = [key for key in table if key in REMOVED]
    if removed:
        raise ValueError(f"{where}: {removed[0]!r} was removed: {REMOVED[removed[0]]}")


def from_dict(raw, source="<dict>"):
    """An :class:`Experiment` from a TOML-shaped dict; unknown keys name the file and key.
    ``[model]``, ``[train]`` and ``[data]`` are every variant's defaults."""
    top = protocol.protocol_keys(raw, tuple(SECTIONS), source)
    base = {}
    for section, names in SECTIONS.items():
        _refuse_removed(raw.get(section, {}), f"{source}: [{section}]")
        config.keys(raw.get(section, {}), names, f"{source}: [{section}]")
        base.update(raw.get(section, {}))
    config.settings(Settings, base, source)
    variants = {}
    for name, table in top.pop("variants").items():
        _refuse_removed(table, f"{source}: [variants.{name}]")
        variants[name] = config.settings(Settings, {**base, **table}, f"{source}: [variants.{name}]")
    return Experiment(**top, variants=variants, source=source)


def load(path, overrides=()):
    """Read a config and apply ``KEY=VALUE`` overrides (``"train.epochs=1"``,
    ``"data.dir=..."``, ``"seeds=[0]"``; they set the shared tables, which a variant's own
    keys still override)."""
    raw, _ = protocol.read_experiment(path, overrides, "pals", tuple(SECTIONS))
    return from_dict(raw, source=str(path))


def variants(experiment):
    """The variant names of ``experiment``, in config order."""
    return list(experiment.variants)


# ---- one run -------------------------------------------------------------------------


def _load_split(settings, encoder, split):
    """``{task: encoded arrays}`` of ``split``; every file must have its label column."""
    return {task: encoder.encode(pals_data.read_rows(task, settings.dir, split, settings.source,
                                                     labelled=True))
            for task in settings.tasks}


def _datasets(settings, train, evaluation, sampler, seed):
    import tensorflow as tf

    from nemot.data.batching import generator_dataset

    length = settings.sequence_length
    spec = tf.TensorSpec((None, length), tf.int32)
    signature = ({"token_ids": spec, "segment_ids": spec, "padding_mask": spec,
                  "task_index": tf.TensorSpec((None,), tf.int32)},
                 tf.TensorSpec((None, 2), tf.float32))

    def single_pipeline(input_context):
        # Every pipeline would read the same stream: sharding it is not implemented.
        if input_context is not None and input_context.num_input_pipelines > 1:
            raise ValueError("PALs runs read one input pipeline; multi-worker training "
                             "(several pipelines) is not supported")

    def train_fn(start_batch, batch_size, input_context):
        single_pipeline(input_context)
        return generator_dataset(
            lambda: pals_data.multitask_batches(train, sampler, batch_size, seed, start_batch),
            signature)

    def validation_fn(batch_size, input_context):
        single_pipeline(input_context)

        def batches():
            for index, task in enumerate(settings.tasks):
                n = len(evaluation[task]["labels"])
                for start in range(0, n, batch_size):
                    yield pals_data.batch(evaluation[task],
                                          np.arange(start, min(start + batch_size, n)), index)
        return generator_dataset(batches, signature, batches=sum(
            math.ceil(len(evaluation[t]["labels"]) / batch_size) for t in settings.tasks))

    return train_fn, validation_fn


def _scores(model, tasks, arrays):
    """:func:`nemot.pals.metrics.summary` of ``model`` on encoded ``arrays`` of ``tasks``."""
    return summary({task: task_metric(task, predictions(model, arrays[task], task),
                                      arrays[task]["labels"]) for task in tasks})


def run_one(experiment, variant, seed, run_dir):
    """Train and evaluate one (variant, seed) into ``run_dir``; returns the metrics of the
    epoch selected on dev (:func:`nemot.pals.metrics.summary` keys) and, with
    ``score_test``, its checkpoint's test values (``test_<key>``); the runner writes them
    to ``metrics.json``."""
    from nemot.training import loop

    settings = experiment.variants[variant]
    encoder = pals_data.Encoder(model_tokenizer(settings.tokenizer, settings.backbone,
                                                  settings.lowercase),
                                settings.sequence_length)
    train, evaluation = (_load_split(settings, encoder, split) for split in ("train", "dev"))
    # Read (and check for labels) before training, but only score after it.
    test = _load_split(settings, encoder, "test") if settings.score_test else None
    sizes = {task: len(arrays["labels"]) for task, arrays in train.items()}
    steps = settings.steps_per_epoch or math.ceil(sum(sizes.values()) / settings.batch_size)
    sampler = TaskSampler(sizes, mode=settings.sampling, epochs=settings.epochs,
                          steps_per_epoch=steps, seed=seed)
    train_fn, validation_fn = _datasets(settings, train, evaluation, sampler, seed)

    def metric(model):
        scores = _scores(model, settings.tasks, evaluation)
        return {"metric": scores["score"], **scores}

    def build_model():
        return build_pal_bert(settings.backbone, tasks=settings.tasks,
                              pals=settings.pal_options(), head_dropout=settings.head_dropout,
                              activation=settings.activation)

    def compile_model(model):
        if settings.mode == "pretrain":
            model.freeze_bert()
        model.compile(keras.optimizers.Adam(settings.learning_rate, epsilon=1e-6),
                      loss=PALsLoss(model.tasks), jit_compile=settings.jit_compile)

    source = loop.DataSource(train=train_fn, steps_per_epoch=steps, validation=validation_fn,
                             metric=metric)
    train_config = loop.TrainConfig(batch_size=settings.batch_size, epochs=settings.epochs,
                                    steps_per_epoch=steps, verbose=settings.verbose)
    loop.run(build_model, source, train_config, run_dir, compile_model=compile_model,
             seed=seed, config_toml=resolved_toml(experiment, variant, seed))
    metrics = protocol.select_epoch(run_dir, "best_metric")  # the trainer's best dev score
    del metrics["epoch"]
    if test is not None:
        # The trainer saved this checkpoint at the epoch of the best dev score.
        selected = keras.models.load_model(Path(run_dir, MODEL_FILES["best_metric"]),
                                           compile=False)
        metrics.update({f"test_{k}": v for k, v in
                        _scores(selected, settings.tasks, test).items()})
    return metrics


def resolved_toml(experiment, variant, seed):
    """The settings one run used, as a TOML config of one variant (the run's
    ``config.toml``)."""
    values = experiment.variants[variant]
    return protocol.resolved_toml("pals", experiment.name, variant, seed, {
        section: {key: getattr(values, key) for key in names}
        for section, names in SECTIONS.items()})
