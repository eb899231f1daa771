"""The trainer's step against ``model.fit``'s step of the same model, on TensorFlow and
JAX side by side: ``python -m bench trainer [--preset tiny] [--steps 30] [--batch-size 8]
[--backends tensorflow jax]``.

Each backend runs in a process of its own (the backend is fixed at import). There the same
NeMoT (dropout on, one output block, XLA-compiled step on both backends), the same Adam
and the same synthetic multiple-choice batches train twice: through
``nemot.training.trainer.train`` (the trainer: its callbacks, a checkpoint at the end
of the epoch) and through ``keras.Model.fit`` on the same dataset. Reported per backend:
the median time between consecutive batch ends after the first ``--warmup`` steps (the
compile is in the first), for both, and their ratio (trainer / fit).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _timer():
    """A Keras callback noting the time of every batch end (``.ends``)."""
    import keras

    class Times(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.ends = []

        def on_train_batch_end(self, batch, logs=None):
            self.ends.append(time.perf_counter())

    return Times()


def _median_step(ends, warmup):
    gaps = [b - a for a, b in zip(ends[warmup:], ends[warmup + 1:])]
    return statistics.median(gaps)


def measure(preset, steps, batch_size, warmup):
    """In this process: ``{"trainer": s, "fit": s, "ratio": trainer / fit}`` (seconds per
    step, medians)."""
    import keras

    from nemot.training import distributed, trainer
    from tests.training.worker import tiny_run_config, tiny_source

    n = 20
    cfg = tiny_run_config("bench", steps=2 * steps, checkpoint_every=0, batch_size=batch_size,
                          n=n).to_dict()
    cfg["model"]["preset"] = preset
    cfg["train"].update(epochs=1, steps_per_epoch=steps, jit_compile=True, log_every=100)
    from nemot.training.run_config import run_config_from_dict

    cfg = run_config_from_dict(cfg)
    source = tiny_source(batch_size=batch_size, n=n)
    times = {}
    with tempfile.TemporaryDirectory() as out:
        timer = _timer()
        trainer.train(cfg, out_dir=out, source=source, callbacks=[timer])
        times["trainer"] = _median_step(timer.ends, warmup)
    keras.utils.set_random_seed(cfg.seed)
    model = trainer.build_and_compile(cfg, distributed.make_strategy("default"))
    timer = _timer()
    keras.Model.fit(model, source.train(0, batch_size, None), epochs=1, steps_per_epoch=steps,
                    shuffle=False, verbose=0, callbacks=[timer])
    times["fit"] = _median_step(timer.ends, warmup)
    times["ratio"] = times["trainer"] / times["fit"]
    return times


def run(argv=()):
    parser = argparse.ArgumentParser(prog="python -m bench trainer")
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--backends", nargs="+", default=["tensorflow", "jax"])
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(list(argv))
    if args.one:
        print("RESULT " + json.dumps(measure(args.preset, args.steps, args.batch_size,
                                             args.warmup)), flush=True)
        return {}
    result = {"preset": args.preset, "steps": args.steps, "batch_size": args.batch_size}
    for backend in args.backends:
        done = subprocess.run(
            [sys.executable, "-m", "bench.bench_trainer", "--one", "--preset", args.preset,
             "--steps", str(args.steps), "--warmup", str(args.warmup), "--batch-size",
             str(args.batch_size)], cwd=ROOT, capture_output=True, text=True,
            env=dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3"))
        lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
        if done.returncode or not lines:
            raise RuntimeError(f"bench trainer on {backend} failed: {done.stderr[-3000:]}")
        result[backend] = json.loads(lines[-1][len("RESULT "):])
        print(backend, result[backend], flush=True)
    return result


if __name__ == "__main__":
    run(sys.argv[1:])
