"""A tiny synthetic training run in its own process, for the subprocess tests.

    python -m tests.training.worker OUT [--strategy S] [--devices K] [--hang-at N]
        [--pause-at N] [--dropout P] [--steps N] [--eager] [--kill-at EVENT:STAGE]

Trains a tiny NeMoT on the synthetic multiple-choice task through
``nemot.training.trainer.train`` and writes ``OUT/weights.npz`` (every weight,
by path) and ``OUT/history.json``. ``--devices K`` splits the CPU into K
logical devices first (must happen before TensorFlow initialises);
``--hang-at N`` prints ``HANGING`` after step N and sleeps, so that a test can
kill the process there; ``--pause-at N`` prints ``PAUSED`` after step N and from then on
waits a second after each step, for a signal to arrive mid-run (the exit status is the
command line's: 75 for a preempted run); ``--kill-at EVENT:STAGE`` kills the process inside
one of its writes (tests/faults.py: ``ckpt-4.npz:partial``, the checkpoint of step 4 half
written). ``--eager`` runs TensorFlow functions eagerly (as the
``eager`` fixture of tests/conftest.py, for the same reason: tracing the tiny model's
training step costs more than the few steps it runs). :func:`run` is the same run in the
calling process (a test that has TensorFlow loaded saves a process's start, ~7 s of CPU).
The process leaves out the optional modules that TensorFlow, Keras and KerasHub import
when installed and a tiny run never uses (:func:`lean_imports`).
"""

import argparse
import json
import os
import signal
import sys
import threading
import time

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def lean_imports():
    """Leave out of this process the optional modules that TensorFlow (``jax``, for
    tf.lite), Keras (``pandas``) and KerasHub (``rouge_score``, which imports nltk and
    scipy.stats) import at start-up when installed: a test's training process uses none
    of them, and they cost ~2 of the ~9 CPU seconds of its imports. Call it before those
    imports; JAX stays when it is Keras' backend."""
    backend = os.environ.get("KERAS_BACKEND")
    if not backend:
        home = os.environ.get("KERAS_HOME", os.path.join(os.path.expanduser("~"), ".keras"))
        try:
            with open(os.path.join(home, "keras.json"), encoding="utf-8") as handle:
                backend = json.load(handle).get("backend")
        except (OSError, ValueError, AttributeError):
            backend = None
    unused = ["rouge_score", "pandas"] + ([] if backend == "jax" else ["jax"])
    for name in unused:
        # None in sys.modules: `import name` raises ImportError, which they all expect.
        sys.modules.setdefault(name, None)


def tiny_run_config(name, *, steps, checkpoint_every, strategy="default", dropout=0.1,
                    batch_size=4, n=20, optimizer="adam", rate=1e-3):
    from nemot.training.run_config import run_config_from_dict

    return run_config_from_dict({
        "name": name, "kind": "finetune", "seed": 3,
        # One output block, the task's own: each further block adds its layers, gradients
        # and optimizer updates to every trace, and a synthetic_choice batch never selects
        # another.
        "model": {"preset": "tiny", "max_text_length": n, "dropout": dropout,
                  "vanilla_attention_dropout": dropout, "output_blocks": ["mqa"]},
        "data": {"dataset": "synthetic_choice", "validation_split": ""},
        "train": {"batch_size": batch_size, "epochs": 2, "steps_per_epoch": steps // 2,
                  "checkpoint_every": checkpoint_every, "strategy": strategy, "verbose": 0,
                  "optimizer": optimizer},
        "schedule": {"type": "constant", "rate": rate}})


def tiny_source(batch_size=4, n=20):
    from nemot.data import Formatter, Tokenizer
    from nemot.data.synthetic import qa as synthetic
    from nemot.training import trainer

    examples = Formatter(Tokenizer(), max_text_length=n).format_batch(
        synthetic.choice_examples(24, seed=5))
    return trainer.examples_source(examples, batch_size=batch_size, max_text_length=n)


def stops(hang_at=0, pause_at=0, signal_at=0):
    """A callback for :func:`run`'s ``hang_at``, ``pause_at`` and ``signal_at`` (each 0:
    off), by the optimizer's step count."""
    import keras

    class Stops(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            step = int(self.model.optimizer.iterations.numpy())
            if step == hang_at:
                print("HANGING", flush=True)
                time.sleep(600)
            if pause_at and step >= pause_at:
                if step == pause_at:
                    print("PAUSED", flush=True)
                time.sleep(1)
            if step == signal_at:
                os.kill(os.getpid(), signal.SIGTERM)

    return Stops()


def run(out, *, strategy="default", hang_at=0, pause_at=0, dropout=0.1, steps=8,
        checkpoint_every=2, optimizer="adam", rate=1e-3, signal_at=0):
    """The tiny run into ``out``, writing ``weights.npz`` and ``history.json`` there;
    ``hang_at``: print ``HANGING`` after that step and sleep; ``pause_at``: print ``PAUSED``
    after that step and wait a second after each step from then on; ``signal_at``: send
    this process SIGTERM after that step (a preemption that lands in the wait after it; the
    run's handler takes it, so only from the main thread). Returns the training result."""
    from nemot.training import trainer

    if signal_at and threading.current_thread() is not threading.main_thread():
        raise RuntimeError("signal_at: only the main thread takes the run's signals")
    cfg = tiny_run_config("worker", steps=steps, checkpoint_every=checkpoint_every,
                          strategy=strategy, dropout=dropout, optimizer=optimizer, rate=rate)
    result = trainer.train(cfg, out_dir=out, source=tiny_source(),
                           callbacks=[stops(hang_at, pause_at, signal_at)]
                           if hang_at or pause_at or signal_at else [])
    # Every worker of a multi-worker run writes its own weights file.
    tag = os.environ.get("WORKER_TAG", "")
    np.savez(os.path.join(out, f"weights{tag}.npz"),
             **{v.path: np.asarray(v.numpy()) for v in result.model.weights})
    with open(os.path.join(out, f"history{tag}.json"), "w") as handle:
        json.dump({"history": result.history, "step": result.step}, handle)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--strategy", default="default")
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--hang-at", type=int, default=0)
    parser.add_argument("--pause-at", type=int, default=0)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--checkpoint-every", type=int, default=2)
    parser.add_argument("--optimizer", default="adam")
    parser.add_argument("--rate", type=float, default=1e-3)
    parser.add_argument("--eager", action="store_true")
    parser.add_argument("--kill-at", default=None,
                        help="EVENT:STAGE: SIGKILL inside a write (tests/faults.py)")
    args = parser.parse_args(argv)

    lean_imports()
    if args.kill_at:
        from tests import faults

        faults.install(faults.kill_point(args.kill_at))
    import tensorflow as tf

    tf.config.run_functions_eagerly(args.eager)

    if args.devices > 1:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * args.devices)
    from nemot import console

    return console.run(lambda _: run(
        args.out, strategy=args.strategy, hang_at=args.hang_at, pause_at=args.pause_at,
        dropout=args.dropout, steps=args.steps, checkpoint_every=args.checkpoint_every,
        optimizer=args.optimizer, rate=args.rate), None)


if __name__ == "__main__":
    from nemot import console

    console.end_without_collecting()  # the process ends with it
    sys.exit(main())
