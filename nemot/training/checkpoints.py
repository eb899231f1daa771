"""Training checkpoints: model, optimizer (step included) and dropout RNG state, on
TensorFlow and JAX alike.

We keep our own checkpoints rather than Keras ``BackupAndRestore``: it only resumes at
epoch boundaries, while the thesis runs checkpoint every 5,000 (pre-training) or 10,000
(general training) steps of very long epochs.

A checkpoint ``ckpt-<step>.npz`` is one file, written under a temporary name and renamed
(:mod:`nemot.files`), so a kill at any moment leaves it whole or absent. It holds:

- every model variable and every optimizer variable, in the order the model and the
  optimizer list them, the optimizer's ``iterations`` included: the global step, from
  which the trainer derives the epoch, the learning-rate schedule's step and the data
  position (the pipelines resume exactly at ``start_batch=step``);
- among the model's variables, the state of every ``keras.random.SeedGenerator``
  (dropout): with them a resumed run draws the same dropout masks as an uninterrupted
  one, and its final weights are the same;
- the running sums of the epoch's metrics (the loss tracker's and each compiled
  metric's total and count): ``fit`` starts every epoch from zero, so a run resumed in
  the middle of an epoch puts them back (:class:`~nemot.training.callbacks.ResumedEpoch`)
  and logs the whole epoch's training loss, as the uninterrupted run does. A checkpoint
  written before they were kept resumes all the same; that epoch's row then covers the
  steps after the resume, and a warning says so;
- ``index``: a small JSON text naming each variable's path, shape and dtype, the step
  and the backend that wrote it. Variables are matched by position (their paths carry
  process-wide name counters, ``adam_1/...``, that another process numbers otherwise)
  and checked by shape: a checkpoint of another model is refused, naming the variable.

The file is the same whichever backend wrote it. A run directory of an earlier version
holds ``tf.train`` checkpoints (``ckpt-<step>.index`` and ``.data-*`` files): the
TensorFlow backend still resumes from them (and writes the new form from then on), JAX
refuses them by name.

Example:
    >>> ckpt = TrainingCheckpoint(model, "checkpoints/race/train_state", keep=5)
    >>> step = ckpt.restore()          # 0 when there is nothing to restore
    >>> ckpt.save()                    # ckpt-<step>.npz
"""

import json
import logging
import os
import re
import zipfile
from pathlib import Path

import keras
import numpy as np

from nemot import files
from nemot.errors import UserError

logger = logging.getLogger(__name__)
FORMAT = "nemot-train-state-1"
NAME = re.compile(r"ckpt-(\d+)\.npz")
# An earlier version's tf.train checkpoints: ckpt-<step>.index beside its data files.
LEGACY = re.compile(r"ckpt-(\d+)\.index")
# What reading a cut or foreign file raises.
UNREADABLE = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile)
# The group of the epoch's running metric sums, beside "model" and "optimizer".
METRICS = "metrics"


class CheckpointError(UserError, ValueError):
    """No checkpoint of a run directory can be read."""


def seed_states(model):
    """The RNG state variables of the model's seed generators (dropout)."""
    return [v for v in model.non_trainable_variables if "seed_generator_state" in v.path]


def host_array(variable):
    """A variable's value (or a tensor, e.g. the update count of an accumulating optimizer)
    as numpy on this host: under JAX across several hosts, the part this host holds (the
    variables are replicated, so any part is the whole)."""
    value = getattr(variable, "value", variable)
    if getattr(value, "is_fully_addressable", True) is False:
        return np.asarray(value.addressable_data(0))
    # Through the Keras variable: a metric's sync-on-read variable under a TensorFlow
    # strategy reads as its sum over the replicas (numpy cannot read its value as it is).
    return np.asarray(keras.ops.convert_to_numpy(keras.ops.convert_to_tensor(variable)))


def _steps(directory, pattern):
    """``{step: path}`` of the files in ``directory`` whose names match ``pattern``."""
    if not os.path.isdir(directory):
        return {}
    found = {}
    for name in os.listdir(directory):
        match = pattern.fullmatch(name)
        if match:
            found[int(match.group(1))] = os.path.join(directory, name)
    return found


def latest_checkpoint(directory):
    """Path of the newest checkpoint in ``directory`` (``.../ckpt-<step>.npz``, or an
    earlier version's ``.../ckpt-<step>`` prefix), or None."""
    saved = _steps(str(directory), NAME) or {
        step: path[:-len(".index")] for step, path in _steps(str(directory), LEGACY).items()}
    return saved[max(saved)] if saved else None


def checkpoint_step(path):
    """The global step a checkpoint holds, from its name ``ckpt-<step>[.npz]``."""
    return int(re.fullmatch(r"ckpt-(\d+)(\.npz)?", Path(path).name).group(1))


def _variable_groups(model):
    return {"model": list(model.variables), "optimizer": list(model.optimizer.variables)}


def _matching(index, arrays, variables, group):
    """The arrays of ``group`` in a read checkpoint when they fit ``variables`` one to one
    by shape, else None."""
    entries = index["variables"].get(group)
    if entries is None or len(entries) != len(variables):
        return None
    values = [arrays[f"{group}/{i}"] for i in range(len(entries))]
    if any(tuple(a.shape) != tuple(v.shape) for a, v in zip(values, variables)):
        return None
    return values


def read(path):
    """``(index, arrays)`` of the checkpoint file ``path``: the JSON index and
    ``{"model/<i>" | "optimizer/<i>": array}``; a cut or foreign file raises one of
    :data:`UNREADABLE`."""
    with np.load(path, allow_pickle=False) as data:
        index = json.loads(str(data["index"]))
        if index.get("format") != FORMAT:
            raise ValueError(f"not a training checkpoint ({index.get('format')!r})")
        arrays = {key: data[key] for key in data.files if key != "index"}
    for group, entries in index["variables"].items():
        for i, (_, _, dtype) in enumerate(entries):
            if dtype == "bfloat16":  # stored as its bits: numpy has no bfloat16
                import ml_dtypes

                arrays[f"{group}/{i}"] = arrays[f"{group}/{i}"].view(ml_dtypes.bfloat16)
    return index, arrays


class TrainingCheckpoint:
    """Save and restore the whole training state every N steps; keep the last K.

    Args:
        model: a compiled keras.Model (its optimizer is built here if needed).
        directory: where ``ckpt-<step>.npz`` files go.
        keep: how many checkpoints to keep.
        is_chief: several workers or hosts: only the chief writes (every one holds the
            same replicated values); the others' :meth:`save` does nothing.
    """

    def __init__(self, model, directory, keep=5, is_chief=True):
        self.model = model
        self.directory = str(directory)
        self.keep = max(int(keep), 1)
        self.is_chief = is_chief
        optimizer = model.optimizer
        if not optimizer.built:
            optimizer.build(model.trainable_variables)
        self.restored = None
        # The restored epoch's running metric sums, for ResumedEpoch; None when the
        # checkpoint holds none that fit.
        self.epoch_metrics = None
        if is_chief and os.path.isdir(self.directory):
            files.remove_stale_temporaries(self.directory)

    @property
    def step(self):
        """The global step: the optimizer's iteration count."""
        return int(host_array(self.model.optimizer.iterations))

    @property
    def latest(self):
        """Path of the newest checkpoint in ``directory``, or None."""
        return latest_checkpoint(self.directory)

    def restore(self):
        """Restore the newest readable checkpoint if there is one; returns the restored
        step (or 0).

        A checkpoint that cannot be read (cut short by a disk that lost the end of a
        write) is named in a warning and the one before it is restored: every checkpoint
        holds the whole state, so the run repeats the steps in between and ends as it
        would have. When none can be read, the error names the directory.
        """
        saved = _steps(self.directory, NAME)
        if not saved:
            return self._restore_legacy()
        damaged = []
        for step in sorted(saved, reverse=True):
            path = saved[step]
            try:
                index, arrays = read(path)
                self._check(index, arrays)
            except UNREADABLE as error:
                damaged.append(f"{os.path.basename(path)} ({type(error).__name__}: {error})")
                continue
            for group, variables in _variable_groups(self.model).items():
                for i, variable in enumerate(variables):
                    variable.assign(arrays[f"{group}/{i}"])
            self.epoch_metrics = _matching(index, arrays, self.model.metrics_variables,
                                           METRICS)
            return self._restored(path, damaged)
        raise CheckpointError(
            f"{self.directory}: no checkpoint can be read ({'; '.join(damaged)}): "
            "delete the directory to start the run again")

    def _restored(self, path, damaged):
        if damaged:
            logger.warning("%s: skipped the unreadable checkpoint(s) %s; resumed from %s",
                           self.directory, "; ".join(damaged), os.path.basename(path))
        self.restored = path
        return self.step

    def _check(self, index, arrays):
        """Raise ValueError naming the first variable the checkpoint does not fit."""
        for group, variables in _variable_groups(self.model).items():
            entries = index["variables"].get(group, [])
            if len(entries) != len(variables):
                raise ValueError(f"it holds {len(entries)} {group} variables, this run's "
                                 f"model has {len(variables)}")
            for i, variable in enumerate(variables):
                shape = arrays[f"{group}/{i}"].shape
                if tuple(shape) != tuple(variable.shape):
                    raise ValueError(f"{group} variable {variable.path} has shape "
                                     f"{tuple(variable.shape)} here, {tuple(shape)} there "
                                     f"({entries[i][0]})")

    def _restore_legacy(self):
        """Restore an earlier version's ``tf.train`` checkpoints (TensorFlow only)."""
        saved = _steps(self.directory, LEGACY)
        if not saved:
            return 0
        names = ", ".join(f"ckpt-{step}" for step in sorted(saved))
        if keras.backend.backend() != "tensorflow":
            raise CheckpointError(
                f"{self.directory} holds TensorFlow checkpoints of an earlier nemot version "
                f"({names}), which only the TensorFlow backend reads: resume the run once "
                "with KERAS_BACKEND=tensorflow (its next checkpoint is written in the form "
                "both read), or delete the directory to start again")
        import tensorflow as tf

        checkpoint = tf.train.Checkpoint(
            model=self.model, optimizer=self.model.optimizer,
            rng=[getattr(v, "value", v) for v in seed_states(self.model)])
        damaged = []
        for step in sorted(saved, reverse=True):
            prefix = saved[step][:-len(".index")]
            try:
                checkpoint.restore(prefix).assert_existing_objects_matched()
            except (tf.errors.OpError, IndexError, ValueError) as error:
                damaged.append(f"{os.path.basename(prefix)} ({type(error).__name__}: {error})")
                continue
            logger.info("%s: resumed from the TensorFlow checkpoint %s of an earlier nemot "
                        "version; new checkpoints are ckpt-<step>.npz", self.directory,
                        os.path.basename(prefix))
            return self._restored(prefix, damaged)
        raise CheckpointError(
            f"{self.directory}: no checkpoint can be read ({'; '.join(damaged)}): "
            "delete the directory to start the run again")

    def path(self, step):
        """The file of the checkpoint of ``step``."""
        return os.path.join(self.directory, f"ckpt-{step}.npz")

    def save(self):
        """Write ``ckpt-<step>.npz`` and remove all but the newest ``keep``; returns its
        path (None on a worker that is not the chief)."""
        # Read on every worker: a metric's value under MultiWorkerMirroredStrategy is a
        # sum over the workers, which they all take part in.
        metrics = [(v, host_array(v)) for v in self.model.metrics_variables]
        if not self.is_chief:
            return None
        step = self.step
        index = {"format": FORMAT, "step": step, "backend": keras.backend.backend(),
                 "variables": {}}
        arrays = {"index": np.asarray("")}
        groups = {group: [(v, host_array(v)) for v in variables]
                  for group, variables in _variable_groups(self.model).items()}
        groups[METRICS] = metrics
        for group, values in groups.items():
            index["variables"][group] = []
            for i, (variable, value) in enumerate(values):
                index["variables"][group].append([variable.path, list(value.shape),
                                                  str(value.dtype)])
                arrays[f"{group}/{i}"] = value.view(np.uint16) if str(
                    value.dtype) == "bfloat16" else value
        arrays["index"] = np.asarray(json.dumps(index))
        os.makedirs(self.directory, exist_ok=True)
        path = self.path(step)
        with files.atomic_open(path, "wb") as handle:
            np.savez(handle, **arrays)
        saved = _steps(self.directory, NAME)
        for old in sorted(saved)[:-self.keep]:
            os.remove(saved[old])
        return path
