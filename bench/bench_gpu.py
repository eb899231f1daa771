"""Thesis-size training and decoding speed on one accelerator.

    python -m bench gpu                 # thesis sizes; meant for a GPU (docs/performance.md)
    python -m bench gpu --budget 420    # what fits in 7 minutes, the targets' figures first
    python -m bench gpu --tiny          # tiny sizes: proves the benchmark runs, on a CPU too

Training, bf16 mixed precision and XLA (always on JAX; ``jit_compile=True`` on
TensorFlow), Adam, at batch 16 and 32 of 3 + 768 tokens (text 768):

- ``nemot``: the thesis model with both heads (L1 + 0.2 L2 + 0.5 L3), all six thesis
  output blocks built, batches mixing the task tokens of ``--tasks`` (default
  ``lm,gqa``: half the examples each);
- ``nemot_main_head``: the same, without the vanilla-set head's loss (L1 + 0.2 L2);
- ``gpt2_baseline``: nemot's GPT-2 baseline with the depth of NeMoT's path
  (Y + M + Z = 27 layers), one head, one cross-entropy;
- ``keras_hub_gpt2``: KerasHub's ``GPT2Backbone`` of the same depth, a ``Dense`` head and
  Keras's sparse cross-entropy: the reference of the target (NeMoT's step at most
  1.15x this one);
- ``nemot_trainer`` (only when named in ``--models``): the ``nemot`` model trained by
  the trainer (``nemot.training.loop.run``: its callbacks and an epoch-end checkpoint)
  on the same batch, timed between batch ends.
- ``nemot_remat`` (only when named): the ``nemot`` model with ``remat_layers = true``
  (each transformer layer recomputed in the backward pass; JAX only).
- ``nemot_scan`` (only when named): the ``nemot`` model with ``scan_layers = true``
  (the layers of each set as one loop over their stacked weights; JAX only).
- ``nemot_branches`` (only when named): the ``nemot`` model with its output blocks as
  a branch each instead of one loop over their stacked weights (``OutputSet.stack_blocks
  = False``).

Each model runs in a process of its own (so that peak memory is its own), warms up,
then times 10 steps (3 at tiny sizes) per batch size; reported: median step time, compile time
(the first step's time minus the median), text tokens/s, MFU (model FLOPs of one output
block per example, 6 per parameter-token plus attention, over the device's dense bf16
peak) and peak device memory.

Decoding: cached greedy decoding tokens/s at batch 1 and 32 (prompt 128, 128 new
tokens, no early stop) of NeMoT (thesis size), nemot's GPT-2 baseline (GPT-2 small) and
KerasHub's ``GPT2CausalLM.generate`` (GPT-2 small).

The work runs in order: NeMoT and ``GPT2Backbone`` at the first batch size (the MFU and
the ratio of the targets), then the other models, the other batch sizes and decoding.
The result so far is written after every model and batch size to
``bench/results/gpu_<device>_<backend>.json`` (or ``--partial FILE``), so a run stopped
by a time limit keeps what it measured; ``--budget SECONDS`` stops the run itself before
the limit (a piece of work starts only if an estimate from those done fits, and a running
one is stopped at the limit with the batch sizes it finished). Never a test: timings live
here.
"""

import argparse
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TRAIN_MODELS = ("nemot", "nemot_main_head", "gpt2_baseline", "keras_hub_gpt2", "nemot_trainer",
                "nemot_branches", "nemot_remat", "nemot_scan")
# What runs without --models: nemot_trainer (the nemot model's step through
# nemot.training.loop.run), nemot_branches (a branch per output block), nemot_remat
# (layers recomputed in the backward pass) and nemot_scan (each set's layers as one loop)
# on request only.
DEFAULT_TRAIN_MODELS = TRAIN_MODELS[:4]
DECODE_MODELS = ("nemot", "gpt2_baseline", "keras_hub_gpt2")
# What --profile traces: the model of the targets and its reference.
PROFILED = ("nemot", "keras_hub_gpt2")
# Dense bf16 peak of the chip, TFLOP/s (datasheet; SXM parts).
PEAK_TFLOPS = {"H100": 989.0, "H200": 989.0, "A100": 312.0, "L4": 121.0, "A10": 125.0}


def sizes(tiny, vocab_padding=1):
    """Model config, batches, steps and decoding lengths of the run."""
    import nemot

    if tiny:
        config = nemot.NeMoTConfig.preset("tiny").replace(
            output_blocks=nemot.config.THESIS_OUTPUT_BLOCKS, max_text_length=32,
            vocab_padding=vocab_padding)
        return dict(config=config, batches=(2, 4), steps=3, decode_batches=(1, 4),
                    prompt=8, new_tokens=8, gpt2_decode=dict(num_layers=2, hidden_dim=32,
                                                             num_heads=2, intermediate_dim=64))
    return dict(config=nemot.NeMoTConfig.preset("thesis").replace(vocab_padding=vocab_padding),
                batches=(16, 32), steps=10,
                decode_batches=(1, 32), prompt=128, new_tokens=128,
                gpt2_decode=dict(num_layers=12, hidden_dim=768, num_heads=12,
                                 intermediate_dim=3072))


# ---- what runs where -------------------------------------------------------------------

def device_info():
    """``(name, kind)``: the accelerator (or CPU) this backend runs on."""
    import keras

    if keras.backend.backend() == "jax":
        import jax

        device = jax.devices()[0]
        return device.device_kind, device.platform
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        return tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU"), "gpu"
    return platform.processor() or platform.machine(), "cpu"


def peak_memory():
    """``(bytes, what)``: peak device memory so far, or the process's peak RSS on a CPU."""
    import keras

    if keras.backend.backend() == "jax":
        import jax

        stats = jax.devices()[0].memory_stats() or {}
        if "peak_bytes_in_use" in stats:
            return stats["peak_bytes_in_use"], "device"
    else:
        import tensorflow as tf

        if tf.config.list_physical_devices("GPU"):
            return tf.config.experimental.get_memory_info("GPU:0")["peak"], "device"
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "host_rss"


def peak_tflops(device):
    for name, value in PEAK_TFLOPS.items():
        if re.search(rf"\b{name}\b", device):
            return value
    return None


# ---- model FLOPs ------------------------------------------------------------------------

def layer_flops(tokens, length, d, d_ff):
    """Forward FLOPs of one transformer layer over ``tokens`` tokens of sequences of
    ``length``: the projections (4 d^2 + 2 d d_ff multiply-adds per token) and
    attention (scores and values, 2 length d per token), 2 FLOPs per multiply-add."""
    return 2 * tokens * (4 * d * d + 2 * d * d_ff + 2 * length * d)


def train_flops(name, cfg, batch):
    """Model FLOPs of one training step (3x the forward pass): one output block per
    example, as the model defines it; work on padding or extra blocks does not count."""
    n, d, f, v = cfg.max_text_length, cfg.d_model, cfg.d_ff, cfg.vocab_size
    tokens = batch * n
    if name.startswith("nemot"):
        aux = cfg.num_aux_tokens
        forward = (cfg.num_vanilla_layers * layer_flops(tokens, n, d, f)
                   + cfg.num_nm_layers * layer_flops(batch * (n + aux), n + aux, d, f)
                   + cfg.num_output_layers * layer_flops(tokens, n, d, f)
                   + 2 * tokens * d * v * (1 if name == "nemot_main_head" else 2))
    else:
        layers = cfg.num_vanilla_layers + cfg.num_nm_layers + cfg.num_output_layers
        forward = layers * layer_flops(tokens, n, d, f) + 2 * tokens * d * v
    return 3 * forward


# ---- training --------------------------------------------------------------------------

def build_train_model(name, cfg):
    import keras
    import keras_hub

    import nemot
    from nemot.models.losses import NeMoTLoss

    depth = cfg.num_vanilla_layers + cfg.num_nm_layers + cfg.num_output_layers
    if name.startswith("nemot"):
        if name == "nemot_remat":
            cfg = cfg.replace(remat_layers=True)
        if name == "nemot_scan":
            cfg = cfg.replace(scan_layers=True)
        model = nemot.build_model(cfg, preprocessor=None)
        if name == "nemot_branches":
            model.backbone.output_set.stack_blocks = False
        loss = NeMoTLoss(vanilla_weight=0) if name == "nemot_main_head" else NeMoTLoss()
        model.compile(keras.optimizers.Adam(1e-5), loss=loss, jit_compile=True)
        return model
    if name == "gpt2_baseline":
        model = nemot.build_baseline(cfg.replace(num_vanilla_layers=depth))
        model.compile(keras.optimizers.Adam(1e-5), loss=NeMoTLoss(lm_weight=0, vanilla_weight=0),
                      jit_compile=True)
        return model
    backbone = keras_hub.models.GPT2Backbone(
        vocabulary_size=cfg.vocab_size, num_layers=depth, num_heads=cfg.num_heads,
        hidden_dim=cfg.d_model, intermediate_dim=cfg.d_ff,
        max_sequence_length=cfg.max_position_embeddings, dropout=cfg.dropout)
    ids = keras.Input((None,), dtype="int32", name="token_ids")
    mask = keras.Input((None,), dtype="int32", name="padding_mask")
    hidden = backbone({"token_ids": ids, "padding_mask": mask})
    model = keras.Model({"token_ids": ids, "padding_mask": mask},
                        keras.layers.Dense(cfg.vocab_size)(hidden))
    model.compile(keras.optimizers.Adam(1e-5),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=True)
    return model


def train_batch(name, cfg, batch, tasks, rng):
    """``(x, y)`` of random text; NeMoT's examples cycle through ``tasks``."""
    from nemot import vocab

    n = cfg.max_text_length
    text = rng.integers(0, vocab.GPT2_VOCAB_SIZE, (batch, n)).astype("int32")
    targets = np.roll(text, -1, axis=1)
    if name == "keras_hub_gpt2":
        return {"token_ids": text, "padding_mask": np.ones_like(text)}, targets
    aux = np.array([[vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id(tasks[i % len(tasks)])]
                    for i in range(batch)], "int32")
    return {"token_ids": np.concatenate([aux, text], 1)}, {"task_targets": targets,
                                                           "lm_targets": targets}


def profile_steps(model, x, y, steps, directory):
    """Trace ``steps`` training steps (``jax.profiler``) and summarize them by part of the
    model with the HLO XLA dumped (:mod:`bench.gpu_profile`); the trace and the HLO are
    kept, gzipped, in ``directory``."""
    import gzip
    import shutil

    import jax

    from bench import gpu_profile

    directory = Path(directory)
    trace_dir = directory / "trace"
    jax.profiler.start_trace(str(trace_dir), create_perfetto_trace=True)
    for _ in range(steps):
        model.train_on_batch(x, y)
    jax.profiler.stop_trace()
    trace = max(trace_dir.rglob("perfetto_trace.json.gz"), key=lambda p: p.stat().st_mtime)
    # The step just traced is the newest training module XLA dumped.
    hlo = max((directory / "hlo").glob("*jit_train_step*after_optimizations.txt"),
              key=lambda p: p.stat().st_mtime)
    summary = gpu_profile.summarize(trace, hlo, steps)
    shutil.copy(trace, directory / "trace.json.gz")
    with open(hlo, "rb") as src, gzip.open(directory / "train_step_hlo.txt.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    return summary


def trainer_steps(model, x, y, steps):
    """``steps + 2`` steps of ``model`` on the batch ``(x, y)`` through the trainer
    (``nemot.training.loop.run``, no checkpoint before the end): the first step's time and
    the times between the later batch ends."""
    import tempfile

    import keras
    import tensorflow as tf

    from nemot.training import loop

    ends = [time.perf_counter()]

    class Ends(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            ends.append(time.perf_counter())

    source = loop.DataSource(
        train=lambda start_batch, batch_size, input_context: tf.data.Dataset.from_tensors(
            (x, y)).repeat(), steps_per_epoch=steps + 2)
    with tempfile.TemporaryDirectory() as out:
        loop.run(lambda: model, source, loop.TrainConfig(
            batch_size=len(y["task_targets"]), steps_per_epoch=steps + 2, verbose=0,
            log_every=10 ** 9), out, callbacks=[Ends()])
    gaps = [b - a for a, b in zip(ends, ends[1:])]
    return gaps[0], gaps[2:]


def train_child(name, tiny, tasks, profile=None, batches=None, out=None, vocab_padding=1):
    """Time ``name``'s training steps per batch size; the result so far is written to
    ``out`` after each one (a run stopped midway keeps what it measured)."""
    import keras

    run = sizes(tiny, vocab_padding)
    if batches:
        run["batches"] = batches
    cfg = run["config"]
    keras.config.set_dtype_policy("mixed_bfloat16")
    keras.utils.set_random_seed(0)
    model = build_train_model(name, cfg)
    device, _ = device_info()
    peak = peak_tflops(device)
    rng = np.random.default_rng(0)
    result = {}
    for batch in run["batches"]:
        x, y = train_batch(name, cfg, batch, tasks, rng)
        if name == "nemot_trainer":
            first, times = trainer_steps(model, x, y, run["steps"])
            warm_up = [first]
        else:
            warm_up = []
            for _ in range(2):  # compile, warm up
                start = time.perf_counter()
                model.train_on_batch(x, y)  # returns numpy logs: the step has finished
                warm_up.append(time.perf_counter() - start)
            times = []
            for _ in range(run["steps"]):
                start = time.perf_counter()
                model.train_on_batch(x, y)
                times.append(time.perf_counter() - start)
        step = statistics.median(times)
        flops = train_flops(name, cfg, batch)
        memory, memory_kind = peak_memory()
        result[str(batch)] = {
            "step_seconds": round(step, 5),
            "compile_seconds": round(warm_up[0] - step, 2),
            "tokens_per_second": round(batch * cfg.max_text_length / step, 1),
            "model_tflop_per_step": round(flops / 1e12, 4),
            "mfu": None if peak is None else round(flops / step / (peak * 1e12), 4),
            f"peak_{memory_kind}_gib": round(memory / 2 ** 30, 3),
        }
        write_json(out, result)
        if profile and "profile" not in result:  # the first batch size
            result["profile"] = profile_steps(model, x, y, 3, profile)
            write_json(out, result)
    return result


# ---- decoding --------------------------------------------------------------------------

def decode_child(name, tiny, batches=None, out=None, vocab_padding=1):
    import keras
    import keras_hub

    import nemot
    from nemot import vocab
    from nemot.models.generation import Generator

    run = sizes(tiny, vocab_padding)
    keras.config.set_dtype_policy("mixed_bfloat16")
    keras.utils.set_random_seed(0)
    small = run["gpt2_decode"]
    rng = np.random.default_rng(0)
    p, new = run["prompt"], run["new_tokens"]
    if name == "keras_hub_gpt2":
        backbone = keras_hub.models.GPT2Backbone(
            vocabulary_size=vocab.VOCAB_SIZE, max_sequence_length=1024, **small)
        lm = keras_hub.models.GPT2CausalLM(backbone=backbone, preprocessor=None)

        def generate(batch):
            ids = np.zeros((batch, p + new), "int32")
            ids[:, :p] = rng.integers(0, vocab.GPT2_VOCAB_SIZE, (batch, p))
            lm.generate({"token_ids": ids, "padding_mask": np.arange(p + new)[None] < p},
                        stop_token_ids=None)
    else:
        if name == "nemot":
            model = nemot.build_model(run["config"], preprocessor=None)
        else:
            model = nemot.build_baseline(run["config"].replace(
                num_vanilla_layers=small["num_layers"], d_model=small["hidden_dim"],
                num_heads=small["num_heads"], d_ff=small["intermediate_dim"]))
        generator = Generator(model, stop_token_ids=())

        def generate(batch):
            aux = [vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id("lm")]
            prompts = [aux + rng.integers(0, vocab.GPT2_VOCAB_SIZE, p).tolist()
                       for _ in range(batch)]
            generator.generate_tokens(prompts, max_new_tokens=new)

    result = {}
    for batch in batches or run["decode_batches"]:
        start = time.perf_counter()
        generate(batch)  # compile
        first = time.perf_counter() - start
        times = []
        for _ in range(3):
            start = time.perf_counter()
            generate(batch)
            times.append(time.perf_counter() - start)
        seconds = statistics.median(times)
        result[str(batch)] = {"seconds": round(seconds, 4),
                              "compile_seconds": round(first - seconds, 2),
                              "new_tokens_per_second": round(batch * new / seconds, 1)}
        write_json(out, result)
    return result


# ---- driver ----------------------------------------------------------------------------

def write_json(path, value):
    """Write ``value`` to ``path`` (if any) whole or not at all: a reader never sees half."""
    if path:
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(value, indent=2) + "\n")
        os.replace(tmp, path)


def child(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=("train", "decode"))
    parser.add_argument("name")
    parser.add_argument("out")
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--tasks", default="lm,gqa")
    parser.add_argument("--profile", default=None)
    parser.add_argument("--batches", default=None)
    parser.add_argument("--vocab-padding", type=int, default=1)
    args = parser.parse_args(argv)
    batches = args.batches and [int(b) for b in args.batches.split(",")]
    if args.kind == "train":
        train_child(args.name, args.tiny, args.tasks.split(","), args.profile, batches,
                    args.out, args.vocab_padding)
    else:
        decode_child(args.name, args.tiny, batches, args.out, args.vocab_padding)


def plan(models, batches, decoders, decode_batches):
    """The work in order, ``(kind, model, batches)`` per process: NeMoT and KerasHub's
    GPT-2 at the first batch size (the figures of the targets), then the other models at
    every batch size, NeMoT and KerasHub's GPT-2 at the others, and decoding."""
    first = [name for name in ("nemot", "keras_hub_gpt2") if name in models]
    work = [("train", name, batches[:1]) for name in first]
    work += [("train", name, batches) for name in models if name not in first]
    if batches[1:]:
        work += [("train", name, batches[1:]) for name in first]
    return work + [("decode", name, decode_batches) for name in decoders]


class Budget:
    """Seconds left before ``budget`` seconds from ``started`` (None: no limit) run out,
    keeping a margin to stop a process, write the result and exit (3 s and 5% of the
    budget); and an estimate of each piece of work from those done: a model's own earlier
    run per batch size, else the longest run so far."""

    def __init__(self, budget, started, clock=time.monotonic):
        self.clock = clock
        self.deadline = None if budget is None else started + 0.95 * budget - 3.0
        self.per_batch = {}

    def left(self):
        return None if self.deadline is None else self.deadline - self.clock()

    def record(self, kind, name, batches, seconds):
        self.per_batch[kind, name] = seconds / len(batches)

    def fits(self, kind, name, batches):
        left = self.left()
        if left is None:
            return True
        if (kind, name) in self.per_batch:
            return self.per_batch[kind, name] * len(batches) < left
        longest = max(self.per_batch.values(), default=0.0)
        return left > 0 and longest * len(batches) < left


def in_child(kind, name, options, on_progress, timeout=None, profile=None):
    """Run one piece of work in a fresh process (its own peak memory), watched by
    :func:`watch`. ``profile``: a folder for a profile of the first batch size (XLA dumps
    the HLO of the process's training steps there)."""
    env = dict(os.environ)
    if profile:
        Path(profile).mkdir(parents=True, exist_ok=True)
        options = [*options, "--profile", str(profile)]
        env["XLA_FLAGS"] = " ".join(filter(None, (
            env.get("XLA_FLAGS"), f"--xla_dump_to={Path(profile, 'hlo')}",
            "--xla_dump_hlo_as_text", "--xla_dump_hlo_module_re=train_step")))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [sys.executable, "-m", "bench.bench_gpu", kind, name, str(out), *options]
        return watch(cmd, out, on_progress, timeout, env)


def watch(cmd, out, on_progress, timeout=None, env=None):
    """Run ``cmd``, which writes its result so far to ``out``; ``on_progress(result)`` each
    time it does. The process is stopped after ``timeout`` seconds. Returns its last
    result, with ``"error"`` (its last line of stderr) if it failed and
    ``"stopped": "budget"`` if it was stopped."""
    with tempfile.TemporaryFile("w+") as stderr:
        # In the benchmark's process group: stopping the benchmark's group stops it too.
        process = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                   stderr=stderr)
        start, seen, result = time.monotonic(), None, {}
        while True:
            try:
                code = process.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                code = None
            if out.exists() and out.stat().st_mtime_ns != seen:
                seen = out.stat().st_mtime_ns
                result = json.loads(out.read_text())
                on_progress(result)
            if code is not None:
                break
            if timeout is not None and time.monotonic() - start > timeout:
                process.kill()
                process.wait()
                return dict(result, stopped="budget")
        if code != 0:
            stderr.seek(0)
            return dict(result, error=stderr.read().strip().splitlines()[-1:] or ["(no output)"])
        return result


def ratios(train):
    """NeMoT's step over the same-depth KerasHub GPT-2's, and the trainer's step over
    ``train_on_batch``'s of the same model, per batch size."""
    reference = train.get("keras_hub_gpt2", {})
    out = {}
    for name in ("nemot", "nemot_main_head", "gpt2_baseline"):
        for batch, row in train.get(name, {}).items():
            if "step_seconds" in row and "step_seconds" in reference.get(batch, {}):
                out[f"{name}_vs_keras_hub_gpt2@{batch}"] = round(
                    row["step_seconds"] / reference[batch]["step_seconds"], 3)
    fit = train.get("nemot", {})
    for name in ("nemot_trainer", "nemot_branches", "nemot_remat", "nemot_scan"):
        for batch, row in train.get(name, {}).items():
            if "step_seconds" in row and "step_seconds" in fit.get(batch, {}):
                out[f"{name}_vs_nemot@{batch}"] = round(
                    row["step_seconds"] / fit[batch]["step_seconds"], 3)
    return out


def result_name(result):
    device = re.sub(r"[^A-Za-z0-9]+", "_", result["device"]).strip("_").lower()
    tiny = "_tiny" if result["tiny"] else ""
    padded = f"_vocab{result['vocab_padding']}" if result.get("vocab_padding", 1) > 1 else ""
    return f"gpu_{device}_{result['backend']}{tiny}{padded}"


def run(argv=()):
    parser = argparse.ArgumentParser(prog="python -m bench gpu", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="tiny sizes (runs on a CPU)")
    parser.add_argument("--models", default=",".join(DEFAULT_TRAIN_MODELS),
                        help=f"training models, some of {TRAIN_MODELS} (default the first "
                             "four)")
    parser.add_argument("--decode", default=",".join(DECODE_MODELS),
                        help=f"decoding models, some of {DECODE_MODELS} ('' for none)")
    parser.add_argument("--tasks", default="lm,gqa", help="task tokens the NeMoT batches mix")
    parser.add_argument("--profile", metavar="DIR", default=None,
                        help="JAX only: trace 3 steps of nemot and keras_hub_gpt2 at the first "
                             "batch size and add their device time by part of the model "
                             "(bench/gpu_profile.py); trace and HLO kept in DIR/<model>")
    parser.add_argument("--batches", default=None,
                        help="training batch sizes, comma-separated (default 16,32; 2,4 tiny)")
    parser.add_argument("--budget", metavar="SECONDS", type=float, default=None,
                        help="stop before this many seconds: the work runs in order (NeMoT "
                             "and GPT2Backbone at the first batch size, then the rest), a "
                             "piece is started only if its estimate fits, and a running one "
                             "is stopped at the limit with what it measured")
    parser.add_argument("--vocab-padding", metavar="N", type=int, default=1,
                        help="NeMoTConfig.vocab_padding of nemot's models (64: heads 50,368 "
                             "wide; the result file gets _vocab64)")
    parser.add_argument("--partial", metavar="FILE", default=None,
                        help="where the result so far goes after each model and batch size "
                             "(default: the result file in bench/results)")
    args = parser.parse_args(list(argv))
    if args.vocab_padding < 1:
        parser.error(f"--vocab-padding {args.vocab_padding}: expected a positive multiple "
                     "(1: no padding)")
    import bench

    budget = Budget(args.budget, bench.STARTED)
    import keras
    from nemot import config

    for task in args.tasks.split(","):
        if task not in config.THESIS_OUTPUT_BLOCKS:
            parser.error(f"--tasks {task!r}: expected thesis output blocks "
                         f"{config.THESIS_OUTPUT_BLOCKS}")
    device, kind = device_info()
    run_sizes = sizes(args.tiny)
    batches = [int(b) for b in args.batches.split(",")] if args.batches else \
        list(run_sizes["batches"])
    result = {"backend": keras.backend.backend(), "device": device, "device_kind": kind,
              "peak_bf16_tflops": peak_tflops(device), "tiny": args.tiny,
              "tasks": args.tasks, "dtype_policy": "mixed_bfloat16", "xla": True,
              "vocab_padding": args.vocab_padding,
              "budget_seconds": args.budget, "train": {}, "decode": {}, "errors": {},
              "stopped_by_budget": None, "not_run": []}
    partial = args.partial or bench.result_path(result_name(result))
    started = time.time()

    def write():
        write_json(partial, bench.record(
            "gpu", dict(result, step_ratio=ratios(result["train"])), started))

    work = plan([n for n in args.models.split(",") if n], batches,
                [n for n in args.decode.split(",") if n], list(run_sizes["decode_batches"]))
    for kind_, name, unit_batches in work:
        label = f"{kind_} {name} @ {','.join(map(str, unit_batches))}"
        if not budget.fits(kind_, name, unit_batches):
            print(f"   {label}: skipped, not within the budget", flush=True)
            result["not_run"].append(label)
            continue
        print(f"   {label}", flush=True)
        rows = result[kind_].setdefault(name, {})

        def progress(measured, rows=rows):
            rows.update(measured)
            write()

        options = (["--tiny"] if args.tiny else []) + [
            "--batches", ",".join(map(str, unit_batches)),
            "--vocab-padding", str(args.vocab_padding)]
        if kind_ == "train":
            options += ["--tasks", args.tasks]
        profile = (args.profile if kind_ == "train" and name in PROFILED
                   and unit_batches[0] == batches[0] else None)
        start = time.monotonic()
        measured = in_child(kind_, name, options, progress, budget.left(),
                            profile and Path(profile, name))
        budget.record(kind_, name, unit_batches, time.monotonic() - start)
        rows.update({k: v for k, v in measured.items() if k not in ("stopped", "error")})
        if "error" in measured:
            result["errors"][label] = measured["error"]
        if "stopped" in measured:
            result["stopped_by_budget"] = label
        write()
        print(json.dumps(rows), flush=True)
    write()
    result["step_ratio"] = ratios(result["train"])
    return result


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    child(sys.argv[1:])
