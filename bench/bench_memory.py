"""Memory of the thesis-size training step as XLA compiles it, NeMoT beside KerasHub's GPT-2.

    python -m bench memory                  # thesis sizes: float32 and mixed bfloat16
    python -m bench memory --batches 1,8    # the batch sizes compiled (default 1,8)
    python -m bench memory --tiny           # tiny sizes (proves the benchmark runs)

On JAX (any device, a CPU included: the figures are the compiler's, not a measurement of
a device), each model's Keras training step (``model.train_step``, the step ``fit``
compiles: forward, loss, gradients, Adam, and NeMoT's routing rule) is lowered and
compiled for one batch of 3 + 768 tokens (``python -m bench gpu``'s batches; NeMoT's
mixing the tasks ``lm`` and ``gqa``), and XLA's memory analysis of the compiled program is
read: its arguments (the weights, Adam's two slots per weight, the batch), outputs,
the part of the outputs that reuses the arguments' buffers (the step donates the state),
and its temporaries (activations kept for the backward pass and working buffers). The
peak they imply is arguments + outputs - aliased + temporaries. Nothing runs: only the
compile, in a process of its own per model, dtype policy and batch size.

The activations per example are the slope of the temporaries between the two batch
sizes; the batches beyond them (16, 32: the thesis' 4 x 8) are extrapolated from that
slope, and marked so. Models: ``nemot`` (the thesis preset: both heads, six output
blocks) and ``keras_hub_gpt2`` (``GPT2Backbone`` with NeMoT's depth, Y + M + Z = 27
layers, a ``Dense`` head, Keras's cross-entropy), as in ``python -m bench gpu``; and each
with every transformer layer recomputed in the backward pass (``nemot_remat``:
``remat_layers = true``; ``keras_hub_gpt2_remat``: its decoder layers likewise,
:func:`recompute_decoder_layers`).

Writes ``bench/results/memory_<device>_<backend>.json``. Never a test: figures live here.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from bench import bench_compile, bench_gpu

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("nemot", "nemot_remat", "keras_hub_gpt2", "keras_hub_gpt2_remat")
# Each model against its reference: the activations ratio of the summary.
REFERENCES = {"nemot": "keras_hub_gpt2", "nemot_remat": "keras_hub_gpt2_remat"}
POLICIES = ("float32", "mixed_bfloat16")
EXTRAPOLATED = (16, 32)
DEVICE_GB = (24, 40, 80)
GIB = 2 ** 30


def child(name, policy, batch, tiny):
    """Compile ``name``'s training step at ``batch`` and read XLA's memory analysis."""
    import jax
    import keras

    keras.config.set_dtype_policy(policy)
    keras.utils.set_random_seed(0)
    cfg = bench_gpu.sizes(tiny)["config"]
    kind = name.removesuffix("_remat")
    # nemot_remat is one of python -m bench gpu's models; the reference's layers are
    # wrapped here.
    model = bench_gpu.build_train_model(kind if kind == "keras_hub_gpt2" else name, cfg)
    if name == "keras_hub_gpt2_remat":
        recompute_decoder_layers(model)
    x, y = bench_gpu.train_batch(kind, cfg, batch, list(cfg.output_blocks[:2]),
                                 np.random.default_rng(0))
    model.optimizer.build(model.trainable_variables)

    def values(variables):
        return [jax.ShapeDtypeStruct(v.shape, v.dtype) for v in variables]

    state = (values(model.trainable_variables), values(model.non_trainable_variables),
             values(model.optimizer.variables), values(model.metrics_variables))
    step = jax.jit(model.train_step, donate_argnums=0)
    stats = step.lower(state, (x, y)).compile().memory_analysis()
    sizes = {"arguments": stats.argument_size_in_bytes, "outputs": stats.output_size_in_bytes,
             "aliased": stats.alias_size_in_bytes, "temporaries": stats.temp_size_in_bytes}
    sizes["peak"] = sizes["arguments"] + sizes["outputs"] - sizes["aliased"] + sizes["temporaries"]
    def nbytes(variables):
        return sum(int(np.prod(v.shape)) * np.dtype(v.dtype).itemsize for v in variables)

    return {"bytes": sizes, "parameters": int(model.count_params()),
            "weights_bytes": nbytes(model.weights),
            "optimizer_bytes": nbytes(model.optimizer.variables)}


def recompute_decoder_layers(model):
    """``GPT2Backbone``'s decoder layers recomputed in the backward pass, as NeMoT's with
    ``remat_layers``: ``keras.remat`` (``jax.checkpoint``) of each layer's call on its
    input, the other arguments held fixed. (``keras.RematScope`` would pass ``training``
    through ``jax.checkpoint`` as an array, which the layers cannot branch on.)"""
    import keras
    import keras_hub

    backbone = next(layer for layer in model.layers
                    if isinstance(layer, keras_hub.models.GPT2Backbone))
    for layer in backbone.transformer_layers:
        def recomputed(x, *args, call=layer.call, **kwargs):
            return keras.remat(lambda x: call(x, *args, **kwargs))(x)

        layer.call = recomputed


def in_child(name, policy, batch, tiny):
    """:func:`child` in a fresh process (the dtype policy is set before anything is built)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [sys.executable, "-m", "bench.bench_memory", name, policy, str(batch), str(out)]
        done = subprocess.run(cmd + (["--tiny"] if tiny else []), cwd=ROOT,
                              capture_output=True, text=True)
        if done.returncode != 0:
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            return {"error": lines[-3:] or [f"exit status {done.returncode}"]}
        return json.loads(out.read_text())


def summarize(rows, batches):
    """Per model and policy: GiB at each batch, the activations per example (the slope of
    the temporaries), the peaks extrapolated to :data:`EXTRAPOLATED` and the largest
    batch that fits in :data:`DEVICE_GB` gigabytes."""
    low, high = batches[0], batches[-1]
    first, last = rows[str(low)]["bytes"], rows[str(high)]["bytes"]
    per_example = (last["temporaries"] - first["temporaries"]) / (high - low)
    fixed = last["peak"] - per_example * high
    out = {"per_example_activations_gib": round(per_example / GIB, 3),
           "weights_gib": round(rows[str(low)]["weights_bytes"] / GIB, 3),
           "optimizer_gib": round(rows[str(low)]["optimizer_bytes"] / GIB, 3),
           "peak_gib": {str(b): round(rows[str(b)]["bytes"]["peak"] / GIB, 2) for b in batches}}
    out["peak_gib_extrapolated"] = {str(b): round((fixed + per_example * b) / GIB, 2)
                                    for b in EXTRAPOLATED if b > high}
    # The largest batch whose peak (along the same line) fits in a device of each size.
    out["largest_batch_fitting"] = {f"{gb}GB": int((gb * 1e9 - fixed) // per_example)
                                    for gb in DEVICE_GB}
    return out


def result_name(result):
    device = bench_compile.result_name(dict(result, tiny=False)).split("_", 1)[1]
    return f"memory_{device}{'_tiny' if result['tiny'] else ''}"


def run(argv=()):
    parser = argparse.ArgumentParser(prog="python -m bench memory", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="tiny sizes")
    parser.add_argument("--batches", default="1,8", help="two or more batch sizes (default 1,8)")
    parser.add_argument("--models", default=",".join(MODELS), help=f"some of {MODELS}")
    parser.add_argument("--policies", default=",".join(POLICIES), help=f"some of {POLICIES}")
    args = parser.parse_args(list(argv))
    batches = sorted(int(b) for b in args.batches.split(","))
    names = [n for n in args.models.split(",") if n]
    policies = [p for p in args.policies.split(",") if p]
    if len(batches) < 2 or set(names) - set(MODELS) or set(policies) - set(POLICIES):
        parser.error(f"--batches: two or more sizes; --models: some of {MODELS}; "
                     f"--policies: some of {POLICIES}")
    import keras

    if keras.backend.backend() != "jax":
        parser.error("the memory analysis is XLA's as JAX compiles: KERAS_BACKEND=jax")
    device, kind = bench_gpu.device_info()
    cfg = bench_gpu.sizes(args.tiny)["config"]
    result = {"backend": "jax", "device": device, "device_kind": kind, "tiny": args.tiny,
              "tokens_per_example": cfg.num_aux_tokens + cfg.max_text_length,
              "depth": cfg.num_vanilla_layers + cfg.num_nm_layers + cfg.num_output_layers,
              "batches": batches, "compiled": {}, "summary": {}}
    for name in names:
        for policy in policies:
            key = f"{name}/{policy}"
            rows = result["compiled"][key] = {}
            for batch in batches:
                print(f"   memory {key} batch {batch}", flush=True)
                rows[str(batch)] = in_child(name, policy, batch, args.tiny)
                print(json.dumps(rows[str(batch)]), flush=True)
            if not any("error" in row for row in rows.values()):
                result["summary"][key] = summarize(rows, batches)
    for policy in policies:
        for name, reference in REFERENCES.items():
            ours, theirs = (result["summary"].get(f"{m}/{policy}") for m in (name, reference))
            if ours and theirs and theirs["per_example_activations_gib"]:
                result["summary"][f"activations_ratio/{name}/{policy}"] = round(
                    ours["per_example_activations_gib"] / theirs["per_example_activations_gib"],
                    2)
    return result


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("name", choices=MODELS)
    parser.add_argument("policy", choices=POLICIES)
    parser.add_argument("batch", type=int)
    parser.add_argument("out")
    parser.add_argument("--tiny", action="store_true")
    args = parser.parse_args(argv)
    Path(args.out).write_text(json.dumps(child(args.name, args.policy, args.batch, args.tiny)))


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main(sys.argv[1:])
