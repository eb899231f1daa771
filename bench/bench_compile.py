"""Compile time of the thesis-size training step, NeMoT beside KerasHub's GPT-2.

    python -m bench compile                  # thesis sizes, every model below
    python -m bench compile --models nemot,keras_hub_gpt2
    python -m bench compile --tiny           # tiny sizes (proves the benchmark runs)
    python -m bench compile --models gpt2_baseline --add   # one more into the result file

Each model runs in a process of its own (nothing compiled is shared) with the training
setup of ``python -m bench gpu`` (bf16 mixed precision, XLA: always on JAX,
``jit_compile=True`` on TensorFlow; Adam; ``--batch`` examples of 3 + 768 tokens,
NeMoT's mixing the tasks ``lm`` and ``gqa``). The compile time is the first training
step's time minus the second's (the faster of the second and third), in wall-clock and in
the process's CPU time (which another load on the machine does not inflate). On JAX the first step's time is also split by JAX's own
compile events: tracing the step to a jaxpr, lowering it to StableHLO, and XLA's compile.

Models: ``nemot`` (both heads, six thesis output blocks); ``keras_hub_gpt2``, KerasHub's
``GPT2Backbone`` with NeMoT's depth (Y + M + Z = 27 layers), a ``Dense`` head and Keras's
cross-entropy; ``gpt2_baseline``, nemot's GPT-2 of the same depth; ``nemot_scan``
(``scan_layers = true``: the layers of each set, and of each output block, as one loop,
compiled once); and variants of NeMoT that each take one part away, to show where its
compile time goes: ``nemot_one_block`` (one output block: no loop over blocks),
``nemot_main_head`` (no vanilla-set head and its loss term), ``nemot_no_dropout`` (every
dropout rate 0: no dropout bits, no seed generators); and ``keras_hub_gpt2_no_dropout``
(``GPT2Backbone`` with ``dropout=0``: what Keras's own dropout costs the reference).

Writes ``bench/results/compile_<device>_<backend>.json``. Never a test: timings live here.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench import bench_gpu

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("nemot", "keras_hub_gpt2", "gpt2_baseline", "nemot_scan", "nemot_one_block",
          "nemot_main_head", "nemot_no_dropout", "keras_hub_gpt2_no_dropout")
REFERENCE = "keras_hub_gpt2"
# JAX's compile events (jax._src.dispatch): seconds per phase of the first step.
JAX_EVENTS = {"/jax/core/compile/jaxpr_trace_duration": "jax_trace_seconds",
              "/jax/core/compile/jaxpr_to_mlir_module_duration": "jax_lower_seconds",
              "/jax/core/compile/backend_compile_duration": "xla_compile_seconds"}


def model_config(name, tiny):
    """The NeMoT config the model ``name`` is built from (every model takes its sizes)."""
    cfg = bench_gpu.sizes(tiny)["config"]
    if name == "nemot_one_block":
        return cfg.replace(output_blocks=("lm",))
    if name == "nemot_scan":
        return cfg.replace(scan_layers=True)
    if name.endswith("_no_dropout"):
        return cfg.replace(dropout=0.0, vanilla_attention_dropout=0.0, attention_dropout=0.0)
    return cfg


def listen_to_jax_events():
    """A dict that JAX's compile events add their seconds to, by phase."""
    totals = dict.fromkeys(JAX_EVENTS.values(), 0.0)
    import keras

    if keras.backend.backend() != "jax":
        return None
    import jax

    def listener(event, seconds, **_):
        if event in JAX_EVENTS:
            totals[JAX_EVENTS[event]] += seconds

    jax.monitoring.register_event_duration_secs_listener(listener)
    return totals


def child(name, tiny, batch):
    """Build ``name`` and time its first and second training steps."""
    import keras

    keras.config.set_dtype_policy("mixed_bfloat16")
    keras.utils.set_random_seed(0)
    cfg = model_config(name, tiny)
    start = time.perf_counter()
    kind = {"nemot_one_block": "nemot", "nemot_no_dropout": "nemot", "nemot_scan": "nemot",
            "keras_hub_gpt2_no_dropout": "keras_hub_gpt2"}.get(name, name)
    model = bench_gpu.build_train_model(kind, cfg)
    build = time.perf_counter() - start
    # One task when there is one block; else two, as the GPU benchmark's batches.
    tasks = list(cfg.output_blocks[:2])
    x, y = bench_gpu.train_batch(kind, cfg, batch, tasks, np.random.default_rng(0))
    events = listen_to_jax_events()
    steps, cpu = [], []
    for _ in range(3):
        start, start_cpu = time.perf_counter(), time.process_time()
        model.train_on_batch(x, y)  # returns numpy logs: the step has finished
        steps.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        if events is not None and len(steps) == 1:
            first_events = dict(events)
    step, step_cpu = min(steps[1:]), min(cpu[1:])
    out = {"build_seconds": round(build, 2), "first_step_seconds": round(steps[0], 2),
           "step_seconds": round(step, 3), "compile_seconds": round(steps[0] - step, 2),
           "compile_cpu_seconds": round(cpu[0] - step_cpu, 2),
           "parameters": int(model.count_params())}
    if events is not None:
        out.update({k: round(v, 2) for k, v in first_events.items()})
    return out


def in_child(name, options):
    """Run :func:`child` in a fresh process; its result, or the error it printed."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [sys.executable, "-m", "bench.bench_compile", name, str(out), *options]
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            lines = [line for line in done.stderr.splitlines() if line.strip("* ")]
            return {"error": lines[-3:] or [f"exit status {done.returncode}"]}
        return json.loads(out.read_text())


def ratios(models, key):
    """Each model's ``key`` (wall or CPU compile seconds) over KerasHub's GPT-2's."""
    reference = models.get(REFERENCE, {}).get(key)
    return {f"{name}_vs_{REFERENCE}": round(row[key] / reference, 2)
            for name, row in models.items() if name != REFERENCE and reference and key in row}


def result_name(result):
    device = "cpu" if result["device_kind"] == "cpu" else result["device"]
    device = re.sub(r"[^A-Za-z0-9]+", "_", device).strip("_").lower()
    return f"compile_{device}_{result['backend']}{'_tiny' if result['tiny'] else ''}"


def run(argv=()):
    parser = argparse.ArgumentParser(prog="python -m bench compile", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="tiny sizes")
    parser.add_argument("--models", default=",".join(MODELS), help=f"some of {MODELS}")
    parser.add_argument("--batch", type=int, default=1, help="examples per step (default 1)")
    parser.add_argument("--add", action="store_true",
                        help="keep the other models of the existing result file (a model "
                             "measured again replaces its entry)")
    args = parser.parse_args(list(argv))
    names = [n for n in args.models.split(",") if n]
    unknown = sorted(set(names) - set(MODELS))
    if unknown:
        parser.error(f"--models {unknown}: expected some of {MODELS}")
    import keras

    device, kind = bench_gpu.device_info()
    cfg = bench_gpu.sizes(args.tiny)["config"]
    result = {"backend": keras.backend.backend(), "device": device, "device_kind": kind,
              "tiny": args.tiny, "batch": args.batch,
              "tokens_per_example": cfg.num_aux_tokens + cfg.max_text_length,
              "depth": cfg.num_vanilla_layers + cfg.num_nm_layers + cfg.num_output_layers,
              "dtype_policy": "mixed_bfloat16", "xla": True, "models": {}}
    if args.add:
        import bench

        path = bench.result_path(result_name(result))
        if path.exists():
            earlier = json.loads(path.read_text())["result"]
            if earlier["batch"] != args.batch:
                parser.error(f"--add: {path} was measured at batch {earlier['batch']}")
            result["models"].update(earlier["models"])
    options = (["--tiny"] if args.tiny else []) + ["--batch", str(args.batch)]
    for name in names:
        print(f"   compile {name}", flush=True)
        result["models"][name] = in_child(name, options)
        print(json.dumps(result["models"][name]), flush=True)
    result["compile_ratio"] = ratios(result["models"], "compile_seconds")
    result["compile_cpu_ratio"] = ratios(result["models"], "compile_cpu_seconds")
    return result


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("name", choices=MODELS)
    parser.add_argument("out")
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--batch", type=int, default=1)
    args = parser.parse_args(argv)
    Path(args.out).write_text(json.dumps(child(args.name, args.tiny, args.batch)))


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main(sys.argv[1:])
