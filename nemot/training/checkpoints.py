"""Training checkpoints: model, optimizer (step included) and dropout RNG state.

We use ``tf.train.CheckpointManager`` rather than Keras ``BackupAndRestore``:
BackupAndRestore only resumes at epoch boundaries, while the thesis runs
checkpoint every 5,000 (pre-training) or 10,000 (general training) steps of
very long epochs, and it does not work with our multi-worker loop.

A checkpoint holds:

- every model weight and every optimizer variable, the optimizer's
  ``iterations`` included: the global step, from which the trainer derives
  the epoch and the data position (the pipelines resume exactly at
  ``start_batch=step``);
- the state of every ``keras.random.SeedGenerator`` in the model (dropout):
  Keras keeps these out of ``tf.train.Checkpoint`` tracking, so they are
  added by hand. With them a resumed run draws the same dropout masks as an
  uninterrupted one, and its final weights are the same.

Example:
    >>> ckpt = TrainingCheckpoint(model, "checkpoints/race/train_state", keep=5)
    >>> step = ckpt.restore()          # 0 when there is nothing to restore
    >>> ckpt.save()                    # ckpt-<step>
"""

import logging
import os
import shutil

import tensorflow as tf

from nemot.errors import UserError

logger = logging.getLogger(__name__)


class CheckpointError(UserError, ValueError):
    """No checkpoint of a run directory can be read."""


def seed_states(model):
    """The RNG state variables of the model's seed generators (dropout)."""
    return [v for v in model.non_trainable_variables if "seed_generator_state" in v.path]


def _tf_variable(variable):
    """The ``tf.Variable`` behind a Keras variable (TensorFlow backend)."""
    return getattr(variable, "value", variable)


def latest_checkpoint(directory):
    """Path prefix of the newest checkpoint in ``directory`` (``.../ckpt-<step>``), or None."""
    return tf.train.latest_checkpoint(str(directory))


def checkpoint_step(path):
    """The global step a checkpoint holds, from its name ``ckpt-<step>``."""
    return int(str(path).rsplit("-", 1)[1])


class TrainingCheckpoint:
    """Save and restore the whole training state every N steps; keep the last K.

    Args:
        model: a compiled keras.Model (its optimizer is built here if needed).
        directory: where ``ckpt-<step>`` files go.
        keep: how many checkpoints to keep.
        is_chief: multi-worker training: every worker must call :meth:`save`
            (the save reads distributed variables together), but only the chief
            writes to ``directory``; the others write to a scratch directory
            that is deleted again.
    """

    def __init__(self, model, directory, keep=5, is_chief=True, worker_id=0):
        self.model = model
        self.directory = str(directory)
        self.is_chief = is_chief
        optimizer = model.optimizer
        if not optimizer.built:
            optimizer.build(model.trainable_variables)
        self.checkpoint = tf.train.Checkpoint(
            model=model, optimizer=optimizer,
            rng=[_tf_variable(v) for v in seed_states(model)])
        target = self.directory if is_chief else os.path.join(
            self.directory, f".worker_{worker_id}_scratch")
        self.manager = tf.train.CheckpointManager(self.checkpoint, target, max_to_keep=keep,
                                                  checkpoint_name="ckpt")
        self.restored = None

    @property
    def step(self):
        """The global step: the optimizer's iteration count."""
        return int(self.model.optimizer.iterations.numpy())

    @property
    def latest(self):
        """Path prefix of the newest checkpoint in ``directory``, or None."""
        return latest_checkpoint(self.directory)

    def restore(self):
        """Restore the newest readable checkpoint if there is one; returns the restored
        step (or 0).

        A checkpoint whose files cannot be read (cut short by a disk that lost the end of
        a write) is named in a warning and the one before it is restored: every
        checkpoint holds the whole state, so the run repeats the steps in between and
        ends as it would have. When none can be read, the error names the directory.
        """
        saved = list(self.manager.checkpoints)
        latest = self.latest
        if latest is not None and latest not in saved:
            saved.append(latest)
        damaged = []
        for path in reversed(saved):
            try:
                self.checkpoint.restore(path).assert_existing_objects_matched()
            except (tf.errors.OpError, IndexError, ValueError) as error:
                damaged.append(f"{os.path.basename(path)} ({type(error).__name__}: {error})")
                continue
            if damaged:
                logger.warning("%s: skipped the unreadable checkpoint(s) %s; resumed from %s",
                               self.directory, "; ".join(damaged), os.path.basename(path))
            self.restored = path
            return self.step
        if damaged:
            raise CheckpointError(
                f"{self.directory}: no checkpoint can be read ({'; '.join(damaged)}): "
                "delete the directory to start the run again")
        return 0

    def save(self):
        """Write ``ckpt-<step>`` (every worker calls this; see ``is_chief``)."""
        path = self.manager.save(checkpoint_number=self.step)
        if not self.is_chief:
            shutil.rmtree(self.manager.directory, ignore_errors=True)
        return path
