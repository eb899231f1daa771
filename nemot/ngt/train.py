"""NGT's training wiring: fine-tune one variant on one SuperGLUE task with one seed
(:func:`train_run`), through the package's trainer; the recipe (configs, runs, report)
is :mod:`nemot.ngt.experiment`.

The paper's Table 3: AdamW (beta 0.9/0.999, weight decay 0.01 on
every weight, epsilon 1e-7), cosine decay of 1e-5 to 0 over the task's
``decay_steps`` with no warm-up, batch 8, 512 tokens, binary cross-entropy on
the sigmoid (categorical on the softmax for CB). After every epoch the
validation split is scored (the trainer's ``results.csv``: ``val_metric`` is the
task score, the mean of its metrics, then each metric).
"""

import itertools
import json
import math
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from nemot.data.batching import generator_dataset
from nemot.data.benchmarks import superglue
from nemot.evaluation import benchmarks
from nemot.hosts import bert
from nemot.hosts.bert import load_backbone
from nemot.ngt.model import NGTModel
from nemot.training import loop
from nemot.training.loop import DataSource, TrainConfig
from nemot.training.schedules import build_schedule


def _targets(rows, num_classes):
    labels = np.array([row.label for row in rows])
    if num_classes == 1:
        return labels.astype("float32")[:, None]
    return np.eye(num_classes, dtype="float32")[labels]


def build_model(model, variant, backbone, num_classes, num_aux_tokens=0):
    """The :class:`NGTModel` of one variant (its gating and gate position) with the
    ``[model]`` settings on ``backbone``."""
    return NGTModel(backbone, variant=variant.gating, gate_position=variant.gate_position,
                    num_gating_layers=model.num_gating_layers, num_classes=num_classes,
                    num_aux_tokens=num_aux_tokens, gating_dropout=model.gating_dropout)


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
    return generator_dataset(batches, signature, batches=None if seed is not None else steps)


def compile_model(model, train, decay_steps):
    """Compile with the paper's optimiser (Table 3): AdamW on every weight, cosine decay to 0, no warm-up.

    Binary cross-entropy for a 1-unit head, categorical for a softmax head
    (CB), both on probabilities as in the original.
    """
    model.compile(
        optimizer=keras.optimizers.AdamW(
            # Keras CosineDecay to 0 via the project's schedule factory.
            learning_rate=build_schedule(
                {"type": "cosine", "rate": train.learning_rate, "decay_steps": decay_steps}
            ),
            weight_decay=train.weight_decay,
            beta_1=train.beta_1,
            beta_2=train.beta_2,
            epsilon=train.epsilon,
        ),
        loss="binary_crossentropy" if model.num_classes == 1 else "categorical_crossentropy",
        jit_compile=train.jit_compile,
        run_eagerly=train.run_eagerly,
    )


class EpochRecords(keras.callbacks.Callback):
    """After each epoch: the validation predictions in the official label layout
    (``val_predictions_epoch<N>.jsonl``), and optionally the weights. The probabilities
    come from the run's validation metric (:func:`train_run`), computed once per epoch."""

    def __init__(self, out_dir, task, val_rows, scores, save_weights):
        super().__init__()
        self.out_dir, self.task, self.val_rows = Path(out_dir), task, val_rows
        self.scores, self.save_weights = scores, save_weights

    def on_epoch_end(self, epoch, logs=None):
        records = superglue.prediction_records(self.task, self.val_rows, self.scores["last"])
        (self.out_dir / f"val_predictions_epoch{epoch + 1}.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in records))
        if self.save_weights:
            self.model.save_weights(self.out_dir / f"epoch{epoch + 1}.weights.h5")


def train_run(experiment, task, variant, seed, train_data, val_data, out_dir, tokenizer=None,
              config_toml=None):
    """Fine-tune one variant on one task with one seed, into ``out_dir``.

    Trains through the package's trainer (:func:`nemot.training.loop.run`): checkpoints
    in ``out_dir/train_state`` (an interrupted run resumes), ``results.csv`` with the
    validation scores of every epoch (``val_metric``: the task score), the best-metric
    model (♠) beside the last one, and this package's files:
    ``val_predictions_epoch<N>.jsonl`` (:class:`EpochRecords`), ``training_setup.json``.

    Args:
        experiment: a :class:`nemot.ngt.experiment.Experiment`.
        task: the SuperGLUE task name (a key of ``experiment.tasks``).
        variant: the variant's name (a key of ``experiment.variants``).
        seed: the run's seed (weights of the new layers, dropout, shuffling).
        train_data, val_data: ``superglue.TaskData`` of the two splits.
        tokenizer: reuse a tokenizer across runs (default: the ``[model]`` one's).
        config_toml: the run's resolved config, written to ``config.toml``.

    Returns:
        the trainer's :class:`nemot.training.loop.RunResult`.
    """
    plan, model, train = experiment.tasks[task], experiment.model, experiment.train
    tokenizer = tokenizer or bert.model_tokenizer(model.tokenizer, model.backbone,
                                                   model.lowercase)
    aux_ids = [_token_id(tokenizer, t, task) for t in plan.aux_tokens]
    encoder = superglue.PairEncoder(tokenizer, model.sequence_length, aux_ids)
    num_classes = len(superglue.CB_LABELS) if task == "CB" else 1
    steps = math.ceil(len(train_data.rows) / train.batch_size)
    decay_steps = plan.decay_steps or steps * plan.epochs
    val_ds = make_dataset(val_data.rows, encoder, train.batch_size, num_classes)
    scores = {}

    def metric(keras_model):
        scores["last"] = keras_model.predict(val_ds, verbose=0)
        task_scores = benchmarks.score_superglue(task, val_data.rows, scores["last"])
        return {"metric": benchmarks.task_score(task_scores), **task_scores}

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    setup = {"task": task, "variant": variant, "seed": seed, "decay_steps": decay_steps}
    (out_dir / "training_setup.json").write_text(json.dumps(setup, indent=2))
    source = DataSource(
        train=lambda start_batch, batch_size, input_context: make_dataset(
            train_data.rows, encoder, batch_size, num_classes, seed, start_batch),
        steps_per_epoch=steps, metric=metric)
    config = TrainConfig(batch_size=train.batch_size, epochs=plan.epochs, steps_per_epoch=steps,
                         keep_checkpoints=1, jit_compile=train.jit_compile, verbose=train.verbose)
    records = EpochRecords(out_dir, task, val_data.rows, scores, train.save_weights)
    return loop.run(
        lambda: build_model(model, experiment.variants[variant], load_backbone(model.backbone),
                            num_classes, len(aux_ids)),
        source, config, out_dir, compile_model=lambda m: compile_model(m, train, decay_steps),
        seed=seed, callbacks=[records], config_toml=config_toml)


def load_splits(experiment, task):
    """``(train, val)`` :class:`superglue.TaskData` of ``task`` from the experiment's data."""
    return tuple(superglue.load_task(task, split, experiment.data.dir, experiment.data.source)
                 for split in ("train", "val"))


def _token_id(tokenizer, token, task):
    try:
        return tokenizer.token_to_id(token)
    except ValueError:
        raise ValueError(f"tasks.{task}.aux_tokens: {token!r} is not in the tokenizer's "
                         "vocabulary") from None
