"""The modulated-activation experiments for :mod:`nemot.experiments` (*Context Dependent Modulation of Activation Function*): one config per
table of the paper (``configs/modact/*.toml``). NeMoT with a modulated feed-forward
activation on the thesis' QA data is a ``reproduction = "nemot"`` experiment
(:mod:`nemot.experiments.nemot_runs`, ``configs/nemot/race_modulation.toml``).

A config::

    reproduction = "modact"
    name = "names_lstm"               # the PAPER key prefix
    output_dir = "runs/modact/names_lstm"
    seeds = [0, 1, 2]
    [model]     ModelConfig fields shared by the variants (nemot.modact.models)
    [data]      DataConfig fields (nemot.modact.data)
    [train]     TrainConfig fields (below)
    [variants.<name>]  ModelConfig fields of one column of the paper's table

``run_one`` trains one variant with one seed and returns ``test_accuracy``,
``train_accuracy`` (the last epoch's, under dropout and augmentation, as the paper's
"Training" column appears to be) and, with a validation split, ``validation_accuracy``
(last epoch).
"""

import csv
import dataclasses
import math
from pathlib import Path

from nemot.experiments import protocol
from nemot.experiments.config import settings
from nemot.modact import data, models
from nemot.modact.data import DataConfig
from nemot.ranges import Count, NonNegativeFloat, NonNegativeInt, PositiveFloat, Verbosity

# The paper's numbers (Tables 2 and 4; thesis Table 3.4 for NeMoT), keyed by
# "<experiment name>/<variant>".
PAPER = {
    "cifar10_cnn/vanilla": {"train_accuracy": 0.649, "validation_accuracy": 0.694,
                            "test_accuracy": 0.690},
    "cifar10_cnn/modulated": {"train_accuracy": 0.775, "validation_accuracy": 0.782,
                              "test_accuracy": 0.782},
    "cifar10_densenet/vanilla": {"train_accuracy": 0.889, "validation_accuracy": 0.888,
                                 "test_accuracy": 0.889},
    "cifar10_densenet/modulated": {"train_accuracy": 0.905, "validation_accuracy": 0.902,
                                   "test_accuracy": 0.902},
    "cifar10_densenet_lite/vanilla": {"train_accuracy": 0.881, "validation_accuracy": 0.885,
                                      "test_accuracy": 0.885},
    "cifar10_densenet_lite/modulated": {"train_accuracy": 0.894, "validation_accuracy": 0.893,
                                        "test_accuracy": 0.894},
    "names_lstm/modulated": {"test_accuracy": 0.77898},
    "names_lstm/C1": {"test_accuracy": 0.77490},
    "names_lstm/C2": {"test_accuracy": 0.77516},
    "names_lstm/C3": {"test_accuracy": 0.77602},
    "sst2_lstm/modulated": {"test_accuracy": 0.77482},
    "sst2_lstm/C1": {"test_accuracy": 0.73629},
    "sst2_lstm/C2": {"test_accuracy": 0.74327},
    "sst2_lstm/C3": {"test_accuracy": 0.73628},
}
PAPER_NOTES = {
    "names_lstm": "Table 4, 30 runs: SD .00526 (modulated) vs .00565 / .00531 / .00650 "
                  "(C1 / C2 / C3); Hedges' g .748 / .722 / .499; p < .006 / .007 / .06.",
    "sst2_lstm": "Table 4, 100 runs: SD .01150 (modulated) vs .04855 / .04687 / .04701 "
                 "(C1 / C2 / C3); Hedges' g 1.092 / .924 / 1.126; all p < .001.",
}
TABLES = ("model", "data", "train")
# The paper's Table 8 shows the test accuracies over runs as histograms.
DISTRIBUTION_METRIC = "test_accuracy"
# Batches of token ids are cut to a multiple of this many columns (padding_trim): the
# SST-2 batches of 5 average 30.6 of the 52 columns; a multiple of 8 keeps XLA to 7 shapes.
TRIM = 8
# train.loss_reduction -> the Keras loss reduction.
LOSS_REDUCTIONS = {"mean": "sum_over_batch_size", "sum": "sum"}


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """How one run trains (paper section 3).

    Args:
        batch_size, epochs: CIFAR 128 and 150; NAMES 32 and 100; SST-2 5 and 100.
        optimizer: ``"adam"`` (CIFAR, SST-2) or ``"sgd"`` (NAMES).
        learning_rate: the initial rate (1e-3; NAMES .01).
        lr_drops: fractions of training after which the rate is divided by 10
            (CIFAR: [0.5, 0.8]).
        decay: old Keras SGD ``decay``: ``rate / (1 + decay * step)`` (NAMES: 1e-4).
        loss_reduction: ``"mean"`` (the cross-entropy averaged over the batch, Keras'
            default) or ``"sum"`` (summed over the batch: every example moves the weights
            as much as in per-example SGD). The paper does not say; NAMES uses ``"sum"``,
            the reading that reproduces its regime (docs/modact.md, "NAMES on the real
            files").
        steps_per_epoch: 0 is one pass over the training split.
        jit_compile: XLA-compile the train step.
        steps_per_execution: training steps per compiled call (Keras ``compile``); 0 is
            a whole epoch per call, which saves most of the per-step overhead of the
            small LSTMs (the same updates, in the same order).
        test_each_epoch: also score the test split after every epoch (``results.csv``'s
            ``val_metric`` column; nothing is selected with it) and report
            ``test_accuracy_epoch_mean`` (over the epochs) and ``test_accuracy_epoch_best``
            (the best epoch's): the readings of a paper whose "100 epochs were collected"
            may mean a number over epochs rather than the last one.
        verbose: Keras fit verbosity.
    """

    batch_size: Count = 128
    epochs: Count = 150
    optimizer: str = "adam"
    learning_rate: PositiveFloat = 1e-3
    lr_drops: tuple = ()
    decay: NonNegativeFloat = 0.0
    loss_reduction: str = "mean"
    steps_per_epoch: NonNegativeInt = 0
    jit_compile: bool = False
    steps_per_execution: NonNegativeInt = 1
    test_each_epoch: bool = False
    verbose: Verbosity = 0

    def __post_init__(self):
        if self.optimizer not in ("adam", "sgd"):
            raise ValueError(f"optimizer={self.optimizer!r}: expected 'adam' or 'sgd'")
        if self.loss_reduction not in LOSS_REDUCTIONS:
            raise ValueError(f"loss_reduction={self.loss_reduction!r}: expected one of "
                             f"{sorted(LOSS_REDUCTIONS)}")
        object.__setattr__(self, "lr_drops", tuple(self.lr_drops))

    def schedule(self, total_steps):
        """The learning rate (a float or a Keras schedule) over ``total_steps``."""
        import keras

        if self.lr_drops and self.decay:
            raise ValueError("train: lr_drops and decay: expected one of the two schedules")
        if self.lr_drops:
            boundaries = [int(f * total_steps) for f in self.lr_drops]
            values = [self.learning_rate / 10 ** i for i in range(len(boundaries) + 1)]
            return keras.optimizers.schedules.PiecewiseConstantDecay(boundaries, values)
        if self.decay:
            return keras.optimizers.schedules.InverseTimeDecay(self.learning_rate, 1, self.decay)
        return self.learning_rate

    def make_optimizer(self, total_steps):
        import keras

        cls = keras.optimizers.Adam if self.optimizer == "adam" else keras.optimizers.SGD
        return cls(learning_rate=self.schedule(total_steps))


@dataclasses.dataclass(frozen=True)
class Experiment(protocol.Experiment):
    """One config: see the module docstring."""

    model: dict
    data: DataConfig | None = None
    train: TrainConfig | None = None


def from_dict(raw, source="<dict>"):
    """An :class:`Experiment` from a TOML-shaped dict; errors name ``source`` and the key."""
    keys = protocol.protocol_keys(raw, TABLES, source)
    model = dict(raw.get("model", {}))
    for name, table in keys["variants"].items():  # every variant must make a valid model
        settings(models.ModelConfig, {**model, **table}, f"{source}: variants.{name}")
    return Experiment(**keys, model=model, source=source,
                      data=settings(DataConfig, raw.get("data", {}), f"{source}: [data]"),
                      train=settings(TrainConfig, raw.get("train", {}), f"{source}: [train]"))


def load(path, overrides=()):
    """The :class:`Experiment` of the TOML file at ``path`` with ``KEY=VALUE`` overrides."""
    raw, _ = protocol.read_experiment(path, overrides, "modact", TABLES)
    return from_dict(raw, source=str(path))


def variants(experiment):
    """The variant names, in the config's (the paper's) order."""
    return list(experiment.variants)


def model_config(experiment, variant, splits):
    """The :class:`nemot.modact.models.ModelConfig` of ``variant`` on ``splits``."""
    values = {**experiment.model, **experiment.variants[variant],
              "num_classes": splits.num_classes, "vocab_size": splits.vocab_size}
    if splits.input_shape:
        values["input_shape"] = splits.input_shape
    return settings(models.ModelConfig, values, f"{experiment.source}: variants.{variant}")


def padding_trim(config):
    """Columns each batch's padding is trimmed to a multiple of (:func:`nemot.modact.data.trim_padding`):
    :data:`TRIM` for an LSTM that masks its padding (the same computation on fewer
    steps), else 0 (an unmasked LSTM runs its cell over the padding)."""
    return TRIM if config.architecture == "lstm" and config.mask_padding else 0


def data_source(experiment, splits, seed, trim=0):
    """The :class:`nemot.training.loop.DataSource` of one run (``trim``: :func:`padding_trim`)."""
    from nemot.training import loop

    images = experiment.data.dataset == "cifar10"
    augment = experiment.data.augment
    padding = experiment.data.padding

    def shard(dataset, input_context):
        if input_context is None or input_context.num_input_pipelines == 1:
            return dataset
        return dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)

    def train(start_batch, batch_size, input_context):
        return shard(data.train_dataset(splits.train, batch_size, seed, start_batch, augment,
                                        images, trim, padding), input_context)

    def validation(batch_size, input_context):
        return shard(data.eval_dataset(splits.validation, batch_size, images, trim, padding),
                     input_context)

    def test_accuracy(model):
        test = data.eval_dataset(splits.test, experiment.train.batch_size, images, trim,
                                 padding)
        return float(model.evaluate(test, return_dict=True, verbose=0)["accuracy"])

    steps = experiment.train.steps_per_epoch or math.ceil(
        len(splits.train[1]) / experiment.train.batch_size)
    return loop.DataSource(train=train, steps_per_epoch=steps,
                           validation=validation if splits.validation else None,
                           metric=test_accuracy if experiment.train.test_each_epoch else None)


def compile_model(model, train, total_steps, steps_per_epoch=1):
    """Cross-entropy on the logits (averaged or summed over the batch), accuracy, the
    config's optimizer and schedule."""
    import keras

    loss = keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction=LOSS_REDUCTIONS[train.loss_reduction])
    model.compile(optimizer=train.make_optimizer(total_steps), loss=loss,
                  metrics=["accuracy"], jit_compile=train.jit_compile,
                  steps_per_execution=train.steps_per_execution or steps_per_epoch)


# Keys of a run's config.toml that run_one reads off the data (model_config), not the
# settings: the protocol does not compare them.
DERIVED_KEYS = ("model.num_classes", "model.vocab_size", "model.input_shape")
# Settings that only some architectures or datasets read: (the field that decides, the
# values of it that read the setting). A report shows each only where it applies.
READ_BY = {
    "model.modulated": ("model.architecture", ("cnn", "densenet")),
    "model.depth": ("model.architecture", ("densenet",)),
    "model.growth_rate": ("model.architecture", ("densenet",)),
    "model.dropout": ("model.architecture", ("densenet", "lstm")),
    "model.input_shape": ("model.architecture", ("cnn", "densenet")),
    **{f"model.{key}": ("model.architecture", ("lstm",))
       for key in ("cell", "hidden", "embedding_dim", "mask_padding", "vocab_size")},
    "data.augment": ("data.dataset", ("cifar10",)),
    **{f"data.{key}": ("data.dataset", ("names", "sst2")) for key in ("max_length", "padding")},
    **{f"data.{key}": ("data.dataset", ("sst2",)) for key in ("train_file", "test_file", "layout")},
    **{f"data.{key}": ("data.dataset", ("names",))
       for key in ("split", "deduplicate", "alphabet", "unknown")},
}


def unused_settings(config):
    """The keys of a run's flat settings (``{"model.depth": 40, ...}``) that its
    architecture and dataset do not read (the protocol's hook for reports)."""
    return {key for key, (field, readers) in READ_BY.items()
            if key in config and config.get(field) not in readers}


def resolved_toml(experiment, variant, seed, config=None):
    """The settings one run uses, as TOML (its ``config.toml``): with the model's
    :class:`nemot.modact.models.ModelConfig` when given (``run_one`` gives the one read off
    the data), else without the :data:`DERIVED_KEYS` the data decides."""
    if config is None:
        config = settings(models.ModelConfig, {**experiment.model, **experiment.variants[variant]},
                          f"{experiment.source}: variants.{variant}")
        model = {k: v for k, v in dataclasses.asdict(config).items()
                 if f"model.{k}" not in DERIVED_KEYS}
    else:
        model = dataclasses.asdict(config)
    return protocol.resolved_toml("modact", experiment.name, variant, seed, {
        "model": model, "data": dataclasses.asdict(experiment.data),
        "train": dataclasses.asdict(experiment.train)})


def run_one(experiment, variant, seed, run_dir):
    """Train ``variant`` with ``seed`` into ``run_dir``; returns its metrics."""
    from nemot.training import loop

    splits = data.load_splits(experiment.data)
    config = model_config(experiment, variant, splits)
    train = experiment.train
    trim = padding_trim(config)
    source = data_source(experiment, splits, seed, trim)
    resolved = resolved_toml(experiment, variant, seed, config)
    result = loop.run(
        lambda: models.build(config), source,
        loop.TrainConfig(batch_size=train.batch_size, epochs=train.epochs,
                         steps_per_epoch=source.steps_per_epoch, jit_compile=train.jit_compile,
                         verbose=train.verbose),
        run_dir, seed=seed, config_toml=resolved,
        compile_model=lambda model: compile_model(
            model, train, source.steps_per_epoch * train.epochs, source.steps_per_epoch))
    test = result.model.evaluate(
        data.eval_dataset(splits.test, train.batch_size, experiment.data.dataset == "cifar10",
                          trim, experiment.data.padding),
        return_dict=True, verbose=0)
    metrics = {"test_accuracy": test["accuracy"],
               "train_accuracy": result.history["accuracy"][-1]}
    if "val_accuracy" in result.history:
        metrics["validation_accuracy"] = result.history["val_accuracy"][-1]
    if train.test_each_epoch:
        with open(Path(run_dir, "results.csv"), newline="", encoding="utf-8") as handle:
            per_epoch = [float(row["val_metric"]) for row in csv.DictReader(handle)]
        metrics["test_accuracy_epoch_mean"] = sum(per_epoch) / len(per_epoch)
        metrics["test_accuracy_epoch_best"] = max(per_epoch)
    return metrics


def synthetic(experiment):
    """Whether the runs read generated data (``data.synthetic = N``)."""
    return bool(experiment.data.synthetic)
