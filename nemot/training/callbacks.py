"""Keras callbacks of a training run: checkpoints, the NaN guard, validation, logs.

They work the same under ``model.fit`` (TensorFlow or JAX) and under the multi-worker
loop of :mod:`nemot.training.distributed`, which drives them through a
``keras.callbacks.CallbackList``. The global step is always the optimizer's
``iterations``, so TensorBoard curves and checkpoint numbers continue across
a resumed run. Under JAX, ``fit`` holds the training state apart from the model's
variables between steps and ``self.model`` copies it back: the callbacks count the steps
themselves (:class:`StepCounting`) and touch the model only on the steps where they act.

Order matters (the trainer passes them in this order): the NaN guard first,
so that nothing is saved after a non-finite loss; validation before the
epoch-end checkpoint, so that a restored epoch-end step already has its
results row.
"""

import contextlib
import csv
import json
import logging
import math
import os
import signal
import threading

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from nemot import files
from nemot.errors import Preempted
from nemot.evaluation.plots import TRAINING_LOG_COLUMNS

logger = logging.getLogger(__name__)
MODEL_FILES = {"best_loss": "model_best_loss.keras", "best_metric": "model_best_metric.keras",
               "last": "model_last.keras"}


def _value(logs, key):
    value = (logs or {}).get(key)
    return None if value is None else float(np.asarray(value))


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite; the message says where the last good checkpoint is."""


class StepCounting(keras.callbacks.Callback):
    """A callback that knows the global step after each batch without reading the model:
    the optimizer's ``iterations`` when training begins, plus the batches since."""

    def __init__(self):
        super().__init__()
        self.global_step = 0

    def on_train_begin(self, logs=None):
        from nemot.training.checkpoints import host_array

        self.global_step = int(host_array(self.model.optimizer.iterations))

    def on_train_batch_end(self, batch, logs=None):
        self.global_step += 1


class NonFiniteGuard(StepCounting):
    """Stop at the first non-finite training loss and remember why.

    ``failure`` is None while training is healthy; otherwise a message with the
    step and the loss. The trainer raises :class:`TrainingDiverged` with it.
    """

    def __init__(self):
        super().__init__()
        self.failure = None

    def on_train_batch_end(self, batch, logs=None):
        super().on_train_batch_end(batch, logs)
        loss = _value(logs, "loss")
        if loss is not None and not math.isfinite(loss):
            self.failure = f"training loss became {loss} at step {self.global_step}"
            self.model.stop_training = True


class StepCheckpoint(StepCounting):
    """Save a :class:`TrainingCheckpoint` every ``every`` steps and at each epoch end.

    Nothing is saved once ``guard.failure`` is set, so the newest checkpoint
    is the last good one.
    """

    def __init__(self, checkpoint, every, guard):
        super().__init__()
        self.checkpoint = checkpoint
        self.every = int(every)
        self.guard = guard
        self.last_saved = None

    def save_now(self):
        """Save the step that just ended (once), unless the NaN guard stopped the run;
        returns the checkpoint's path (None on a worker that is not the chief, or when
        nothing was saved)."""
        model = self.model  # under JAX, the training state copied back to the variables
        step = self.checkpoint.step
        if self.guard.failure is not None:
            return None
        if step == self.last_saved:
            return self.checkpoint.path(step) if self.checkpoint.is_chief else None
        # A step's loss is only seen one step later; the weights are checked
        # now so that a saved checkpoint is always a good one.
        if not all(bool(ops.all(ops.isfinite(v.value))) for v in model.trainable_variables):
            self.guard.failure = f"weights became NaN or infinite at step {step}"
            self.model.stop_training = True
            return None
        path = self.checkpoint.save()
        self.last_saved = step
        return path

    def on_train_batch_end(self, batch, logs=None):
        super().on_train_batch_end(batch, logs)
        # An epoch's last step is saved at the epoch's end, after validation has written
        # its results row and models, so that a run resumed from it has them.
        if batch + 1 == (self.params or {}).get("steps"):
            return
        if self.every and self.global_step % self.every == 0:
            self.save_now()

    def on_epoch_end(self, epoch, logs=None):
        self.save_now()


class ResumedEpoch(keras.callbacks.Callback):
    """A run resumed inside an epoch: put back the epoch's running metric sums that its
    checkpoint held, after ``fit`` has reset them for the epoch, so that the epoch's logged
    training loss covers all its steps as in the uninterrupted run.

    Args:
        values: the sums, in the order of ``model.metrics_variables``; None when the
            checkpoint held none that fit (the row then covers the steps after the resume,
            which ``resumed_at`` names in a warning).
        resumed_at: the epoch's step the run resumed at (0: at an epoch's start, nothing
            to put back).
    """

    def __init__(self, values, resumed_at):
        super().__init__()
        self.values = values if resumed_at else None
        if resumed_at and values is None:
            logger.warning("the checkpoint holds no running metric sums (written by an "
                           "earlier nemot version): the resumed epoch's training loss in "
                           "results.csv covers its steps from %d on", resumed_at + 1)

    def on_epoch_begin(self, epoch, logs=None):
        if self.values is None:
            return
        for variable, value in zip(self.model.metrics_variables, self.values, strict=True):
            variable.assign(value)
        self.values = None


@contextlib.contextmanager
def _outside_distribution():
    """No ``keras.distribution`` for what the chief alone does: Keras's ``save`` creates
    a throwaway optimizer variable, which under JAX across hosts a distribution would
    place on every host's devices, a step that every host must take (only the chief
    saves)."""
    current = keras.distribution.distribution()
    keras.distribution.set_distribution(None)
    try:
        yield
    finally:
        keras.distribution.set_distribution(current)


class Preemption(keras.callbacks.Callback):
    """SIGTERM or SIGINT (Ctrl-C) to a training process: the step under way finishes, a
    checkpoint is written at its end (``saver``, the run's :class:`StepCheckpoint`), and
    :class:`~nemot.errors.Preempted` stops the run, before any validation or other
    end-of-epoch work, which a preempted machine has no time for. The same command resumes
    from the checkpoint. A second signal before the step ends stops at once (Ctrl-C:
    ``KeyboardInterrupt``), leaving the checkpoints as they were.

    Across processes (``any_process``, :func:`nemot.training.distributed.any_process`:
    ``MultiWorkerMirroredStrategy``'s workers, JAX's hosts) they agree after every step,
    with one collective of a flag, whether any of them received a signal: all stop at the
    same step, the chief writing its checkpoint. Only the main thread can take signals:
    elsewhere (a test's thread) this does nothing.
    """

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self, saver, any_process=None):
        super().__init__()
        self.saver = saver
        self.received = None
        self.stopping = False
        self._previous = {}
        self._any = any_process

    def _receive(self, number, frame):
        if self.received is not None:
            self.restore()
            raise KeyboardInterrupt
        self.received = signal.Signals(number).name

    def restore(self):
        """Put back the signal handlers there were before training began."""
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous = {}

    def on_train_begin(self, logs=None):
        if threading.current_thread() is threading.main_thread():
            self._previous = {number: signal.signal(number, self._receive)
                              for number in self.SIGNALS}

    def on_train_batch_end(self, batch, logs=None):
        received = self.received is not None
        if self._any is not None:
            # Every worker takes part at every step, signalled or not.
            anywhere = self._any(received)
            if anywhere and not received:
                self.received = "a signal to another worker"
            received = anywhere
        self.stopping = received
        # An epoch's last step stops after its validation row and its end-of-epoch
        # checkpoint (StepCheckpoint's rule), so that the resumed run has the row.
        if received and batch + 1 != (self.params or {}).get("steps"):
            self._stop()

    def on_epoch_end(self, epoch, logs=None):
        # What the workers agreed at the epoch's last step, not a signal since.
        if self.stopping:
            self._stop()

    def _stop(self):
        self.restore()
        path = self.saver.save_now()
        step = self.saver.checkpoint.step
        raise Preempted(f"{self.received} received: stopped at step {step} after writing "
                        f"{path or 'no checkpoint (not the chief)'}; the same command resumes "
                        "from it")

    def on_train_end(self, logs=None):
        self.restore()

    def close(self):
        """:meth:`restore`, for ``contextlib.closing`` around a ``fit`` that may raise."""
        self.restore()


class ScalarLogger(StepCounting):
    """TensorBoard scalars at the global step: losses and learning rate every
    ``every`` steps, validation results at each epoch end.

    Args:
        log_dir: TensorBoard directory (``<out>/logs``).
        every: steps between training scalars.
        enabled: False on non-chief workers (they log nothing).
    """

    def __init__(self, log_dir, every=100, enabled=True):
        super().__init__()
        self.every = max(int(every), 1)
        self.writer = tf.summary.create_file_writer(str(log_dir)) if enabled else None

    def _write(self, prefix, logs):
        if self.writer is None:
            return
        with self.writer.as_default(step=self.global_step):
            for key, value in (logs or {}).items():
                if value is not None and np.ndim(value) == 0:
                    tf.summary.scalar(prefix + key, float(np.asarray(value)))
            if prefix == "train/":
                tf.summary.scalar("train/learning_rate",
                                  float(np.asarray(self.model.optimizer.learning_rate)))
        self.writer.flush()

    def on_train_batch_end(self, batch, logs=None):
        super().on_train_batch_end(batch, logs)
        if self.global_step % self.every == 0:
            self._write("train/", logs)

    def on_epoch_end(self, epoch, logs=None):
        self._write("epoch/", logs)


class EpochValidation(keras.callbacks.Callback):
    """Per-epoch results row, validation metric and the ♣ / ♠ / last models.

    At each epoch end: ``val_loss`` comes from ``logs`` (``fit``'s
    ``validation_data``); ``metric_fn(model)`` decodes the validation
    examples and scores them (higher is better); ``model_last.keras`` is
    written, and ``model_best_loss.keras`` (♣, lowest validation loss) and
    ``model_best_metric.keras`` (♠, best metric) when they improve. A row
    ``epoch, loss, val_loss, val_metric`` (+ the per-term losses) goes to the
    results CSV that ``nemot.evaluation.plots`` reads. The best values live in
    ``best.json`` so that a resumed run keeps comparing with them.

    Args:
        out_dir: run directory.
        metric_fn: ``model -> float`` (higher is better), or a dict with that value under
            ``"metric"`` and more values for the results row (as ``val_<key>``); None
            for no metric.
        guard: the run's :class:`NonFiniteGuard` (nothing is written after a NaN).
        enabled: False on non-chief workers (they neither decode nor write).
        perplexity: also write ``val_perplexity`` = exp(val_loss) (pre-training: L1 only).
    """

    def __init__(self, out_dir, metric_fn=None, guard=None, enabled=True, perplexity=False):
        super().__init__()
        self.perplexity = perplexity
        self.out_dir = str(out_dir)
        self.metric_fn = metric_fn
        self.guard = guard
        self.enabled = enabled
        self.csv_path = os.path.join(self.out_dir, "results.csv")
        self.state_path = os.path.join(self.out_dir, "best.json")
        self.best = self._read_state()

    def _read_state(self):
        if not os.path.exists(self.state_path):
            return {"val_loss": None, "val_metric": None, "loss_epoch": None,
                    "metric_epoch": None}
        with open(self.state_path, encoding="utf-8") as handle:
            return json.load(handle)

    def forget_after(self, epoch):
        """Drop results rows after ``epoch`` (1-based): a resumed run redoes them."""
        if not os.path.exists(self.csv_path):
            return
        rows, fields = self._read_rows()
        self._write_rows([r for r in rows if int(r["epoch"]) <= epoch], fields)

    def _write_rows(self, rows, fields):
        if not self.enabled:
            return
        fields = fields or list(TRAINING_LOG_COLUMNS)
        with files.atomic_open(self.csv_path, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=fields)
            writer.writeheader()
            writer.writerows(rows)

    def on_epoch_end(self, epoch, logs=None):
        if not self.enabled or (self.guard is not None and self.guard.failure is not None):
            return
        logs = logs if logs is not None else {}
        val_loss = _value(logs, "val_loss")
        val_metric = self.metric_fn(self.model) if self.metric_fn is not None else None
        extras = {}
        if isinstance(val_metric, dict):
            extras = {f"val_{k}": v for k, v in val_metric.items() if k != "metric"}
            val_metric = val_metric["metric"]
        if val_metric is not None:
            logs["val_metric"] = val_metric
            logs.update(extras)
        last = os.path.join(self.out_dir, MODEL_FILES["last"])
        with files.atomic_path(last) as tmp, _outside_distribution():
            self.model.save(tmp)
        # A best model is this epoch's model: copy the file rather than serialise again
        # (a save walks every variable and optimizer slot; a copy is one file write).
        if val_loss is not None and (self.best["val_loss"] is None
                                     or val_loss < self.best["val_loss"]):
            self.best.update(val_loss=val_loss, loss_epoch=epoch + 1)
            files.copy(last, os.path.join(self.out_dir, MODEL_FILES["best_loss"]))
        if val_metric is not None and (self.best["val_metric"] is None
                                       or val_metric > self.best["val_metric"]):
            self.best.update(val_metric=val_metric, metric_epoch=epoch + 1)
            files.copy(last, os.path.join(self.out_dir, MODEL_FILES["best_metric"]))
        files.write_json(self.state_path, self.best, indent=1)
        row = {"epoch": epoch + 1, "loss": _value(logs, "loss"),
               "val_loss": "" if val_loss is None else val_loss,
               "val_metric": "" if val_metric is None else val_metric}
        if self.perplexity:
            row["val_perplexity"] = "" if val_loss is None else math.exp(min(val_loss, 700.0))
        for term in ("task_loss", "lm_loss", "vanilla_loss", "val_task_loss", "val_lm_loss",
                     "val_vanilla_loss"):
            if term in logs:
                row[term] = _value(logs, term)
        row.update(extras)
        # The whole file again, to a temporary name: an append cut short by a kill would
        # leave half a row.
        rows, fields = self._read_rows()
        self._write_rows(rows + [row], list(dict.fromkeys([*(fields or ()), *row])))

    def _read_rows(self):
        """The rows of the results CSV and its columns (``([], None)`` without one)."""
        if not os.path.exists(self.csv_path):
            return [], None
        with open(self.csv_path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            return list(reader), reader.fieldnames
