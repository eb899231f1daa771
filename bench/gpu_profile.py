"""Where one training step's device time goes, by part of the model.

``python -m bench gpu --profile`` traces a few steps of NeMoT with ``jax.profiler``
(a Perfetto trace: every kernel with the HLO instruction it runs) and has XLA dump the
optimised HLO of the training step (every instruction with the name scope it came from:
``jit(train_step)/transpose(jvp(vanilla_set))/transformer_layer_3/...``). :func:`summarize`
joins the two: device time per part (``vanilla_set``, ``neuromodulatory_set``, ``gate``,
``output_set``, the heads, the loss, the optimizer), forward and backward apart, per kind
of work (matrix products, attention, dropout's random bits, the rest) and the largest
kernels. Plain Python on purpose: it runs on the device machine, which has no profiler
plug-in, and here on the files it brings back.
"""

import collections
import gzip
import json
import re
from pathlib import Path

_INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%?([\w.\-]+) = ")
_CALLS = re.compile(r"calls=%?([\w.\-]+)")
_OP_NAME = re.compile(r'op_name="([^"]*)"')
_COMPUTATION = re.compile(r"^(?:ENTRY )?%?([\w.\-]+) .*\{\s*$")

# The kind of work an instruction does, from its scope and the HLO line (first match).
KINDS = (("rng", re.compile(r"threefry|random_bits|_uniform|iota_2x32|rng")),
         ("attention", re.compile(r"dot_product_attention|custom-call.*cudnn.*f(?:mha|lash)|"
                                  r"__cudnn\$fmha")),
         ("matmul", re.compile(r"dot_general|custom-call.*(?:gemm|cublas)|__cublas")),
         ("softmax_or_norm", re.compile(r"softmax|layer_norm|layernorm|reduce")))
PARTS = ("vanilla_set", "neuromodulatory_set", "reading_strategies", "aux_embedding", "gate",
         "output_set", "vanilla_head", "head", "gpt2_backbone", "dense", "adam", "loss")


def hlo_scopes(text):
    """``{instruction: (op_name, line)}`` of an HLO module's text; an instruction without
    metadata (a fusion, say) takes the first op_name of the computation it calls."""
    first_name = {}
    current = None
    rows = {}
    for line in text.splitlines():
        header = _COMPUTATION.match(line)
        if header and "=" not in line.split("{")[0]:
            current = header.group(1)
            continue
        match = _INSTRUCTION.match(line)
        if not match:
            continue
        op_name = _OP_NAME.search(line)
        called = _CALLS.search(line)
        if op_name and current is not None:
            first_name.setdefault(current, op_name.group(1))
        rows[match.group(1)] = (op_name.group(1) if op_name else None,
                               called.group(1) if called else None, line)
    return {name: (op_name or first_name.get(called) or "", line)
            for name, (op_name, called, line) in rows.items()}


def part_of(op_name):
    """``(direction, part)`` of a scope: ``backward`` under a ``transpose(...)``."""
    direction = "backward" if "transpose(" in op_name else "forward"
    scope, unwrapped = None, op_name
    while scope != unwrapped:  # transpose(jvp(head)) -> head
        scope, unwrapped = unwrapped, re.sub(r"(?:transpose|jvp)\(([^()]*)\)", r"\1", unwrapped)
    segments = scope.split("/")
    for segment in segments[1:]:
        if segment in PARTS:
            return ("optimizer" if segment == "adam" else direction), segment
        if "loss" in segment:
            return direction, "loss"
    return direction, "other"


def kind_of(op_name, line):
    for kind, pattern in KINDS:
        if pattern.search(op_name) or pattern.search(line):
            return kind
    return "elementwise_other"


# Library kernels (cuBLAS, cuDNN) that a CUDA graph runs carry no HLO name: their kind.
LIBRARY_KERNELS = (("attention", re.compile(r"sdpa|fmha|flash|cudnn")),
                   ("matmul", re.compile(r"gemm|nvjet|xmma|cutlass|cublas")),
                   ("copy", re.compile(r"(?i)memcpy|memset")))


def instruction_of(event, scopes):
    """The HLO instruction an event ran: its ``hlo_op``, or, inside a CUDA graph
    (``hlo_op`` is the command buffer), its kernel's name (``loop_add_fusion_201`` runs
    ``loop_add_fusion.201``); None for a library kernel."""
    op = event["args"]["hlo_op"]
    if op in scopes:
        return op
    name = re.sub(r"_(\d+)$", r".\1", event.get("name", ""))
    return name if name in scopes else None


def trace_events(path):
    data = json.load(gzip.open(path) if str(path).endswith(".gz") else open(path))
    return data["traceEvents"] if isinstance(data, dict) else data


def summarize(trace_path, hlo_path, steps, module="jit_train_step", top=25):
    """Device milliseconds per step, by (direction, part), by kind, and the ``top``
    kernels: the trace's events of ``module`` joined with the HLO's scopes. Library
    kernels inside a CUDA graph (cuBLAS, cuDNN) have no HLO name: their time is
    ``unmatched``, counted by kind only."""
    scopes = hlo_scopes(Path(hlo_path).read_text())
    by_part = collections.Counter()
    by_kind = collections.Counter()
    by_op = collections.Counter()
    unmatched = 0.0
    for event in trace_events(trace_path):
        args = event.get("args") or {}
        if event.get("ph") != "X" or args.get("hlo_module") != module or "hlo_op" not in args:
            continue
        ms = event.get("dur", 0) / 1000 / steps
        op = instruction_of(event, scopes)
        if op is None:
            unmatched += ms
            kind = next((k for k, p in LIBRARY_KERNELS if p.search(event.get("name", ""))),
                        "unknown")
            by_kind[f"unattributed/{kind}"] += ms
            by_op[(event.get("name", "")[:60], "(library kernel)")] += ms
            continue
        op_name, line = scopes[op]
        direction, part = part_of(op_name)
        by_part[f"{direction}/{part}"] += ms
        by_kind[f"{part}/{kind_of(op_name, line)}"] += ms
        by_op[(op, op_name)] += ms
    total = sum(by_part.values()) + unmatched
    return {
        "device_ms_per_step": round(total, 3),
        "unmatched_ms_per_step": round(unmatched, 3),
        "by_part_ms": {k: round(v, 3) for k, v in by_part.most_common()},
        "by_kind_ms": {k: round(v, 3) for k, v in by_kind.most_common()},
        "top_ops": [{"op": op, "scope": scope[:200], "ms": round(ms, 3)}
                    for (op, scope), ms in by_op.most_common(top)],
    }
