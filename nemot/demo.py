"""The embedded default run (``make demo``): offline, on a CPU.

About ten minutes on 2 idle CPU cores; the README quotes measured runs.

1. Builds a small C4-format corpus (``c4-train.*.json.gz`` / ``c4-validation.*``,
   one ``{"text": ...}`` per line) from real English text every Python carries:
   the documentation topics of ``pydoc_data.topics``.
2. Pre-trains a small NeMoT on it (``kind = "pretrain"``: loss L1, C4 windows,
   cosine decay) and measures the validation perplexity before and after.
3. Fine-tunes the pre-trained model on a synthetic multiple-choice task of
   :mod:`nemot.data.synthetic.qa` (:func:`~nemot.data.synthetic.qa.category_examples`:
   does the passage word name an animal?), through the ``lm`` block, as the thesis'
   single-dataset runs did, keeping the ♣ / ♠ models. The task is learnt within the
   steps given under TensorFlow's and XLA's float rounding (the suite runs the fast mode
   on both backends).
4. Evaluates the ♠ model (``keras.models.load_model``) on held-out questions and
   prints a results table and where the checkpoints and logs are.

It says which phase it is in (``[2/4] pre-training ...``) and how long each took, and
writes everything it printed, with the phase times and the machine, to
``<out>/summary.json``.

``python -m nemot.demo [--out DIR] [--fast]``; ``--fast`` (or ``NEMOT_DEMO_FAST=1``)
uses tiny sizes, for the test suite. The output directory (default
``checkpoints/demo``) is emptied first, so every demo run starts afresh; each stage keeps
only its newest training checkpoint (a demo model with its optimizer state is about 150 MB).
"""

import argparse
import datetime
import gzip
import json
import math
import os
import platform
import shutil
import sys
import time
from pathlib import Path

# The sizes of the default run; the README quotes its measured outcome and time. Fast mode
# fine-tunes long enough to learn the task too (its test asserts it).
# ``task_length``: the fine-tuning's text positions (the questions take 12 or 13 tokens).
FULL = dict(n=64, pretrain_batch=8, pretrain_epochs=3, pretrain_steps=100, finetune_epochs=3,
            finetune_steps=50, finetune_batch=32, task_length=16, examples=2000,
            test_examples=200, decode_batch=8, validation_batches=0)
# Fast mode validates every 25 steps of batch 8: the task was learnt (validation accuracy
# 100%) after 50 to 60 steps of batch 8 in every run tried (seeds 0-3, oneDNN on and off,
# validating every 10 steps), so its 100 steps keep two validations of margin. On JAX
# (XLA's CPU kernels) seed 0 reached 100% at its third validation (step 75) and seed 1 at
# its fourth (77% at step 75), measured 2026-11-29 with the suite's XLA flags. It scores
# the validation and test questions 50 to a forward pass (``decode_batch``; the full run's
# figures in the README were measured at 8): a third of the time at 8 (1.4 -> 0.45 s). Its
# validation loss (the ♣ model's) reads 4 batches, 32 of the 100 questions; the accuracy
# that picks the ♠ model reads all of them. A fine-tuning and its evaluation: 49.5 CPU s
# before both, 44.6 with the batch of 50, 40.7 with the 4 batches (side by side, seed 1).
FAST = dict(n=32, pretrain_batch=4, pretrain_epochs=2, pretrain_steps=15, finetune_epochs=4,
            finetune_steps=25, finetune_batch=8, task_length=13, examples=256,
            test_examples=100, decode_batch=50, validation_batches=4)
# Fine-tuning's learning rate: at it the task was learnt within 50 to 100 steps of batch 16
# in every run tried (seeds 0-2, oneDNN on and off); at 1e-3 it takes about twice as many.
FINETUNE_RATE = 3e-3


def corpus_texts():
    """English documents: the ``pydoc_data.topics`` help texts, in sorted topic order."""
    from pydoc_data.topics import topics

    return [" ".join(topics[name].split()) for name in sorted(topics)]


def write_c4_corpus(directory, texts, validation_share=0.1, files=4):
    """Write ``texts`` in the Hugging Face ``c4/en`` layout; returns the file paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    n_val = max(1, int(len(texts) * validation_share))
    # Every tenth document is held out for validation, the rest spread over the files.
    validation = texts[::len(texts) // n_val][:n_val]
    held = set(validation)
    train = [t for t in texts if t not in held]
    paths = []

    def write(path, docs):
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            for doc in docs:
                handle.write(json.dumps({"text": doc}) + "\n")
        paths.append(path)

    for i in range(files):
        write(directory / f"c4-train.{i:05d}-of-01024.json.gz", train[i::files])
    write(directory / "c4-validation.00000-of-00008.json.gz", validation)
    return paths


def _model_table(sizes):
    return {"preset": "tiny", "max_text_length": sizes["n"], "max_position_embeddings": 64,
            "d_model": 64, "num_heads": 4, "d_ff": 128, "dropout": 0.0,
            "output_blocks": ["lm", "mqa", "gqa"]}


def pretrain(out, corpus, sizes):
    """Pre-train on the corpus; returns ``(result, initial perplexity, final perplexity)``."""
    import keras

    from nemot.data.c4.pipeline import c4_dataset
    from nemot.training import run_config, trainer

    cfg = run_config.run_config_from_dict({
        "name": "demo-pretrain", "kind": "pretrain", "seed": 0,
        "model": _model_table(sizes),
        "data": {"dir": str(corpus), "validation_split": "validation"},
        "train": {"batch_size": sizes["pretrain_batch"], "epochs": sizes["pretrain_epochs"],
                  "steps_per_epoch": sizes["pretrain_steps"],
                  "checkpoint_every": sizes["pretrain_steps"], "keep_checkpoints": 1,
                  "verbose": 2},
        "schedule": {"type": "cosine", "rate": 3e-3,
                     "decay_steps": sizes["pretrain_epochs"] * sizes["pretrain_steps"]},
        "loss": {"lm_weight": 0.0, "vanilla_weight": 0.0}}, source="nemot.demo")
    validation = c4_dataset(corpus, batch_size=sizes["pretrain_batch"],
                            max_text_length=sizes["n"], split="validation")

    class Untrained(keras.callbacks.Callback):
        """The validation loss of the model the run starts from, measured with the run's
        own model and test function (which its validation traces anyway), not a second
        model built alike."""

        def on_train_begin(self, logs=None):
            self.loss = self.model.evaluate(validation, verbose=0, return_dict=True)["loss"]

    untrained = Untrained()
    result = trainer.train(cfg, out_dir=out, callbacks=[untrained])
    initial, final = math.exp(untrained.loss), math.exp(result.history["val_loss"][-1])
    return result, initial, final


# The synthetic multiple-choice task's three splits' seeds.
SPLIT_SEEDS = {"train": 1, "dev": 2, "test": 3}
TASK = "does the passage word name an animal? (yes / no)"


def task_examples(split, sizes):
    """Formatted synthetic multiple-choice questions of ``split`` (task token ``lm``)."""
    from nemot.data import Formatter, Tokenizer
    from nemot.data.synthetic import qa as synthetic

    count = sizes["examples"] if split == "train" else sizes["test_examples"]
    fmt = Formatter(Tokenizer(), max_text_length=sizes["task_length"], task_token="lm")
    return fmt.format_batch(synthetic.category_examples(count, seed=SPLIT_SEEDS[split]))


def finetune(out, init_from, sizes, seed=0):
    """Fine-tune on the synthetic multiple-choice task from the saved model ``init_from``
    (``""``: the model's initial weights) with ``seed`` (weights of the new parts, order of
    the examples); returns the training result."""
    from nemot.data import Tokenizer
    from nemot.training import run_config, trainer

    n = sizes["task_length"]
    train, dev = task_examples("train", sizes), task_examples("dev", sizes)
    cfg = run_config.run_config_from_dict({
        "name": "demo-finetune", "kind": "finetune", "seed": seed,
        "model": dict(_model_table(sizes), max_text_length=n),
        "data": {"dataset": "synthetic_category", "task_token": "lm"},
        "train": {"batch_size": sizes["finetune_batch"], "epochs": sizes["finetune_epochs"],
                  "steps_per_epoch": sizes["finetune_steps"], "init_from": str(init_from),
                  "keep_checkpoints": 1, "verbose": 2, "decode_jit_compile": False},
        "schedule": {"type": "constant", "rate": FINETUNE_RATE}}, source="nemot.demo")
    source = trainer.examples_source(train, batch_size=cfg.train.batch_size, max_text_length=n,
                                     seed=seed, validation_examples=dev, eval_set=dev, metric="accuracy",
                                     label_mode=True, tokenizer=Tokenizer(), jit_compile=False,
                                     decode_batch_size=sizes["decode_batch"],
                                     validation_batches=sizes["validation_batches"])
    return trainer.train(cfg, out_dir=out, source=source, task_tokens={"synthetic_category": "lm"})


def evaluate(model_path, sizes):
    """Test accuracy of the saved model at ``model_path`` (label mode, as the thesis)."""
    import keras

    from nemot.evaluation.scoring import score_examples

    best = keras.models.load_model(model_path)
    return score_examples(best, task_examples("test", sizes), "accuracy", label_mode=True,
                          jit_compile=False, batch_size=sizes["decode_batch"])


class Phases:
    """Prints ``[i/4] what ...`` as each phase starts and keeps its duration."""

    NAMES = ("corpus", "pre-training", "fine-tuning", "evaluation")

    def __init__(self):
        self.started = time.time()
        self.seconds = {}
        self._current = None

    def start(self, name, detail=""):
        self.stop()
        self._current = (name, time.time())
        print(f"[{self.NAMES.index(name) + 1}/{len(self.NAMES)}] {name}{detail}", flush=True)

    def stop(self):
        if self._current is not None:
            name, since = self._current
            self.seconds[name] = round(time.time() - since, 1)
            print(f"      {name} took {self.seconds[name]:.0f} s", flush=True)
            self._current = None

    def total(self):
        return round(time.time() - self.started, 1)


def machine():
    """Where the demo ran: the timing depends on it (and on what else was running)."""
    return {"platform": platform.platform(), "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
            "load_average_at_start": [round(x, 1) for x in os.getloadavg()]}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m nemot.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join("checkpoints", "demo"))
    parser.add_argument("--fast", action="store_true",
                        default=os.environ.get("NEMOT_DEMO_FAST", "") not in ("", "0"))
    args = parser.parse_args(argv)
    if argv is None:  # `make demo`: this process ends with the demo
        from nemot import console

        console.end_without_collecting()
    sizes = FAST if args.fast else FULL
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    where = machine()
    phases = Phases()
    corpus = out / "corpus"
    phases.start("corpus", f": C4-format files from pydoc_data.topics in {corpus}")
    files = write_c4_corpus(corpus, corpus_texts())
    print(f"      {len(files)} files")
    steps = sizes["pretrain_epochs"] * sizes["pretrain_steps"]
    phases.start("pre-training", f": a small NeMoT on the corpus, {steps} steps, loss L1")
    pre, initial, final = pretrain(out / "pretrain", corpus, sizes)
    steps = sizes["finetune_epochs"] * sizes["finetune_steps"]
    phases.start("fine-tuning", f": a synthetic multiple-choice task ({TASK}), {steps} "
                                "steps, L1 + 0.2 L2 + 0.5 L3")
    fine = finetune(out / "finetune", out / "pretrain" / "model_last.keras", sizes)
    phases.start("evaluation", ": the ♠ model on held-out questions")
    accuracy = evaluate(out / "finetune" / "model_best_metric.keras", sizes)
    phases.stop()
    rows = [
        ("pre-training steps", f"{pre.step}"),
        ("validation perplexity, untrained", f"{initial:.1f}"),
        ("validation perplexity, pre-trained", f"{final:.1f}"),
        ("fine-tuning steps (synthetic MC)", f"{fine.step}"),
        ("♣ lowest validation loss", f"{fine.best['val_loss']:.4f} (epoch {fine.best['loss_epoch']})"),
        ("♠ best validation accuracy", f"{fine.best['val_metric']:.2%} (epoch {fine.best['metric_epoch']})"),
        ("test accuracy of ♠ (chance 50%)", f"{accuracy:.2%}"),
    ]
    width = max(len(name) for name, _ in rows)
    print("\nNeMoT demo results")
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    print(f"\ncheckpoints and models: {out / 'pretrain'}, {out / 'finetune'} "
          "(model_last.keras, model_best_loss.keras, model_best_metric.keras, train_state/)")
    print(f"results CSV: {out / 'finetune' / 'results.csv'}; TensorBoard: "
          f"tensorboard --logdir {out}")
    total = phases.total()
    print(f"total time {total:.0f} s (" + ", ".join(
        f"{name} {seconds:.0f} s" for name, seconds in phases.seconds.items()) + ")")
    import keras

    summary = {"initial_perplexity": initial, "final_perplexity": final,
               "test_accuracy": accuracy, "best": fine.best, "pretrain_steps": pre.step,
               "finetune_steps": fine.step, "fast": args.fast,
               "backend": keras.backend.backend(), "seconds": phases.seconds,
               "total_seconds": total, "machine": where,
               "date": datetime.date.today().isoformat()}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
